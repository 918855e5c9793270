// dxfp_decap_tb.cc - testbench of rtl/dxpu_dxfp_decap.sv at 64 and 256 bits. The golden model
// is lib/core: dxfp_frame_parse() for every frame's verdict, and a real dxfp_session (a
// responder that accepted the sender's HELLO) given the same frames for what is delivered,
// acknowledged, NAKed and counted (dxfp_session.c on_data and deliver_tlps: bad-ack, window, gap
// with one NAK per gap, duplicates, in-order delivery). Frames are built with lib/core's writer
// from a sender that replays and skips, then damaged in every way (bit flips, truncation, Length,
// Version, Type, reserved bits, record count, padding, TLP bytes: the CRC recomputed where the
// damage should show past it), or replaced by random bytes; random idle cycles on the input and
// back-pressure on the output. $DXPU_SEED replays.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "Vrtl_dxfp_decap_w256.h"
#include "Vrtl_dxfp_decap_w64.h"
#include "core/crc32c.h"
#include "core/dxfp_frame.h"
#include "core/dxfp_seq.h"
#include "core/dxfp_session.h"
#include "core/tlp_codec.h"
#include "core/tlp_testutil.h"
#include "rtl_tb.h"

namespace {

using dxpu::rtl::GetBits;
using dxpu::rtl::HeaderBytes;
using dxpu::rtl::SetBits;
using Bytes = std::vector<uint8_t>;

using dxpu::rtl::BeatWords;

// What the decapsulator must do with one frame.
struct Expect {
  uint8_t verdict = 0, type = 0;
  bool peer_ack = false;
  uint32_t ack = 0;
  uint8_t flags = 0;
  bool credits = false;  // with peer_ack: the frame's CREDIT record, as on the wire
  std::vector<uint32_t> credit_words;
  bool nak = false;
  uint32_t nak_seq = 0;
  std::vector<std::pair<Bytes, uint32_t>> tlps;  // delivered: bytes, sequence number
};

struct Counters {
  std::array<uint64_t, DXFP_ERR_COUNT> verdicts{};
  uint64_t bad_ack = 0, window = 0, duplicate = 0, gap = 0, delivered = 0, credit = 0;
};

// The sessions and epochs of every frame the tests build: the sender's (source) and the
// receiver's, which the golden session is (destination).
constexpr uint32_t kRxSession = 7, kTxSession = 9, kRxEpoch = 11, kTxEpoch = 13;

Bytes EncodeTlp(const dxpu_tlp& t) {
  Bytes b(DXPU_TLP_MAX_SIZE);
  size_t len = 0;
  EXPECT_EQ(dxpu_tlp_encode(&t, b.data(), b.size(), &len), DXPU_TLP_OK);
  b.resize(len);
  return b;
}

// lib/core's receive path: dxfp_frame_parse() for the verdict, and a dxfp_session given every
// frame for the rest. The session is a responder that accepted a HELLO from the frames' sender
// (its first sequence number `expected`, its replay window `window`), sends from `tx_next` (and
// never sends: the bad-ack limit stays there), has room for every TLP (no credit violation) and
// lives at one instant (no timer runs, so a NAK is asked once per gap: nak_rearm stays low). What
// the RTL leaves to the firmware is kept out of the comparison: a frame that parses is given to
// the session with the session's own IDs and epochs (the RTL does not look at them; the CRC is
// recomputed), and a CLOSE frame that parses is not given to it (it would end the session; the
// RTL gives it a verdict only).
class Golden {
 public:
  // rx_hdr_cap, rx_data_cap: the receive buffers per class (TLPs, 16-byte units); the session
  // never frees them, so the limits stay there: credit-violation once a class's TLPs pass them.
  Golden(uint32_t max_frame, uint32_t window, uint32_t tx_next, uint32_t expected,
         uint32_t rx_hdr_cap = DXFP_MAX_RX_CAP, uint32_t rx_data_cap = DXFP_MAX_RX_CAP)
      : max_frame_(max_frame), base_(expected) {
    dxfp_session_config cfg{};
    dxfp_session_config_defaults(&cfg);
    cfg.role = DXFP_ROLE_RESPONDER;
    cfg.node_id = 0x2222;
    cfg.session_id = kRxSession;
    cfg.epoch = kRxEpoch;
    cfg.initial_seq = tx_next;
    cfg.max_frame = max_frame;
    for (int k = 0; k < DXFP_CLASSES; ++k) {
      cfg.rx_hdr_cap[k] = rx_hdr_cap;
      cfg.rx_data_cap[k] = rx_data_cap;
    }
    mem_.resize((dxfp_session_mem_size(&cfg) + 7) / 8);
    static constexpr dxfp_session_ops kOps = {&OnDeliver, &OnLinkDown, nullptr};
    EXPECT_TRUE(dxfp_session_init(&s_, &cfg, mem_.data(), mem_.size() * 8, &kOps, this));
    // The sender's HELLO.
    dxfp_header h{};
    h.type = DXFP_HELLO;
    h.src_session = kTxSession;
    h.src_epoch = kTxEpoch;
    h.seq = expected;
    Bytes buf(DXFP_MAX_FRAME);
    dxfp_writer w{};
    EXPECT_EQ(dxfp_writer_init(&w, buf.data(), buf.size(), &h), DXFP_OK);
    const dxfp_hello hello{DXFP_VERSION, DXFP_VERSION, 0, DXFP_MAX_FRAME, 0x1111, window};
    EXPECT_EQ(dxfp_writer_add_hello(&w, &hello), DXFP_OK);
    const dxfp_credits credits{};
    EXPECT_EQ(dxfp_writer_add_credits(&w, &credits), DXFP_OK);
    size_t len = 0;
    dxfp_writer_finish(&w, &len);
    dxfp_frame f{};
    EXPECT_EQ(dxfp_frame_parse(buf.data(), len, DXFP_MAX_FRAME, &f), DXFP_OK);
    EXPECT_EQ(dxfp_session_accept(&s_, kNow, &f), DXFP_RX_OK);
    Poll();  // the WELCOME
  }
  Golden(const Golden&) = delete;
  Golden& operator=(const Golden&) = delete;
  Golden(Golden&&) = delete;
  Golden& operator=(Golden&&) = delete;
  ~Golden() = default;

  Expect Take(const Bytes& frame) {
    Expect e;
    dxfp_frame f{};
    const dxfp_err err = dxfp_frame_parse(frame.data(), frame.size(), max_frame_, &f);
    e.verdict = static_cast<uint8_t>(err);
    ++c.verdicts.at(err);
    Bytes in = frame;
    if (err == DXFP_OK) {
      e.type = f.hdr.type;
      if (f.hdr.type == DXFP_CLOSE) return e;
      dxpu_put_be32(&in[DXFP_OFF_DST_SESSION], kRxSession);
      dxpu_put_be32(&in[DXFP_OFF_SRC_SESSION], kTxSession);
      dxpu_put_be32(&in[DXFP_OFF_DST_EPOCH], kRxEpoch);
      dxpu_put_be32(&in[DXFP_OFF_SRC_EPOCH], kTxEpoch);
      dxpu_put_be32(&in[f.hdr.length - DXFP_CRC_SIZE],
                    dxpu_crc32c(0, in.data(), f.hdr.length - DXFP_CRC_SIZE));
    }
    const dxfp_session_counters before = *dxfp_session_get_counters(&s_);
    delivered_.clear();
    const dxfp_rx_result res = dxfp_session_receive(&s_, kNow, in.data(), in.size());
    const dxfp_session_counters& after = *dxfp_session_get_counters(&s_);
    c.bad_ack += after.bad_ack - before.bad_ack;
    c.window += after.window_violation - before.window_violation;
    c.duplicate += after.duplicate - before.duplicate;
    c.gap += after.gap - before.gap;
    c.delivered += after.tlps_delivered - before.tlps_delivered;
    c.credit += after.credit_violation - before.credit_violation;
    if (err == DXFP_OK && f.hdr.type == DXFP_DATA) {
      EXPECT_TRUE(res == DXFP_RX_OK || res == DXFP_RX_BAD_ACK || res == DXFP_RX_WINDOW_VIOLATION ||
                  res == DXFP_RX_CREDIT_VIOLATION)
          << dxfp_rx_result_name(res);
      if (res != DXFP_RX_BAD_ACK) {  // the session took the Acknowledgement
        e.peer_ack = true;
        e.ack = f.hdr.ack;
        e.flags = f.hdr.flags;
        // The limits the session took: its CREDIT record (the first, as lib/core reads it).
        dxfp_record_iter it{};
        dxfp_record r{};
        dxfp_record_iter_init(&it, &f);
        while (!e.credits && dxfp_record_next(&it, &r)) {
          if (r.type != DXFP_REC_CREDIT || r.len != DXFP_CREDIT_BODY_SIZE) continue;
          e.credits = true;
          for (size_t w = 0; w < DXFP_CREDIT_BODY_SIZE / 4; ++w)
            e.credit_words.insert(e.credit_words.begin(), dxpu_get_be32(&r.body[4 * w]));
        }
      }
    }
    // Each TLP delivered is the frame's TLP record its sequence number names.
    std::vector<Bytes> records;
    if (!delivered_.empty()) {
      dxfp_record_iter it{};
      dxfp_record r{};
      dxfp_record_iter_init(&it, &f);
      while (dxfp_record_next(&it, &r))
        if (r.type == DXFP_REC_TLP) records.emplace_back(r.body, r.body + r.len);
    }
    for (const auto& [bytes, seq] : delivered_) {
      const uint32_t n = seq - f.hdr.seq;
      if (n >= records.size()) {
        ADD_FAILURE() << "the session delivered sequence number " << seq << " from a frame of "
                      << records.size() << " TLPs from " << f.hdr.seq;
        break;
      }
      dxpu_tlp t{};
      EXPECT_EQ(dxpu_tlp_decode(records[n].data(), records[n].size(), &t), DXPU_TLP_OK);
      EXPECT_EQ(dxpu::test::to_hex(bytes), dxpu::test::to_hex(EncodeTlp(t)));
      e.tlps.emplace_back(records[n], seq);
    }
    // A NAK request: the next frame the session sends says NAK, its Acknowledgement the gap.
    // Every DATA frame it sends acknowledges expected().
    for (const auto& out : Poll()) {
      dxfp_frame o{};
      if (dxfp_frame_parse(out.data(), out.size(), DXFP_MAX_FRAME, &o) != DXFP_OK ||
          o.hdr.type != DXFP_DATA)
        continue;
      EXPECT_EQ(o.hdr.ack, expected());
      if ((o.hdr.flags & DXFP_F_NAK) != 0) {
        e.nak = true;
        e.nak_seq = o.hdr.ack;
      }
    }
    return e;
  }
  // The receive limits the session checks against (freed + buffer per class), as the port's
  // cfg_rx_limits words: word 5 P hdr ... word 0 Cpl data.
  std::vector<uint32_t> Limits() const {
    dxfp_credits lim{};
    dxfp_rx_credits_advert(&s_.rx_credits, &lim);
    std::vector<uint32_t> w(6);
    for (int k = 0; k < DXFP_CLASSES; ++k) {
      w[5 - 2 * k] = lim.hdr[k];
      w[4 - 2 * k] = lim.data[k];
    }
    return w;
  }
  // The next sequence number the session expects: one more per TLP it delivered (checked against
  // the Acknowledgement of the frames it sends).
  uint32_t expected() const {
    return base_ + static_cast<uint32_t>(dxfp_session_get_counters(&s_)->tlps_delivered);
  }
  Counters c;

 private:
  static constexpr uint64_t kNow = 1000000;

  static void OnDeliver(void* ctx, const dxpu_tlp* tlp) {
    auto* g = static_cast<Golden*>(ctx);
    // The counter already counts this TLP; the first one delivered had base_.
    g->delivered_.emplace_back(EncodeTlp(*tlp), g->expected() - 1);
  }
  static void OnLinkDown(void* /*ctx*/, dxfp_down_reason reason, const dxpu_tlp* /*unanswered*/,
                         size_t /*n*/) {
    ADD_FAILURE() << "the golden session went down: " << dxfp_down_reason_name(reason);
  }
  std::vector<Bytes> Poll() {
    std::vector<Bytes> frames;
    Bytes out(DXFP_MAX_FRAME);
    size_t len = 0;
    while (dxfp_session_poll(&s_, kNow, out.data(), out.size(), &len))
      frames.emplace_back(out.begin(), out.begin() + static_cast<ptrdiff_t>(len));
    return frames;
  }

  uint32_t max_frame_, base_;
  std::vector<uint64_t> mem_;
  dxfp_session s_{};
  std::vector<std::pair<Bytes, uint32_t>> delivered_;  // encoded TLP, sequence number
};

template <typename Model, unsigned Width>
class Dut : public dxpu::rtl::Dut<Model> {
  using Base = dxpu::rtl::Dut<Model>;

 public:
  using Base::m;
  static constexpr unsigned kWidth = Width;
  static constexpr unsigned kBeatBytes = Width / 8;
  Dut(uint32_t max_frame, uint32_t window, uint32_t tx_next, uint32_t expected,
      const std::vector<uint32_t>& rx_limits) {
    SetBits(m().cfg_rx_limits, rx_limits);
    m().s_frm_valid = 0;
    m().s_frm_last = 0;
    m().s_frm_bytes = 0;
    m().s_frm_mark = 0;  // MARK_PLAIN: a plaintext session's frames (the sealed port: dxfp_port_tb)
    m().cfg_sealed = 0;
    SetBits(m().s_frm_data, {});
    m().cfg_max_frame = max_frame;
    m().cfg_peer_window = window;
    m().cfg_tx_next_seq = tx_next;
    m().exp_load = 0;
    m().exp_load_value = 0;
    m().nak_rearm = 0;
    m().m_tlp_ready = 0;
    Base::Reset();
    m().exp_load = 1;
    m().exp_load_value = expected;
    Base::Tick();
    m().exp_load = 0;
  }
};

template <typename T>
class DxfpDecapTest : public ::testing::Test {};

using Widths = ::testing::Types<Dut<Vrtl_dxfp_decap_w64, 64>, Dut<Vrtl_dxfp_decap_w256, 256>>;
TYPED_TEST_SUITE(DxfpDecapTest, Widths);

struct RunStats {
  uint64_t cycles = 0, frame_bytes = 0, tlp_bytes = 0;
  uint64_t input_waits = 0;  // cycles a beat was offered and s_frm_ready was low
};

// The DUT's counters and cumulative acknowledgement against the golden model's.
template <typename D>
void CheckCounters(D& dut, const Golden& g) {
  auto& m = dut.m();
  EXPECT_EQ(m.m_ack, g.expected());
  const auto& v = g.c.verdicts;
  EXPECT_EQ(m.m_cnt_ok, v[DXFP_OK]);
  EXPECT_EQ(m.m_cnt_truncated, v[DXFP_ERR_TRUNCATED]);
  EXPECT_EQ(m.m_cnt_bad_length, v[DXFP_ERR_BAD_LENGTH]);
  EXPECT_EQ(m.m_cnt_bad_crc, v[DXFP_ERR_BAD_CRC]);
  EXPECT_EQ(m.m_cnt_bad_version, v[DXFP_ERR_BAD_VERSION]);
  EXPECT_EQ(m.m_cnt_bad_type, v[DXFP_ERR_BAD_TYPE]);
  EXPECT_EQ(m.m_cnt_malformed, v[DXFP_ERR_MALFORMED]);
  EXPECT_EQ(m.m_cnt_bad_ack, g.c.bad_ack);
  EXPECT_EQ(m.m_cnt_window, g.c.window);
  EXPECT_EQ(m.m_cnt_duplicate, g.c.duplicate);
  EXPECT_EQ(m.m_cnt_gap, g.c.gap);
  EXPECT_EQ(m.m_cnt_delivered, g.c.delivered);
  EXPECT_EQ(m.m_cnt_credit, g.c.credit);
}

// Every frame through the DUT, every output checked against the golden model in order.
// The peer's acknowledgement the decapsulator passed on, and the CREDIT record with it.
template <typename Model>
void CheckPeerAck(const Model& m, const Expect& e) {
  EXPECT_EQ(m.m_peer_ack, e.ack);
  EXPECT_EQ(int(m.m_peer_flags), int(e.flags));
  EXPECT_EQ(m.m_peer_credits_valid != 0, e.credits);
  if (e.credits) {
    EXPECT_EQ(dxpu::rtl::GetBits(m.m_peer_credits, 6), e.credit_words);
  }
}

template <typename D>
RunStats Run(D& dut, Golden& g, const std::vector<Bytes>& frames, std::mt19937_64& rng,
             unsigned idle_pct, unsigned stall_pct) {
  std::deque<Expect> verdicts, acks, naks;
  std::deque<std::pair<Bytes, uint32_t>> tlps;
  for (const auto& fr : frames) {
    Expect e = g.Take(fr);
    verdicts.push_back(e);
    if (e.peer_ack) acks.push_back(e);
    if (e.nak) naks.push_back(e);
    for (auto& t : e.tlps) tlps.push_back(t);
  }
  RunStats st;
  size_t fi = 0, off = 0;
  Bytes cur;
  uint32_t cur_seq = 0;
  const uint64_t start = dut.cycles();
  uint64_t limit = 100000;
  for (const auto& fr : frames) limit += 40 * (fr.size() / 4 + 8);
  while (fi < frames.size() || !verdicts.empty() || !tlps.empty() || !acks.empty() ||
         !naks.empty()) {
    if (dut.cycles() - start > limit) {
      ADD_FAILURE() << "wedged at frame " << fi << " of " << frames.size() << ": "
                    << verdicts.size() << " verdicts, " << tlps.size() << " TLPs missing";
      return st;
    }
    const bool offer = fi < frames.size() && rng() % 100 >= idle_pct;
    if (offer) {
      const Bytes& fr = frames[fi];
      const size_t n = std::min<size_t>(D::kBeatBytes, fr.size() - off);
      SetBits(dut.m().s_frm_data, BeatWords(fr.data() + off, n, D::kWidth));
      dut.m().s_frm_bytes = static_cast<uint32_t>(n);
      dut.m().s_frm_last = off + n == fr.size();
      dut.m().s_frm_valid = 1;
    } else {
      dut.m().s_frm_valid = 0;
    }
    dut.m().m_tlp_ready = rng() % 100 >= stall_pct;
    dut.Eval();
    auto& m = dut.m();
    if (offer && !m.s_frm_ready) ++st.input_waits;
    if (offer && m.s_frm_ready) {
      off += std::min<size_t>(D::kBeatBytes, frames[fi].size() - off);
      if (off == frames[fi].size()) {
        st.frame_bytes += frames[fi].size();
        ++fi;
        off = 0;
      }
    }
    if (m.m_verdict_valid) {
      if (verdicts.empty()) {
        ADD_FAILURE() << "a verdict for no frame";
        return st;
      }
      const Expect& e = verdicts.front();
      EXPECT_EQ(int(m.m_verdict), int(e.verdict))
          << "frame " << (frames.size() - fi) << " from the end: RTL "
          << dxfp_err_name(static_cast<dxfp_err>(m.m_verdict)) << ", lib/core "
          << dxfp_err_name(static_cast<dxfp_err>(e.verdict));
      if (e.verdict == DXFP_OK) {
        EXPECT_EQ(int(m.m_verdict_type), int(e.type));
      }
      verdicts.pop_front();
    }
    if (m.m_peer_ack_valid) {
      if (acks.empty()) {
        ADD_FAILURE() << "a peer acknowledgement too many";
        return st;
      }
      CheckPeerAck(m, acks.front());
      acks.pop_front();
    }
    if (m.m_nak_valid) {
      if (naks.empty()) {
        ADD_FAILURE() << "a NAK too many";
        return st;
      }
      EXPECT_EQ(m.m_nak_seq, naks.front().nak_seq);
      naks.pop_front();
    }
    if (m.m_tlp_valid && m.m_tlp_ready) {
      if (m.m_tlp_sop) {
        const auto h = HeaderBytes(GetBits(m.m_tlp_hdr, 4));
        cur.assign(h.begin(), h.begin() + ((h[0] & 0x20) != 0 ? 16 : 12));
        cur_seq = m.m_tlp_seq;
      }
      const auto words = GetBits(m.m_tlp_data, D::kWidth / 32);
      for (unsigned k = 0; k < D::kWidth / 32; ++k) {
        if (((m.m_tlp_keep >> k) & 1u) == 0) continue;
        const uint32_t w = words[D::kWidth / 32 - 1 - k];
        for (int b = 0; b < 4; ++b) cur.push_back(static_cast<uint8_t>(w >> (24 - 8 * b)));
      }
      if (m.m_tlp_eop) {
        if (tlps.empty()) {
          ADD_FAILURE() << "a TLP delivered that lib/core does not deliver";
          return st;
        }
        EXPECT_EQ(dxpu::test::to_hex(cur), dxpu::test::to_hex(tlps.front().first));
        EXPECT_EQ(cur_seq, tlps.front().second);
        EXPECT_EQ(m.m_tlp_len, tlps.front().first.size());
        st.tlp_bytes += cur.size();
        tlps.pop_front();
      }
    }
    if (::testing::Test::HasFailure()) return st;
    dut.Tick();
  }
  for (int i = 0; i < 50; ++i) {  // nothing more comes out
    dut.m().s_frm_valid = 0;
    dut.m().m_tlp_ready = 1;
    dut.Eval();
    EXPECT_FALSE(dut.m().m_tlp_valid || dut.m().m_verdict_valid || dut.m().m_nak_valid);
    dut.Tick();
  }
  st.cycles = dut.cycles() - start;
  EXPECT_TRUE(acks.empty());
  EXPECT_TRUE(naks.empty());
  CheckCounters(dut, g);
  return st;
}

// Frames as a peer sends them: lib/core's writer, sequence numbers from a sender that mostly
// goes on in order and sometimes replays or skips.
class FrameSource {
 public:
  FrameSource(uint64_t seed, uint32_t base, uint32_t tx_next)
      : rng_(seed), gen_(seed ^ 0x2545f491u), next_(base), tx_next_(tx_next) {}
  const Bytes& TlpOf(uint32_t seq) {
    auto it = tlps_.find(seq);
    if (it == tlps_.end()) it = tlps_.emplace(seq, dxpu::test::encode_ok(gen_.next())).first;
    return it->second;
  }
  Bytes Build(uint8_t type, uint32_t seq, unsigned ntlp, uint8_t flags, uint32_t ack,
              bool odd_record) {
    dxfp_header h{};
    h.type = type;
    h.flags = flags;
    h.dst_session = kRxSession;
    h.src_session = kTxSession;
    h.dst_epoch = kRxEpoch;
    h.src_epoch = kTxEpoch;
    h.seq = seq;
    h.ack = ack;
    Bytes buf(DXFP_MAX_FRAME);
    dxfp_writer w{};
    EXPECT_EQ(dxfp_writer_init(&w, buf.data(), buf.size(), &h), DXFP_OK);
    dxfp_credits c{};
    for (int i = 0; i < 3; ++i) c.hdr[i] = c.data[i] = static_cast<uint32_t>(rng_());
    if (type == DXFP_CLOSE) {
      dxfp_close cl{1, 1, 1};
      EXPECT_EQ(dxfp_writer_add_close(&w, &cl), DXFP_OK);
    } else {
      if (type != DXFP_DATA) {
        dxfp_hello he{1, 1, 0, 9216, 42, 1024};
        EXPECT_EQ(dxfp_writer_add_hello(&w, &he), DXFP_OK);
      }
      EXPECT_EQ(dxfp_writer_add_credits(&w, &c), DXFP_OK);
    }
    if (type == DXFP_DATA) {
      for (unsigned i = 0; i < ntlp; ++i) {
        const Bytes& b = TlpOf(seq + i);
        dxpu_tlp t{};
        EXPECT_EQ(dxpu_tlp_decode(b.data(), b.size(), &t), DXPU_TLP_OK);
        if (dxfp_writer_add_tlp(&w, &t) != DXFP_OK) break;
      }
    }
    size_t len = 0;
    dxfp_writer_finish(&w, &len);
    buf.resize(len);
    if (odd_record && len + 12 <= DXFP_MAX_FRAME) {
      // An unknown record type with a 5-byte body (skipped by the receiver; padded by 3).
      const Bytes rec = {9, 0, 0, 5, 1, 2, 3, 4, 5, 0, 0, 0};
      buf.insert(buf.end() - 4, rec.begin(), rec.end());
      dxpu_put_be16(&buf[DXFP_OFF_NREC], dxpu_get_be16(&buf[DXFP_OFF_NREC]) + 1);
      dxpu_put_be16(&buf[DXFP_OFF_LENGTH], static_cast<uint16_t>(buf.size()));
      Recrc(buf);
    }
    return buf;
  }
  static void Recrc(Bytes& b) {
    if (b.size() < 8) return;
    const size_t flen = dxpu_get_be16(&b[DXFP_OFF_LENGTH]);
    if (flen < 4 || flen > b.size()) return;
    dxpu_put_be32(&b[flen - 4], dxpu_crc32c(0, b.data(), flen - 4));
  }
  // The next frame: good, or damaged in one way.
  Bytes Next(uint32_t expected) {
    const unsigned pick = rng_() % 100;
    if (dxfp_seq_before(expected, next_) && rng_() % 3 == 0) next_ = expected;  // go back N
    uint32_t seq = next_;
    if (pick < 10)
      seq = expected - static_cast<uint32_t>(rng_() % 6);  // replay
    else if (pick < 16)
      seq = next_ + 1 + static_cast<uint32_t>(rng_() % 4);  // skip
    else if (pick < 18)
      seq = next_ + 2000 + static_cast<uint32_t>(rng_() % 100000);  // window
    const unsigned ntlp = rng_() % 6 == 0 ? 0 : 1 + static_cast<unsigned>(rng_() % 8);
    const uint8_t flags = static_cast<uint8_t>(rng_() % 4);
    const uint32_t ack = rng_() % 20 == 0 ? tx_next_ + 1 + static_cast<uint32_t>(rng_() % 50)
                                          : tx_next_ - static_cast<uint32_t>(rng_() % 50);
    uint8_t type = DXFP_DATA;
    if (rng_() % 15 == 0) type = static_cast<uint8_t>(DXFP_HELLO + rng_() % 4);
    Bytes f = Build(type, seq, ntlp, flags, ack, rng_() % 8 == 0);
    if (type == DXFP_DATA && seq == next_) next_ += ntlp;
    if (dxfp_seq_before(next_, expected)) next_ = expected;
    const unsigned dmg = rng_() % 40;
    switch (dmg) {
      case 0:
      case 1:
      case 2:  // a bit flipped anywhere
        f[rng_() % f.size()] ^= static_cast<uint8_t>(1u << (rng_() % 8));
        break;
      case 3:  // truncated
        f.resize(rng_() % f.size());
        break;
      case 4:  // Ethernet padding after Length
        f.resize(f.size() + rng_() % 64, static_cast<uint8_t>(rng_()));
        break;
      case 5:  // Length changed
        dxpu_put_be16(&f[DXFP_OFF_LENGTH],
                      static_cast<uint16_t>(rng_() % 2 ? rng_() : f.size() + 4 * (rng_() % 5) - 8));
        Recrc(f);
        break;
      case 6:  // Version
        f[DXFP_OFF_VERSION] = static_cast<uint8_t>(rng_() % 3);
        Recrc(f);
        break;
      case 7:  // Type
        f[DXFP_OFF_TYPE] = static_cast<uint8_t>(rng_() % 7);
        Recrc(f);
        break;
      case 8:  // reserved byte or flags
        f[rng_() % 2 ? DXFP_OFF_RSVD : DXFP_OFF_FLAGS] |= static_cast<uint8_t>(4u << (rng_() % 6));
        Recrc(f);
        break;
      case 9:  // record count
        dxpu_put_be16(&f[DXFP_OFF_NREC],
                      dxpu_get_be16(&f[DXFP_OFF_NREC]) + (rng_() % 2 ? 1 : 0xffff));
        Recrc(f);
        break;
      case 10:
      case 11: {  // a byte inside the records (record headers, TLP headers, padding)
        if (f.size() > 40)
          f[32 + rng_() % (f.size() - 36)] ^= static_cast<uint8_t>(1u << (rng_() % 8));
        Recrc(f);
        break;
      }
      case 12: {  // random bytes
        f.resize(rng_() % 4 == 0 ? rng_() % 200 : rng_() % 40);
        for (auto& b : f) b = static_cast<uint8_t>(rng_());
        if (f.size() >= 8 && rng_() % 2) {
          dxpu_put_be16(&f[DXFP_OFF_LENGTH], static_cast<uint16_t>(f.size() & ~size_t{3}));
          f[0] = 1;
          Recrc(f);
        }
        break;
      }
      default:
        break;
    }
    if (f.empty()) f.push_back(0);  // a frame has at least one byte on the stream
    return f;
  }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  dxpu::test::RandomTlpGenerator gen_;
  std::map<uint32_t, Bytes> tlps_;
  uint32_t next_, tx_next_;
};

TYPED_TEST(DxfpDecapTest, DirectedFrames) {
  constexpr uint32_t kBase = 0xfffffffd, kTx = 500;
  FrameSource src(1, kBase, kTx);
  std::vector<Bytes> frames;
  frames.push_back(src.Build(DXFP_DATA, kBase, 3, 0, kTx, false));          // delivered: 3
  frames.push_back(src.Build(DXFP_DATA, kBase, 3, 0, kTx, false));          // all duplicates
  frames.push_back(src.Build(DXFP_DATA, kBase + 1, 4, 0, kTx, true));       // 2 dup, 2 new (wraps)
  frames.push_back(src.Build(DXFP_DATA, kBase + 9, 2, 0, kTx, false));      // gap: NAK kBase+5
  frames.push_back(src.Build(DXFP_DATA, kBase + 10, 2, 0, kTx, false));     // same gap: no NAK
  frames.push_back(src.Build(DXFP_DATA, kBase + 5, 1, 2, kTx, false));      // fills, flags NAK
  frames.push_back(src.Build(DXFP_DATA, kBase + 6, 1, 0, kTx + 1, false));  // bad ack
  frames.push_back(src.Build(DXFP_DATA, kBase + 6, 0, 1, kTx, false));      // standalone ack
  frames.push_back(src.Build(DXFP_HELLO, 0, 0, 0, 0, false));               // verdict only
  Bytes bad = src.Build(DXFP_DATA, kBase + 6, 1, 0, kTx, false);
  Bytes b = bad;
  b[40] ^= 1;  // bad CRC
  frames.push_back(b);
  b = bad;
  b.resize(b.size() - 4);  // truncated
  frames.push_back(b);
  b = bad;
  dxpu_put_be16(&b[DXFP_OFF_LENGTH], 34);  // bad length
  frames.push_back(b);
  b = bad;
  b[0] = 2;  // version
  FrameSource::Recrc(b);
  frames.push_back(b);
  b = bad;
  b[1] = 6;  // type (5 is COOKIE)
  FrameSource::Recrc(b);
  frames.push_back(b);
  b = bad;
  b[7] += 1;  // record count
  FrameSource::Recrc(b);
  frames.push_back(b);
  frames.push_back(bad);  // and now it is delivered
  Golden g(DXFP_MAX_FRAME, 1024, kTx, kBase);
  TypeParam dut(DXFP_MAX_FRAME, 1024, kTx, kBase, g.Limits());
  std::mt19937_64 rng(7);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  Run(dut, g, frames, rng, 0, 0);
  EXPECT_EQ(g.c.delivered, 7u);
  EXPECT_EQ(g.c.duplicate, 5u);
  EXPECT_EQ(g.c.gap, 4u);
  EXPECT_EQ(g.c.bad_ack, 1u);
  for (int e = DXFP_ERR_TRUNCATED; e <= DXFP_ERR_MALFORMED; ++e)
    EXPECT_EQ(g.c.verdicts.at(e), 1u) << dxfp_err_name(static_cast<dxfp_err>(e));
  EXPECT_EQ(dut.m().m_ack, kBase + 7);
}

// Seeded random frames, good and damaged, five back-pressure mixes; also a receiver whose
// max_frame is 1500 (larger frames: bad-length).
TYPED_TEST(DxfpDecapTest, RandomFramesAgreeWithLibCore) {
  const dxpu::rtl::TestSeed seed_trace;
  const uint64_t seed = seed_trace.value();
  std::mt19937_64 rng(seed);
  Counters all;
  int mix = 0;
  for (const auto& [idle, stall] :
       {std::pair{0u, 0u}, {30u, 0u}, {0u, 50u}, {40u, 60u}, {10u, 90u}}) {
    const uint32_t base = static_cast<uint32_t>(rng()), tx = static_cast<uint32_t>(rng());
    const uint32_t max_frame = mix++ == 2 ? 1500 : DXFP_MAX_FRAME;
    FrameSource src(rng(), base, tx);
    Golden g(max_frame, 1024, tx, base);
    TypeParam dut(max_frame, 1024, tx, base, g.Limits());
    std::vector<Bytes> frames;
    Golden shadow(max_frame, 1024, tx, base);
    for (int i = 0; i < 400; ++i) {
      frames.push_back(src.Next(shadow.expected()));
      shadow.Take(frames.back());
    }
    Run(dut, g, frames, src.rng(), idle, stall);
    for (size_t e = 0; e < all.verdicts.size(); ++e) all.verdicts[e] += g.c.verdicts[e];
    all.duplicate += g.c.duplicate;
    all.gap += g.c.gap;
    all.window += g.c.window;
    all.bad_ack += g.c.bad_ack;
    all.delivered += g.c.delivered;
    if (::testing::Test::HasFailure()) return;
  }
  for (int e = DXFP_OK; e <= DXFP_ERR_MALFORMED; ++e)
    EXPECT_GT(all.verdicts.at(e), 0u) << dxfp_err_name(static_cast<dxfp_err>(e));
  EXPECT_GT(all.duplicate, 0u);
  EXPECT_GT(all.gap, 0u);
  EXPECT_GT(all.window, 0u);
  EXPECT_GT(all.bad_ack, 0u);
  EXPECT_GT(all.delivered, 1000u);
}

// Receive buffers that are never freed (300 to 1,000 TLPs and as many 16-byte units per class,
// four runs): once a class's TLPs pass them, frames are dropped (credit-violation) as lib/core
// drops them, and the duplicates and gaps that follow agree too.
TYPED_TEST(DxfpDecapTest, CreditViolationAgreesWithLibCore) {
  const dxpu::rtl::TestSeed seed_trace;
  std::mt19937_64 rng(seed_trace.value());
  Counters all;
  for (const auto& [cap, stall] : {std::pair{300u, 0u}, {400u, 30u}, {600u, 60u}, {1000u, 20u}}) {
    const uint32_t base = static_cast<uint32_t>(rng()), tx = static_cast<uint32_t>(rng());
    FrameSource src(rng(), base, tx);
    Golden g(DXFP_MAX_FRAME, 1024, tx, base, cap, cap);
    TypeParam dut(DXFP_MAX_FRAME, 1024, tx, base, g.Limits());
    std::vector<Bytes> frames;
    Golden shadow(DXFP_MAX_FRAME, 1024, tx, base, cap, cap);
    for (int i = 0; i < 400; ++i) {
      frames.push_back(src.Next(shadow.expected()));
      shadow.Take(frames.back());
    }
    Run(dut, g, frames, src.rng(), 10, stall);
    all.credit += g.c.credit;
    all.delivered += g.c.delivered;
    all.duplicate += g.c.duplicate;
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(all.credit, 0u);
  EXPECT_GT(all.delivered, 0u);
  EXPECT_GT(all.duplicate, 0u);
}

// In-order DATA frames full of MWr TLPs with `payload` bytes each (as many as fit a 9216-byte
// frame, at most max_tlps), sequence numbers from `seq` on.
std::vector<Bytes> LargeFrames(unsigned payload, int nframes, uint32_t& seq,
                               unsigned max_tlps = ~0u) {
  Bytes mwr = dxpu::test::from_hex("40000000 000000ff 00001000");
  const unsigned length_dw = (payload / 4) & 0x3ffu;  // 1024 DWs: 0
  mwr[2] = static_cast<uint8_t>(length_dw >> 8);
  mwr[3] = static_cast<uint8_t>(length_dw);
  for (unsigned i = 0; i < payload; ++i) mwr.push_back(static_cast<uint8_t>(i * 3));
  dxpu_tlp t{};
  EXPECT_EQ(dxpu_tlp_decode(mwr.data(), mwr.size(), &t), DXPU_TLP_OK);
  std::vector<Bytes> frames;
  for (int f = 0; f < nframes; ++f) {
    dxfp_header h{};
    h.type = DXFP_DATA;
    h.dst_session = kRxSession;
    h.src_session = kTxSession;
    h.dst_epoch = kRxEpoch;
    h.src_epoch = kTxEpoch;
    h.seq = seq;
    h.ack = 0;
    Bytes buf(DXFP_MAX_FRAME);
    dxfp_writer w{};
    EXPECT_EQ(dxfp_writer_init(&w, buf.data(), buf.size(), &h), DXFP_OK);
    dxfp_credits c{};
    EXPECT_EQ(dxfp_writer_add_credits(&w, &c), DXFP_OK);
    for (unsigned n = 0; n < max_tlps && dxfp_writer_add_tlp(&w, &t) == DXFP_OK; ++n) ++seq;
    size_t len = 0;
    dxfp_writer_finish(&w, &len);
    buf.resize(len);
    frames.push_back(buf);
  }
  return frames;
}

// Only new TLPs take credit: with room for 4 posted TLPs, 3 delivered, then a frame of 2
// duplicates and 1 new one is delivered (4 taken), and one more new TLP is a credit-violation.
TYPED_TEST(DxfpDecapTest, OnlyNewTlpsTakeCredit) {
  constexpr uint32_t kBase = 0xfffffffe;
  const auto frame = [](uint32_t seq, unsigned n) {
    uint32_t s = seq;
    std::vector<Bytes> one = LargeFrames(8, 1, s, n);  // 8 bytes: one data credit each
    return one[0];
  };
  const std::vector<Bytes> frames = {frame(kBase, 3), frame(kBase + 1, 3), frame(kBase + 4, 1)};
  Golden g(DXFP_MAX_FRAME, 1024, 0, kBase, 4, 256);
  TypeParam dut(DXFP_MAX_FRAME, 1024, 0, kBase, g.Limits());
  std::mt19937_64 rng(3);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  Run(dut, g, frames, rng, 0, 0);
  EXPECT_EQ(g.c.delivered, 4u);
  EXPECT_EQ(g.c.duplicate, 2u);
  EXPECT_EQ(g.c.credit, 1u);
}

// Bytes per cycle: in-order frames of 17 MWr TLPs of 512 bytes, offered back to back, the
// output always ready. Measured over the whole run: from the first beat offered to 50 idle
// cycles after the last TLP out (the last frame's delivery included).
TYPED_TEST(DxfpDecapTest, BytesPerCycle) {
  uint32_t seq = 100;
  const std::vector<Bytes> frames = LargeFrames(512, 40, seq);
  ASSERT_EQ(frames[0].size(), 60u + 17u * 528u + 4u);
  Golden g(DXFP_MAX_FRAME, 1u << 20, 0, 100);
  TypeParam dut(DXFP_MAX_FRAME, 1u << 20, 0, 100, g.Limits());
  std::mt19937_64 rng(8);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  const auto start = std::chrono::steady_clock::now();
  const RunStats st = Run(dut, g, frames, rng, 0, 0);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(g.c.delivered, 40u * 17u);
  const double bpc = static_cast<double>(st.frame_bytes) / static_cast<double>(st.cycles);
  std::printf(
      "dxpu_dxfp_decap DATA_WIDTH=%u: %llu frame bytes (%llu TLP bytes) in %llu cycles: %.2f "
      "frame bytes per cycle (beat %u); %.0f simulated cycles/s\n",
      TypeParam::kWidth, static_cast<unsigned long long>(st.frame_bytes),
      static_cast<unsigned long long>(st.tlp_bytes), static_cast<unsigned long long>(st.cycles),
      bpc, TypeParam::kBeatBytes, static_cast<double>(st.cycles) / secs);
  EXPECT_GT(bpc, 0.9 * TypeParam::kBeatBytes);
}

// One beat per cycle, measured as a property: large frames back to back (MWr TLPs of 256, 512,
// 1024 and 4096 bytes, a few frames of each, in order), the output always ready: s_frm_ready
// never goes low while a beat is offered, and every TLP comes out.
TYPED_TEST(DxfpDecapTest, NeverStallsBackToBackLargeFrames) {
  uint32_t seq = 0xfffffff0;  // wraps on the way
  std::vector<Bytes> frames;
  for (const unsigned payload : {512u, 4096u, 256u, 1024u, 4096u, 512u}) {
    const auto more = LargeFrames(payload, 3, seq);
    frames.insert(frames.end(), more.begin(), more.end());
  }
  Golden g(DXFP_MAX_FRAME, 1024, 0, 0xfffffff0);
  TypeParam dut(DXFP_MAX_FRAME, 1024, 0, 0xfffffff0, g.Limits());
  std::mt19937_64 rng(9);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  const RunStats st = Run(dut, g, frames, rng, 0, 0);
  EXPECT_EQ(g.c.delivered, seq - 0xfffffff0u);
  EXPECT_EQ(g.c.verdicts[DXFP_OK], frames.size());
  EXPECT_EQ(st.input_waits, 0u) << "s_frm_ready low while a beat was offered";
}

// The second buffer under back-pressure: large frames of several sizes while the output stalls
// and the input idles at random, so that a frame comes into a buffer whose previous frame is
// still going out (it is written behind the delivery, never over it).
TYPED_TEST(DxfpDecapTest, LargeFramesUnderBackPressure) {
  const dxpu::rtl::TestSeed seed_trace;
  const uint64_t seed = seed_trace.value();
  std::mt19937_64 rng(seed);
  for (const auto& [idle, stall] : {std::pair{0u, 30u}, {20u, 60u}, {0u, 90u}}) {
    uint32_t seq = static_cast<uint32_t>(rng());
    const uint32_t first = seq;
    std::vector<Bytes> frames;
    for (int i = 0; i < 8; ++i) {
      static constexpr std::array<unsigned, 6> kPayload = {32, 128, 256, 512, 1024, 4096};
      const auto more = LargeFrames(kPayload.at(rng() % kPayload.size()), 1, seq);
      frames.insert(frames.end(), more.begin(), more.end());
    }
    Golden g(DXFP_MAX_FRAME, 1024, 0, first);
    TypeParam dut(DXFP_MAX_FRAME, 1024, 0, first, g.Limits());
    Run(dut, g, frames, rng, idle, stall);
    EXPECT_EQ(g.c.delivered, seq - first);
    if (::testing::Test::HasFailure()) return;
  }
}

// Inputs longer than a buffer (bytes past MAX_FRAME are counted, not stored): a good frame with
// 30000 bytes of padding after Length (delivered: the padding is ignored), 20000 random bytes
// with Length 9216 (bad CRC), a frame with Length 9220 (bad length); then a good frame, which
// must still come through.
TYPED_TEST(DxfpDecapTest, InputsLongerThanTheBuffer) {
  uint32_t seq = 5;
  std::vector<Bytes> frames = LargeFrames(512, 1, seq);
  frames[0].resize(frames[0].size() + 30000, 0xa5);
  std::mt19937_64 rng(10);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  Bytes junk(20000);
  for (auto& b : junk) b = static_cast<uint8_t>(rng());
  dxpu_put_be16(&junk[DXFP_OFF_LENGTH], DXFP_MAX_FRAME);  // a CRC that does not match
  frames.push_back(junk);
  uint32_t any_seq = 0;
  Bytes too_long = LargeFrames(512, 1, any_seq)[0];
  too_long.resize(9220, 0);
  dxpu_put_be16(&too_long[DXFP_OFF_LENGTH], 9220);
  FrameSource::Recrc(too_long);
  frames.push_back(too_long);
  const auto last = LargeFrames(256, 1, seq);
  frames.push_back(last[0]);
  Golden g(DXFP_MAX_FRAME, 1024, 0, 5);
  TypeParam dut(DXFP_MAX_FRAME, 1024, 0, 5, g.Limits());
  Run(dut, g, frames, rng, 0, 0);
  EXPECT_EQ(g.c.verdicts[DXFP_OK], 2u);
  EXPECT_EQ(g.c.verdicts[DXFP_ERR_BAD_CRC], 1u);
  EXPECT_EQ(g.c.verdicts[DXFP_ERR_BAD_LENGTH], 1u);
  EXPECT_EQ(g.c.delivered, seq - 5u);
}

}  // namespace
