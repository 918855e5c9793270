// fabric_attacks_test.cc - issue 32 item 7, on the fabric: a malicious host with a raw UDP
// socket against a running dxpu-bridge with host authentication, while the victim's workload
// runs beside it. Spoofed HELLOs, captured frames replayed and reordered, forged DATA and
// completions in the victim's session, forged CLOSEs, HELLO floods from one source and from
// many. Each attack fails and is counted by the exact counter that names it; the victim's
// results stay right and its session up (attack_scene.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "attack_scene.h"
#include "attacker.h"
#include "core/dxfp_seal.h"

namespace dxpu::test::attack::fabric {
namespace {

using AttackTest = AttackScene;

TEST_F(AttackTest, HellosWithTheVictimsNodeIdGetNothing) {
  RawUdp attacker;
  ASSERT_TRUE(attacker.ok());
  const FabricKeys& k = bridge_.keys();
  const uint16_t port = bridge_.fabric_port();
  // Its own key, which the bridge does not list, claiming the victim's node ID.
  ASSERT_TRUE(attacker.SendTo(port, HelloOf(kVictimNode, &k.stranger, &k.bridge.pub)));
  // A listed tenant's key claiming the victim's node ID.
  ASSERT_TRUE(attacker.SendTo(port, HelloOf(kVictimNode, &k.tenant, &k.bridge.pub)));
  // The victim's node ID in a plaintext HELLO, as before issue 32.
  ASSERT_TRUE(attacker.SendTo(port, HelloOf(kVictimNode, nullptr, nullptr)));
  // A handshake made for another bridge's key: one HMAC refuses it.
  ASSERT_TRUE(attacker.SendTo(port, HelloOf(kVictimNode, &k.stranger, &k.stranger.pub)));
  EXPECT_EQ(attacker.CountReceived(300), 0u) << "a refused HELLO got an answer";
  EXPECT_EQ(bridge_.HellosRefused("unknown-key"), 1);
  EXPECT_EQ(bridge_.HellosRefused("wrong-node"), 1);
  EXPECT_EQ(bridge_.HellosRefused("no-auth"), 1);
  EXPECT_EQ(bridge_.HellosRefused("bad-mac1"), 1);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_hellos_refused_total"), 4);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_hosts"), 1);
  ExpectVictimUnharmed();
}

TEST_F(AttackTest, CapturedFramesReplayedOrReorderedAreRefused) {
  ASSERT_TRUE(victim_->WaitRounds(2));
  // The network reorders the victim's frames for a while: its session takes them (a window of
  // counters), nothing is lost or refused as a replay.
  relay_->Reorder(true);
  ASSERT_TRUE(victim_->WaitRounds(3));
  relay_->Reorder(false);
  EXPECT_GT(relay_->reordered(), 10u);
  const double replayed_before = bridge_.SessionCounter(kVictimNode, "replayed");

  // The attacker sends what it captured, newest first (reordered), from its own address.
  std::vector<Frame> to_bridge = VictimSealedFrames();
  std::vector<Frame> to_host = BridgeSealedFrames();
  ASSERT_GE(to_bridge.size(), 100u);
  ASSERT_GE(to_host.size(), 100u);
  to_bridge.erase(to_bridge.begin(), to_bridge.end() - 100);
  to_host.erase(to_host.begin(), to_host.end() - 100);
  std::reverse(to_bridge.begin(), to_bridge.end());
  std::reverse(to_host.begin(), to_host.end());
  RawUdp attacker;
  for (const Frame& f : to_bridge) ASSERT_TRUE(attacker.SendPaced(bridge_.fabric_port(), f));
  const uint64_t host_replayed_before = victim_->Side().session.replayed;
  for (const Frame& f : to_host) ASSERT_TRUE(attacker.SendPaced(victim_->local_port(), f));
  // The victim's HELLO replayed while its session lives: taken as that session's repeat (its
  // WELCOME goes to the victim again, not to the sender); nothing opens.
  const Frame hello = relay_->ToBridge().front();
  ASSERT_EQ(hello[DXFP_OFF_TYPE], DXFP_HELLO);
  ASSERT_TRUE(attacker.SendPaced(bridge_.fabric_port(), hello));
  EXPECT_EQ(attacker.CountReceived(300), 0u);

  EXPECT_EQ(bridge_.SessionCounter(kVictimNode, "replayed") - replayed_before, 100);
  EXPECT_EQ(victim_->Side().session.replayed - host_replayed_before, 100u);
  EXPECT_EQ(bridge_.SessionCounter(kVictimNode, "bad_tag"), 0);
  EXPECT_EQ(victim_->Side().session.bad_tag, 0u);
  ExpectVictimUnharmed();
}

TEST_F(AttackTest, ForgedDataAndCompletionsInTheVictimsSessionAreRefused) {
  const std::vector<Frame> to_bridge = VictimSealedFrames();
  const std::vector<Frame> to_host = BridgeSealedFrames();
  ASSERT_FALSE(to_bridge.empty());
  ASSERT_FALSE(to_host.empty());
  // The session IDs, epochs and sequence numbers are in the clear: the attacker writes frames
  // the session would take if it were plaintext. Into the bridge: a configuration write that
  // turns the victim's GPU's memory space and bus mastering off.
  const uint32_t command_off = 0;
  const Frame inject =
      PlainData(HeaderOf(to_bridge.back()), ConfigWrite(kHostBdf, 4, &command_off));
  ASSERT_FALSE(inject.empty());
  // To the victim: a completion for a read it may have outstanding (every tag of the bridge's
  // requester ID), plaintext, and sealed frames with a garbage tag.
  const uint32_t forged_data = 0xdeadbeef;
  RawUdp attacker;
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(attacker.SendPaced(bridge_.fabric_port(), inject));
    ASSERT_TRUE(attacker.SendPaced(bridge_.fabric_port(), GarbageSealed(to_bridge.back())));
    const Frame cpl = PlainData(HeaderOf(to_host.back()),
                                Completion(0x0000, static_cast<uint8_t>(i), &forged_data));
    ASSERT_FALSE(cpl.empty());
    ASSERT_TRUE(attacker.SendPaced(victim_->local_port(), cpl));
    ASSERT_TRUE(attacker.SendPaced(victim_->local_port(), GarbageSealed(to_host.back())));
  }
  EXPECT_EQ(attacker.CountReceived(300), 0u);
  EXPECT_EQ(bridge_.SessionCounter(kVictimNode, "unsealed"), 50);
  EXPECT_EQ(bridge_.SessionCounter(kVictimNode, "bad_tag"), 50);
  const HostSide side = victim_->Side();
  EXPECT_EQ(side.session.unsealed, 50u);
  EXPECT_EQ(side.session.bad_tag, 50u);
  EXPECT_EQ(side.session.unexpected_cpl, 0u);
  ExpectVictimUnharmed();
}

TEST_F(AttackTest, ForgedClosesEndNoSession) {
  const std::vector<Frame> to_bridge = VictimSealedFrames();
  const std::vector<Frame> to_host = BridgeSealedFrames();
  ASSERT_FALSE(to_bridge.empty());
  ASSERT_FALSE(to_host.empty());
  RawUdp attacker;
  for (int i = 0; i < 200; ++i) {
    // Plaintext, every field right; and the sealed frame's clear type changed to CLOSE with a
    // garbage tag. To the bridge and to the victim.
    ASSERT_TRUE(attacker.SendPaced(bridge_.fabric_port(), PlainClose(HeaderOf(to_bridge.back()))));
    ASSERT_TRUE(
        attacker.SendPaced(bridge_.fabric_port(), GarbageSealed(to_bridge.back(), DXFP_CLOSE)));
    ASSERT_TRUE(attacker.SendPaced(victim_->local_port(), PlainClose(HeaderOf(to_host.back()))));
    ASSERT_TRUE(
        attacker.SendPaced(victim_->local_port(), GarbageSealed(to_host.back(), DXFP_CLOSE)));
  }
  EXPECT_EQ(attacker.CountReceived(300), 0u);
  EXPECT_EQ(bridge_.SessionCounter(kVictimNode, "unsealed"), 200);
  EXPECT_EQ(bridge_.SessionCounter(kVictimNode, "bad_tag"), 200);
  const HostSide side = victim_->Side();
  EXPECT_EQ(side.session.unsealed, 200u);
  EXPECT_EQ(side.session.bad_tag, 200u);
  ExpectVictimUnharmed();
}

// A HELLO flood while a new legitimate host connects: `flood` runs in a thread until the
// host's first rounds are done. Returns the bridge's RSS growth, KiB.
class HelloFloodTest : public AttackScene {
 protected:
  long FloodWhileALateHostConnects(const std::function<void(const std::atomic<bool>&)>& flood) {
    EXPECT_EQ(bridge_.Lend(1, kLateNode), "");
    const long rss_before = bridge_.RssKiB();
    std::atomic<bool> stop{false};
    std::thread attacker([&] { flood(stop); });
    // The flood is on: from many sources, more than the 4,096 the HELLO limit remembers.
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    const auto connecting = std::chrono::steady_clock::now();
    auto late = VictimHost::Open(kLateNode, bridge_.keys().late, bridge_.keys().bridge.pub,
                                 bridge_.fabric_port());
    connect_ms_ =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - connecting)
            .count();
    EXPECT_TRUE(late.ok()) << "a new host could not connect during the flood: "
                           << late.status().message();
    if (late.ok()) {
      late_ = std::move(late).value();  // its session stays up to the end of the test
      late_->StartWorkload();
      EXPECT_TRUE(late_->WaitRounds(3));
      const WorkloadReport r = late_->StopWorkload();
      EXPECT_EQ(r.error, "");
      EXPECT_EQ(r.wrong, 0u);
    }
    stop = true;
    attacker.join();
    return bridge_.RssKiB() - rss_before;
  }
  void TearDown() override {
    late_.reset();
    AttackScene::TearDown();
  }
  std::unique_ptr<VictimHost> late_;
  double connect_ms_ = 0;  // how long the new host took to connect and attach its GPU
};

TEST_F(HelloFloodTest, FromOneSourceIsLimitedAndANewHostStillConnects) {
  const FabricKeys& k = bridge_.keys();
  const Frame hello = HelloOf(kTenantNode, &k.stranger, &k.bridge.pub);
  uint64_t sent = 0;
  const auto started = std::chrono::steady_clock::now();
  const long growth = FloodWhileALateHostConnects([&](const std::atomic<bool>& stop) {
    RawUdp attacker;
    while (!stop) {
      for (int i = 0; i < 100; ++i) sent += attacker.SendTo(bridge_.fabric_port(), hello) ? 1 : 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the bridge takes the rest
  const double limited = bridge_.HellosRefused("rate-limited");
  const double cookies = bridge_.HellosRefused("cookie");
  const double looked_at = bridge_.HellosRefused("unknown-key");
  // One source: its burst (40) and 20 a second reach the handshake, the rest is refused by its
  // limit before any cryptography, and it cannot put the bridge under load (its handshake
  // budget is 100 a second): no cookies. The kernel may drop some of a flood on loopback before
  // the bridge reads them.
  EXPECT_LE(looked_at, 40 + 20 * seconds + 1) << sent << " sent in " << seconds << " s";
  EXPECT_GE(looked_at, 40);
  EXPECT_EQ(cookies, 0);
  EXPECT_GT(limited, 0.9 * static_cast<double>(sent) - looked_at);
  EXPECT_LE(limited + looked_at, static_cast<double>(sent));
  EXPECT_NE(late_, nullptr);
  EXPECT_LT(growth, 4096) << "the bridge's memory grew by " << growth << " KiB";
  std::printf(
      "[ flood    ] one source: %lu HELLOs in %.2f s, %.0f looked at, %.0f cookies, RSS %+ld KiB, "
      "a new host connected in %.0f ms\n",
      static_cast<unsigned long>(sent), seconds, looked_at, cookies, growth, connect_ms_);
  ExpectVictimUnharmed(2);
}

// A flood from many sources (127.1.x.y, a new address each time, about 10,000 a second) of one
// HELLO while a late host connects: what was sent, for how long, and the bridge's RSS growth.
struct ManySourceFlood {
  uint64_t sent = 0;
  double seconds = 0;
  long growth_kib = 0;
};

class ManySourceFloodTest : public HelloFloodTest {
 protected:
  ManySourceFlood Flood(const Frame& hello) {
    ManySourceFlood f;
    const auto started = std::chrono::steady_clock::now();
    f.growth_kib = FloodWhileALateHostConnects([&](const std::atomic<bool>& stop) {
      for (uint32_t i = 0; !stop; ++i) {
        const RawUdp attacker("127.1." + std::to_string((i >> 8) & 0xff) + "." +
                              std::to_string(i & 0xff));
        f.sent += attacker.SendTo(bridge_.fabric_port(), hello) ? 1 : 0;
        if (i % 8 == 7) std::this_thread::sleep_for(std::chrono::microseconds(500));
      }
    });
    f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the bridge takes the rest
    EXPECT_NE(late_, nullptr);
    EXPECT_LT(f.growth_kib, 8192) << "the bridge's memory grew by " << f.growth_kib << " KiB";
    return f;
  }
};

TEST_F(ManySourceFloodTest, PastMac1CostsAtMostTheHandshakeBudgetAndANewHostStillConnects) {
  // HELLOs that pass MAC1 (made by someone who knows the bridge's public key), each from a new
  // source: without cookies each would cost three X25519s (the suite once took 33 s of the
  // bridge's CPU on them). Under load the bridge answers each with a cookie for its source
  // instead, which a forged source never receives.
  const FabricKeys& k = bridge_.keys();
  const ManySourceFlood f = Flood(HelloOf(kTenantNode, &k.stranger, &k.bridge.pub));
  const double looked_at = bridge_.HellosRefused("unknown-key");
  const double cookies = bridge_.HellosRefused("cookie");
  const double refused = bridge_.Metric("dxpu_bridge_hellos_refused_total");
  // The handshakes the flood got: at most the budget (100 a second, bursts of 100).
  EXPECT_LE(looked_at, 100 + 100 * f.seconds + 1) << f.sent << " sent in " << f.seconds << " s";
  EXPECT_GT(cookies, 0.5 * static_cast<double>(f.sent));
  EXPECT_LE(refused, static_cast<double>(f.sent) + 1);  // + the late host's first HELLO
  std::printf(
      "[ flood    ] many sources, past MAC1: %lu HELLOs in %.2f s, %.0f handshakes, %.0f "
      "cookies, RSS %+ld KiB, a new host connected in %.0f ms\n",
      static_cast<unsigned long>(f.sent), f.seconds, looked_at, cookies, f.growth_kib, connect_ms_);
  ExpectVictimUnharmed(2);
}

TEST_F(ManySourceFloodTest, ForAnotherKeyKeepsMemoryBoundedAndANewHostStillConnects) {
  // HELLOs of someone who does not know the bridge's key: refused at MAC1, one HMAC each, before
  // the source limit; no source is remembered for them.
  const FabricKeys& k = bridge_.keys();
  const ManySourceFlood f = Flood(HelloOf(kTenantNode, &k.stranger, &k.stranger.pub));
  const double refused = bridge_.Metric("dxpu_bridge_hellos_refused_total");
  EXPECT_EQ(refused, bridge_.HellosRefused("bad-mac1"));
  EXPECT_LE(refused, static_cast<double>(f.sent));
  EXPECT_GT(refused, 0.5 * static_cast<double>(f.sent));
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_hello_sources_forgotten_total"), 0);
  std::printf(
      "[ flood    ] many sources, another key: %lu HELLOs in %.2f s, %.0f refused, RSS %+ld KiB, "
      "a new host connected in %.0f ms\n",
      static_cast<unsigned long>(f.sent), f.seconds, refused, f.growth_kib, connect_ms_);
  ExpectVictimUnharmed(2);
}

}  // namespace
}  // namespace dxpu::test::attack::fabric
