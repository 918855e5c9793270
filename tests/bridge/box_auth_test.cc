// box_auth_test.cc - a bridge with host authentication (bridge-fw/host_auth.cc, docs/protocol.md
// 4.12) and the attacks of issue 32 that its sessions must stand: a HELLO with the victim's node
// ID but another key, a listed host claiming another's node ID, a captured HELLO replayed, a
// plaintext host, forged CLOSE and DATA frames with the victim's session IDs, a HELLO flood
// from one source. Each is refused and counted, the box holds no state for it, and the
// victim's session keeps working (its device answers) throughout. A host that reconnects with
// its key takes its devices to the new session only once that session is confirmed.
#include <gtest/gtest.h>

#include "core/crc32c.h"

#include <vector>

#include "box_world.h"
#include "crypto/fabric_keys.h"
#include "crypto/sodium_crypto_ops.h"

namespace dxpu::test::box_auth {
namespace {

using bridge::HelloRefusal;
using crypto::KeyPair;
using crypto::NewKeyPair;
using Frame = std::vector<uint8_t>;

constexpr uint64_t kVictim = 0x1111, kOther = 0x2222;
constexpr uint16_t kHostBdf = 0x0100;

struct Keys {
  KeyPair bridge = NewKeyPair();
  KeyPair victim = NewKeyPair();
  KeyPair other = NewKeyPair();
  KeyPair stranger = NewKeyPair();  // listed nowhere
};

bridge::BridgeBoxConfig AuthBoxConfig(const Keys& k) {
  bridge::BoxIdentity id;
  id.keys = k.bridge;
  id.hosts = {{k.victim.pub, kVictim}, {k.other.pub, kOther}};
  id.hellos_per_second = 10;
  id.hello_burst = 20;
  return OneGpuBoxConfig(id);
}

dxfp_session_config HostSession(const KeyPair& host, const KeyPair& bridge) {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  crypto::SetHostAuth(&c, host, bridge.pub);
  return c;
}

// Frames an attacker sends from its own place on the fabric; what the box answers it.
struct Attacker {
  bridge::Peer peer{77, link::LinkAddress()};
  std::vector<Frame> answers;
  void Send(BoxWorld& w, const Frame& f) {
    w.box().ReceiveFrame(w.now(), peer, f, [this](const bridge::Peer& to, link::FramePieces p) {
      if (to == peer) answers.push_back(link::GatherFrame(p));
    });
  }
};

// The HELLO a host with these keys and node ID would send (the session's own, first poll).
Frame HelloOf(uint64_t node, const dxfp_session_config& base, uint64_t now) {
  TestHost h(node, 0x5150, &base);
  h.Connect(now);
  Frame out;
  h.endpoint().Flush(now, [&](link::FramePieces p) {
    if (out.empty()) out = link::GatherFrame(p);
  });
  return out;
}

// A frame's CRC32C made right again after a change.
void FixFrameCrc(Frame* f) {
  const size_t body = f->size() - DXFP_CRC_SIZE;
  dxpu_put_be32(f->data() + body, dxpu_crc32c(0, f->data(), body));
}

class BoxAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    world_ = std::make_unique<BoxWorld>(AuthBoxConfig(keys_), Transport::kMemoryLink);
    world_->host_tap = [this](size_t i, std::span<const uint8_t> f) {
      if (i == 0) victim_frames_.emplace_back(f.begin(), f.end());
    };
    victim_cfg_ = HostSession(keys_.victim, keys_.bridge);
    victim_ = &world_->AddHost(kVictim, &victim_cfg_);
    ASSERT_TRUE(world_->Connect(*victim_));
    ASSERT_EQ(world_->box().Assign(0, kVictim, kHostBdf), bridge::ManageResult::kOk);
  }

  // The victim's device answers its configuration reads: its session works.
  void ExpectVictimWorks() {
    ASSERT_FALSE(victim_->down());
    const auto id = world_->CfgRead(*victim_, kHostBdf, 0);
    ASSERT_TRUE(id.has_value()) << "the victim lost its device";
    EXPECT_EQ(*id & 0xffff, gpu::FindProfile("dxgpu")->vendor_id);
  }

  uint64_t Refused(HelloRefusal r) const {
    return world_->box().hello_refusals()[static_cast<size_t>(r)];
  }

  Keys keys_;
  std::unique_ptr<BoxWorld> world_;
  dxfp_session_config victim_cfg_{};
  TestHost* victim_ = nullptr;
  std::vector<Frame> victim_frames_;
};

TEST_F(BoxAuthTest, AnAuthenticatedHostUsesItsDeviceOverSealedFrames) {
  ExpectVictimWorks();
  const auto hosts = world_->box().Hosts();
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_TRUE(hosts[0].authenticated);
  EXPECT_FALSE(hosts[0].pending);
  EXPECT_EQ(hosts[0].node, kVictim);
  ASSERT_GE(victim_frames_.size(), 2u);
  EXPECT_FALSE(dxfp_frame_is_sealed(victim_frames_[0].data()));  // the HELLO
  for (size_t i = 1; i < victim_frames_.size(); ++i)
    EXPECT_TRUE(dxfp_frame_is_sealed(victim_frames_[i].data())) << "frame " << i;
  EXPECT_EQ(hosts[0].session.unsealed + hosts[0].session.bad_tag, 0u);
  // With the RTL data plane (label rtl-bridge) the port seals and opens the session's frames.
  EXPECT_EQ(hosts[0].framed, world_->plane_frames());
}

TEST_F(BoxAuthTest, AHelloWithTheVictimsNodeIdButAnotherKeyGetsNothing) {
  Attacker a;
  // A key the bridge does not list, claiming the victim's node ID.
  a.Send(*world_, HelloOf(kVictim, HostSession(keys_.stranger, keys_.bridge), world_->now()));
  EXPECT_EQ(Refused(HelloRefusal::kUnknownKey), 1u);
  // A listed host (the other tenant) claiming the victim's node ID.
  a.Send(*world_, HelloOf(kVictim, HostSession(keys_.other, keys_.bridge), world_->now()));
  EXPECT_EQ(Refused(HelloRefusal::kWrongNode), 1u);
  // Someone who does not know the bridge's key: one HMAC, refused.
  a.Send(*world_, HelloOf(kVictim, HostSession(keys_.victim, keys_.stranger), world_->now()));
  EXPECT_EQ(Refused(HelloRefusal::kBadMac1), 1u);
  // A plaintext HELLO.
  dxfp_session_config plain;
  dxfp_session_config_defaults(&plain);
  a.Send(*world_, HelloOf(kVictim, plain, world_->now()));
  EXPECT_EQ(Refused(HelloRefusal::kNoAuth), 1u);

  EXPECT_TRUE(a.answers.empty()) << "a refused HELLO gets no answer";
  EXPECT_EQ(world_->box().Hosts().size(), 1u) << "no state for a refused HELLO";
  EXPECT_EQ(world_->box().counters().sessions_opened, 1u);
  ExpectVictimWorks();
}

TEST_F(BoxAuthTest, ACapturedHelloReplayedOpensNothing) {
  ASSERT_FALSE(victim_frames_.empty());
  const Frame hello = victim_frames_[0];
  ASSERT_EQ(hello[DXFP_OFF_TYPE], DXFP_HELLO);
  Attacker a;
  // While the victim's session is up, the same HELLO is a repeat for that session: its WELCOME
  // goes to the victim again, not to the sender, and nothing new opens.
  a.Send(*world_, hello);
  EXPECT_TRUE(a.answers.empty());
  EXPECT_EQ(world_->box().counters().sessions_opened, 1u);
  ExpectVictimWorks();
  // Once the victim reconnected (a new session), the old HELLO is stale.
  world_->RunFor(1'000'000);
  TestHost& again = world_->AddHost(kVictim, &victim_cfg_);
  ASSERT_TRUE(world_->Connect(again));
  ASSERT_TRUE(world_->RunUntil([&] { return victim_->down(); }, 100'000'000));
  a.Send(*world_, hello);
  EXPECT_EQ(Refused(HelloRefusal::kStale), 1u);
  EXPECT_EQ(world_->box().counters().sessions_opened, 2u);
  EXPECT_TRUE(a.answers.empty());
}

TEST_F(BoxAuthTest, AnotherHelloNamingTheVictimsSessionIsNoRepeat) {
  ASSERT_FALSE(victim_frames_.empty());
  const Frame victim_hello = victim_frames_[0];
  // A plaintext HELLO with the victim's session ID and epoch (both in the clear on the wire):
  // not the HELLO that opened the session, so it is checked as a new one and refused; the
  // bridge does not send the victim its WELCOME again for it.
  dxfp_session_config plain;
  dxfp_session_config_defaults(&plain);
  Frame forged = HelloOf(kVictim, plain, world_->now());
  std::copy_n(victim_hello.begin() + DXFP_OFF_SRC_SESSION, 4,
              forged.begin() + DXFP_OFF_SRC_SESSION);
  std::copy_n(victim_hello.begin() + DXFP_OFF_SRC_EPOCH, 4, forged.begin() + DXFP_OFF_SRC_EPOCH);
  FixFrameCrc(&forged);
  const auto welcomes = world_->box().Hosts().at(0).session.welcomes_tx;
  Attacker a;
  a.Send(*world_, forged);
  EXPECT_EQ(Refused(HelloRefusal::kNoAuth), 1u);
  EXPECT_EQ(world_->box().Hosts().at(0).session.welcomes_tx, welcomes);
  EXPECT_TRUE(a.answers.empty());
  ExpectVictimWorks();
}

TEST_F(BoxAuthTest, ForgedCloseAndDataWithTheVictimsSessionIdsChangeNothing) {
  ExpectVictimWorks();  // the bridge's session is confirmed
  ASSERT_GE(victim_frames_.size(), 2u);
  dxfp_header seen{};  // a sealed frame's clear header: the session IDs and epochs are visible
  ASSERT_TRUE(dxfp_header_peek(victim_frames_.back().data(), victim_frames_.back().size(), &seen));
  Attacker a;
  // A plaintext CLOSE "from" the victim to its bridge session, every field right.
  dxfp_header cause{};
  cause.src_session = seen.dst_session;  // dxfp_write_close swaps the ends of its cause
  cause.src_epoch = seen.dst_epoch;
  cause.dst_session = seen.src_session;
  cause.dst_epoch = seen.src_epoch;
  Frame close(64);
  const size_t n =
      dxfp_write_close(close.data(), close.size(), &cause, seen.src_epoch, DXFP_CLOSE_SHUTDOWN);
  ASSERT_GT(n, 0u);
  close.resize(n);
  for (int i = 0; i < 200; ++i) a.Send(*world_, close);
  // A sealed-looking frame with the victim's header and garbage after it.
  Frame forged = victim_frames_.back();
  for (size_t i = DXFP_HDR_SIZE + DXFP_SEAL_COUNTER_SIZE; i < forged.size(); ++i) forged[i] ^= 0x5a;
  forged[DXFP_HDR_SIZE + 5] ^= 1;  // a counter never used (65,536 on), so the tag refuses it
  a.Send(*world_, forged);
  const auto hosts = world_->box().Hosts();
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0].session.unsealed, 200u);
  EXPECT_EQ(hosts[0].session.bad_tag, 1u);
  EXPECT_EQ(hosts[0].state, DXFP_STATE_ESTABLISHED);
  ExpectVictimWorks();
  // A captured sealed frame replayed: its counter was taken.
  a.Send(*world_, victim_frames_.back());
  EXPECT_EQ(world_->box().Hosts()[0].session.replayed, 1u);
  ExpectVictimWorks();
}

TEST_F(BoxAuthTest, AHostReconnectingWithItsKeyKeepsItsDeviceAndTheOldSessionEndsOnlyThen) {
  world_->RunFor(1'000'000);  // a later HELLO: its timestamp is above the first one's
  TestHost& again = world_->AddHost(kVictim, &victim_cfg_);
  again.Connect(world_->now());
  ASSERT_TRUE(world_->RunUntil([&] { return again.established(); }, 100'000'000));
  // Established at the host when the WELCOME arrived; the bridge confirms with its first DATA.
  const auto id = world_->CfgRead(again, kHostBdf, 0);
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(*id & 0xffff, gpu::FindProfile("dxgpu")->vendor_id);
  ASSERT_TRUE(world_->RunUntil([&] { return victim_->down(); }, 100'000'000));
  const auto hosts = world_->box().Hosts();
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_FALSE(hosts[0].pending);
  EXPECT_EQ(world_->box().Devices()[0].owner_node, kVictim);
}

TEST_F(BoxAuthTest, AHelloFloodFromOneSourceIsLimitedAndAnotherHostStillConnects) {
  Attacker a;
  const Frame junk = HelloOf(kOther, HostSession(keys_.stranger, keys_.bridge), world_->now());
  for (int i = 0; i < 1000; ++i) a.Send(*world_, junk);  // within one instant
  // The source's burst reaches the handshake (20 X25519 rounds spent, unknown key); the rest is
  // refused by its limit before any cryptography. One source cannot put the bridge under load.
  EXPECT_EQ(Refused(HelloRefusal::kRateLimited), 1000u - 20u);
  EXPECT_EQ(Refused(HelloRefusal::kUnknownKey), 20u);
  EXPECT_EQ(Refused(HelloRefusal::kCookie), 0u);
  EXPECT_FALSE(world_->box().UnderLoad());
  EXPECT_EQ(world_->box().Hosts().size(), 1u);
  // The other tenant, from its own place, connects at once.
  const dxfp_session_config other_cfg = HostSession(keys_.other, keys_.bridge);
  TestHost& other = world_->AddHost(kOther, &other_cfg);
  EXPECT_TRUE(world_->Connect(other));
  ExpectVictimWorks();
}

// HELLOs that pass MAC1 (whoever knows the bridge's public key can make them), each from a place
// of its own, as a flood with forged source addresses would come: `count` of them at once.
void FloodFromManySources(BoxWorld& w, const Frame& hello, int count, uint32_t first_link) {
  for (int i = 0; i < count; ++i) {
    Attacker a;
    a.peer = bridge::Peer{first_link + static_cast<uint32_t>(i), link::LinkAddress()};
    a.Send(w, hello);
  }
}

TEST_F(BoxAuthTest, AFloodFromManySourcesGetsCookiesNotHandshakesAndAnotherHostStillConnects) {
  const Frame junk = HelloOf(kOther, HostSession(keys_.stranger, keys_.bridge), world_->now());
  FloodFromManySources(*world_, junk, 1000, 1000);
  // The bridge's handshake budget (100 a second, one taken by the victim's HELLO) goes to the
  // first sources (each an unknown key: X25519 spent); beyond it the bridge is under load and
  // answers each new source with a cookie: no handshake, nothing remembered.
  const uint64_t budget = 100u - 1u;
  EXPECT_EQ(Refused(HelloRefusal::kUnknownKey), budget);
  EXPECT_EQ(Refused(HelloRefusal::kCookie), 1000u - budget);
  EXPECT_EQ(Refused(HelloRefusal::kRateLimited), 0u);
  EXPECT_TRUE(world_->box().UnderLoad());
  EXPECT_EQ(world_->box().Hosts().size(), 1u);
  // The other tenant connects at once: its HELLO gets a cookie, and its HELLO again with the
  // cookie's MAC2 gets the handshake.
  const dxfp_session_config other_cfg = HostSession(keys_.other, keys_.bridge);
  TestHost& other = world_->AddHost(kOther, &other_cfg);
  EXPECT_TRUE(world_->Connect(other));
  EXPECT_EQ(other.endpoint().counters().cookies_rx, 1u);
  EXPECT_EQ(Refused(HelloRefusal::kCookie), 1000u - budget + 1u);
  ExpectVictimWorks();
}

TEST_F(BoxAuthTest, ACookieIsForItsSourceOnly) {
  const Frame junk = HelloOf(kOther, HostSession(keys_.stranger, keys_.bridge), world_->now());
  FloodFromManySources(*world_, junk, 200, 1000);
  ASSERT_TRUE(world_->box().UnderLoad());
  // The other tenant's HELLO with the cookie made for its place, sent from another place: the
  // bridge answers with a cookie again and does no handshake.
  const dxfp_session_config other_cfg = HostSession(keys_.other, keys_.bridge);
  TestHost host(kOther, 0x7001, &other_cfg);
  host.Connect(world_->now());
  Frame hello;
  host.endpoint().Flush(world_->now(), [&](link::FramePieces p) { hello = link::GatherFrame(p); });
  Attacker here;  // the host's own place
  here.peer = bridge::Peer{79, link::LinkAddress()};
  here.Send(*world_, hello);
  ASSERT_EQ(here.answers.size(), 1u);
  EXPECT_EQ(host.endpoint().Receive(world_->now(), here.answers[0]), DXFP_RX_OK);
  EXPECT_EQ(host.endpoint().counters().cookies_rx, 1u);
  Frame with_cookie;
  host.endpoint().Flush(world_->now(),
                        [&](link::FramePieces p) { with_cookie = link::GatherFrame(p); });
  ASSERT_FALSE(with_cookie.empty());
  EXPECT_NE(with_cookie, hello);
  // A COOKIE that does not open (changed) is dropped and counted by the host.
  Frame forged = here.answers[0];
  forged[DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + 20] ^= 1;
  FixFrameCrc(&forged);
  EXPECT_EQ(host.endpoint().Receive(world_->now(), forged), DXFP_RX_BAD_TAG);
  Attacker elsewhere;
  elsewhere.peer = bridge::Peer{78, link::LinkAddress()};
  const uint64_t cookies = Refused(HelloRefusal::kCookie);
  elsewhere.Send(*world_, with_cookie);
  EXPECT_EQ(Refused(HelloRefusal::kCookie), cookies + 1);  // not its cookie: another one
  EXPECT_EQ(world_->box().counters().sessions_opened, 1u);
  here.Send(*world_, with_cookie);  // from where the cookie was made for: the handshake
  EXPECT_EQ(Refused(HelloRefusal::kCookie), cookies + 1);
  EXPECT_EQ(world_->box().counters().sessions_opened, 2u);
}

}  // namespace
}  // namespace dxpu::test::box_auth
