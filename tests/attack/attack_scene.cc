// attack_scene.cc - see attack_scene.h.
#include "attack_scene.h"

#include "core/dxfp_seal.h"

namespace dxpu::test::attack {

void AttackScene::SetUp() {
  const std::string started = bridge_.Start();
  ASSERT_EQ(started, "");
  ASSERT_EQ(bridge_.Lend(0, kVictimNode), "");
  relay_ = std::make_unique<UdpRelay>(bridge_.fabric_port());
  ASSERT_TRUE(relay_->ok());
  auto victim = VictimHost::Open(kVictimNode, bridge_.keys().victim, bridge_.keys().bridge.pub,
                                 relay_->port());
  ASSERT_TRUE(victim.ok()) << victim.status().message() << "\n" << bridge_.process().LogTail();
  victim_ = std::move(victim).value();
  victim_->StartWorkload();
  ASSERT_TRUE(victim_->WaitRounds(3)) << victim_->StopWorkload().error;
}

void AttackScene::TearDown() {
  if (victim_) victim_->StopWorkload();
  victim_.reset();
  relay_.reset();
}

namespace {

std::vector<Frame> Sealed(const std::vector<Frame>& frames) {
  std::vector<Frame> out;
  for (const Frame& f : frames)
    if (f.size() >= DXFP_MIN_SEALED_FRAME && dxfp_frame_is_sealed(f.data())) out.push_back(f);
  return out;
}

}  // namespace

std::vector<Frame> AttackScene::VictimSealedFrames() const { return Sealed(relay_->ToBridge()); }
std::vector<Frame> AttackScene::BridgeSealedFrames() const { return Sealed(relay_->ToHost()); }

void AttackScene::ExpectVictimUnharmed(double sessions_opened, double sessions_closed,
                                       double quarantined) {
  ASSERT_TRUE(victim_->WaitRounds(5)) << "the victim's workload stalled";
  const WorkloadReport r = victim_->StopWorkload();
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.wrong, 0u);
  EXPECT_GE(r.rounds, 8u);
  const HostSide side = victim_->Side();
  EXPECT_TRUE(side.path.up);
  EXPECT_FALSE(side.path.down) << side.path.down_reason;
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_sessions_opened_total"), sessions_opened);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_sessions_closed_total"), sessions_closed);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_device_owner_connected{device=\"0\"}"), 1);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_quarantined_total"), quarantined);
}

}  // namespace dxpu::test::attack
