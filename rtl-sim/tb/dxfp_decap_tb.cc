// dxfp_decap_tb.cc - testbench of rtl/dxpu_dxfp_decap.sv at 64 and 256 bits. The golden model
// is lib/core: dxfp_frame_parse() for every frame's verdict, and a copy of the session's
// sequence-number rules (dxfp_session.c on_data and deliver_tlps: bad-ack, window, gap with one
// NAK per gap, duplicates, in-order delivery) for what is delivered, acknowledged and counted.
// Frames are built with lib/core's writer from a sender that replays and skips, then damaged in
// every way (bit flips, truncation, Length, Version, Type, reserved bits, record count, padding,
// TLP bytes: the CRC recomputed where the damage should show past it), or replaced by random
// bytes; random idle cycles on the input and back-pressure on the output. $DXPU_SEED replays.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "Vrtl_dxfp_decap_w256.h"
#include "Vrtl_dxfp_decap_w64.h"
#include "core/crc32c.h"
#include "core/dxfp_frame.h"
#include "core/dxfp_seq.h"
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
  bool nak = false;
  uint32_t nak_seq = 0;
  std::vector<std::pair<Bytes, uint32_t>> tlps;  // delivered: bytes, sequence number
};

struct Counters {
  std::array<uint64_t, DXFP_ERR_COUNT> verdicts{};
  uint64_t bad_ack = 0, window = 0, duplicate = 0, gap = 0, delivered = 0;
};

// lib/core's receive rules for the sequence-number part (dxfp_session.c), nothing else.
class Golden {
 public:
  Golden(uint32_t max_frame, uint32_t window, uint32_t tx_next, uint32_t expected)
      : max_frame_(max_frame), window_(window), tx_next_(tx_next), expected_(expected) {}
  Expect Take(const Bytes& frame) {
    Expect e;
    dxfp_frame f{};
    const dxfp_err err = dxfp_frame_parse(frame.data(), frame.size(), max_frame_, &f);
    e.verdict = static_cast<uint8_t>(err);
    ++c.verdicts.at(err);
    if (err != DXFP_OK) return e;
    e.type = f.hdr.type;
    if (f.hdr.type != DXFP_DATA) return e;
    if (dxfp_seq_before(tx_next_, f.hdr.ack)) {
      ++c.bad_ack;
      return e;
    }
    e.peer_ack = true;
    e.ack = f.hdr.ack;
    e.flags = f.hdr.flags;
    std::vector<Bytes> tlps;
    dxfp_record_iter it{};
    dxfp_record r{};
    dxfp_record_iter_init(&it, &f);
    while (dxfp_record_next(&it, &r))
      if (r.type == DXFP_REC_TLP) tlps.emplace_back(r.body, r.body + r.len);
    const auto ntlp = static_cast<uint32_t>(tlps.size());
    const uint32_t seq = f.hdr.seq;
    if (ntlp == 0) return e;
    if (dxfp_seq_before(expected_, seq)) {
      if (dxfp_seq_distance(expected_, seq) >= window_) {
        ++c.window;
        return e;
      }
      c.gap += ntlp;
      if (!nak_out_ || nak_seq_ != expected_) {
        e.nak = true;
        e.nak_seq = expected_;
        nak_out_ = true;
        nak_seq_ = expected_;
      }
      return e;
    }
    if (dxfp_seq_distance(expected_, seq + ntlp) > window_ &&
        dxfp_seq_before(expected_, seq + ntlp)) {
      ++c.window;
      return e;
    }
    for (uint32_t n = 0; n < ntlp; ++n) {
      if (dxfp_seq_before(seq + n, expected_)) {
        ++c.duplicate;
        continue;
      }
      e.tlps.emplace_back(tlps[n], seq + n);
      ++expected_;
      nak_out_ = false;
      ++c.delivered;
    }
    return e;
  }
  uint32_t expected() const { return expected_; }
  Counters c;

 private:
  uint32_t max_frame_, window_, tx_next_, expected_;
  bool nak_out_ = false;
  uint32_t nak_seq_ = 0;
};

template <typename Model, unsigned Width>
class Dut {
 public:
  static constexpr unsigned kWidth = Width;
  static constexpr unsigned kBeatBytes = Width / 8;
  Dut(uint32_t max_frame, uint32_t window, uint32_t tx_next, uint32_t expected) {
    m().s_frm_valid = 0;
    m().s_frm_last = 0;
    m().s_frm_bytes = 0;
    SetBits(m().s_frm_data, {});
    m().cfg_max_frame = max_frame;
    m().cfg_peer_window = window;
    m().cfg_tx_next_seq = tx_next;
    m().exp_load = 0;
    m().exp_load_value = 0;
    m().nak_rearm = 0;
    m().m_tlp_ready = 0;
    sim_.Reset();
    m().exp_load = 1;
    m().exp_load_value = expected;
    sim_.Tick();
    m().exp_load = 0;
  }
  Model& m() { return sim_.m(); }
  void Tick() { sim_.Tick(); }
  void Eval() { sim_.Eval(); }
  uint64_t cycles() const { return sim_.cycles(); }

 private:
  dxpu::rtl::Sim<Model> sim_;
};

template <typename T>
class DxfpDecapTest : public ::testing::Test {};

using Widths = ::testing::Types<Dut<Vrtl_dxfp_decap_w64, 64>, Dut<Vrtl_dxfp_decap_w256, 256>>;
TYPED_TEST_SUITE(DxfpDecapTest, Widths);

struct RunStats {
  uint64_t cycles = 0, frame_bytes = 0, tlp_bytes = 0;
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
}

// Every frame through the DUT, every output checked against the golden model in order.
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
      EXPECT_EQ(m.m_peer_ack, acks.front().ack);
      EXPECT_EQ(int(m.m_peer_flags), int(acks.front().flags));
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
    h.dst_session = 7;
    h.src_session = 9;
    h.dst_epoch = 11;
    h.src_epoch = 13;
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
  b[1] = 5;  // type
  FrameSource::Recrc(b);
  frames.push_back(b);
  b = bad;
  b[7] += 1;  // record count
  FrameSource::Recrc(b);
  frames.push_back(b);
  frames.push_back(bad);  // and now it is delivered
  TypeParam dut(DXFP_MAX_FRAME, 1024, kTx, kBase);
  Golden g(DXFP_MAX_FRAME, 1024, kTx, kBase);
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
  const uint64_t seed = dxpu::test::test_seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  Counters all;
  int mix = 0;
  for (const auto& [idle, stall] :
       {std::pair{0u, 0u}, {30u, 0u}, {0u, 50u}, {40u, 60u}, {10u, 90u}}) {
    const uint32_t base = static_cast<uint32_t>(rng()), tx = static_cast<uint32_t>(rng());
    const uint32_t max_frame = mix++ == 2 ? 1500 : DXFP_MAX_FRAME;
    FrameSource src(rng(), base, tx);
    Golden g(max_frame, 1024, tx, base);
    TypeParam dut(max_frame, 1024, tx, base);
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

// Bytes per cycle: in-order frames of 17 MWr TLPs of 512 bytes, offered back to back, the
// output always ready. Measured over the whole run (store and forward: the input waits while a
// frame is checked and delivered).
TYPED_TEST(DxfpDecapTest, BytesPerCycle) {
  Bytes mwr = dxpu::test::from_hex("40000080 000000ff 00001000");
  for (int i = 0; i < 512; ++i) mwr.push_back(static_cast<uint8_t>(i * 3));
  dxpu_tlp t{};
  ASSERT_EQ(dxpu_tlp_decode(mwr.data(), mwr.size(), &t), DXPU_TLP_OK);
  std::vector<Bytes> frames;
  uint32_t seq = 100;
  for (int f = 0; f < 40; ++f) {
    dxfp_header h{};
    h.type = DXFP_DATA;
    h.seq = seq;
    h.ack = 0;
    Bytes buf(DXFP_MAX_FRAME);
    dxfp_writer w{};
    ASSERT_EQ(dxfp_writer_init(&w, buf.data(), buf.size(), &h), DXFP_OK);
    dxfp_credits c{};
    ASSERT_EQ(dxfp_writer_add_credits(&w, &c), DXFP_OK);
    while (dxfp_writer_add_tlp(&w, &t) == DXFP_OK) ++seq;
    size_t len = 0;
    dxfp_writer_finish(&w, &len);
    buf.resize(len);
    frames.push_back(buf);
  }
  TypeParam dut(DXFP_MAX_FRAME, 1u << 20, 0, 100);
  Golden g(DXFP_MAX_FRAME, 1u << 20, 0, 100);
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
  EXPECT_GT(bpc, 0.4 * TypeParam::kBeatBytes);
}

}  // namespace
