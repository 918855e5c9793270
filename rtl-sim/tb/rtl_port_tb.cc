// rtl_port_tb.cc - the Verilated DxFP port in a bridge's session (datapath/rtl_port.h): a host's
// fabric::Endpoint (lib/core frames) against a bridge's Endpoint whose DATA frames the port
// carries from the first one (fabric::EndpointOptions::framing), over a channel that loses,
// corrupts, duplicates and reorders frames. What the seam must keep: every TLP once, in order,
// bit for bit, both ways; lib/core's credit rules (a posted write passes a request refused for
// credit); link-down after no progress with the requests left unanswered, and a CLOSE to the peer;
// the peer's CLOSE; frames of another session dropped and counted; a session the port cannot
// carry framed by lib/core instead. An authenticated host (Noise IK, docs/protocol.md 4.12) against
// a bridge whose port seals and opens: the same transfers sealed both ways, and the bridge's own
// sealed CLOSE after the port's frames (no counter used twice). $DXPU_SEED replays a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/dxfp_frame.h"
#include "core/dxfp_handshake.h"
#include "core/dxfp_session.h"
#include "core/session_pair.h"
#include "core/tlp_codec.h"
#include "core/tlp_testutil.h"
#include "crypto/fabric_keys.h"
#include "crypto/sodium_crypto_ops.h"
#include "fabric/endpoint.h"
#include "lossy_channel.h"
#include "rtl-sim/datapath/rtl_port.h"
#include "rtl_tb.h"

namespace {

using Bytes = std::vector<uint8_t>;
using dxpu::fabric::Endpoint;
using dxpu::fabric::EndpointCallbacks;
using dxpu::fabric::EndpointOptions;
using dxpu::rtl::LossyChannel;

constexpr uint64_t kLinkDownNs = 4'000'000;

dxfp_session_config Config(dxfp_session_role role) {
  dxfp_session_config c = dxpu::test::TestConfig(role);
  c.initial_seq = role == DXFP_ROLE_INITIATOR ? 0xfffffff0u : 0x7ffffff8u;
  c.max_frame = 2048;
  c.replay_window = dxpu::rtl::BridgePortModel().window;
  c.replay_bytes = 1u << 20;
  c.max_np = DXFP_MAX_NP;
  c.ack_delay_ns = 5'000;
  c.keepalive_ns = 200'000;
  c.link_down_ns = kLinkDownNs;
  c.initial_rto_ns = 60'000;
  c.min_rto_ns = 40'000;
  c.max_rto_ns = 480'000;
  c.timer_granularity_ns = 1'000;
  return c;
}

// An authenticated pair: the host's and the bridge's long-term keys.
struct Identities {
  dxpu::crypto::KeyPair host = dxpu::crypto::NewKeyPair();
  dxpu::crypto::KeyPair bridge = dxpu::crypto::NewKeyPair();
};

// The host's configuration with its key and the bridge's public key, the bridge's with
// libsodium's primitives (lib/core's tests set them up so).
dxfp_session_config WithAuth(dxfp_session_config c, const Identities& id) {
  c.auth.ops = &dxpu::crypto::SodiumCryptoOps();
  if (c.role == DXFP_ROLE_INITIATOR) {
    std::copy(id.host.secret.begin(), id.host.secret.end(), c.auth.static_secret);
    std::copy(id.bridge.pub.begin(), id.bridge.pub.end(), c.auth.peer_public);
    c.auth.wall_clock_offset_ns = 1'700'000'000'000'000'000ull;
  }
  return c;
}

// One end: its Endpoint and what it saw.
struct End {
  std::unique_ptr<Endpoint> ep;
  std::vector<Bytes> delivered;
  std::optional<dxfp_down_reason> down;
  std::vector<dxpu_tlp> unanswered;
  std::vector<uint8_t> frame_types_sent;  // every frame's type, in order
  std::vector<bool> frames_sealed;        // ... and whether it was sealed
};

// A host (initiator, lib/core) and a bridge session (responder, framed by the RTL port).
class World {
 public:
  explicit World(uint64_t seed, unsigned loss_pct = 0, uint64_t jitter_ns = 0,
                 dxfp_session_config bridge_cfg = Config(DXFP_ROLE_RESPONDER),
                 dxfp_session_config host_cfg = Config(DXFP_ROLE_INITIATOR), bool sealed = false)
      : to_bridge_(seed ^ 1u, loss_pct, jitter_ns),
        to_host_(seed ^ 2u, loss_pct, jitter_ns),
        sealed_(sealed) {
    if (sealed_) {
      host_cfg = WithAuth(host_cfg, ids_);
      bridge_cfg = WithAuth(bridge_cfg, ids_);
    }
    host_.ep = Make(host_cfg, &host_, {});
    EndpointOptions o;
    o.framing = dxpu::rtl::RtlPortFraming();
    bridge_.ep = Make(bridge_cfg, &bridge_, o);
  }

  End& host() { return host_; }
  End& bridge() { return bridge_; }
  LossyChannel& to_bridge() { return to_bridge_; }
  LossyChannel& to_host() { return to_host_; }
  uint64_t now() const { return now_; }

  // The handshake, and a first TLP from the host so that the bridge's session starts framing.
  bool Establish() {
    host_.ep->Connect(now_);
    RunUntil([&] { return host_.ep->state() == DXFP_STATE_ESTABLISHED; }, 50'000'000);
    dxpu_tlp t = Write(0x1000, 0x11);
    if (!host_.ep->Submit(t, now_)) return false;
    return RunUntil([&] { return bridge_.delivered.size() == 1; }, 50'000'000);
  }

  // Moves frames and time until done() or `limit_ns` more of virtual time.
  bool RunUntil(const std::function<bool()>& done, uint64_t limit_ns) {
    const uint64_t end = now_ + limit_ns;
    while (now_ < end) {
      Step();
      if (done()) return true;
      uint64_t next = std::min({to_bridge_.NextArrival(), to_host_.NextArrival(),
                                host_.ep->NextDeadline(), bridge_.ep->NextDeadline(), end});
      now_ = std::max(next, now_ + 100);
    }
    return done();
  }

  // A 4-byte posted write and a read request (non-posted), tag `tag`.
  static dxpu_tlp Write(uint64_t addr, uint8_t byte) {
    static uint8_t payload[4];
    payload[0] = byte;
    dxpu_tlp t{};
    t.kind = DXPU_TLP_MWR;
    t.length_dw = 1;
    t.requester_id = 0x0100;
    t.first_be = 0xf;
    t.addr = addr;
    t.payload = payload;
    return t;
  }
  static dxpu_tlp Read(uint64_t addr, uint16_t tag) {
    dxpu_tlp t{};
    t.kind = DXPU_TLP_MRD;
    t.length_dw = 1;
    t.requester_id = 0x0200;
    t.tag = tag;
    t.first_be = 0xf;
    t.addr = addr;
    return t;
  }

 private:
  static std::unique_ptr<Endpoint> Make(const dxfp_session_config& cfg, End* end,
                                        const EndpointOptions& o) {
    EndpointCallbacks cb;
    cb.deliver = [end](const dxpu_tlp& t) { end->delivered.push_back(dxpu::test::encode_ok(t)); };
    cb.link_down = [end](dxfp_down_reason r, std::span<const dxpu_tlp> unanswered) {
      end->down = r;
      end->unanswered.assign(unanswered.begin(), unanswered.end());
    };
    std::string error;
    auto ep = Endpoint::Create(cfg, std::move(cb), o, &error);
    EXPECT_NE(ep, nullptr) << error;
    return ep;
  }

  void Step() {
    Bytes f;
    while (to_bridge_.Take(now_, &f)) {
      if (f.empty()) continue;
      if (sealed_ && f.size() >= DXFP_HDR_SIZE && dxfp_frame_is_sealed(f.data())) {
        (void)bridge_.ep->Receive(now_, f);  // routed by its clear header (BridgeBox does so)
        continue;
      }
      if (sealed_ && bridge_.ep->state() == DXFP_STATE_IDLE) {
        AcceptAuthenticated(f);
        continue;
      }
      dxfp_frame parsed{};
      if (dxfp_frame_parse(f.data(), f.size(), DXFP_MAX_FRAME, &parsed) != DXFP_OK) continue;
      if (parsed.hdr.type == DXFP_HELLO && bridge_.ep->state() == DXFP_STATE_IDLE) {
        (void)bridge_.ep->Accept(now_, parsed);
        continue;
      }
      (void)bridge_.ep->ReceiveFrame(now_, parsed, f);
    }
    while (to_host_.Take(now_, &f)) (void)host_.ep->Receive(now_, f);
    host_.ep->Flush(now_, [&](dxpu::link::FramePieces p) { Send(p, &host_, &to_bridge_); });
    bridge_.ep->Flush(now_, [&](dxpu::link::FramePieces p) { Send(p, &bridge_, &to_host_); });
  }

  // The bridge's side of an authenticated HELLO: the handshake opened with its key, the host's
  // key checked, then the session accepts it (BridgeBox's HostAuthenticator does more).
  void AcceptAuthenticated(const Bytes& hello) {
    const dxfp_crypto_ops& ops = dxpu::crypto::SodiumCryptoOps();
    std::array<uint8_t, DXFP_HASH_SIZE> mac1{};
    dxfp_mac1_key(&ops, ids_.bridge.pub.data(), mac1.data());
    dxfp_noise hs{};
    dxfp_frame f{};
    uint64_t timestamp = 0;
    if (dxfp_hello_open(&hs, &ops, ids_.bridge.secret.data(), mac1.data(), hello.data(),
                        hello.size(), DXFP_MAX_FRAME, &f, &timestamp) != DXFP_OK ||
        !std::equal(ids_.host.pub.begin(), ids_.host.pub.end(), hs.rs)) {
      dxfp_noise_wipe(&hs);
      return;
    }
    (void)bridge_.ep->AcceptAuth(now_, f, &hs);
  }

  void Send(dxpu::link::FramePieces pieces, End* from, LossyChannel* ch) const {
    Bytes f;
    for (const auto& p : pieces) f.insert(f.end(), p.begin(), p.end());
    if (f.size() > DXFP_OFF_TYPE) from->frame_types_sent.push_back(f[DXFP_OFF_TYPE]);
    from->frames_sealed.push_back(f.size() >= DXFP_HDR_SIZE && dxfp_frame_is_sealed(f.data()));
    ch->Send(f, now_);
  }

  LossyChannel to_bridge_, to_host_;
  bool sealed_ = false;
  Identities ids_;
  End host_, bridge_;
  uint64_t now_ = 1'000'000;
};

// Random TLPs both ways at once: each end gets every TLP the other submitted, once, in order.
void RunBothWays(unsigned loss_pct, uint64_t jitter_ns, size_t n, bool sealed = false) {
  const dxpu::rtl::TestSeed seed;
  World w(seed.value(), loss_pct, jitter_ns, Config(DXFP_ROLE_RESPONDER),
          Config(DXFP_ROLE_INITIATOR), sealed);
  ASSERT_TRUE(w.Establish());
  ASSERT_TRUE(w.bridge().ep->framed()) << w.bridge().ep->framing_error();
  dxpu::test::RandomTlpGenerator gen(seed.value() ^ 0x77u);
  std::vector<Bytes> from_host{dxpu::test::encode_ok(World::Write(0x1000, 0x11))}, from_bridge;
  size_t queued_h = 0, queued_b = 0;
  std::vector<Bytes> pending_h, pending_b;
  for (size_t i = 0; i < n; ++i) {
    for (;;) {
      Bytes b = dxpu::test::encode_ok(gen.next());
      if (b.size() <= 600) {
        pending_h.push_back(std::move(b));
        break;
      }
    }
    for (;;) {
      Bytes b = dxpu::test::encode_ok(gen.next());
      if (b.size() <= 600) {
        pending_b.push_back(std::move(b));
        break;
      }
    }
  }
  // Submit as the queues take them; run until both sides have everything.
  const auto submit = [&](End& e, std::vector<Bytes>& pending, size_t& queued,
                          std::vector<Bytes>& sent) {
    while (queued < pending.size()) {
      dxpu_tlp t{};
      if (dxpu::test::decode(pending[queued], &t) != DXPU_TLP_OK) return;
      if (!e.ep->Submit(t, w.now())) return;
      sent.push_back(pending[queued++]);
    }
  };
  const bool done = w.RunUntil(
      [&] {
        submit(w.host(), pending_h, queued_h, from_host);
        submit(w.bridge(), pending_b, queued_b, from_bridge);
        return w.bridge().delivered.size() == pending_h.size() + 1 &&
               w.host().delivered.size() == pending_b.size();
      },
      2'000'000'000);
  ASSERT_TRUE(done) << "bridge got " << w.bridge().delivered.size() << " of " << n + 1
                    << ", host got " << w.host().delivered.size() << " of " << n;
  EXPECT_EQ(w.bridge().delivered, from_host);
  EXPECT_EQ(w.host().delivered, from_bridge);
  EXPECT_FALSE(w.host().down.has_value());
  EXPECT_FALSE(w.bridge().down.has_value());
  const dxfp_session_counters hc = w.host().ep->counters();
  const dxfp_session_counters bc = w.bridge().ep->counters();
  EXPECT_EQ(hc.bad_ack + hc.window_violation + hc.credit_violation, 0u);
  EXPECT_EQ(bc.bad_ack + bc.window_violation + bc.credit_violation, 0u);
  EXPECT_EQ(bc.tlps_delivered, n + 1);
  EXPECT_EQ(bc.tlps_tx, n);
  if (sealed) {
    // Every frame but the handshake's sealed, both ways: the bridge's by its port, opened by
    // the host's lib/core, and the host's opened by the port. A HELLO or WELCOME is in the clear
    // by the protocol, and on a lossy channel it is sent again (its answer was lost).
    const auto expect_sealed = [](const End& e, const char* who) {
      ASSERT_EQ(e.frames_sealed.size(), e.frame_types_sent.size());
      for (size_t i = 0; i < e.frames_sealed.size(); ++i) {
        const uint8_t type = e.frame_types_sent[i];
        if (type == DXFP_HELLO || type == DXFP_WELCOME) continue;
        ASSERT_TRUE(e.frames_sealed[i])
            << who << " frame " << i << " (type " << int{type} << ") in the clear";
      }
    };
    expect_sealed(w.host(), "host");
    expect_sealed(w.bridge(), "bridge");
    ASSERT_GT(w.bridge().frames_sealed.size(), 100u);
    EXPECT_EQ(hc.unsealed + bc.unsealed, 0u);
    EXPECT_GT(bc.frames_rx, 50u);
  }
  if (loss_pct > 0 && sealed) {
    // Corrupted frames fail their tag: at the port, and at the host's lib/core.
    EXPECT_GT(bc.bad_tag, 0u);
    EXPECT_GT(hc.bad_tag, 0u);
    EXPECT_GT(bc.tlps_retx, 0u);
    EXPECT_GT(hc.tlps_retx, 0u);
  } else if (loss_pct > 0) {
    // The faults happened and both ends repaired them. (A corrupted frame fails the bridge's
    // parse before any session, as in BridgeBox: the port's own CRC check is rtl_dxfp_port_tb's.)
    EXPECT_GT(w.to_host().dropped + w.to_bridge().dropped, 0u);
    EXPECT_GT(hc.bad_crc, 0u);
    EXPECT_GT(bc.duplicate + bc.gap, 0u);
    EXPECT_GT(bc.tlps_retx, 0u);
    EXPECT_GT(hc.tlps_retx, 0u);
  }
}

TEST(RtlPortSession, CarriesTlpsBothWaysInOrder) { RunBothWays(0, 0, 3000); }

TEST(RtlPortSession, RepairsALossyReorderingChannel) { RunBothWays(3, 6'000, 3000); }

// An authenticated host: the bridge's port seals and opens every frame after the handshake.
TEST(RtlPortSession, AuthenticatedHostSealedBothWaysInOrder) { RunBothWays(0, 0, 3000, true); }

TEST(RtlPortSession, AuthenticatedHostRepairsALossyReorderingChannel) {
  RunBothWays(3, 6'000, 3000, true);
}

// The bridge's own CLOSE, sealed by lib/core after the port's frames under the next counter:
// the host opens it and goes down (a counter the port used would be dropped as replayed).
TEST(RtlPortSession, AuthenticatedSilentPeerGetsASealedClose) {
  const dxpu::rtl::TestSeed seed;
  World w(seed.value(), 0, 0, Config(DXFP_ROLE_RESPONDER), Config(DXFP_ROLE_INITIATOR), true);
  ASSERT_TRUE(w.Establish());
  ASSERT_TRUE(w.bridge().ep->framed()) << w.bridge().ep->framing_error();
  for (uint8_t i = 0; i < 20; ++i)
    ASSERT_TRUE(w.bridge().ep->Submit(World::Write(0x3000 + 4u * i, i), w.now()));
  ASSERT_TRUE(w.RunUntil([&] { return w.host().delivered.size() == 20; }, 10'000'000));
  w.to_bridge().cut = true;
  ASSERT_TRUE(w.RunUntil([&] { return w.bridge().down.has_value(); }, 4 * kLinkDownNs));
  ASSERT_TRUE(w.RunUntil([&] { return w.host().down.has_value(); }, 10'000'000));
  EXPECT_EQ(w.bridge().frame_types_sent.back(), DXFP_CLOSE);
  EXPECT_TRUE(w.bridge().frames_sealed.back());
  EXPECT_EQ(*w.host().down, DXFP_DOWN_PEER_CLOSED);
  EXPECT_EQ(w.host().ep->counters().replayed, 0u);
}

// A request refused for want of the host's non-posted credit waits; posted writes pass it.
TEST(RtlPortSession, PostedWritesPassRequestsRefusedForCredit) {
  const dxpu::rtl::TestSeed seed;
  dxfp_session_config host_cfg = Config(DXFP_ROLE_INITIATOR);
  host_cfg.rx_hdr_cap[DXPU_TLP_CLASS_NON_POSTED] = 2;  // the host takes 2 requests at a time
  World w(seed.value(), 0, 0, Config(DXFP_ROLE_RESPONDER), host_cfg);
  ASSERT_TRUE(w.Establish());
  ASSERT_TRUE(w.bridge().ep->framed());
  for (uint16_t i = 0; i < 5; ++i)
    ASSERT_TRUE(w.bridge().ep->Submit(World::Read(0x2000, i), w.now()));
  for (uint8_t i = 0; i < 3; ++i)
    ASSERT_TRUE(w.bridge().ep->Submit(World::Write(0x3000 + 4u * i, i), w.now()));
  // The host consumes (auto_release) and frees credit as it delivers: everything arrives, and the
  // writes did not wait behind the refused requests.
  ASSERT_TRUE(w.RunUntil([&] { return w.host().delivered.size() == 8; }, 100'000'000));
  const dxfp_session_counters bc = w.bridge().ep->counters();
  EXPECT_GT(bc.credit_refusals, 0u);
  EXPECT_GT(w.bridge().ep->queue().stats().posted_passed_np, 0u);
  EXPECT_EQ(w.bridge().ep->queue().stats().posted_stranded, 0u);
  size_t first_write = 8, last_read = 0;
  for (size_t i = 0; i < w.host().delivered.size(); ++i) {
    const uint8_t fmt_type = w.host().delivered[i][0] & 0x5f;
    if (fmt_type == 0x40 && first_write == 8) first_write = i;  // MWr 3DW
    if (fmt_type == 0x00) last_read = i;                        // MRd 3DW
  }
  EXPECT_LT(first_write, last_read);
}

// The host goes silent: after link_down_ns without progress the bridge's session goes down with
// the requests the host never answered, and tells the host so (CLOSE).
TEST(RtlPortSession, SilentPeerTakesTheSessionDownWithItsUnansweredRequests) {
  const dxpu::rtl::TestSeed seed;
  World w(seed.value());
  ASSERT_TRUE(w.Establish());
  for (uint16_t i = 0; i < 3; ++i)
    ASSERT_TRUE(w.bridge().ep->Submit(World::Read(0x2000, i), w.now()));
  ASSERT_TRUE(w.RunUntil([&] { return w.host().delivered.size() == 3; }, 10'000'000));
  // Answer the first request only.
  dxpu_tlp cpl{};
  cpl.kind = DXPU_TLP_CPLD;
  cpl.requester_id = 0x0200;
  cpl.tag = 0;
  cpl.completer_id = 0x0100;
  cpl.length_dw = 1;
  cpl.byte_count = 4;
  static const uint8_t kData[4] = {1, 2, 3, 4};
  cpl.payload = kData;
  ASSERT_TRUE(w.host().ep->Submit(cpl, w.now()));
  ASSERT_TRUE(w.RunUntil([&] { return w.bridge().delivered.size() == 2; }, 10'000'000));
  w.to_bridge().cut = true;
  const uint64_t silent_from = w.now();
  ASSERT_TRUE(w.RunUntil([&] { return w.bridge().down.has_value(); }, 4 * kLinkDownNs));
  EXPECT_EQ(*w.bridge().down, DXFP_DOWN_NO_PROGRESS);
  EXPECT_GE(w.now() - silent_from, kLinkDownNs - 1'000'000);
  ASSERT_EQ(w.bridge().unanswered.size(), 2u);
  EXPECT_EQ(w.bridge().unanswered[0].tag, 1);
  EXPECT_EQ(w.bridge().unanswered[1].tag, 2);
  // The bridge's last frame is a CLOSE; the host learns of it and goes down too.
  ASSERT_TRUE(w.RunUntil([&] { return w.host().down.has_value(); }, 10'000'000));
  EXPECT_EQ(w.bridge().frame_types_sent.back(), DXFP_CLOSE);
  EXPECT_EQ(*w.host().down, DXFP_DOWN_PEER_CLOSED);
}

TEST(RtlPortSession, PeersCloseEndsTheSession) {
  const dxpu::rtl::TestSeed seed;
  World w(seed.value());
  ASSERT_TRUE(w.Establish());
  w.host().ep->Close(w.now(), DXFP_CLOSE_SHUTDOWN);
  ASSERT_TRUE(w.RunUntil([&] { return w.bridge().down.has_value(); }, 10'000'000));
  EXPECT_EQ(*w.bridge().down, DXFP_DOWN_PEER_CLOSED);
  EXPECT_FALSE(w.bridge().ep->Submit(World::Write(0, 1), w.now()));
}

// A DATA frame from another session or epoch, valid CRC and all, reaches neither the port nor the
// bridge: counted as stale.
TEST(RtlPortSession, FramesOfAnotherSessionAreDroppedAndCounted) {
  const dxpu::rtl::TestSeed seed;
  World w(seed.value());
  ASSERT_TRUE(w.Establish());
  const dxfp_session& hs = w.host().ep->session();
  std::array<uint8_t, 256> buf{};
  dxfp_writer wr{};
  dxfp_header h{};
  h.version = DXFP_VERSION;
  h.type = DXFP_DATA;
  h.dst_session = hs.peer_session;
  h.dst_epoch = hs.peer_epoch;
  h.src_session = hs.cfg.session_id;
  h.src_epoch = hs.cfg.epoch + 1;  // a stale epoch
  h.seq = hs.next_seq;
  h.ack = hs.expected;
  ASSERT_EQ(dxfp_writer_init(&wr, buf.data(), buf.size(), &h), DXFP_OK);
  size_t len = 0;
  dxfp_writer_finish(&wr, &len);
  dxfp_frame f{};
  ASSERT_EQ(dxfp_frame_parse(buf.data(), len, DXFP_MAX_FRAME, &f), DXFP_OK);
  const uint64_t stale = w.bridge().ep->counters().stale_epoch;
  EXPECT_EQ(w.bridge().ep->ReceiveFrame(w.now(), f, {buf.data(), len}), DXFP_RX_STALE_EPOCH);
  EXPECT_EQ(w.bridge().ep->counters().stale_epoch, stale + 1);
  EXPECT_EQ(w.bridge().delivered.size(), 1u);
  EXPECT_FALSE(w.bridge().down.has_value());
}

// A session whose replay window is not the port's is framed by lib/core, and works.
TEST(RtlPortSession, ASessionThePortCannotCarryIsFramedByLibCore) {
  const dxpu::rtl::TestSeed seed;
  dxfp_session_config bridge_cfg = Config(DXFP_ROLE_RESPONDER);
  bridge_cfg.replay_window = 1024;
  World w(seed.value(), 0, 0, bridge_cfg);
  ASSERT_TRUE(w.Establish());
  EXPECT_FALSE(w.bridge().ep->framed());
  EXPECT_NE(w.bridge().ep->framing_error().find("replay window"), std::string::npos)
      << w.bridge().ep->framing_error();
  ASSERT_TRUE(w.bridge().ep->Submit(World::Write(0x10, 7), w.now()));
  ASSERT_TRUE(w.RunUntil([&] { return w.host().delivered.size() == 1; }, 10'000'000));
}

}  // namespace
