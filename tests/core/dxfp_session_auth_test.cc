// dxfp_session_auth_test.cc - authenticated DxFP sessions (lib/core/dxfp_session.c with
// cfg.auth, docs/protocol.md 4.12) on libsodium's primitives: the handshake in HELLO and
// WELCOME, every later frame sealed, the clear TLP bytes never on the wire; a HELLO or WELCOME
// lost is sent again byte for byte; a forged WELCOME, plaintext DATA or CLOSE, a replayed or
// changed sealed frame are dropped and counted and the session carries on; a responder with
// authentication refuses a HELLO without it; on a lossy wire every TLP still arrives in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/dxfp_handshake.h"
#include "core/dxfp_session.h"
#include "crypto/fabric_keys.h"
#include "session_pair.h"

namespace dxpu::test {
namespace {

using Frame = SessionPair::Frame;
using crypto::KeyPair;
using crypto::NewKeyPair;

const dxfp_crypto_ops& Ops() { return crypto::SodiumCryptoOps(); }

bool IsSealed(const Frame& f) {
  return f.size() >= DXFP_HDR_SIZE && dxfp_frame_is_sealed(f.data());
}
uint8_t TypeOf(const Frame& f) { return f.at(DXFP_OFF_TYPE); }

// The keys of one host and one bridge, and the bridge's side of accepting a HELLO: the
// handshake opened with its key, the host's key checked against the one it knows.
struct Keys {
  KeyPair host = NewKeyPair();
  KeyPair bridge = NewKeyPair();
  int hellos_opened = 0;

  dxfp_session_config HostConfig() const {
    dxfp_session_config c = TestConfig(DXFP_ROLE_INITIATOR);
    c.auth.ops = &Ops();
    std::copy(host.secret.begin(), host.secret.end(), c.auth.static_secret);
    std::copy(bridge.pub.begin(), bridge.pub.end(), c.auth.peer_public);
    c.auth.wall_clock_offset_ns = 1'700'000'000'000'000'000ull;
    return c;
  }
  dxfp_session_config BridgeConfig() const {
    dxfp_session_config c = TestConfig(DXFP_ROLE_RESPONDER);
    c.auth.ops = &Ops();
    return c;
  }
  SessionPair::Accept Accept() {
    return [this](dxfp_session* s, uint64_t now, const Frame& hello) {
      const dxfp_rx_result r = crypto::AcceptAuthenticatedHello(s, now, bridge, hello, &host.pub);
      if (r != DXFP_RX_NO_AUTH) hellos_opened++;
      return r;
    };
  }
};

struct AuthPair {
  Keys keys;
  SessionPair p{keys.HostConfig(), keys.BridgeConfig()};
  AuthPair() { p.accept = keys.Accept(); }
};

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

bool Contains(const Frame& hay, const std::vector<uint8_t>& needle) {
  return std::search(hay.begin(), hay.end(), needle.begin(), needle.begin() + 32) != hay.end();
}

TEST(DxfpSessionAuth, EstablishesAndSealsEveryFrameAfterTheHandshake) {
  AuthPair t;
  t.p.Establish();
  const auto up = Pattern(512, 1), down = Pattern(256, 99);
  const dxpu_tlp w1 = MakeMwr(0x1000, up), w2 = MakeMwr(0x2000, down);
  ASSERT_EQ(dxfp_session_send(t.p.a.s(), t.p.now, &w1), DXFP_SEND_OK);
  ASSERT_EQ(dxfp_session_send(t.p.b.s(), t.p.now, &w2), DXFP_SEND_OK);
  t.p.RunUntil(t.p.now + 1'000'000);
  ASSERT_EQ(t.p.b.delivered.size(), 1u);
  EXPECT_EQ(t.p.b.delivered[0].payload, up);
  ASSERT_EQ(t.p.a.delivered.size(), 1u);
  EXPECT_EQ(t.p.a.delivered[0].payload, down);

  ASSERT_FALSE(t.p.a_to_b.empty());
  EXPECT_EQ(TypeOf(t.p.a_to_b[0]), DXFP_HELLO);
  EXPECT_FALSE(IsSealed(t.p.a_to_b[0]));
  EXPECT_EQ(TypeOf(t.p.b_to_a[0]), DXFP_WELCOME);
  EXPECT_FALSE(IsSealed(t.p.b_to_a[0]));
  for (size_t i = 1; i < t.p.a_to_b.size(); ++i) {
    EXPECT_TRUE(IsSealed(t.p.a_to_b[i])) << "frame " << i;
    EXPECT_FALSE(Contains(t.p.a_to_b[i], up)) << "the TLP's bytes in the clear, frame " << i;
  }
  for (size_t i = 1; i < t.p.b_to_a.size(); ++i) {
    EXPECT_TRUE(IsSealed(t.p.b_to_a[i])) << "frame " << i;
    EXPECT_FALSE(Contains(t.p.b_to_a[i], down)) << "frame " << i;
  }
  EXPECT_EQ(t.keys.hellos_opened, 1);
  // The handshake's secrets are gone once it split.
  const std::vector<uint8_t> zero(DXFP_KEY_SIZE, 0);
  EXPECT_TRUE(std::equal(zero.begin(), zero.end(), t.p.a.s()->cfg.auth.static_secret));
  EXPECT_TRUE(std::equal(zero.begin(), zero.end(), t.p.a.s()->hs.e_secret));
}

TEST(DxfpSessionAuth, ALostWelcomeBringsTheSameHelloAndTheSameWelcomeAgain) {
  AuthPair t;
  int welcomes = 0;
  t.p.filter = [&](bool from_a, Frame& f) {
    return from_a || TypeOf(f) != DXFP_WELCOME || ++welcomes > 1;  // the first WELCOME is lost
  };
  dxfp_session_connect(t.p.a.s(), t.p.now);
  t.p.RunUntil(t.p.now + 10'000'000);
  ASSERT_EQ(t.p.a.state(), DXFP_STATE_ESTABLISHED);
  ASSERT_EQ(t.p.b.state(), DXFP_STATE_ESTABLISHED);
  ASSERT_GE(t.p.a_to_b.size(), 2u);
  EXPECT_EQ(t.p.a_to_b[0], t.p.a_to_b[1]) << "a HELLO sent again is the same HELLO";
  ASSERT_GE(t.p.b_to_a.size(), 2u);
  EXPECT_EQ(t.p.b_to_a[0], t.p.b_to_a[1]) << "a WELCOME sent again is the same WELCOME";
  EXPECT_EQ(t.keys.hellos_opened, 1) << "the repeated HELLO went to the session, not a new one";
}

TEST(DxfpSessionAuth, AForgedWelcomeIsCountedAndTheRealOneStillEstablishes) {
  AuthPair t;
  // An impostor bridge answers the same HELLO with a key of its own.
  Keys impostor;
  impostor.host = t.keys.host;
  dxfp_session_config icfg = impostor.BridgeConfig();
  SessionNode fake(icfg);
  dxfp_session_connect(t.p.a.s(), t.p.now);
  std::array<uint8_t, DXFP_MAX_FRAME> buf{};
  size_t len = 0;
  ASSERT_TRUE(dxfp_session_poll(t.p.a.s(), t.p.now, buf.data(), buf.size(), &len));
  const Frame hello(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(len));
  // The impostor cannot even open it (MAC1 and the handshake are for the real bridge) ...
  EXPECT_EQ(impostor.Accept()(fake.s(), t.p.now, hello), DXFP_RX_NO_AUTH);
  // ... so it makes its own WELCOME from a handshake it starts itself with its key.
  dxfp_noise ihs{};
  Frame fake_hello = hello;
  {
    dxfp_writer w{};
    std::vector<uint8_t> b2(512);
    dxfp_header h{};
    ASSERT_TRUE(dxfp_header_peek(hello.data(), hello.size(), &h));
    h.length = 0;
    h.nrec = 0;
    ASSERT_EQ(dxfp_writer_init(&w, b2.data(), b2.size(), &h), DXFP_OK);
    dxfp_frame hf{};
    ASSERT_EQ(dxfp_frame_parse(hello.data(), hello.size(), DXFP_MAX_FRAME, &hf), DXFP_OK);
    dxfp_hello hi{};
    ASSERT_TRUE(dxfp_hello_identity(&hf, &hi));
    dxfp_credits c{{64, 64, 64}, {4096, 4096, 4096}};
    ASSERT_EQ(dxfp_writer_add_hello(&w, &hi), DXFP_OK);
    ASSERT_EQ(dxfp_writer_add_credits(&w, &c), DXFP_OK);
    size_t n = 0;
    ASSERT_EQ(dxfp_hello_finish(&ihs, &Ops(), t.keys.host.secret.data(), impostor.bridge.pub.data(),
                                1, &w, &n),
              DXFP_OK);
    fake_hello.assign(b2.begin(), b2.begin() + static_cast<ptrdiff_t>(n));
  }
  ASSERT_EQ(impostor.Accept()(fake.s(), t.p.now, fake_hello), DXFP_RX_OK);
  ASSERT_TRUE(dxfp_session_poll(fake.s(), t.p.now, buf.data(), buf.size(), &len));
  const Frame forged(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(len));
  ASSERT_EQ(TypeOf(forged), DXFP_WELCOME);
  // The forged WELCOME acknowledges the right sequence number only if the impostor's HELLO had
  // it; it did (same header). It fails the handshake: counted, a is still connecting.
  EXPECT_EQ(dxfp_session_receive(t.p.a.s(), t.p.now, forged.data(), forged.size()),
            DXFP_RX_BAD_TAG);
  EXPECT_EQ(t.p.a.counters().bad_tag, 1u);
  EXPECT_EQ(t.p.a.state(), DXFP_STATE_CONNECTING);
  // The real bridge's WELCOME still works.
  EXPECT_EQ(t.p.Deliver(t.p.b, hello), DXFP_RX_OK);
  t.p.RunUntil(t.p.now + 1'000'000);
  EXPECT_EQ(t.p.a.state(), DXFP_STATE_ESTABLISHED);
  EXPECT_EQ(t.p.b.state(), DXFP_STATE_ESTABLISHED);
}

TEST(DxfpSessionAuth, PlaintextDataAndCloseAreDroppedAndCounted) {
  AuthPair t;
  t.p.Establish();
  // A forger who knows both ends' session IDs and epochs (they are in the clear headers).
  dxfp_header cause{};
  cause.src_session = t.p.b.s()->cfg.session_id;  // "from" the bridge, to the host
  cause.src_epoch = t.p.b.s()->cfg.epoch;
  cause.dst_session = t.p.a.s()->cfg.session_id;
  cause.dst_epoch = t.p.a.s()->cfg.epoch;
  // dxfp_write_close answers a frame: it swaps the header's ends.
  std::swap(cause.src_session, cause.dst_session);
  std::swap(cause.src_epoch, cause.dst_epoch);
  std::array<uint8_t, 64> close{};
  const size_t n = dxfp_write_close(close.data(), close.size(), &cause, t.p.b.s()->cfg.epoch,
                                    DXFP_CLOSE_SHUTDOWN);
  ASSERT_GT(n, 0u);
  EXPECT_EQ(dxfp_session_receive(t.p.a.s(), t.p.now, close.data(), n), DXFP_RX_UNSEALED);
  EXPECT_EQ(t.p.a.counters().unsealed, 1u);
  EXPECT_EQ(t.p.a.state(), DXFP_STATE_ESTABLISHED);

  // A plaintext DATA carrying a TLP, well formed, with the right IDs and sequence numbers.
  std::vector<uint8_t> buf(512);
  dxfp_header h{};
  h.type = DXFP_DATA;
  h.src_session = t.p.b.s()->cfg.session_id;
  h.src_epoch = t.p.b.s()->cfg.epoch;
  h.dst_session = t.p.a.s()->cfg.session_id;
  h.dst_epoch = t.p.a.s()->cfg.epoch;
  h.seq = t.p.a.s()->expected;
  h.ack = t.p.a.s()->una;
  dxfp_writer w{};
  ASSERT_EQ(dxfp_writer_init(&w, buf.data(), buf.size(), &h), DXFP_OK);
  const auto payload = Pattern(64, 5);
  const dxpu_tlp tlp = MakeMwr(0x5000, payload);
  ASSERT_EQ(dxfp_writer_add_tlp(&w, &tlp), DXFP_OK);
  size_t len = 0;
  dxfp_writer_finish(&w, &len);
  EXPECT_EQ(dxfp_session_receive(t.p.a.s(), t.p.now, buf.data(), len), DXFP_RX_UNSEALED);
  EXPECT_EQ(t.p.a.counters().unsealed, 2u);
  EXPECT_TRUE(t.p.a.delivered.empty());
  EXPECT_FALSE(t.p.a.down);
}

TEST(DxfpSessionAuth, AReplayedSealedFrameIsRefusedAndDeliversNothingTwice) {
  AuthPair t;
  t.p.Establish();
  const auto payload = Pattern(128, 3);
  const dxpu_tlp w1 = MakeMwr(0x1000, payload);
  ASSERT_EQ(dxfp_session_send(t.p.a.s(), t.p.now, &w1), DXFP_SEND_OK);
  t.p.Pump();
  ASSERT_EQ(t.p.b.delivered.size(), 1u);
  const Frame captured = t.p.a_to_b.back();
  ASSERT_TRUE(IsSealed(captured));
  EXPECT_EQ(t.p.Deliver(t.p.b, captured), DXFP_RX_REPLAYED);
  EXPECT_EQ(t.p.b.counters().replayed, 1u);
  t.p.Pump();
  EXPECT_EQ(t.p.b.delivered.size(), 1u);
}

TEST(DxfpSessionAuth, AChangedSealedFrameIsRefusedAndTheTlpStillArrivesByRetransmission) {
  AuthPair t;
  t.p.Establish();
  int changed = 0;
  std::mt19937 rng(7);
  t.p.filter = [&](bool from_a, Frame& f) {
    if (from_a && IsSealed(f) && changed < 3) {
      // Any bit after the header: the counter, the records or the tag.
      const size_t byte = DXFP_HDR_SIZE + rng() % (f.size() - DXFP_HDR_SIZE);
      f[byte] ^= static_cast<uint8_t>(1u << (rng() % 8));
      changed++;
    }
    return true;
  };
  const auto payload = Pattern(256, 11);
  const dxpu_tlp w1 = MakeMwr(0x1000, payload);
  ASSERT_EQ(dxfp_session_send(t.p.a.s(), t.p.now, &w1), DXFP_SEND_OK);
  t.p.RunUntil(t.p.now + 50'000'000);
  EXPECT_EQ(changed, 3);
  EXPECT_EQ(t.p.b.counters().bad_tag + t.p.b.counters().replayed, 3u);
  ASSERT_EQ(t.p.b.delivered.size(), 1u);
  EXPECT_EQ(t.p.b.delivered[0].payload, payload);
  EXPECT_FALSE(t.p.a.down);
  EXPECT_FALSE(t.p.b.down);
}

TEST(DxfpSessionAuth, AResponderWithAuthenticationRefusesAHelloWithout) {
  Keys keys;
  SessionPair p(TestConfig(DXFP_ROLE_INITIATOR), keys.BridgeConfig());  // the host has no keys
  dxfp_session_connect(p.a.s(), p.now);
  p.Pump();
  ASSERT_FALSE(p.a_to_b.empty());
  EXPECT_EQ(p.b.state(), DXFP_STATE_IDLE);
  EXPECT_EQ(p.b.counters().no_auth, p.a_to_b.size());
  EXPECT_EQ(p.a.state(), DXFP_STATE_CONNECTING);
}

TEST(DxfpSessionAuth, OnALossyWireEveryTlpArrivesInOrderAndNoFrameExceedsMaxFrame) {
  Keys keys;
  dxfp_session_config ac = keys.HostConfig(), bc = keys.BridgeConfig();
  ac.max_frame = bc.max_frame = 1500;
  SessionPair p(ac, bc);
  p.accept = keys.Accept();
  std::mt19937 rng(42);
  size_t biggest = 0;
  p.filter = [&](bool, Frame& f) {
    biggest = std::max(biggest, f.size());
    return rng() % 10 != 0;  // 10% lost each way, the handshake included
  };
  dxfp_session_connect(p.a.s(), p.now);
  p.RunUntil(p.now + 50'000'000);
  ASSERT_EQ(p.a.state(), DXFP_STATE_ESTABLISHED);
  std::vector<std::vector<uint8_t>> payloads;
  for (int i = 0; i < 200; ++i)
    payloads.push_back(Pattern(4 * (1 + i % 64), static_cast<uint8_t>(i)));
  size_t sent = 0;
  for (int round = 0; round < 2000 && p.b.delivered.size() < payloads.size(); ++round) {
    while (sent < payloads.size()) {
      const dxpu_tlp w = MakeMwr(0x10000 + sent * 0x100, payloads[sent]);
      if (dxfp_session_send(p.a.s(), p.now, &w) != DXFP_SEND_OK) break;
      sent++;
    }
    p.RunUntil(p.now + 1'000'000);
  }
  ASSERT_EQ(p.b.delivered.size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) EXPECT_EQ(p.b.delivered[i].payload, payloads[i]);
  EXPECT_LE(biggest, 1500u);
  EXPECT_GT(p.a.counters().tlps_retx, 0u);
  EXPECT_FALSE(p.a.down);
}

TEST(DxfpSessionAuth, ASealedCloseEndsThePeersSession) {
  AuthPair t;
  t.p.Establish();
  dxfp_session_close(t.p.a.s(), t.p.now, DXFP_CLOSE_SHUTDOWN);
  t.p.Pump();
  ASSERT_TRUE(IsSealed(t.p.a_to_b.back()));
  EXPECT_EQ(TypeOf(t.p.a_to_b.back()), DXFP_CLOSE) << "the type byte stays in the clear";
  EXPECT_TRUE(t.p.b.down);
  EXPECT_EQ(t.p.b.down_reason, DXFP_DOWN_PEER_CLOSED);
  const std::vector<uint8_t> zero(sizeof(dxfp_noise_keys), 0);
  const auto* k = reinterpret_cast<const uint8_t*>(&t.p.a.s()->keys);
  EXPECT_TRUE(std::equal(zero.begin(), zero.end(), k)) << "keys wiped after the CLOSE";
}

TEST(DxfpSessionAuth, AnAuthenticatedSessionNeedsEveryPrimitiveAndRoomForItsHello) {
  Keys keys;
  dxfp_session_config c = keys.HostConfig();
  EXPECT_EQ(dxfp_session_config_check(&c), nullptr);
  c.max_frame = 200;
  EXPECT_NE(dxfp_session_config_check(&c), nullptr);
  dxfp_crypto_ops partial = Ops();
  partial.aead_open = nullptr;
  c = keys.HostConfig();
  c.auth.ops = &partial;
  EXPECT_NE(dxfp_session_config_check(&c), nullptr);
}

}  // namespace
}  // namespace dxpu::test
