// rtl_port.cc - see rtl_port.h; the port's ports and timing are docs/rtl.md's.
#include "rtl-sim/datapath/rtl_port.h"

#include <algorithm>
#include <array>
#include <deque>
#include <vector>

#include "Vrtl_dxfp_port_bridge.h"
#include "rtl-sim/datapath/port_counters.h"
#include "rtl-sim/datapath/verilated_model.h"
#include "rtl-sim/datapath/verilated_ports.h"

namespace dxpu::rtl {
namespace {

using Bytes = std::vector<uint8_t>;
using Model = Vrtl_dxfp_port_bridge;

constexpr RtlPortModel kModel{};
constexpr unsigned kWidth = kModel.data_width;
constexpr size_t kBeatBytes = kWidth / 8;
// Cycles with nothing crossing any edge after which the port has settled: twice its longest
// silent step (docs/rtl.md: a TLP taken leaves the replay buffer the cycle after its eop, its
// frame closes in one cycle and goes out two after; a frame's last beat in is decided the cycle
// after, its first TLP out the cycle after that). Too few would only delay an output to the next
// call, not lose it.
constexpr unsigned kSettleCycles = 12;
// Cycles a TLP offered waits for the replay buffer (not for credit: that answers at once).
constexpr unsigned kReadyWait = 512;

// `n` wire-order bytes from the top of a beat, onto *out.
void AppendBeat(const std::vector<uint32_t>& words, size_t n, Bytes* out) {
  const Bytes b = BeatBytes(words, n, kWidth);
  out->insert(out->end(), b.begin(), b.end());
}

// Credits as the port's 192-bit ports take them: class k's header limit in word 5 - 2k, its
// data limit in word 4 - 2k.
std::vector<uint32_t> CreditWords(const dxfp_credits& c) {
  std::vector<uint32_t> w(6);
  for (int k = 0; k < DXFP_CLASSES; ++k) {
    w[5 - 2 * k] = c.hdr[k];
    w[4 - 2 * k] = c.data[k];
  }
  return w;
}

class RtlPortImpl final : public RtlPort {
 public:
  RtlPortImpl() : sim_("port", "rtl_port") {
    Model& m = sim_.m();
    m.rst = 1;
    m.now = 0;
    m.start = 0;
    m.cfg_tx_seq = 0;
    m.cfg_rx_seq = 0;
    m.cfg_dst_session = 0;
    m.cfg_src_session = 0;
    m.cfg_dst_epoch = 0;
    m.cfg_src_epoch = 0;
    m.cfg_max_frame = kModel.max_frame;
    m.cfg_peer_window = 0;
    SetBits(m.cfg_credits, std::span<const uint32_t>{});
    SetBits(m.cfg_peer_credits, std::span<const uint32_t>{});
    m.cfg_rto = 0;
    m.cfg_max_rto = 0;
    m.cfg_ack_delay = 0;
    m.cfg_keepalive = 0;
    m.cfg_sealed = 0;
    SetBits(m.cfg_tx_key, std::span<const uint32_t>{});
    SetBits(m.cfg_rx_key, std::span<const uint32_t>{});
    m.cfg_tx_counter = 0;
    SetBits(m.s_tlp_hdr, std::span<const uint32_t>{});
    m.s_tlp_len = 0;
    SetBits(m.s_tlp_data, std::span<const uint32_t>{});
    m.s_tlp_keep = 0;
    m.s_tlp_sop = 0;
    m.s_tlp_eop = 0;
    m.s_tlp_valid = 0;
    m.m_tlp_ready = 1;  // the firmware takes every TLP and frame at once
    SetBits(m.s_frm_data, std::span<const uint32_t>{});
    m.s_frm_bytes = 0;
    m.s_frm_last = 0;
    m.s_frm_valid = 0;
    m.m_frm_ready = 1;
    for (int i = 0; i < 4; ++i) sim_.Tick();
    m.rst = 0;
    sim_.Tick();
  }

  // The handshake's state into the port; from here the port answers for the session.
  void Start(const fabric::FramingStart& s) {
    Model& m = sim_.m();
    const dxfp_session_config& c = *s.config;
    now_ = last_tx_ = last_rx_ = s.now;
    m.now = now_;
    m.cfg_tx_seq = s.tx_seq;
    m.cfg_rx_seq = s.rx_seq;
    m.cfg_dst_session = s.dst_session;
    m.cfg_src_session = s.src_session;
    m.cfg_dst_epoch = s.dst_epoch;
    m.cfg_src_epoch = s.src_epoch;
    m.cfg_max_frame = s.max_frame;
    m.cfg_peer_window = s.peer_window;
    SetBits(m.cfg_peer_credits, CreditWords(s.peer_limits));
    SetBits(m.cfg_credits, CreditWords(s.rx_limits));
    m.cfg_rto = c.initial_rto_ns;
    m.cfg_max_rto = c.max_rto_ns;
    m.cfg_ack_delay = c.ack_delay_ns;
    m.cfg_keepalive = c.keepalive_ns;
    keepalive_ns_ = c.keepalive_ns;
    ack_delay_ns_ = c.ack_delay_ns;
    poll_ns_ = std::max<uint64_t>(c.min_rto_ns / 4, 1);
    // Sealed (docs/protocol.md 4.12): the transport keys and the first counter, which start
    // loads into the port's registers; the inputs are cleared after it.
    sealed_ = s.sealed;
    m.cfg_sealed = s.sealed;
    if (s.sealed) {
      SetBits(m.cfg_tx_key, BeatWords(s.keys.send.key, DXFP_KEY_SIZE, 256));
      SetBits(m.cfg_rx_key, BeatWords(s.keys.recv.key, DXFP_KEY_SIZE, 256));
      m.cfg_tx_counter = s.keys.send_counter;
    }
    m.start = 1;
    sim_.Tick();
    m.start = 0;
    SetBits(m.cfg_tx_key, std::span<const uint32_t>{});
    SetBits(m.cfg_rx_key, std::span<const uint32_t>{});
    sim_.m().eval();
  }

  // ---- DataFraming ----

  dxfp_rx_result Receive(uint64_t now, std::span<const uint8_t> frame) override {
    now_ = std::max(now_, now);
    frames_rx_++;
    bytes_rx_ += frame.size();
    if (frame.empty()) return DXFP_RX_TRUNCATED;
    rx_frames_.emplace_back(frame.begin(), frame.end());
    fed_ = true;
    if (!sealed_) return DXFP_RX_OK;  // decided when the port runs (Advance)
    // Sealed: the port runs the frame through now, so that the caller learns whether it opened
    // (a bridge takes a host's new address only from a frame that did). What it delivered and
    // sent waits for Advance.
    const std::array<unsigned, 5> why = {kFramesOpened, kBadTag, kReplayed, kUnsealed, kBadCrc};
    std::array<uint64_t, 5> before{};
    for (size_t i = 0; i < why.size(); ++i) before[i] = counter(why[i]);
    Settle();
    const std::array<dxfp_rx_result, 5> result = {DXFP_RX_OK, DXFP_RX_BAD_TAG, DXFP_RX_REPLAYED,
                                                  DXFP_RX_UNSEALED, DXFP_RX_BAD_CRC};
    for (size_t i = 0; i < why.size(); ++i)
      if (counter(why[i]) != before[i]) return result[i];
    return DXFP_RX_MALFORMED;  // refused for its length
  }

  dxfp_send_result Send(uint64_t now, const dxpu_tlp& tlp) override {
    now_ = std::max(now_, now);
    Model& m = sim_.m();
    if (m.m_next_seq - m.m_una >= kModel.window) return DXFP_SEND_REPLAY_FULL;
    std::array<uint8_t, DXPU_TLP_MAX_SIZE> wire{};
    size_t len = 0;
    if (dxpu_tlp_encode(&tlp, wire.data(), wire.size(), &len) != DXPU_TLP_OK)
      return DXFP_SEND_INVALID;
    TlpStream stream = TlpBeats({wire.data(), len}, kWidth);
    tx_hdr_ = std::move(stream.hdr);
    tx_len_ = stream.len;
    tx_beats_.assign(stream.beats.begin(), stream.beats.end());
    // The first beat: the port takes it, refuses it for credit at once, or (replay buffer full)
    // keeps it waiting.
    for (unsigned wait = 0;; ++wait) {
      Drive();
      m.eval();
      if (m.s_tlp_ready) break;
      if (m.s_tlp_no_credit || wait == kReadyWait) {
        const bool credit = m.s_tlp_no_credit != 0;
        tx_beats_.clear();  // withdrawn: nothing of it went in
        m.s_tlp_valid = 0;
        m.eval();
        return credit ? DXFP_SEND_NO_CREDIT : DXFP_SEND_REPLAY_FULL;
      }
      Cycle();
    }
    while (!tx_beats_.empty()) Cycle();
    fed_ = true;
    return DXFP_SEND_OK;
  }

  void Advertise(const dxfp_credits& limits) override {
    SetBits(sim_.m().cfg_credits, CreditWords(limits));
  }

  void Advance(uint64_t now, const Deliver& deliver, const Transmit& transmit) override {
    // Nothing went in since the port last settled and none of its timers is due: it has
    // nothing to do (the simulation's speed depends on not clocking it then).
    // (A Send that waited clocked it: what came out then waits in the queues.)
    if (!fed_ && delivered_.empty() && out_frames_.empty() && now < NextDeadline()) return;
    now_ = std::max(now_, now);
    fed_ = false;
    // Settle, hand out what came out (delivering may send: the port runs again), until quiet.
    for (int round = 0; round < 64; ++round) {
      Settle();
      if (delivered_.empty() && out_frames_.empty()) break;
      while (!out_frames_.empty()) {
        const Bytes f = std::move(out_frames_.front());
        out_frames_.pop_front();
        frames_tx_bytes_ += f.size();
        last_tx_ = now_;
        ack_owed_ = false;  // every frame carries the acknowledgement
        transmit(f);
      }
      while (!delivered_.empty()) {
        const Bytes t = std::move(delivered_.front());
        delivered_.pop_front();
        dxpu_tlp tlp{};
        if (dxpu_tlp_decode(t.data(), t.size(), &tlp) != DXPU_TLP_OK) {
          bad_tlps_++;
          continue;
        }
        last_rx_ = now_;
        ack_owed_ = true;
        deliver(tlp);
      }
    }
  }

  uint64_t NextDeadline() const override {
    uint64_t next = last_tx_ + keepalive_ns_;
    if (ack_owed_) next = std::min(next, last_rx_ + ack_delay_ns_);
    if (una() != next_seq()) next = std::min(next, now_ + poll_ns_);
    return std::max(next, now_);
  }

  uint32_t una() const override { return sim_.m().m_una; }
  uint32_t next_seq() const override { return sim_.m().m_next_seq; }

  void AddCounters(dxfp_session_counters* c) const override {
    c->frames_tx += counter(kFramesTx);
    c->bytes_tx += frames_tx_bytes_;
    c->frames_rx += frames_rx_;
    c->bytes_rx += bytes_rx_;
    c->tlps_retx += counter(kTlpsRetx);
    c->acks_tx += counter(kStandaloneTx) - counter(kKeepalivesTx);
    c->keepalives_tx += counter(kKeepalivesTx);
    c->naks_tx += counter(kNaksTx);
    c->naks_rx += counter(kNaksRx);
    c->rto_expiries += counter(kRto);
    c->bad_crc += counter(kBadCrc);
    c->truncated += counter(kTruncated);
    c->bad_length += counter(kBadLength);
    c->bad_version += counter(kBadVersion);
    c->bad_type += counter(kBadType);
    c->malformed += counter(kMalformed);
    c->bad_ack += counter(kBadAck);
    c->window_violation += counter(kWindowViolation);
    c->credit_violation += counter(kCreditViolation);
    c->duplicate += counter(kDuplicate);
    c->gap += counter(kGap);
    c->bad_tag += counter(kBadTag);
    c->replayed += counter(kReplayed);
    c->unsealed += counter(kUnsealed);
  }

  uint64_t seal_counter() const override { return sim_.m().m_tx_counter; }

  // ---- RtlPort ----

  uint64_t cycles() const override { return sim_.cycles(); }
  uint64_t counter(unsigned i) const override {
    return i < kPortCounters ? GetBits(sim_.m().m_counters, kPortCounters)[i] : 0;
  }
  uint64_t bad_tlps() const override { return bad_tlps_; }
  bool Trace(const std::string& path) override { return sim_.Trace(path); }

 private:
  // The inputs for this cycle: the next beat of the frame and of the TLP going in, if any.
  void Drive() {
    Model& m = sim_.m();
    m.now = now_;
    m.s_frm_valid = !rx_frames_.empty();
    if (!rx_frames_.empty()) {
      const Bytes& f = rx_frames_.front();
      const size_t n = std::min(kBeatBytes, f.size() - rx_off_);
      SetBits(m.s_frm_data, BeatWords(f.data() + rx_off_, n, kWidth));
      m.s_frm_bytes = static_cast<uint32_t>(n);
      m.s_frm_last = rx_off_ + n == f.size();
    }
    m.s_tlp_valid = !tx_beats_.empty();
    if (!tx_beats_.empty()) {
      const TlpBeat& b = tx_beats_.front();
      SetBits(m.s_tlp_hdr, tx_hdr_);
      m.s_tlp_len = tx_len_;
      SetBits(m.s_tlp_data, b.data);
      m.s_tlp_keep = b.keep;
      m.s_tlp_sop = b.sop;
      m.s_tlp_eop = b.eop;
    }
  }

  // One clock cycle; true if anything crossed an edge.
  bool Cycle() {
    Model& m = sim_.m();
    sim_.Low();
    Drive();
    m.eval();
    bool moved = false;
    if (m.s_frm_valid && m.s_frm_ready) {
      moved = true;
      rx_off_ += m.s_frm_bytes;
      if (m.s_frm_last) {
        rx_frames_.pop_front();
        rx_off_ = 0;
      }
    }
    if (m.s_tlp_valid && m.s_tlp_ready) {
      moved = true;
      tx_beats_.pop_front();
    }
    if (m.m_frm_valid) {
      moved = true;
      AppendBeat(GetBits(m.m_frm_data, kWidth / 32), m.m_frm_bytes, &frm_out_);
      if (m.m_frm_last) {
        out_frames_.push_back(std::move(frm_out_));
        frm_out_.clear();
      }
    }
    if (m.m_tlp_valid) {
      moved = true;
      TakeDelivered();
    }
    sim_.Rise();
    return moved;
  }

  // A beat of a TLP the port delivered.
  void TakeDelivered() {
    Model& m = sim_.m();
    if (m.m_tlp_sop) {
      const std::array<uint8_t, 16> h = HeaderBytes(GetBits(m.m_tlp_hdr, 4));
      rx_len_ = m.m_tlp_len;
      const size_t hb = (h[0] & 0x20) != 0 ? 16 : 12;
      rx_tlp_.assign(h.begin(), h.begin() + static_cast<long>(std::min<size_t>(hb, rx_len_)));
    }
    const size_t want =
        rx_len_ > rx_tlp_.size() ? std::min(kBeatBytes, rx_len_ - rx_tlp_.size()) : 0;
    AppendBeat(GetBits(m.m_tlp_data, kWidth / 32), want, &rx_tlp_);
    if (m.m_tlp_eop) {
      delivered_.push_back(std::move(rx_tlp_));
      rx_tlp_.clear();
    }
  }

  // Clocks until every frame given went in and nothing crossed an edge for kSettleCycles.
  void Settle() {
    unsigned quiet = 0;
    while (!rx_frames_.empty() || quiet < kSettleCycles) quiet = Cycle() ? 0 : quiet + 1;
  }

  VerilatedModel<Model> sim_;
  uint64_t now_ = 0;
  uint64_t last_tx_ = 0, last_rx_ = 0;
  bool ack_owed_ = false;
  bool sealed_ = false;
  bool fed_ = true;  // a frame or a TLP went in since the port last settled
  uint64_t keepalive_ns_ = 0, ack_delay_ns_ = 0, poll_ns_ = 1;
  std::deque<Bytes> rx_frames_;  // frames going in; the first from rx_off_
  size_t rx_off_ = 0;
  std::deque<TlpBeat> tx_beats_;  // the TLP going in
  std::vector<uint32_t> tx_hdr_;
  uint32_t tx_len_ = 0;
  Bytes frm_out_, rx_tlp_;  // the frame and the TLP coming out
  size_t rx_len_ = 0;
  std::deque<Bytes> out_frames_, delivered_;
  uint64_t frames_rx_ = 0, bytes_rx_ = 0, frames_tx_bytes_ = 0, bad_tlps_ = 0;
};

}  // namespace

RtlPortModel BridgePortModel() { return kModel; }

std::unique_ptr<RtlPort> RtlPort::Create(const fabric::FramingStart& start, std::string* error) {
  const auto fail = [error](std::string why) -> std::unique_ptr<RtlPort> {
    if (error != nullptr) *error = std::move(why);
    return nullptr;
  };
  if (start.config == nullptr) return fail("no session configuration");
  if (start.config->replay_window != kModel.window)
    return fail("the port's replay window is " + std::to_string(kModel.window) +
                " TLPs; the session announced " + std::to_string(start.config->replay_window));
  if (start.max_frame < 128 || start.max_frame > kModel.max_frame || start.max_frame % 4 != 0)
    return fail("the port carries frames of 128.." + std::to_string(kModel.max_frame) +
                " bytes, a multiple of 4; the session's are " + std::to_string(start.max_frame));
  auto port = std::make_unique<RtlPortImpl>();
  port->Start(start);
  return port;
}

fabric::DataFramingFactory RtlPortFraming() {
  fabric::DataFramingFactory f;
  f.limits.max_frame = kModel.max_frame;
  f.limits.replay_window = kModel.window;
  f.make = [](const fabric::FramingStart& start, std::string* error) {
    return std::unique_ptr<fabric::DataFraming>(RtlPort::Create(start, error));
  };
  return f;
}

}  // namespace dxpu::rtl
