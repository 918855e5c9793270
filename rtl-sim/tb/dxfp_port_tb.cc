// dxfp_port_tb.cc - testbench of rtl/dxpu_dxfp_port.sv (decapsulator, replay buffer and
// encapsulator chained, with the session's timers) at 64 and 256 bits, end to end against
// lib/core: the peer is a real dxfp_session, and the port's session comes from a real handshake
// (a second lib/core session plays the bridge firmware's part: HELLO, WELCOME, then its state
// is programmed into the port and it steps aside). TLPs from lib/core's generator go both ways
// at once over a channel that drops, duplicates, corrupts and reorders frames; every TLP must
// arrive once, in order, bit for bit, at both ends; the port's credits are advertised by
// lib/core's receive-credit logic (the firmware's part) as the port delivers. Sealed sessions
// (docs/protocol.md 4.12): the handshake is a Noise IK one (lib/core with libsodium's
// primitives), its transport keys go into the port, every frame the port sends is opened by
// the host's lib/core (dxfp_seal.c on libsodium) and every frame the host seals is opened by the
// port; a changed bit, a replayed frame and a DATA frame in the clear are dropped, counted, and
// deliver nothing. $DXPU_SEED replays.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "Vrtl_dxfp_port_w256.h"
#include "Vrtl_dxfp_port_w64.h"
#include "core/dxfp_credit.h"
#include "core/dxfp_frame.h"
#include "core/dxfp_session.h"
#include "core/session_pair.h"
#include "core/tlp_codec.h"
#include "core/tlp_testutil.h"
#include "crypto/fabric_keys.h"
#include "crypto/sodium_crypto_ops.h"
#include "lossy_channel.h"
#include "rtl-sim/datapath/port_counters.h"
#include "rtl_tb.h"

namespace {

using dxpu::rtl::BeatBytes;
using dxpu::rtl::BeatWords;
using dxpu::rtl::GetBits;
using dxpu::rtl::HeaderBytes;
using dxpu::rtl::SetBits;
using Bytes = std::vector<uint8_t>;
using enum dxpu::rtl::PortCounter;

constexpr uint64_t kNsPerCycle = 4;     // 250 MHz
constexpr uint32_t kReplayWindow = 64;  // the port's replay window (the model's WINDOW)
constexpr uint32_t kMaxFrame = 2048;

// What the channel does to frames (lossy_channel.h): loss_pct, jitter_ns.
// The rest: the host's replay window, minimum RTO and receive buffers (per class: TLPs, 16-byte
// data units), the port's acknowledgement delay.
struct Conditions {
  unsigned loss_pct = 0;
  uint64_t jitter_ns = 0;
  uint32_t host_window = 256;
  uint64_t host_min_rto_ns = 40'000;
  uint64_t ack_delay_ns = 4'000;
  uint32_t host_rx_hdr = 4096;
  uint32_t host_rx_data = 1u << 20;
  bool sealed = false;  // an authenticated session: every frame after the handshake sealed
};

// A sealed bench's long-term keys: the host's and the bridge's (whose firmware does the
// handshake before the port takes over).
struct Identities {
  dxpu::crypto::KeyPair host = dxpu::crypto::NewKeyPair();
  dxpu::crypto::KeyPair bridge = dxpu::crypto::NewKeyPair();
};

// A session's configuration authenticated with libsodium (the host's with its key and the
// bridge's public key, as lib/core's tests set them up), or as it is.
dxfp_session_config Authenticated(dxfp_session_config c, bool sealed, const Identities& id) {
  if (!sealed) return c;
  c.auth.ops = &dxpu::crypto::SodiumCryptoOps();
  if (c.role == DXFP_ROLE_INITIATOR) {
    std::copy(id.host.secret.begin(), id.host.secret.end(), c.auth.static_secret);
    std::copy(id.bridge.pub.begin(), id.bridge.pub.end(), c.auth.peer_public);
    c.auth.wall_clock_offset_ns = 1'700'000'000'000'000'000ull;
  }
  return c;
}

// A 32-byte key as the port's 256-bit input (byte 0 in the top bits).
std::vector<uint32_t> KeyWords(const uint8_t* key) { return BeatWords(key, 32, 256); }

// The sessions' configuration (lib/core's tests' TestConfig, then this bench's sizes and timers):
// the host's with `window` and `min_rto_ns`, the firmware's with the port's window.
dxfp_session_config SessionConfig(dxfp_session_role role, uint32_t window, uint64_t min_rto_ns,
                                  uint32_t rx_hdr = 4096, uint32_t rx_data = 1u << 20) {
  dxfp_session_config c = dxpu::test::TestConfig(role);
  c.initial_seq = role == DXFP_ROLE_INITIATOR ? 0xfffffff0u : 0x7ffffff8u;
  c.max_frame = kMaxFrame;
  c.replay_window = window;
  c.replay_bytes = 1u << 20;
  c.max_np = DXFP_MAX_NP;
  for (int k = 0; k < DXFP_CLASSES; ++k) {
    c.rx_hdr_cap[k] = rx_hdr;
    c.rx_data_cap[k] = rx_data;
  }
  c.ack_delay_ns = 5'000;
  c.keepalive_ns = 200'000;
  c.link_down_ns = 1'000'000'000;
  c.initial_rto_ns = min_rto_ns * 3 / 2;
  c.min_rto_ns = min_rto_ns;
  c.max_rto_ns = min_rto_ns * 12;
  c.timer_granularity_ns = 1'000;
  return c;
}

// The bytes of a TLP a session delivered.
Bytes Encoded(const dxpu::test::DeliveredTlp& d) {
  dxpu_tlp t = d.hdr;
  t.payload = d.payload.empty() ? nullptr : d.payload.data();
  return dxpu::test::encode_ok(t);
}

template <typename Model, unsigned Width>
struct Port {
  static constexpr unsigned kWidth = Width;
  using M = Model;
};
using Ports = ::testing::Types<Port<Vrtl_dxfp_port_w64, 64>, Port<Vrtl_dxfp_port_w256, 256>>;

template <typename P>
class DxfpPortTest : public ::testing::Test {};
TYPED_TEST_SUITE(DxfpPortTest, Ports);

// The bench: the port, the host's session (A) and the channels between them.
template <typename P>
class Bench {
 public:
  using Model = typename P::M;
  static constexpr unsigned kWidth = P::kWidth;
  static constexpr size_t kBeatBytes = kWidth / 8;

  // started: the firmware's session state goes into the port (start); false leaves it reset.
  Bench(uint64_t seed, Conditions c, bool started = true)
      : to_port_(seed ^ 1u, c.loss_pct, c.jitter_ns),
        to_host_(seed ^ 2u, c.loss_pct, c.jitter_ns),
        rng_(seed),
        gen_(seed ^ 0x51ed27u),
        sealed_(c.sealed),
        pair_(Authenticated(SessionConfig(DXFP_ROLE_INITIATOR, c.host_window, c.host_min_rto_ns,
                                          c.host_rx_hdr, c.host_rx_data),
                            c.sealed, ids_),
              Authenticated(SessionConfig(DXFP_ROLE_RESPONDER, kReplayWindow, 40'000), c.sealed,
                            ids_)) {
    if (sealed_) {
      pair_.accept = [this](dxfp_session* s, uint64_t now, const std::vector<uint8_t>& hello) {
        return dxpu::crypto::AcceptAuthenticatedHello(s, now, ids_.bridge, hello, &ids_.host.pub);
      };
    }
    DriveIdle();
    m().cfg_ack_delay = c.ack_delay_ns;
    dut_.Reset();
    // The handshake, lossless, between the host's session and the firmware's.
    pair_.Establish();
    base_ns_ = pair_.now;
    uint32_t hdr[DXFP_CLASSES], data[DXFP_CLASSES];
    for (int k = 0; k < DXFP_CLASSES; ++k) {
      hdr[k] = fw_cfg().rx_hdr_cap[k];
      data[k] = fw_cfg().rx_data_cap[k];
    }
    dxfp_rx_credits_init(&credits_, hdr, data);
    if (started) Start();
  }

  Model& m() { return dut_.m(); }
  dxpu::test::SessionNode& host() { return pair_.a; }
  uint64_t now() const { return base_ns_ + dut_.cycles() * kNsPerCycle; }
  uint64_t Counter(unsigned i) { return GetBits(m().m_counters, kPortCounters)[i]; }

  // Queue random TLPs: to_host for the port to send, to_port for the host.
  void Queue(size_t to_host, size_t to_port) {
    for (size_t i = 0; i < std::max(to_host, to_port); ++i) {
      if (i < to_host) to_send_port_.push_back(SmallTlp());
      if (i < to_port) to_send_host_.push_back(SmallTlp());
    }
  }

  // Queue `n` posted writes of `bytes` each for the port to send (frames full of payload).
  void QueueWrites(size_t n, size_t bytes) {
    const Bytes payload(bytes, 0x5a);
    for (size_t i = 0; i < n; ++i)
      to_send_port_.push_back(dxpu::test::encode_ok(dxpu::test::MakeMwr(0x10000 * i, payload)));
  }

  // Runs `ns` more with nothing to send.
  void Idle(uint64_t ns, unsigned idle_pct, unsigned stall_pct) {
    for (uint64_t c = 0; c < ns / kNsPerCycle; ++c) Cycle(idle_pct, stall_pct);
  }

  // Runs until every TLP queued arrived at both ends and was acknowledged, or `max_cycles`.
  void Run(uint64_t max_cycles, unsigned idle_pct, unsigned stall_pct) {
    for (uint64_t c = 0; c < max_cycles; ++c) {
      if (Done() && Quiet()) return;
      Cycle(idle_pct, stall_pct);
    }
  }
  // Nothing sent and unacknowledged, either way.
  bool Quiet() { return dxfp_session_in_flight(host().s()) == 0 && m().m_una == m().m_next_seq; }
  bool Done() const {
    return host_in_ == sent_by_port_.size() && port_in_ == sent_by_host_.size() &&
           to_send_port_.empty() && to_send_host_.empty() && beats_.empty();
  }

  // The frame straight to the port, as if it came off the wire now (an attacker's).
  void Inject(Bytes frame) { to_port_.Send(std::move(frame), now()); }
  // The host's session, for building frames as it would.
  dxfp_session* host_session() { return host().s(); }
  // The firmware's session's numbers: its ID and epoch, and the port's next sequence number.
  const dxfp_session_config& fw() { return fw_cfg(); }

  std::vector<Bytes> sent_by_port_, sent_by_host_;
  std::vector<Bytes> host_frames_;  // every frame the host sent (sealed or not)
  // Frames out of the port and into it: beats, and the cycles from a frame's first beat to its
  // last (summed over frames).
  uint64_t frm_out_beats_ = 0, frm_out_span_ = 0, frm_out_first_ = 0;
  uint64_t frm_in_beats_ = 0, frm_in_span_ = 0, frm_in_first_ = 0;
  size_t host_in_ = 0, port_in_ = 0;
  dxpu::rtl::LossyChannel to_port_, to_host_;
  uint64_t mismatches = 0;

 private:
  Bytes SmallTlp() {
    for (;;) {
      Bytes b = dxpu::test::encode_ok(gen_.next());
      if (b.size() <= 600) return b;
    }
  }

  void DriveIdle() {
    Model& d = m();
    d.now = 0;
    d.start = 0;
    d.cfg_tx_seq = 0;
    d.cfg_rx_seq = 0;
    d.cfg_dst_session = 0;
    d.cfg_src_session = 0;
    d.cfg_dst_epoch = 0;
    d.cfg_src_epoch = 0;
    d.cfg_max_frame = kMaxFrame;
    d.cfg_peer_window = 0;
    SetBits(d.cfg_credits, {});
    SetBits(d.cfg_peer_credits, {});
    d.cfg_rto = 50'000;
    d.cfg_max_rto = 400'000;
    d.cfg_ack_delay = 0;
    d.cfg_keepalive = 150'000;
    d.cfg_sealed = 0;
    SetBits(d.cfg_tx_key, {});
    SetBits(d.cfg_rx_key, {});
    d.cfg_tx_counter = 0;
    SetBits(d.s_tlp_hdr, {});
    d.s_tlp_len = 0;
    SetBits(d.s_tlp_data, {});
    d.s_tlp_keep = 0;
    d.s_tlp_sop = 0;
    d.s_tlp_eop = 0;
    d.s_tlp_valid = 0;
    d.m_tlp_ready = 0;
    SetBits(d.s_frm_data, {});
    d.s_frm_bytes = 0;
    d.s_frm_last = 0;
    d.s_frm_valid = 0;
    d.m_frm_ready = 0;
  }

  // The firmware's session state into the port; from here the port answers for it.
  void Start() {
    const dxfp_session& f = *pair_.b.s();
    Model& d = m();
    d.cfg_tx_seq = f.next_seq;
    d.cfg_rx_seq = f.expected;
    d.cfg_dst_session = f.peer_session;
    d.cfg_src_session = fw_cfg().session_id;
    d.cfg_dst_epoch = f.peer_epoch;
    d.cfg_src_epoch = fw_cfg().epoch;
    d.cfg_peer_window = f.peer_window;
    // The host's limits, as its handshake gave them to the firmware's session.
    std::vector<uint32_t> w(6);
    for (int k = 0; k < DXFP_CLASSES; ++k) {
      w[5 - 2 * k] = f.tx_credits.limit.hdr[k];
      w[4 - 2 * k] = f.tx_credits.limit.data[k];
    }
    SetBits(d.cfg_peer_credits, w);
    Advertise();
    // Sealed: the handshake's transport keys and the next counter the firmware would seal with.
    d.cfg_sealed = sealed_;
    if (sealed_) {
      SetBits(d.cfg_tx_key, KeyWords(f.keys.send.key));
      SetBits(d.cfg_rx_key, KeyWords(f.keys.recv.key));
      d.cfg_tx_counter = f.seal_counter;
    }
    d.start = 1;
    dut_.Tick();
    d.start = 0;
    // The port holds them from start on: the inputs are wiped, as the firmware wipes its copy.
    SetBits(d.cfg_tx_key, {});
    SetBits(d.cfg_rx_key, {});
  }

  // The limits the port advertises: lib/core's receive credits, freed as the port delivers.
  void Advertise() {
    dxfp_credits c{};
    dxfp_rx_credits_advert(&credits_, &c);
    std::vector<uint32_t> w(6);
    for (int k = 0; k < DXFP_CLASSES; ++k) {
      w[5 - 2 * k] = c.hdr[k];
      w[4 - 2 * k] = c.data[k];
    }
    SetBits(m().cfg_credits, w);
  }

  unsigned Pct() { return static_cast<unsigned>(rng_() % 100); }

  void Cycle(unsigned idle_pct, unsigned stall_pct) {
    Model& d = m();
    const uint64_t t = now();
    d.now = t;
    // The host's session: frames in, TLPs to send, frames out.
    Bytes f;
    while (to_host_.Take(t, &f)) dxfp_session_receive(host().s(), t, f.data(), f.size());
    while (!to_send_host_.empty()) {
      dxpu_tlp tlp{};
      ASSERT_EQ(dxpu::test::decode(to_send_host_.front(), &tlp), DXPU_TLP_OK);
      if (dxfp_session_send(host().s(), t, &tlp) != DXFP_SEND_OK) break;
      sent_by_host_.push_back(std::move(to_send_host_.front()));
      to_send_host_.pop_front();
    }
    Bytes out(DXFP_MAX_FRAME);
    size_t len = 0;
    while (dxfp_session_poll(host().s(), t, out.data(), out.size(), &len)) {
      Bytes frame(out.begin(), out.begin() + static_cast<long>(len));
      host_frames_.push_back(frame);
      to_port_.Send(std::move(frame), t);
    }
    host_in_ = host().delivered.size();

    // Port inputs for this cycle.
    if (!frm_in_ && to_port_.Take(t, &f)) {
      frm_in_bytes_ = std::move(f);
      frm_in_off_ = 0;
      frm_in_ = true;
    }
    const bool offer_frm = frm_in_ && Pct() >= idle_pct;
    d.s_frm_valid = offer_frm;
    if (offer_frm) {
      const size_t n = std::min(kBeatBytes, frm_in_bytes_.size() - frm_in_off_);
      SetBits(d.s_frm_data, BeatWords(frm_in_bytes_.data() + frm_in_off_, n, kWidth));
      d.s_frm_bytes = static_cast<uint32_t>(n);
      d.s_frm_last = frm_in_off_ + n == frm_in_bytes_.size();
    }
    if (beats_.empty() && !to_send_port_.empty()) Load(to_send_port_.front());
    const bool offer_tlp = !beats_.empty() && Pct() >= idle_pct;
    d.s_tlp_valid = offer_tlp;
    if (offer_tlp) {
      const dxpu::rtl::TlpBeat& b = beats_.front();
      SetBits(d.s_tlp_hdr, tlp_hdr_);
      d.s_tlp_len = tlp_len_;
      SetBits(d.s_tlp_data, b.data);
      d.s_tlp_keep = b.keep;
      d.s_tlp_sop = b.sop;
      d.s_tlp_eop = b.eop;
    }
    d.m_tlp_ready = Pct() >= stall_pct;
    d.m_frm_ready = Pct() >= stall_pct;
    dut_.Eval();

    // What crosses the port's edges this cycle.
    if (offer_frm && d.s_frm_ready) {
      if (frm_in_off_ == 0) frm_in_first_ = dut_.cycles();
      ++frm_in_beats_;
      frm_in_off_ += d.s_frm_bytes;
      if (d.s_frm_last) {
        frm_in_ = false;
        frm_in_span_ += dut_.cycles() - frm_in_first_ + 1;
      }
    }
    if (offer_tlp && d.s_tlp_ready) {
      const bool eop = beats_.front().eop;
      beats_.pop_front();
      if (eop) {
        sent_by_port_.push_back(std::move(to_send_port_.front()));
        to_send_port_.pop_front();
      }
    }
    if (d.m_frm_valid && d.m_frm_ready) {
      if (frm_out_.empty()) frm_out_first_ = dut_.cycles();
      ++frm_out_beats_;
      if (d.m_frm_last) frm_out_span_ += dut_.cycles() - frm_out_first_ + 1;
      const Bytes part = BeatBytes(GetBits(d.m_frm_data, kWidth / 32), d.m_frm_bytes, kWidth);
      frm_out_.insert(frm_out_.end(), part.begin(), part.end());
      if (d.m_frm_last) {
        to_host_.Send(frm_out_, t);
        frm_out_.clear();
      }
    }
    if (d.m_tlp_valid && d.m_tlp_ready) TakeDelivered();
    dut_.Tick();
  }

  // A TLP's bytes as header beside payload beats.
  void Load(const Bytes& tlp) {
    dxpu::rtl::TlpStream stream = dxpu::rtl::TlpBeats(tlp, kWidth);
    tlp_hdr_ = std::move(stream.hdr);
    tlp_len_ = stream.len;
    beats_.assign(stream.beats.begin(), stream.beats.end());
  }

  // A beat the port delivered: the TLP's bytes gathered; at its end compared with what the host
  // sent next, and its credit freed.
  void TakeDelivered() {
    Model& d = m();
    if (d.m_tlp_sop) {
      const std::array<uint8_t, 16> h = HeaderBytes(GetBits(d.m_tlp_hdr, 4));
      rx_len_ = d.m_tlp_len;
      const size_t hb = (h[0] & 0x20) != 0 ? 16 : 12;
      rx_.assign(h.begin(), h.begin() + static_cast<long>(std::min<size_t>(hb, rx_len_)));
    }
    const size_t want = rx_len_ > rx_.size() ? std::min(kBeatBytes, rx_len_ - rx_.size()) : 0;
    const Bytes part = BeatBytes(GetBits(d.m_tlp_data, kWidth / 32), want, kWidth);
    rx_.insert(rx_.end(), part.begin(), part.end());
    if (!d.m_tlp_eop) return;
    if (port_in_ >= sent_by_host_.size() || rx_ != sent_by_host_[port_in_]) {
      ++mismatches;
      ADD_FAILURE() << "TLP " << port_in_ << " delivered by the port differs from what was sent";
    }
    ++port_in_;
    uint8_t kind = DXPU_TLP_INVALID;
    uint32_t payload = 0;
    (void)dxpu_tlp_peek_kind(rx_.data(), rx_.size(), &kind, &payload);
    const int cls = static_cast<int>(dxpu_tlp_kind_class(kind));
    EXPECT_TRUE(dxfp_rx_credits_accept(&credits_, cls, payload));
    dxfp_rx_credits_release(&credits_, cls, payload);
    Advertise();
  }

  // The firmware's session, whose place the port takes after the handshake.
  const dxfp_session_config& fw_cfg() { return pair_.b.s()->cfg; }

  dxpu::rtl::Dut<Model> dut_;
  std::mt19937_64 rng_;
  dxpu::test::RandomTlpGenerator gen_;
  bool sealed_ = false;
  Identities ids_;
  dxpu::test::SessionPair pair_;
  uint64_t base_ns_ = 0;
  dxfp_rx_credits credits_{};
  std::deque<Bytes> to_send_port_, to_send_host_;
  std::deque<dxpu::rtl::TlpBeat> beats_;
  std::vector<uint32_t> tlp_hdr_;
  uint32_t tlp_len_ = 0;
  Bytes frm_in_bytes_, frm_out_, rx_;
  size_t frm_in_off_ = 0, rx_len_ = 0;
  bool frm_in_ = false;
};

// `to_host` TLPs from the port to the host and `to_port` the other way, at once; then 400 us
// with nothing to send, in which nothing may be resent and both ends' keepalives are answered.
// Returns the simulated time the transfer took (ns), 0 when it failed.
template <typename P>
uint64_t RunBothWays(Conditions cond, size_t to_host, size_t to_port, unsigned idle_pct,
                     unsigned stall_pct) {
  const dxpu::rtl::TestSeed seed_trace;
  const uint64_t seed = seed_trace.value();
  Bench<P> b(seed, cond);
  b.Queue(to_host, to_port);
  const auto start = std::chrono::steady_clock::now();
  b.Run(20'000'000, idle_pct, stall_pct);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const uint64_t took = b.now();
  if (!b.Done() || !b.Quiet()) {
    ADD_FAILURE() << "after " << took << " ns: host got " << b.host_in_ << " of "
                  << b.sent_by_port_.size() << ", port got " << b.port_in_ << " of "
                  << b.sent_by_host_.size();
    return 0;
  }
  EXPECT_EQ(b.mismatches, 0u);
  const uint64_t retx = b.Counter(kTlpsRetx), keepalives = b.Counter(kKeepalivesTx);
  const uint64_t host_retx = dxfp_session_get_counters(b.host().s())->tlps_retx;
  b.Idle(400'000, idle_pct, stall_pct);
  // Everything was acknowledged both ways: nothing resent while idle (no spurious timeout); the
  // port's keepalives went out and the host's were answered (its session stays up).
  EXPECT_TRUE(b.Quiet());
  EXPECT_EQ(b.Counter(kTlpsRetx), retx);
  EXPECT_EQ(dxfp_session_get_counters(b.host().s())->tlps_retx, host_retx);
  EXPECT_GE(b.Counter(kKeepalivesTx), keepalives + 2);
  // The host received, in order and bit for bit, every TLP the port was given.
  EXPECT_EQ(b.host().delivered.size(), b.sent_by_port_.size());
  for (size_t i = 0; i < std::min(b.sent_by_port_.size(), b.host().delivered.size()); ++i) {
    if (Encoded(b.host().delivered[i]) != b.sent_by_port_[i]) {
      ADD_FAILURE() << "TLP " << i << " to the host differs from what the port was given";
      break;
    }
  }
  const dxfp_session_counters& hc = *dxfp_session_get_counters(b.host().s());
  EXPECT_FALSE(b.host().down);
  EXPECT_EQ(hc.bad_ack, 0u);
  EXPECT_EQ(hc.window_violation, 0u);
  EXPECT_EQ(hc.credit_violation, 0u);
  EXPECT_EQ(b.Counter(kBadAck), 0u);
  EXPECT_EQ(b.Counter(kWindowViolation), 0u);
  EXPECT_EQ(b.Counter(kBadAckRx), 0u);
  EXPECT_EQ(b.Counter(kCreditViolation), 0u);  // the host keeps to what the port advertised
  EXPECT_EQ(b.Counter(kDelivered), b.sent_by_host_.size());
  EXPECT_EQ(b.Counter(kTlpsTx), b.sent_by_port_.size());
  EXPECT_EQ(b.sent_by_port_.size(), to_host);
  EXPECT_EQ(b.sent_by_host_.size(), to_port);
  if (cond.sealed) {
    // Every frame sealed and opened: the port's by the host's lib/core, the host's by the port;
    // nothing in the clear, no counter taken twice by either.
    EXPECT_EQ(b.Counter(kFramesSealed), b.Counter(kFramesTx));
    EXPECT_GT(b.Counter(kFramesOpened), 0u);
    EXPECT_EQ(b.Counter(kUnsealed), 0u);
    EXPECT_EQ(b.Counter(kBadCrc), 0u);
    EXPECT_EQ(hc.unsealed, 0u);
    for (const Bytes& f : b.host_frames_) {
      EXPECT_TRUE(f.size() >= DXFP_HDR_SIZE && dxfp_frame_is_sealed(f.data()));
    }
    if (cond.loss_pct == 0) {
      EXPECT_EQ(b.Counter(kReplayed), 0u);  // nothing duplicated on the way
      EXPECT_EQ(b.Counter(kBadTag), 0u);
      EXPECT_EQ(hc.replayed, 0u);
      EXPECT_EQ(hc.bad_tag, 0u);
    }
  } else {
    EXPECT_EQ(b.Counter(kFramesSealed), 0u);
    EXPECT_EQ(b.Counter(kFramesOpened), 0u);
  }
  // With nothing to carry them the port's acknowledgements went alone.
  if (to_host == 0) {
    EXPECT_GT(b.Counter(kStandaloneTx), 0u);
  }
  if (cond.jitter_ns > 0) {
    // Reordering made gaps: NAKed both ways, and the NAKs acted on.
    EXPECT_GT(b.Counter(kNaksTx), 0u);
    EXPECT_GT(b.Counter(kNaksRx), 0u);
    EXPECT_GT(hc.naks_rx, 0u);
    EXPECT_GT(hc.naks_tx, 0u);
  }
  if (cond.loss_pct > 0) {
    // Loss was recovered both ways: NAKs or timeouts on each side.
    EXPECT_GT(b.Counter(kTlpsRetx), 0u);
    EXPECT_GT(hc.tlps_retx, 0u);
    // Corrupted frames: caught by the CRC, or by the tag when sealed.
    EXPECT_GT(b.Counter(cond.sealed ? kBadTag : kBadCrc), 0u);
    if (cond.sealed) {
      EXPECT_GT(hc.bad_tag, 0u);
    }
  } else if (cond.jitter_ns == 0) {
    // Nothing lost or reordered: nothing resent, no NAK, no timeout, either way (the port's
    // acknowledgements kept the host's timer from expiring, and its timer did not fire early).
    EXPECT_EQ(b.Counter(kTlpsRetx), 0u);
    EXPECT_EQ(b.Counter(kRto), 0u);
    EXPECT_EQ(b.Counter(kNaksTx), 0u);
    EXPECT_EQ(b.Counter(kNaksRx), 0u);
    EXPECT_EQ(b.Counter(kDuplicate), 0u);
    EXPECT_EQ(b.Counter(kGap), 0u);
    EXPECT_EQ(hc.tlps_retx, 0u);
    EXPECT_EQ(hc.naks_tx, 0u);
  }
  std::printf(
      "dxpu_dxfp_port DATA_WIDTH=%u%s, loss %u%%, jitter %llu ns: %zu TLPs to the host, %zu to the "
      "port in %llu cycles (%.0f "
      "simulated cycles/s); port: %llu frames, %llu TLPs first, %llu again, %llu NAKs sent, %llu "
      "taken, %llu RTO, %llu standalone, %llu credit probes, %llu duplicates, %llu behind gaps, "
      "%llu bad CRC, %llu bad tag, %llu replayed; host: "
      "%llu retransmitted, %llu NAKs sent; channel to the port: %llu frames, %llu lost, %llu "
      "corrupted, %llu duplicated\n",
      P::kWidth, cond.sealed ? " sealed" : "", cond.loss_pct,
      static_cast<unsigned long long>(cond.jitter_ns), to_host, to_port,
      static_cast<unsigned long long>(took / kNsPerCycle),
      static_cast<double>(took) / kNsPerCycle / secs,
      static_cast<unsigned long long>(b.Counter(kFramesTx)),
      static_cast<unsigned long long>(b.Counter(kTlpsTx)),
      static_cast<unsigned long long>(b.Counter(kTlpsRetx)),
      static_cast<unsigned long long>(b.Counter(kNaksTx)),
      static_cast<unsigned long long>(b.Counter(kNaksRx)),
      static_cast<unsigned long long>(b.Counter(kRto)),
      static_cast<unsigned long long>(b.Counter(kStandaloneTx)),
      static_cast<unsigned long long>(b.Counter(kProbesTx)),
      static_cast<unsigned long long>(b.Counter(kDuplicate)),
      static_cast<unsigned long long>(b.Counter(kGap)),
      static_cast<unsigned long long>(b.Counter(kBadCrc)),
      static_cast<unsigned long long>(b.Counter(kBadTag)),
      static_cast<unsigned long long>(b.Counter(kReplayed)),
      static_cast<unsigned long long>(hc.tlps_retx), static_cast<unsigned long long>(hc.naks_tx),
      static_cast<unsigned long long>(b.to_port_.sent),
      static_cast<unsigned long long>(b.to_port_.dropped),
      static_cast<unsigned long long>(b.to_port_.corrupted),
      static_cast<unsigned long long>(b.to_port_.duplicated));
  return took;
}

// Out of reset and not started, the port sends nothing: no keepalive, no acknowledgement (frames
// from the host arrive meanwhile), however long it waits.
TYPED_TEST(DxfpPortTest, SendsNothingBeforeStart) {
  const dxpu::rtl::TestSeed seed;
  Bench<TypeParam> b(seed.value(), Conditions{}, false);
  b.Idle(600'000, 0, 0);           // three keepalive intervals
  EXPECT_GT(b.to_port_.sent, 0u);  // the host's keepalives
  EXPECT_EQ(b.Counter(kFramesTx), 0u);
  EXPECT_EQ(b.to_host_.sent, 0u);
}

TYPED_TEST(DxfpPortTest, InOrderChannelNothingResentBothWays) {
  RunBothWays<TypeParam>({0, 0}, 1500, 1500, 10, 10);
}

// The port only receives: its standalone acknowledgements (a quarter window, the ack delay) are
// all that keeps the host from timing out.
TYPED_TEST(DxfpPortTest, InOrderChannelOneWayAcknowledgedAlone) {
  RunBothWays<TypeParam>({0, 0}, 0, 1500, 10, 10);
}

// A host with a small replay window, and an acknowledgement delay long enough to stall it: the
// port acknowledges each quarter of the window at once, so the host never waits (600 TLPs in
// 16-TLP windows: 130-270 us; without the rule each window waits for the port's 150 us keepalive,
// which carries the acknowledgement: about 5.6 ms).
TYPED_TEST(DxfpPortTest, QuarterWindowAcknowledgedAtOnce) {
  const uint64_t ns = RunBothWays<TypeParam>({0, 0, 16, 2'000'000, 1'000'000}, 0, 600, 0, 0);
  EXPECT_LT(ns, 2'000'000u);
}

// A host with small receive buffers (8 TLPs, 4 KiB per class): the port sends only what the
// host's CREDIT records allow (no credit violation at the host), and gets everything through.
TYPED_TEST(DxfpPortTest, SendsWithinThePeersCredit) {
  Conditions c;
  c.host_rx_hdr = 8;
  c.host_rx_data = 256;
  RunBothWays<TypeParam>(c, 1500, 300, 10, 10);
}

// The same over the lossy channel: a lost credit update with nothing in flight is recovered by
// the port's credit probe.
TYPED_TEST(DxfpPortTest, SendsWithinThePeersCreditOverALossyChannel) {
  Conditions c{4, 3'000};
  c.host_rx_hdr = 8;
  c.host_rx_data = 256;
  RunBothWays<TypeParam>(c, 1500, 300, 20, 20);
}

TYPED_TEST(DxfpPortTest, ReorderingChannelDeliversEveryTlpOnceInOrderBothWays) {
  RunBothWays<TypeParam>({0, 3'000}, 1500, 1500, 10, 10);
}

TYPED_TEST(DxfpPortTest, LossyChannelDeliversEveryTlpOnceInOrderBothWays) {
  RunBothWays<TypeParam>({4, 3'000}, 1500, 1500, 20, 20);
}

// Sealed sessions (docs/protocol.md 4.12): the same transfers, every frame sealed by the sender
// and opened by the receiver, the port's by the host's lib/core and the host's by the port.
TYPED_TEST(DxfpPortTest, SealedInOrderChannelNothingResentBothWays) {
  Conditions c;
  c.sealed = true;
  RunBothWays<TypeParam>(c, 1500, 1500, 10, 10);
}

TYPED_TEST(DxfpPortTest, SealedReorderingChannelDeliversEveryTlpOnceInOrderBothWays) {
  Conditions c{0, 3'000};
  c.sealed = true;
  RunBothWays<TypeParam>(c, 1500, 1500, 10, 10);
}

// Lost, duplicated (replayed: dropped before any cryptography), corrupted (bad tag) and
// reordered frames: everything arrives, once, in order, both ways.
TYPED_TEST(DxfpPortTest, SealedLossyChannelDeliversEveryTlpOnceInOrderBothWays) {
  Conditions c{4, 3'000};
  c.sealed = true;
  RunBothWays<TypeParam>(c, 1500, 1500, 20, 20);
}

// An attacker on the wire: the host's next sealed frame is caught before it reaches the port and
// sent changed (a bit of the header, the counter, the records, the tag): each dropped for its
// tag, delivering nothing; then the frame as sealed arrives and opens (the forgeries under its
// counter took none); a frame that arrived before, sent again: replayed, dropped before any
// cryptography; a DATA frame in the clear with the TLP the port expects next and a good CRC:
// unsealed. Nothing of them delivered; the session carries on.
TYPED_TEST(DxfpPortTest, SealedDropsChangedReplayedAndPlaintextFramesUnseen) {
  const dxpu::rtl::TestSeed seed;
  std::mt19937_64 rng(seed.value());
  Conditions c;
  c.sealed = true;
  Bench<TypeParam> b(seed.value(), c);
  b.Queue(50, 200);
  b.Run(5'000'000, 0, 0);
  ASSERT_TRUE(b.Done() && b.Quiet());
  const auto counts = [&b] {
    return std::array<uint64_t, 5>{b.Counter(kDelivered), b.Counter(kFramesOpened),
                                   b.Counter(kBadTag), b.Counter(kReplayed), b.Counter(kUnsealed)};
  };
  const std::array<uint64_t, 5> before = counts();

  // The host's next frame with a TLP, lost on the way.
  b.to_port_.cut = true;
  const size_t frames0 = b.host_frames_.size();
  b.Queue(0, 1);
  for (int i = 0; i < 1000 && b.host_frames_.size() == frames0; ++i) b.Idle(kNsPerCycle, 0, 0);
  b.to_port_.cut = false;
  ASSERT_GT(b.host_frames_.size(), frames0);
  const Bytes caught = b.host_frames_.back();
  ASSERT_GT(caught.size(), DXFP_MIN_SEALED_FRAME + 28u) << "a frame with a TLP record";
  const auto flipped = [&](size_t from, size_t to) {
    Bytes f = caught;
    const size_t bit = from * 8 + rng() % ((to - from) * 8);
    f[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    return f;
  };
  const size_t tag_at = caught.size() - DXFP_TAG_SIZE;
  b.Inject(flipped(DXFP_OFF_LENGTH + 4, DXFP_HDR_SIZE));  // session IDs, epochs, seq, ack
  b.Inject(flipped(DXFP_HDR_SIZE, DXFP_HDR_SIZE + DXFP_SEAL_COUNTER_SIZE));  // the counter
  b.Inject(flipped(DXFP_HDR_SIZE + DXFP_SEAL_COUNTER_SIZE, tag_at));         // the records
  b.Inject(flipped(tag_at, caught.size()));                                  // the tag
  b.Idle(20'000, 0, 0);
  std::array<uint64_t, 5> now = counts();
  EXPECT_EQ(now[0], before[0]) << "a changed frame delivered a TLP";
  EXPECT_EQ(now[1], before[1]);
  EXPECT_EQ(now[2], before[2] + 4) << "bad tags";
  b.Inject(caught);
  b.Idle(20'000, 0, 0);
  now = counts();
  EXPECT_EQ(now[0], before[0] + 1) << "the frame as sealed, under the counter the forgeries used";
  EXPECT_EQ(now[1], before[1] + 1);
  EXPECT_EQ(now[3], before[3]);

  // A frame that arrived before, again.
  b.Inject(caught);
  b.Inject(b.host_frames_[frames0 / 2]);
  b.Idle(20'000, 0, 0);
  now = counts();
  EXPECT_EQ(now[0], before[0] + 1);
  EXPECT_EQ(now[1], before[1] + 1);
  EXPECT_EQ(now[3], before[3] + 2) << "replayed";

  // The frame cut short: at every header beat of both widths, around the counter and inside the
  // records (at 256 bits a frame of 33 to 64 bytes ends in its counter's beat; its counter was
  // taken, but truncation comes first in lib/core's order): truncated, nothing else.
  const uint64_t truncated0 = b.Counter(kTruncated);
  const size_t cuts[] = {32, 36, 40, 44, 48, 55, 56, 60, 64, 72, caught.size() - 1};
  for (size_t n : cuts) b.Inject(Bytes(caught.begin(), caught.begin() + static_cast<ptrdiff_t>(n)));
  b.Idle(20'000, 0, 0);
  EXPECT_EQ(b.Counter(kTruncated), truncated0 + std::size(cuts));
  EXPECT_EQ(counts(), now) << "a truncated frame counted as something else";

  // A DATA frame in the clear: the right session, the TLP the port expects next, a good CRC.
  dxfp_session* h = b.host_session();
  dxfp_header hdr{};
  hdr.version = DXFP_VERSION;
  hdr.type = DXFP_DATA;
  hdr.dst_session = b.fw().session_id;
  hdr.src_session = h->cfg.session_id;
  hdr.dst_epoch = b.fw().epoch;
  hdr.src_epoch = h->cfg.epoch;
  hdr.seq = b.m().m_ack;
  hdr.ack = b.m().m_una;
  Bytes clear(kMaxFrame);
  dxfp_writer w{};
  ASSERT_EQ(dxfp_writer_init(&w, clear.data(), clear.size(), &hdr), DXFP_OK);
  const dxfp_credits none{};
  ASSERT_EQ(dxfp_writer_add_credits(&w, &none), DXFP_OK);
  const Bytes payload(64, 0xee);
  const dxpu_tlp tlp = dxpu::test::MakeMwr(0x4000, payload);
  ASSERT_EQ(dxfp_writer_add_tlp(&w, &tlp), DXFP_OK);
  size_t len = 0;
  dxfp_writer_finish(&w, &len);
  clear.resize(len);
  dxfp_frame parsed{};
  ASSERT_EQ(dxfp_frame_parse(clear.data(), clear.size(), kMaxFrame, &parsed), DXFP_OK);
  b.Inject(clear);
  b.Idle(20'000, 0, 0);
  now = counts();
  EXPECT_EQ(now[0], before[0] + 1) << "a TLP in the clear delivered";
  EXPECT_EQ(now[4], before[4] + 1) << "unsealed";

  // The session carries on: more TLPs both ways, every one in order and bit for bit.
  b.Queue(100, 100);
  b.Run(5'000'000, 0, 0);
  EXPECT_TRUE(b.Done() && b.Quiet());
  EXPECT_EQ(b.mismatches, 0u);
  EXPECT_EQ(b.Counter(kDelivered), b.sent_by_host_.size());
  EXPECT_EQ(b.host().delivered.size(), b.sent_by_port_.size());
  EXPECT_EQ(b.Counter(kBadTag), before[2] + 4);
  EXPECT_EQ(b.Counter(kUnsealed), before[4] + 1);
}

// Throughput unstalled: 200 posted writes of 512 bytes from the port (sealed frames out) and
// 200 from the host (sealed frames in), plaintext and sealed in the same run: beats per cycle
// within a frame (its first beat to its last) and over the whole transfer.
TYPED_TEST(DxfpPortTest, SealedFramesBeatsPerCycle) {
  const dxpu::rtl::TestSeed seed;
  double within[2] = {0, 0};
  for (bool sealed : {false, true}) {
    Conditions c;
    c.sealed = sealed;
    Bench<TypeParam> b(seed.value(), c);
    b.QueueWrites(200, 512);
    const uint64_t c0 = b.now();
    b.Run(5'000'000, 0, 0);
    ASSERT_TRUE(b.Done());
    const double out = static_cast<double>(b.frm_out_beats_) / b.frm_out_span_;
    const double in = static_cast<double>(b.frm_in_beats_) / std::max<uint64_t>(b.frm_in_span_, 1);
    within[sealed ? 1 : 0] = out;
    std::printf(
        "dxpu_dxfp_port DATA_WIDTH=%u %s: frames out %.3f beats per cycle within a frame "
        "(%llu beats), frames in %.3f; 200 x 512-byte writes out in %llu cycles\n",
        TypeParam::kWidth, sealed ? "sealed" : "plaintext", out,
        static_cast<unsigned long long>(b.frm_out_beats_), in,
        static_cast<unsigned long long>((b.now() - c0) / kNsPerCycle));
  }
  std::printf("dxpu_dxfp_port DATA_WIDTH=%u: sealed / plaintext within a frame: %.3f\n",
              TypeParam::kWidth, within[1] / within[0]);
  // The AEAD at the port's width: a beat per cycle within a frame at both widths but for the
  // tag's few cycles before a frame's last beat (these frames are 18 beats at 256 bits, 70 at
  // 64; docs/rtl.md, "The sealed port").
  EXPECT_GT(within[1], TypeParam::kWidth == 64 ? 0.95 : 0.9);
}

}  // namespace
