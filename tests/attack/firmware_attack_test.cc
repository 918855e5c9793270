// firmware_attack_test.cc - issue 32 item 7, an old firmware pushed: a bridge booted from a
// flash (slot A running 1.1.0, signed by the key its flash trusts) is sent the header of an
// older image that key signed: with the downgrade flag by a local user without credentials, and
// by the trusted manager without the flag and with authorisations not valid for this bridge.
// Each is refused and counted; nothing is written; the victim's workload runs on beside it.
#include <gtest/gtest.h>

#include <atomic>
#include <span>
#include <string>

#include "attack_scene.h"
#include "bridge-fw/firmware/downgrade.h"
#include "firmware_testutil.h"

namespace dxpu::test::attack::firmware_push {
namespace {

namespace fw = dxpu::firmware;

const fw::FirmwareVersion kRunning = fw::FirmwareVersion::Of(1, 1, 0);

// A flash whose slot A holds kRunning, good and active, as the bridge's --flash.
BridgeUnderAttackOptions FlashedBridge() {
  static fw::testing::ScratchDir dir;
  static std::atomic<int> flashes{0};
  const std::string path = dir.path("flash-" + std::to_string(flashes.fetch_add(1)));
  auto flash =
      fw::FlashDevice::Create(path, fw::testing::SmallFactory(), fw::testing::TestKeyList());
  if (flash.ok())
    (void)fw::testing::InstallGood(*flash.value(), fw::Slot::kA,
                                   fw::testing::SignedImage(kRunning));
  BridgeUnderAttackOptions o;
  o.args = {"--flash", path, "--slot", "A"};
  return o;
}

class FirmwareAttackTest : public AttackScene {
 protected:
  FirmwareAttackTest() : AttackScene(FlashedBridge()) {}
};

TEST_F(FirmwareAttackTest, AnOldFirmwareIsRefusedWithoutASignedAuthorisation) {
  const std::vector<uint8_t> old = fw::testing::SignedImage(fw::FirmwareVersion::Of(1, 0, 0));
  const std::span<const uint8_t> header(old.data(), fw::kHeaderBytes);
  const bridge::ManagementReply before = bridge_.Manager().FwStatus();
  ASSERT_TRUE(before.ok()) << before.Problem() << "\n" << bridge_.process().LogTail();
  const uint32_t running = before.msg.body.fw_report.running_version;
  EXPECT_EQ(running, (1u << 24) | (1u << 16));

  // A local user, with the downgrade flag `dxpu flash push --allow-downgrade` once sent.
  const link::LinkAddress at = link::LinkAddress::Unix(bridge_.management_path());
  EXPECT_EQ(bridge::ManagementClient(at, 1000, 1).FwBegin(header, true).msg.status,
            DXPU_MGMT_UNAUTHENTICATED);
  // The trusted manager without the flag: refused. With it, the transfer waits for an
  // authorisation signed for this bridge and image, before any byte is written: one signed by
  // a key the flash does not trust, and one for another bridge, are refused and end it.
  const bridge::ManagementClient manager = bridge_.Manager();
  EXPECT_EQ(manager.FwBegin(header, false).msg.status, DXPU_MGMT_DOWNGRADE);
  fw::BridgeId other_bridge = fw::testing::TestBridgeId();
  other_bridge[0] ^= 0xff;
  for (const auto& [bridge_id, key] :
       {std::pair{fw::testing::TestBridgeId(), &fw::testing::OtherKey()},
        std::pair{other_bridge, &fw::testing::TestKey()}}) {
    const auto auth = fw::SignDowngrade(bridge_id, old, key->secret_key);
    ASSERT_TRUE(auth.ok());
    ASSERT_EQ(manager.FwBegin(header, true).msg.status, DXPU_MGMT_OK);
    EXPECT_EQ(manager.FwChunk(0, auth.value()).msg.status, DXPU_MGMT_DOWNGRADE);
  }

  const bridge::ManagementReply after = bridge_.Manager().FwStatus();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after.msg.body.fw_report.transfer, DXPU_MGMT_FW_IDLE);
  EXPECT_EQ(after.msg.body.fw_report.running_version, running);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_management_auth_refused_total{reason=\"unsigned\"}"), 1);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_management_refused_total"), 4);
  // The control: this bridge's authorisation, signed by the key its flash trusts, is taken.
  const auto valid =
      fw::SignDowngrade(fw::testing::TestBridgeId(), old, fw::testing::TestKey().secret_key);
  ASSERT_TRUE(valid.ok());
  ASSERT_EQ(manager.FwBegin(header, true).msg.status, DXPU_MGMT_OK);
  EXPECT_EQ(manager.FwChunk(0, valid.value()).msg.status, DXPU_MGMT_OK);
  ExpectVictimUnharmed();
}

}  // namespace
}  // namespace dxpu::test::attack::firmware_push
