// Unit tests of the DxFP session state machine (lib/core/dxfp_session.c): every state
// transition, reliability (loss, NAK, RTO, duplicates), credits, link down, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "core/crc32c.h"
#include "core/dxfp_session.h"
#include "core/tlp_build.h"
#include "session_pair.h"
#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

constexpr uint64_t kMs = DXFP_NS_PER_MS;
constexpr uint64_t kUs = DXFP_NS_PER_US;

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

dxfp_header HeaderOf(const SessionPair::Frame& f) {
  dxfp_frame parsed{};
  EXPECT_EQ(dxfp_frame_parse(f.data(), f.size(), DXFP_MAX_FRAME, &parsed), DXFP_OK);
  return parsed.hdr;
}

// Re-seal a frame after a test edited its header (so only the edit is wrong).
void Reseal(SessionPair::Frame& f) {
  const size_t body = f.size() - DXFP_CRC_SIZE;
  dxpu_put_be32(&f[body], dxpu_crc32c(0, f.data(), body));
}

// Sends n posted writes of `bytes` each with distinct addresses; returns their payloads.
std::vector<std::vector<uint8_t>> SendWrites(SessionPair& p, SessionNode& from, int n, size_t bytes,
                                             uint64_t base = 0x1000) {
  std::vector<std::vector<uint8_t>> sent;
  for (int i = 0; i < n; i++) {
    sent.push_back(Pattern(bytes, static_cast<uint8_t>(i)));
    const dxpu_tlp t = MakeMwr(base + static_cast<uint64_t>(i) * 0x1000, sent.back());
    EXPECT_EQ(dxfp_session_send(from.s(), p.now, &t), DXFP_SEND_OK) << "TLP " << i;
  }
  return sent;
}

void ExpectDeliveredInOrder(const SessionNode& to, const std::vector<std::vector<uint8_t>>& sent,
                            uint64_t base = 0x1000) {
  ASSERT_EQ(to.delivered.size(), sent.size());
  for (size_t i = 0; i < sent.size(); i++) {
    EXPECT_EQ(to.delivered[i].hdr.addr, base + i * 0x1000) << i;
    EXPECT_EQ(to.delivered[i].payload, sent[i]) << i;
  }
}

TEST(DxfpSessionConfig, DefaultsAreValidAndEachBadFieldIsNamed) {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  EXPECT_EQ(dxfp_session_config_check(&c), nullptr);
  EXPECT_GT(dxfp_session_mem_size(&c), c.replay_bytes);

  auto bad = [&](auto edit, const char* word) {
    dxfp_session_config x = c;
    edit(x);
    const char* why = dxfp_session_config_check(&x);
    ASSERT_NE(why, nullptr) << word;
    EXPECT_NE(std::string(why).find(word), std::string::npos) << why;
    EXPECT_EQ(dxfp_session_mem_size(&x), 0u);
  };
  bad([](auto& x) { x.session_id = 0; }, "session ID");
  bad([](auto& x) { x.epoch = 0; }, "epoch");
  bad([](auto& x) { x.max_frame = 64; }, "max_frame");
  bad([](auto& x) { x.max_frame = 9220; }, "max_frame");
  bad([](auto& x) { x.replay_window = 100; }, "power of two");
  bad([](auto& x) { x.replay_bytes = 1000; }, "replay_bytes");
  bad([](auto& x) { x.max_np = 0; }, "max_np");
  bad([](auto& x) { x.rx_hdr_cap[1] = 0; }, "capacities");
  bad([](auto& x) { x.rx_data_cap[2] = 100; }, "largest payload");
  bad([](auto& x) { x.link_down_ns = x.keepalive_ns; }, "link_down_ns");
  bad([](auto& x) { x.min_rto_ns = 2 * x.initial_rto_ns; }, "RTO");
  bad([](auto& x) { x.max_rto_ns = x.link_down_ns; }, "half");
}

TEST(DxfpSessionConfig, ReplaySizedFromBandwidthDelayProduct) {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  // 100 Gb/s, 10 us RTT + 50 us ack delay, twice: 12.5 GB/s * 120 us = 1.5 MB, + 2 frames.
  dxfp_session_config_size_replay(&c, 100'000'000'000ull, 10 * kUs, 256);
  EXPECT_EQ(c.replay_bytes, 1'500'000u + 2 * DXFP_MAX_FRAME);
  EXPECT_EQ(c.replay_window, 8192u);  // 1.52 MB / 256 rounded up to a power of two
  EXPECT_EQ(dxfp_session_config_check(&c), nullptr);
  // A slow link still holds two largest TLPs.
  dxfp_session_config_size_replay(&c, 1000, 1000, 64);
  EXPECT_GE(c.replay_bytes, 2 * DXPU_TLP_MAX_SIZE);
}

TEST(DxfpSession, InitRefusesBadArguments) {
  dxfp_session_config c = TestConfig(DXFP_ROLE_INITIATOR);
  std::vector<uint64_t> mem(dxfp_session_mem_size(&c) / 8 + 1);
  dxfp_session s{};
  const dxfp_session_ops ops = {[](void*, const dxpu_tlp*) {},
                                [](void*, dxfp_down_reason, const dxpu_tlp*, size_t) {}, nullptr};
  EXPECT_FALSE(dxfp_session_init(&s, &c, mem.data(), 16, &ops, nullptr));
  const dxfp_session_ops no_deliver = {nullptr, ops.link_down, nullptr};
  EXPECT_FALSE(dxfp_session_init(&s, &c, mem.data(), mem.size() * 8, &no_deliver, nullptr));
  EXPECT_TRUE(dxfp_session_init(&s, &c, mem.data(), mem.size() * 8, &ops, nullptr));
  EXPECT_EQ(dxfp_session_get_state(&s), DXFP_STATE_IDLE);
  EXPECT_EQ(dxfp_session_next_deadline(&s), DXFP_NO_DEADLINE);
  const dxpu_tlp t = MakeMrd(1, 1, 0x1000, 1);
  EXPECT_EQ(dxfp_session_send(&s, 0, &t), DXFP_SEND_NOT_READY);
}

TEST(DxfpSession, HandshakeEstablishesBothEnds) {
  SessionPair p;
  dxfp_session_connect(p.a.s(), p.now);
  EXPECT_EQ(p.a.state(), DXFP_STATE_CONNECTING);
  p.Pump();
  EXPECT_EQ(p.a.state(), DXFP_STATE_ESTABLISHED);
  EXPECT_EQ(p.b.state(), DXFP_STATE_ESTABLISHED);
  EXPECT_EQ(p.a.established_calls, 1);
  EXPECT_EQ(p.b.established_calls, 1);
  // HELLO, then the initiator's first DATA (which establishes the responder).
  ASSERT_GE(p.a_to_b.size(), 2u);
  const dxfp_header hello = HeaderOf(p.a_to_b[0]);
  EXPECT_EQ(hello.type, DXFP_HELLO);
  EXPECT_EQ(hello.dst_session, 0u);
  EXPECT_EQ(hello.src_session, 0x10u);
  EXPECT_EQ(hello.src_epoch, 0xaaaa0001u);
  EXPECT_EQ(hello.seq, 0xfffffff0u);
  const dxfp_header welcome = HeaderOf(p.b_to_a[0]);
  EXPECT_EQ(welcome.type, DXFP_WELCOME);
  EXPECT_EQ(welcome.dst_session, 0x10u);
  EXPECT_EQ(welcome.src_session, 0x20u);
  EXPECT_EQ(welcome.dst_epoch, 0xaaaa0001u);
  EXPECT_EQ(welcome.ack, 0xfffffff0u);
  EXPECT_EQ(HeaderOf(p.a_to_b[1]).type, DXFP_DATA);
  EXPECT_EQ(p.a.s()->peer_node_id, 0x2222u);
  EXPECT_EQ(p.b.s()->peer_node_id, 0x1111u);
  // Nothing more to say until the keepalive.
  EXPECT_EQ(p.NextDeadline(), p.now + p.a.s()->cfg.keepalive_ns);
}

TEST(DxfpSession, HelloRetriesWithBackoffThenHandshakeTimesOut) {
  SessionPair p;
  p.filter = [](bool, SessionPair::Frame&) { return false; };  // nothing arrives
  const uint64_t start = p.now;
  dxfp_session_connect(p.a.s(), p.now);
  p.RunUntil(start + 100 * kMs);
  EXPECT_TRUE(p.a.down);
  EXPECT_EQ(p.a.down_reason, DXFP_DOWN_HANDSHAKE_TIMEOUT);
  // HELLOs at 0, 1, 3, 7, 12, 17 ms (interval 1, 2, 4, 5 = max RTO, 5) until 20 ms.
  EXPECT_EQ(p.a.counters().hellos_tx, 6u);
  EXPECT_EQ(p.b.state(), DXFP_STATE_IDLE);
  EXPECT_EQ(dxfp_session_next_deadline(p.a.s()), DXFP_NO_DEADLINE);
}

TEST(DxfpSession, LostWelcomeIsRepeatedForTheRepeatedHello) {
  SessionPair p;
  int welcomes = 0;
  p.filter = [&](bool from_a, SessionPair::Frame& f) {
    return from_a || HeaderOf(f).type != DXFP_WELCOME || ++welcomes > 1;
  };
  dxfp_session_connect(p.a.s(), p.now);
  p.Pump();
  EXPECT_EQ(p.a.state(), DXFP_STATE_CONNECTING);
  EXPECT_EQ(p.b.state(), DXFP_STATE_ACCEPTING);
  p.RunUntil(p.now + 2 * kMs);
  EXPECT_EQ(p.a.state(), DXFP_STATE_ESTABLISHED);
  EXPECT_EQ(p.b.state(), DXFP_STATE_ESTABLISHED);
  EXPECT_EQ(p.b.counters().welcomes_tx, 2u);
}

TEST(DxfpSession, ResponderRefusesAnUnusableHello) {
  SessionPair p;
  dxfp_session_connect(p.a.s(), p.now);
  std::vector<uint8_t> buf(DXFP_MAX_FRAME);
  size_t len = 0;
  ASSERT_TRUE(dxfp_session_poll(p.a.s(), p.now, buf.data(), buf.size(), &len));
  buf.resize(len);
  // The HELLO record starts after the header and its record header: versions at +36, +37.
  auto with_versions = [&](uint8_t lo, uint8_t hi) {
    SessionPair::Frame f = buf;
    f[DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE] = lo;
    f[DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + 1] = hi;
    Reseal(f);
    return f;
  };
  EXPECT_EQ(p.Deliver(p.b, with_versions(2, 3)), DXFP_RX_BAD_VERSION);
  EXPECT_EQ(p.b.state(), DXFP_STATE_IDLE);
  SessionPair::Frame no_session = buf;
  dxpu_put_be32(&no_session[DXFP_OFF_SRC_SESSION], 0);
  Reseal(no_session);
  EXPECT_EQ(p.Deliver(p.b, no_session), DXFP_RX_MALFORMED);
  EXPECT_EQ(p.b.state(), DXFP_STATE_IDLE);
  // An initiator does not accept; an accepting responder does not accept twice.
  EXPECT_EQ(p.Deliver(p.b, buf), DXFP_RX_OK);
  EXPECT_EQ(p.b.state(), DXFP_STATE_ACCEPTING);
  dxfp_frame f{};
  ASSERT_EQ(dxfp_frame_parse(buf.data(), buf.size(), DXFP_MAX_FRAME, &f), DXFP_OK);
  EXPECT_EQ(dxfp_session_accept(p.b.s(), p.now, &f), DXFP_RX_UNEXPECTED);
  EXPECT_EQ(dxfp_session_accept(p.a.s(), p.now, &f), DXFP_RX_UNEXPECTED);
  // A HELLO from another incarnation of the initiator is stale for this session.
  SessionPair::Frame other = buf;
  dxpu_put_be32(&other[DXFP_OFF_SRC_EPOCH], 0x77777777);
  Reseal(other);
  EXPECT_EQ(p.Deliver(p.b, other), DXFP_RX_STALE_EPOCH);
  dxfp_hello id{};
  ASSERT_TRUE(dxfp_hello_identity(&f, &id));
  EXPECT_EQ(id.node_id, 0x1111u);
}

TEST(DxfpSession, ResponderGivesUpWhenTheFirstDataNeverComes) {
  SessionPair p;
  p.filter = [](bool from_a, SessionPair::Frame& f) {
    return !from_a || HeaderOf(f).type == DXFP_HELLO;  // only HELLO gets through
  };
  dxfp_session_connect(p.a.s(), p.now);
  p.Pump();
  EXPECT_EQ(p.b.state(), DXFP_STATE_ACCEPTING);
  const uint64_t accepted = p.now;
  p.RunUntil(accepted + 100 * kMs);
  EXPECT_TRUE(p.b.down);
  EXPECT_EQ(p.b.down_reason, DXFP_DOWN_HANDSHAKE_TIMEOUT);
}

TEST(DxfpSession, RepeatedHelloAfterEstablishmentIsAnsweredAgain) {
  SessionPair p;
  p.Establish();
  const SessionPair::Frame hello = p.a_to_b.front();
  EXPECT_EQ(p.Deliver(p.b, hello), DXFP_RX_OK);
  p.Pump();
  EXPECT_EQ(p.b.counters().welcomes_tx, 2u);
  EXPECT_EQ(p.a.state(), DXFP_STATE_ESTABLISHED);
  EXPECT_EQ(p.b.state(), DXFP_STATE_ESTABLISHED);
  // A WELCOME at a responder, or a HELLO at an initiator, is unexpected.
  EXPECT_EQ(p.Deliver(p.a, hello), DXFP_RX_UNEXPECTED);
}

TEST(DxfpSession, LostFirstDataLeavesResponderAcceptingUntilTheNextFrame) {
  SessionPair p;
  int datas = 0;
  p.filter = [&](bool from_a, SessionPair::Frame& f) {
    return !from_a || HeaderOf(f).type != DXFP_DATA || ++datas > 1;
  };
  p.Pump();
  dxfp_session_connect(p.a.s(), p.now);
  p.Pump();
  EXPECT_EQ(p.a.state(), DXFP_STATE_ESTABLISHED);
  EXPECT_EQ(p.b.state(), DXFP_STATE_ACCEPTING);
  // The responder cannot send yet.
  const dxpu_tlp t = MakeMrd(1, 1, 0x1000, 1);
  EXPECT_EQ(dxfp_session_send(p.b.s(), p.now, &t), DXFP_SEND_NOT_READY);
  // The initiator's next frame (here a write) establishes it.
  const auto sent = SendWrites(p, p.a, 1, 64);
  p.Pump();
  EXPECT_EQ(p.b.state(), DXFP_STATE_ESTABLISHED);
  ExpectDeliveredInOrder(p.b, sent);
}

TEST(DxfpSession, DataFlowsBothWaysInOrderAndAcksEmptyTheReplayBuffer) {
  SessionPair p;
  p.Establish();
  const auto ab = SendWrites(p, p.a, 40, 128);
  const auto ba = SendWrites(p, p.b, 30, 256, 0x100000);
  EXPECT_EQ(dxfp_session_queued(p.a.s()), 40u);
  p.RunUntil(p.now + 1 * kMs);
  ExpectDeliveredInOrder(p.b, ab);
  ExpectDeliveredInOrder(p.a, ba, 0x100000);
  EXPECT_EQ(dxfp_session_in_flight(p.a.s()), 0u);
  EXPECT_EQ(dxfp_session_in_flight(p.b.s()), 0u);
  EXPECT_EQ(p.a.counters().tlps_tx, 40u);
  EXPECT_EQ(p.a.counters().tlps_retx, 0u);
  EXPECT_EQ(p.b.counters().tlps_delivered, 40u);
  EXPECT_EQ(p.a.s()->ring_count, 0u);
  EXPECT_TRUE(p.a.s()->rtt.has_sample);
}

TEST(DxfpSession, PacksTlpsUpToTheFrameSize) {
  for (uint32_t max_frame : {1500u, 9000u}) {
    dxfp_session_config ac = TestConfig(DXFP_ROLE_INITIATOR);
    dxfp_session_config bc = TestConfig(DXFP_ROLE_RESPONDER);
    ac.max_frame = max_frame;
    bc.max_frame = 9216;  // the smaller end wins
    SessionPair p(ac, bc);
    p.Establish();
    const size_t first = p.a_to_b.size();
    const auto sent = SendWrites(p, p.a, 40, 64);
    p.Pump();
    ExpectDeliveredInOrder(p.b, sent);
    // Each 64-byte MWr (3DW) is 76 bytes + a 4-byte record header = 80.
    const size_t per_frame = (max_frame - DXFP_MIN_FRAME - 28) / 80;
    const size_t frames = p.a_to_b.size() - first;
    EXPECT_EQ(frames, (40 + per_frame - 1) / per_frame) << max_frame;
    for (size_t i = first; i < p.a_to_b.size(); i++) EXPECT_LE(p.a_to_b[i].size(), max_frame);
    EXPECT_EQ(p.b.s()->max_frame, max_frame);
  }
}

TEST(DxfpSession, LostFrameIsNakedAndReplayedExactlyOnce) {
  dxfp_session_config ac = TestConfig(DXFP_ROLE_INITIATOR);
  ac.max_frame = 1500;
  SessionPair p(ac, TestConfig(DXFP_ROLE_RESPONDER));
  p.Establish();
  int data = 0;
  p.filter = [&](bool from_a, SessionPair::Frame& f) {
    // Drop the first frame of TLPs from a; later ones reveal the gap.
    return !(from_a && HeaderOf(f).nrec > 1 && ++data == 1);
  };
  const auto sent = SendWrites(p, p.a, 50, 64);
  p.Pump();
  ExpectDeliveredInOrder(p.b, sent);
  EXPECT_GT(p.b.counters().gap, 0u);
  EXPECT_EQ(p.b.counters().naks_tx, 1u);
  EXPECT_EQ(p.a.counters().naks_rx, 1u);
  EXPECT_GT(p.a.counters().tlps_retx, 0u);
  EXPECT_EQ(p.a.counters().rto_expiries, 0u);  // the NAK, not the timer, recovered it
}

TEST(DxfpSession, LostLastFrameIsRecoveredByTheTimer) {
  SessionPair p;
  p.Establish();
  bool dropped = false;
  p.filter = [&](bool from_a, SessionPair::Frame& f) {
    if (from_a && !dropped && HeaderOf(f).nrec > 1) {
      dropped = true;
      return false;
    }
    return true;
  };
  const auto sent = SendWrites(p, p.a, 3, 64);
  p.Pump();
  EXPECT_TRUE(p.b.delivered.empty());
  const uint64_t rto = p.a.s()->rtt.rto;
  EXPECT_EQ(dxfp_session_next_deadline(p.a.s()), p.now + rto);
  p.RunUntil(p.now + rto);
  ExpectDeliveredInOrder(p.b, sent);
  EXPECT_EQ(p.a.counters().rto_expiries, 1u);
  EXPECT_EQ(p.a.counters().tlps_retx, 3u);
  // The last frame of a replay asks for an acknowledgement at once.
  EXPECT_TRUE(HeaderOf(p.a_to_b.back()).flags & DXFP_F_ACK_REQ ||
              HeaderOf(p.a_to_b[p.a_to_b.size() - 1]).nrec == 1);
  EXPECT_EQ(dxfp_session_in_flight(p.a.s()), 0u);
}

// A replay that starts while another is running (a second timeout, or a NAK, before the first
// replay has gone out whole) resends TLPs that were all sent before: each must count as a
// retransmission (and give no RTT sample: Karn), none as a first transmission again.
TEST(DxfpSession, ReplayStartedDuringAReplayCountsEveryResentTlpAsARetransmission) {
  dxfp_session_config ac = TestConfig(DXFP_ROLE_INITIATOR);
  ac.max_frame = 512;  // a few 64-byte writes per frame
  SessionPair p(ac, TestConfig(DXFP_ROLE_RESPONDER));
  p.Establish();
  p.filter = [](bool from_a, SessionPair::Frame& f) { return !(from_a && HeaderOf(f).nrec > 1); };
  const auto sent = SendWrites(p, p.a, 20, 64);
  p.Pump();  // every frame of TLPs is lost
  ASSERT_EQ(p.a.counters().tlps_tx, 20u);
  ASSERT_TRUE(p.b.delivered.empty());
  // The timer starts a replay; only its first frame goes out (and is lost)...
  std::vector<uint8_t> frame(ac.max_frame);
  size_t len = 0;
  p.now = p.a.s()->rto_deadline;
  ASSERT_TRUE(dxfp_session_poll(p.a.s(), p.now, frame.data(), frame.size(), &len));
  const uint64_t resent_first = p.a.counters().tlps_retx;
  ASSERT_GT(resent_first, 0u);
  ASSERT_LT(resent_first, 20u);
  // ...before the timer goes back to the oldest TLP again; this time everything arrives.
  p.filter = nullptr;
  p.now = p.a.s()->rto_deadline;
  p.Pump();
  p.RunUntil(p.now + 10 * DXFP_NS_PER_MS);
  ExpectDeliveredInOrder(p.b, sent);
  EXPECT_EQ(p.a.counters().rto_expiries, 2u);
  EXPECT_EQ(p.a.counters().tlps_tx, 20u);  // each TLP's first transmission, once
  EXPECT_EQ(p.a.counters().tlps_retx, resent_first + 20u);
  EXPECT_EQ(dxfp_session_in_flight(p.a.s()), 0u);
}

TEST(DxfpSession, DuplicateFramesAreNeverDeliveredTwice) {
  SessionPair p;
  p.Establish();
  const auto sent = SendWrites(p, p.a, 5, 64);
  p.Pump();
  const SessionPair::Frame data = p.a_to_b[p.a_to_b.size() - 1 - 0];
  // Replay every frame a has sent so far, twice.
  const auto copy = p.a_to_b;
  for (int round = 0; round < 2; round++)
    for (const auto& f : copy) p.Deliver(p.b, f);
  p.Pump();
  ExpectDeliveredInOrder(p.b, sent);
  EXPECT_GE(p.b.counters().duplicate, 10u);
  (void)data;
}

TEST(DxfpSession, StandaloneAckAfterAckDelay) {
  SessionPair p;
  p.Establish();
  p.filter = nullptr;
  const size_t before = p.b_to_a.size();
  SendWrites(p, p.a, 1, 64);
  // Deliver a's frame, but let b stay silent until its ack timer.
  size_t len = 0;
  std::vector<uint8_t> buf(DXFP_MAX_FRAME);
  ASSERT_TRUE(dxfp_session_poll(p.a.s(), p.now, buf.data(), buf.size(), &len));
  buf.resize(len);
  EXPECT_EQ(p.Deliver(p.b, buf), DXFP_RX_OK);
  EXPECT_EQ(dxfp_session_next_deadline(p.b.s()), p.now + p.b.s()->cfg.ack_delay_ns);
  std::vector<uint8_t> out(DXFP_MAX_FRAME);
  EXPECT_FALSE(dxfp_session_poll(p.b.s(), p.now, out.data(), out.size(), &len));
  p.RunUntil(p.now + p.b.s()->cfg.ack_delay_ns);
  EXPECT_EQ(p.b_to_a.size(), before + 1);
  EXPECT_EQ(p.b.counters().acks_tx, 1u + 0u * before);
  EXPECT_EQ(dxfp_session_in_flight(p.a.s()), 0u);
}

TEST(DxfpSession, KeepaliveKeepsAnIdleSessionUp) {
  SessionPair p;
  p.Establish();
  p.RunUntil(p.now + 200 * kMs);
  EXPECT_EQ(p.a.state(), DXFP_STATE_ESTABLISHED);
  EXPECT_EQ(p.b.state(), DXFP_STATE_ESTABLISHED);
  EXPECT_GE(p.a.counters().keepalives_tx + p.b.counters().keepalives_tx, 150u);
  EXPECT_FALSE(p.a.down);
}

TEST(DxfpSession, NoProgressTakesTheLinkDownWithTheUnansweredRequests) {
  SessionPair p;
  p.Establish();
  // Three reads; the second is answered in two completions, the third in one
  // partial completion only.
  for (uint16_t tag = 1; tag <= 3; tag++) {
    const dxpu_tlp rd = MakeMrd(0x0100, tag, 0x10000 + tag * 0x100ull, 32);
    ASSERT_EQ(dxfp_session_send(p.a.s(), p.now, &rd), DXFP_SEND_OK);
  }
  p.Pump();
  const auto half = Pattern(64, 1);
  const dxpu_tlp c2a = MakeCpld(0x0100, 2, half, 128);
  const dxpu_tlp c2b = MakeCpld(0x0100, 2, half, 64);
  const dxpu_tlp c3a = MakeCpld(0x0100, 3, half, 128);
  for (const auto* c : {&c2a, &c2b, &c3a}) ASSERT_EQ(dxfp_session_send(p.b.s(), p.now, c), 0);
  p.Pump();
  ASSERT_EQ(p.a.delivered.size(), 3u);
  // Now the path fails both ways.
  p.filter = [](bool, SessionPair::Frame&) { return false; };
  const uint64_t last = p.now;
  const auto more = SendWrites(p, p.a, 2, 64);
  p.RunUntil(last + 100 * kMs);
  ASSERT_TRUE(p.a.down);
  EXPECT_EQ(p.a.down_reason, DXFP_DOWN_NO_PROGRESS);
  ASSERT_EQ(p.a.unanswered.size(), 2u);
  EXPECT_EQ(p.a.unanswered[0].tag, 1);  // oldest first
  EXPECT_EQ(p.a.unanswered[1].tag, 3);
  EXPECT_EQ(p.a.unanswered[0].kind, DXPU_TLP_MRD);
  EXPECT_EQ(p.a.unanswered[0].addr, 0x10100u);
  EXPECT_TRUE(p.b.down);
  EXPECT_TRUE(p.b.unanswered.empty());
  // Within the bound: link_down after the last progress, plus one timer step.
  EXPECT_EQ(p.a.state(), DXFP_STATE_DOWN);
  // A down session refuses TLPs and frames.
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &c2a), DXFP_SEND_DOWN);
  EXPECT_EQ(p.Deliver(p.a, p.b_to_a.back()), DXFP_RX_DOWN);
}

TEST(DxfpSession, LinkDownIsReportedAtTheBound) {
  SessionPair p;
  p.Establish();
  p.filter = [](bool, SessionPair::Frame&) { return false; };
  const uint64_t cut = p.now;
  SendWrites(p, p.a, 1, 64);
  uint64_t down_at = 0;
  for (int i = 0; i < 10000 && !p.a.down; i++) {
    p.now = p.NextDeadline();
    p.Pump();
    if (p.a.down) down_at = p.now;
  }
  ASSERT_TRUE(p.a.down);
  EXPECT_EQ(down_at, cut + p.a.s()->cfg.link_down_ns);
}

TEST(DxfpSession, OneWayFailureTakesBothEndsDown) {
  SessionPair p;
  p.Establish();
  p.filter = [](bool from_a, SessionPair::Frame&) { return !from_a; };  // a -> b fails
  const uint64_t cut = p.now;
  p.RunUntil(cut + 3 * p.a.s()->cfg.link_down_ns);
  EXPECT_TRUE(p.b.down);
  EXPECT_TRUE(p.a.down);
  EXPECT_EQ(p.b.down_reason, DXFP_DOWN_NO_PROGRESS);
  // b told a with a CLOSE, which does reach a.
  EXPECT_EQ(p.a.down_reason, DXFP_DOWN_PEER_CLOSED);
  EXPECT_EQ(p.a.s()->peer_close_reason, DXFP_CLOSE_LINK_TIMEOUT);
}

TEST(DxfpSession, HealedPathRecoversBeforeLinkDown) {
  SessionPair p;
  p.Establish();
  bool cut = true;
  p.filter = [&](bool, SessionPair::Frame&) { return !cut; };
  const auto sent = SendWrites(p, p.a, 20, 64);
  p.RunUntil(p.now + 10 * kMs);
  cut = false;
  p.RunUntil(p.now + 10 * kMs);
  EXPECT_FALSE(p.a.down);
  EXPECT_FALSE(p.b.down);
  ExpectDeliveredInOrder(p.b, sent);
  EXPECT_GE(p.a.counters().rto_expiries, 2u);
}

TEST(DxfpSession, CreditsBlockAClassButNotTheOthers) {
  dxfp_session_config bc = TestConfig(DXFP_ROLE_RESPONDER);
  bc.rx_hdr_cap[DXPU_TLP_CLASS_NON_POSTED] = 2;
  SessionPair p(TestConfig(DXFP_ROLE_INITIATOR), bc);
  p.b.auto_release = false;
  p.Establish();
  const dxpu_tlp r1 = MakeMrd(1, 1, 0x1000, 1);
  const dxpu_tlp r2 = MakeMrd(1, 2, 0x1000, 1);
  const dxpu_tlp r3 = MakeMrd(1, 3, 0x1000, 1);
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &r1), DXFP_SEND_OK);
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &r2), DXFP_SEND_OK);
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &r3), DXFP_SEND_NO_CREDIT);
  EXPECT_EQ(dxfp_session_can_send(p.a.s(), DXPU_TLP_CLASS_NON_POSTED, 0, 12), DXFP_SEND_NO_CREDIT);
  // A posted write passes the blocked read.
  const auto w = Pattern(64, 9);
  const dxpu_tlp wr = MakeMwr(0x2000, w);
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &wr), DXFP_SEND_OK);
  p.Pump();
  ASSERT_EQ(p.b.delivered.size(), 3u);
  EXPECT_EQ(p.a.counters().credit_refusals, 1u);
  // The receiver consumes one read: with a cap of 2, one is half the buffer, so the
  // new limit is announced at once.
  dxfp_session_release(p.b.s(), DXPU_TLP_CLASS_NON_POSTED, 0);
  p.Pump();
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &r3), DXFP_SEND_OK);
}

TEST(DxfpSession, CreditProbeRecoversALostCreditUpdate) {
  dxfp_session_config bc = TestConfig(DXFP_ROLE_RESPONDER);
  bc.rx_hdr_cap[DXPU_TLP_CLASS_POSTED] = 4;
  SessionPair p(TestConfig(DXFP_ROLE_INITIATOR), bc);
  p.b.auto_release = false;
  p.Establish();
  SendWrites(p, p.a, 4, 64);
  p.Pump();
  const auto w = Pattern(64, 1);
  const dxpu_tlp more = MakeMwr(0x9000, w);
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &more), DXFP_SEND_NO_CREDIT);
  // b frees everything, but the frame announcing it is lost.
  bool lose = true;
  p.filter = [&](bool from_a, SessionPair::Frame&) {
    if (!from_a && lose) {
      lose = false;
      return false;
    }
    return true;
  };
  for (int i = 0; i < 4; i++) dxfp_session_release(p.b.s(), DXPU_TLP_CLASS_POSTED, 64);
  p.Pump();
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &more), DXFP_SEND_NO_CREDIT);
  // a probes after an RTO, b answers with its limits.
  p.RunUntil(p.now + 2 * p.a.s()->rtt.rto);
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &more), DXFP_SEND_OK);
}

TEST(DxfpSession, ReplayBufferBoundsTlpsInFlight) {
  SessionPair p;
  p.Establish();
  p.filter = [](bool, SessionPair::Frame&) { return false; };
  const auto w = Pattern(64, 1);
  int ok = 0;
  for (int i = 0; i < 200; i++) {
    const dxpu_tlp t = MakeMwr(0x1000 + i * 0x100ull, w);
    const dxfp_send_result r = dxfp_session_send(p.a.s(), p.now, &t);
    if (r != DXFP_SEND_OK) {
      EXPECT_EQ(r, DXFP_SEND_REPLAY_FULL);
      break;
    }
    ok++;
  }
  EXPECT_EQ(ok, 64);  // the window
  // Bytes bound too: 4 KiB writes fill 64 KiB of replay after 15.
  SessionPair q;
  q.Establish();
  const auto big = Pattern(4096, 2);
  ok = 0;
  for (int i = 0; i < 64; i++) {
    const dxpu_tlp t = MakeMwr(0x100000 + i * 0x1000ull, big);
    if (dxfp_session_send(q.a.s(), q.now, &t) != DXFP_SEND_OK) break;
    ok++;
  }
  EXPECT_EQ(ok, 65536 / 4112);
}

TEST(DxfpSession, ReplayRingWrapsAroundWithoutCorruption) {
  SessionPair p;
  p.Establish();
  const uint64_t seed = test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint8_t>> sent;
  uint64_t addr = 0x1000;
  for (int round = 0; round < 50; round++) {
    for (int i = 0; i < 7; i++) {
      std::vector<uint8_t> data = Pattern(4 * (1 + rng() % 1024), static_cast<uint8_t>(rng()));
      const dxpu_tlp t = MakeMwr(addr, data);
      const dxfp_send_result r = dxfp_session_send(p.a.s(), p.now, &t);
      if (r != DXFP_SEND_OK) break;
      sent.push_back(std::move(data));
      addr += 0x1000;
    }
    p.RunUntil(p.now + 100 * kUs);
  }
  ASSERT_EQ(p.b.delivered.size(), sent.size());
  for (size_t i = 0; i < sent.size(); i++) ASSERT_EQ(p.b.delivered[i].payload, sent[i]) << i;
}

// The next frame from poll_pieces(), gathered into one buffer; npieces gets its piece count.
SessionPair::Frame PollGathered(SessionNode& from, uint64_t now, size_t* npieces) {
  dxfp_frame_out out{};
  SessionPair::Frame f;
  if (!dxfp_session_poll_pieces(from.s(), now, DXFP_MAX_FRAME, &out)) return f;
  *npieces = out.npieces;
  for (size_t i = 0; i < out.npieces; i++)
    f.insert(f.end(), out.piece[i].base, out.piece[i].base + out.piece[i].len);
  EXPECT_EQ(f.size(), out.len);
  return f;
}

TEST(DxfpSession, PollPiecesSendsRecordsStraightFromTheReplayRingAcrossItsWrap) {
  // Replay ring 64 KiB: 15 records of a 4 KiB write below 4 GiB (4 + 12 + 4096 = 4112 bytes).
  SessionPair p;
  p.Establish();
  const dxfp_session* s = p.a.s();
  auto sent = SendWrites(p, p.a, 14, 4096);

  // A frame of two writes: its head, one run of two records inside the ring, the CRC.
  dxfp_frame_out out{};
  ASSERT_TRUE(dxfp_session_poll_pieces(p.a.s(), p.now, DXFP_MAX_FRAME, &out));
  ASSERT_EQ(out.npieces, 3u);
  EXPECT_EQ(out.piece[0].base, out.head);
  EXPECT_EQ(out.piece[0].len, DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + DXFP_CREDIT_BODY_SIZE);
  EXPECT_EQ(out.piece[1].base, s->ring);
  EXPECT_EQ(out.piece[1].len, 2u * 4112u);
  EXPECT_EQ(out.piece[2].base, out.crc);
  EXPECT_EQ(out.len, out.piece[0].len + out.piece[1].len + DXFP_CRC_SIZE);
  SessionPair::Frame first;
  for (size_t i = 0; i < out.npieces; i++)
    first.insert(first.end(), out.piece[i].base, out.piece[i].base + out.piece[i].len);
  ASSERT_EQ(p.Deliver(p.b, first), DXFP_RX_OK);

  // Three more frames, then the acknowledgement of those 8 writes frees the ring's start.
  size_t npieces = 0;
  for (int i = 0; i < 3; i++)
    ASSERT_EQ(p.Deliver(p.b, PollGathered(p.a, p.now, &npieces)), DXFP_RX_OK);
  p.now += p.b.s()->cfg.ack_delay_ns;
  const SessionPair::Frame ack = PollGathered(p.b, p.now, &npieces);
  ASSERT_FALSE(ack.empty());
  ASSERT_EQ(p.Deliver(p.a, ack), DXFP_RX_OK);
  ASSERT_EQ(dxfp_session_in_flight(p.a.s()), 0u);
  ASSERT_EQ(dxfp_session_queued(p.a.s()), 6u);

  // The next write fits at the ring's end, the one after wraps to its start.
  auto more = SendWrites(p, p.a, 2, 4096, 0x1000 + 14 * 0x1000);
  sent.insert(sent.end(), more.begin(), more.end());
  std::vector<size_t> pieces;
  for (SessionPair::Frame f = PollGathered(p.a, p.now, &npieces); !f.empty();
       f = PollGathered(p.a, p.now, &npieces)) {
    pieces.push_back(npieces);
    ASSERT_EQ(p.Deliver(p.b, f), DXFP_RX_OK);
  }
  // (8,9) (10,11) (12,13) contiguous; (14,15) split by the wrap: two runs.
  EXPECT_EQ(pieces, (std::vector<size_t>{3, 3, 3, 4}));
  p.RunUntil(p.now + 10 * kMs);
  ExpectDeliveredInOrder(p.b, sent);
  EXPECT_EQ(dxfp_session_in_flight(p.a.s()), 0u);
}

TEST(DxfpSession, PollRefusesABufferSmallerThanAnyFrame) {
  SessionPair p;
  dxfp_session_connect(p.a.s(), p.now);
  std::array<uint8_t, DXFP_MIN_SESSION_FRAME - 1> small{};
  size_t len = 1;
  EXPECT_FALSE(dxfp_session_poll(p.a.s(), p.now, small.data(), small.size(), &len));
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(p.a.counters().hellos_tx, 0u);
  p.Pump();
  EXPECT_EQ(p.a.state(), DXFP_STATE_ESTABLISHED);
}

TEST(DxfpSession, TooBigAndInvalidTlpsAreRefused) {
  dxfp_session_config ac = TestConfig(DXFP_ROLE_INITIATOR);
  ac.max_frame = 1500;
  SessionPair p(ac, TestConfig(DXFP_ROLE_RESPONDER));
  p.Establish();
  const auto big = Pattern(2048, 1);
  const dxpu_tlp t = MakeMwr(0x1000, big);
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &t), DXFP_SEND_TOO_BIG);
  dxpu_tlp bad = MakeMrd(1, 1, 0x1000, 1);
  bad.last_be = 0xf;  // a 1-DW read with Last BE set
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &bad), DXFP_SEND_INVALID);
}

TEST(DxfpSession, NonPostedTableBoundsOutstandingRequests) {
  SessionPair p;  // max_np 16
  p.Establish();
  for (uint16_t tag = 0; tag < 16; tag++) {
    const dxpu_tlp rd = MakeMrd(1, tag, 0x1000, 1);
    ASSERT_EQ(dxfp_session_send(p.a.s(), p.now, &rd), DXFP_SEND_OK);
  }
  const dxpu_tlp rd = MakeMrd(1, 16, 0x1000, 1);
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &rd), DXFP_SEND_NP_FULL);
  p.Pump();
  const auto d = Pattern(4, 3);
  const dxpu_tlp c = MakeCpld(1, 5, d, 4);
  ASSERT_EQ(dxfp_session_send(p.b.s(), p.now, &c), DXFP_SEND_OK);
  p.Pump();
  EXPECT_EQ(dxfp_session_send(p.a.s(), p.now, &rd), DXFP_SEND_OK);
  // A completion nobody asked for is delivered and counted.
  const dxpu_tlp stray = MakeCpld(1, 700, d, 4);
  ASSERT_EQ(dxfp_session_send(p.b.s(), p.now, &stray), DXFP_SEND_OK);
  p.Pump();
  EXPECT_EQ(p.a.counters().unexpected_cpl, 1u);
  // Closing reports the 16 still open, oldest first, without the answered tag 5.
  dxfp_session_close(p.a.s(), p.now, DXFP_CLOSE_SHUTDOWN);
  ASSERT_EQ(p.a.unanswered.size(), 16u);
  EXPECT_EQ(p.a.unanswered[0].tag, 0);
  EXPECT_EQ(p.a.unanswered[5].tag, 6);
  EXPECT_EQ(p.a.unanswered[15].tag, 16);
  EXPECT_EQ(p.a.down_reason, DXFP_DOWN_LOCAL_CLOSE);
  p.Pump();
  EXPECT_TRUE(p.b.down);
  EXPECT_EQ(p.b.down_reason, DXFP_DOWN_PEER_CLOSED);
  EXPECT_EQ(p.b.s()->peer_close_reason, DXFP_CLOSE_SHUTDOWN);
}

TEST(DxfpSession, ForgedAndStaleFramesAreDroppedAndCounted) {
  SessionPair p;
  p.Establish();
  SendWrites(p, p.a, 1, 64);
  p.Pump();
  const SessionPair::Frame good = p.a_to_b.back();
  ASSERT_GE(HeaderOf(good).nrec, 2);

  auto edited = [&](size_t off, uint32_t value) {
    SessionPair::Frame f = good;
    dxpu_put_be32(&f[off], value);
    Reseal(f);
    return f;
  };
  EXPECT_EQ(p.Deliver(p.b, edited(DXFP_OFF_DST_SESSION, 0x99)), DXFP_RX_UNKNOWN_SESSION);
  EXPECT_EQ(p.Deliver(p.b, edited(DXFP_OFF_DST_EPOCH, 0x1234)), DXFP_RX_STALE_EPOCH);
  EXPECT_EQ(p.Deliver(p.b, edited(DXFP_OFF_SRC_EPOCH, 0x1234)), DXFP_RX_STALE_EPOCH);
  EXPECT_EQ(p.Deliver(p.b, edited(DXFP_OFF_SRC_SESSION, 0x77)), DXFP_RX_STALE_EPOCH);
  EXPECT_EQ(p.Deliver(p.b, edited(DXFP_OFF_ACK, HeaderOf(good).ack + 1000)), DXFP_RX_BAD_ACK);
  EXPECT_EQ(p.Deliver(p.b, edited(DXFP_OFF_SEQ, HeaderOf(good).seq + 5000)),
            DXFP_RX_WINDOW_VIOLATION);
  SessionPair::Frame crc = good;
  crc[40] ^= 1;
  EXPECT_EQ(p.Deliver(p.b, crc), DXFP_RX_BAD_CRC);
  EXPECT_EQ(p.Deliver(p.b, SessionPair::Frame(good.begin(), good.begin() + 20)), DXFP_RX_TRUNCATED);
  SessionPair::Frame ver = good;
  ver[0] = 2;
  Reseal(ver);
  EXPECT_EQ(p.Deliver(p.b, ver), DXFP_RX_BAD_VERSION);
  const auto& c = p.b.counters();
  EXPECT_EQ(c.unknown_session, 1u);
  EXPECT_EQ(c.stale_epoch, 3u);
  EXPECT_EQ(c.bad_ack, 1u);
  EXPECT_EQ(c.window_violation, 1u);
  EXPECT_EQ(c.bad_crc, 1u);
  EXPECT_EQ(c.truncated, 1u);
  EXPECT_EQ(c.bad_version, 1u);
  EXPECT_EQ(p.b.delivered.size(), 1u);  // nothing extra delivered
  EXPECT_EQ(p.b.state(), DXFP_STATE_ESTABLISHED);
}

TEST(DxfpSession, CreditViolationDropsTheWholeFrame) {
  dxfp_session_config bc = TestConfig(DXFP_ROLE_RESPONDER);
  bc.rx_hdr_cap[DXPU_TLP_CLASS_POSTED] = 2;
  SessionPair p(TestConfig(DXFP_ROLE_INITIATOR), bc);
  p.b.auto_release = false;
  p.Establish();
  // a believes it has more credit than b gave (a forged, larger advert).
  p.a.s()->tx_credits.limit.hdr[DXPU_TLP_CLASS_POSTED] += 10;
  SendWrites(p, p.a, 3, 64);
  p.Pump();
  EXPECT_TRUE(p.b.delivered.empty());
  EXPECT_GE(p.b.counters().credit_violation, 1u);
}

TEST(DxfpSession, RestartedPeerIsNotConfusedWithTheOldOne) {
  SessionPair p;
  p.Establish();
  SendWrites(p, p.a, 3, 64);
  p.Pump();
  const auto old_frames = p.a_to_b;
  // a restarts: new epoch, new session; b (a fresh responder here) accepts it.
  dxfp_session_config ac = TestConfig(DXFP_ROLE_INITIATOR);
  ac.epoch = 0xaaaa0002;
  SessionPair q(ac, TestConfig(DXFP_ROLE_RESPONDER));
  q.Establish();
  // Frames of the old incarnation arriving late are stale.
  for (const auto& f : old_frames) {
    if (HeaderOf(f).type == DXFP_DATA) {
      EXPECT_EQ(q.Deliver(q.b, f), DXFP_RX_STALE_EPOCH);
    }
  }
  EXPECT_TRUE(q.b.delivered.empty());
}

TEST(DxfpSession, StatelessCloseAnswersAnUnknownSession) {
  SessionPair p;
  p.Establish();
  SendWrites(p, p.a, 1, 64);
  p.Pump();
  const dxfp_header cause = HeaderOf(p.a_to_b.back());
  std::vector<uint8_t> buf(256);
  const size_t n =
      dxfp_write_close(buf.data(), buf.size(), &cause, 0x5555, DXFP_CLOSE_UNKNOWN_SESSION);
  ASSERT_GT(n, 0u);
  EXPECT_LE(n, p.a_to_b.back().size());
  buf.resize(n);
  EXPECT_EQ(p.Deliver(p.a, buf), DXFP_RX_OK);
  EXPECT_TRUE(p.a.down);
  EXPECT_EQ(p.a.s()->peer_close_reason, DXFP_CLOSE_UNKNOWN_SESSION);
}

TEST(DxfpSession, NamesAreDistinct) {
  std::vector<std::string> names;
  for (size_t i = 0; i < DXFP_SESSION_COUNTER_COUNT; i++) {
    ASSERT_NE(dxfp_session_counter_name(i), nullptr) << i;
    names.emplace_back(dxfp_session_counter_name(i));
  }
  EXPECT_EQ(dxfp_session_counter_name(DXFP_SESSION_COUNTER_COUNT), nullptr);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end());
  for (int r = 1; r < DXFP_RX_COUNT; r++)
    EXPECT_STRNE(dxfp_rx_result_name(static_cast<dxfp_rx_result>(r)), "unknown");
  EXPECT_STREQ(dxfp_session_state_name(DXFP_STATE_ESTABLISHED), "established");
  EXPECT_STREQ(dxfp_down_reason_name(DXFP_DOWN_NO_PROGRESS), "no-progress");
  EXPECT_STREQ(dxfp_send_result_name(DXFP_SEND_NO_CREDIT), "no-credit");
}

// Random bytes, mutated frames and replayed frames thrown at an established session:
// it never crashes, never delivers a TLP twice or out of order.
TEST(DxfpSession, RandomAndMutatedFramesNeverCorruptTheSession) {
  const uint64_t seed = test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  SessionPair p;
  p.Establish();
  std::vector<std::vector<uint8_t>> sent;
  uint64_t addr = 0x1000;
  for (int round = 0; round < 300; round++) {
    for (int i = 0; i < 3; i++) {
      sent.push_back(Pattern(4 * (1 + rng() % 32), static_cast<uint8_t>(rng())));
      const dxpu_tlp t = MakeMwr(addr, sent.back());
      addr += 0x1000;
      ASSERT_EQ(dxfp_session_send(p.a.s(), p.now, &t), DXFP_SEND_OK);
    }
    p.Pump();
    // Mutate a recent frame: flip bytes (re-sealed or not), truncate, or replay.
    SessionPair::Frame f = p.a_to_b[rng() % p.a_to_b.size()];
    switch (rng() % 4) {
      case 0:
        f[rng() % f.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
        break;
      case 1: {
        // Re-sealed: a forgery with a valid CRC. The sequence number is left alone: a
        // forged frame that claims exactly the next sequence number is indistinguishable
        // from the real one (CRC32C is not authentication; docs/protocol.md, 4.8).
        size_t at = rng() % (f.size() - 4);
        if (at >= DXFP_OFF_SEQ && at < DXFP_OFF_SEQ + 4) at = DXFP_OFF_ACK + 4;
        f[at] ^= static_cast<uint8_t>(1 + rng() % 255);
        Reseal(f);
        break;
      }
      case 2:
        f.resize(rng() % f.size());
        break;
      default:
        break;
    }
    p.Deliver(p.b, f);
    p.Pump();
    std::vector<uint8_t> noise(rng() % 200);
    for (auto& byte : noise) byte = static_cast<uint8_t>(rng());
    p.Deliver(p.b, noise);
    p.RunUntil(p.now + 50 * kUs);
  }
  p.RunUntil(p.now + 5 * kMs);
  ASSERT_EQ(p.b.delivered.size(), sent.size());
  for (size_t i = 0; i < sent.size(); i++) ASSERT_EQ(p.b.delivered[i].payload, sent[i]) << i;
}

// Rewrites, in a frame, the Completion Status of every completion whose tag `status_of` names
// (a peer codec that sends a reserved status), and re-seals the frame.
void RewriteCplStatus(SessionPair::Frame& f, const std::map<uint16_t, uint8_t>& status_of) {
  size_t at = DXFP_HDR_SIZE;
  const size_t end = f.size() - DXFP_CRC_SIZE;
  while (at + DXFP_REC_HDR_SIZE <= end) {
    const size_t len = dxpu_get_be16(&f[at + 2]);
    uint8_t* tlp = &f[at + DXFP_REC_HDR_SIZE];
    if (f[at] == DXFP_REC_TLP && (tlp[0] & 0x1f) == 0x0a) {  // Cpl or CplD
      const auto it = status_of.find(tlp[10]);               // Tag[7:0]
      if (it != status_of.end()) tlp[6] = static_cast<uint8_t>((tlp[6] & 0x1f) | (it->second << 5));
    }
    at += DXFP_REC_HDR_SIZE + ((len + 3) & ~size_t{3});
  }
  Reseal(f);
}

// PCIe: a completion with a reserved Completion Status is handled as Unsupported Request.
// The frame that carries one is accepted, the completion arrives as UR and ends its request
// (no longer outstanding: the link going down reports nothing unanswered). A CplD with one
// is still malformed, and its frame dropped.
TEST(DxfpSession, ReservedCompletionStatusEndsTheRequestAsUnsupported) {
  SessionPair p;
  p.Establish();
  const std::map<uint16_t, uint8_t> reserved = {{1, 3}, {2, 5}, {3, 7}, {4, 6}};
  for (uint16_t tag = 1; tag <= 4; tag++) {
    const dxpu_tlp rd = MakeMrd(0x0100, tag, 0x10000 + tag * 0x100ull, 2);
    ASSERT_EQ(dxfp_session_send(p.a.s(), p.now, &rd), DXFP_SEND_OK);
  }
  p.Pump();
  ASSERT_EQ(p.b.delivered.size(), 4u);
  p.filter = [&](bool from_a, SessionPair::Frame& f) {
    if (!from_a) RewriteCplStatus(f, reserved);
    return true;
  };
  for (const DeliveredTlp& rd : p.b.delivered) {
    dxpu_tlp ur{};
    dxpu_tlp_completion_for(&rd.hdr, 0x0300, DXPU_TLP_CPL_UR, &ur);
    ASSERT_EQ(dxfp_session_send(p.b.s(), p.now, &ur), DXFP_SEND_OK);
  }
  p.Pump();
  ASSERT_EQ(p.a.delivered.size(), 4u);
  for (uint16_t i = 0; i < 4; i++) {
    const dxpu_tlp& c = p.a.delivered[i].hdr;
    EXPECT_EQ(c.kind, DXPU_TLP_CPL);
    EXPECT_EQ(c.tag, i + 1);
    EXPECT_EQ(c.cpl_status, DXPU_TLP_CPL_UR) << "tag " << c.tag;
    EXPECT_EQ(c.byte_count, 8);
  }
  EXPECT_EQ(p.a.counters().malformed, 0u);
  EXPECT_EQ(p.a.counters().unexpected_cpl, 0u);

  // A CplD with a reserved status: refused as before (the frame is malformed).
  const dxpu_tlp rd5 = MakeMrd(0x0100, 5, 0x20000, 1);
  ASSERT_EQ(dxfp_session_send(p.a.s(), p.now, &rd5), DXFP_SEND_OK);
  p.Pump();
  p.filter = [&](bool from_a, SessionPair::Frame& f) {
    if (!from_a) RewriteCplStatus(f, {{5, 3}});
    return true;
  };
  const std::vector<uint8_t> data = Pattern(4, 9);  // outlives the TLP that points at it
  const dxpu_tlp cpld = MakeCpld(0x0100, 5, data, 4);
  ASSERT_EQ(dxfp_session_send(p.b.s(), p.now, &cpld), DXFP_SEND_OK);
  p.Pump();
  EXPECT_EQ(p.a.delivered.size(), 4u);
  EXPECT_GE(p.a.counters().malformed, 1u);

  // Only the CplD's read is still outstanding.
  p.filter = [](bool, SessionPair::Frame&) { return false; };
  p.RunUntil(p.now + 100 * kMs);
  ASSERT_TRUE(p.a.down);
  ASSERT_EQ(p.a.unanswered.size(), 1u);
  EXPECT_EQ(p.a.unanswered[0].tag, 5);
}

}  // namespace
}  // namespace dxpu::test
