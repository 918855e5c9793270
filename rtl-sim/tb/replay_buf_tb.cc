// replay_buf_tb.cc - testbench of rtl/dxpu_replay_buf.sv at 64 and 256 bits (the models'
// WINDOW 16, RING_BYTES 8192). The golden rules are lib/core's session (dxfp_session.c:
// take_ack, take_nak, the RTO replay, the replay buffer's window and byte checks): the bench
// keeps its own copy of una and sent_end, checks every cycle's send_ptr transition and the
// repeated-NAK rule against them, every TLP that comes out against the one that went in with
// that sequence number (header, length, every beat's data, DW enables and eop, bit for bit),
// and numbers the TLPs as the encapsulator would (m_seq_load). The random test puts a lossy
// channel and a receiver written from lib/core's receive rules after the output. $DXPU_SEED
// replays a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "Vrtl_replay_buf_w256.h"
#include "Vrtl_replay_buf_w64.h"
#include "core/dxfp_seq.h"
#include "core/tlp_codec.h"
#include "core/tlp_testutil.h"
#include "rtl_tb.h"

namespace {

using dxpu::rtl::BeatWords;
using dxpu::rtl::GetBits;
using dxpu::rtl::HeaderWords;
using dxpu::rtl::SetBits;
using Bytes = std::vector<uint8_t>;
using Words = std::vector<uint32_t>;

constexpr uint32_t kWindow = 16;       // the models' WINDOW
constexpr uint32_t kRingBytes = 8192;  // ...and RING_BYTES

bool Before(uint32_t a, uint32_t b) { return dxfp_seq_before(a, b); }

// One beat of a TLP as it crosses a port.
struct Beat {
  Words data;
  uint32_t keep = 0;
  bool eop = false;
  bool operator==(const Beat&) const = default;
};

// A TLP header beside payload: the header port, the length, the beats.
struct Tlp {
  Words hdr;
  uint32_t len = 0;
  std::vector<Beat> beats;
  bool operator==(const Tlp&) const = default;
};

std::string Describe(const Tlp& t) {
  std::ostringstream s;
  s << std::hex << "len " << std::dec << t.len << std::hex << " hdr";
  for (size_t i = t.hdr.size(); i-- > 0;) s << ' ' << t.hdr[i];
  s << ", " << std::dec << t.beats.size() << " beats";
  for (size_t b = 0; b < t.beats.size() && b < 2; ++b) {
    s << std::hex << " [keep " << t.beats[b].keep << (t.beats[b].eop ? " eop" : "");
    for (size_t i = t.beats[b].data.size(); i-- > 0;) s << ' ' << t.beats[b].data[i];
    s << ']';
  }
  return s.str();
}

// The DW enables of a beat holding n wire-order bytes: the first DW is the top bit.
uint32_t Keep(size_t n, unsigned width) {
  const unsigned lanes = width / 32;
  const auto used = static_cast<unsigned>(std::min<size_t>((n + 3) / 4, lanes));
  const uint32_t all = lanes >= 32 ? ~0u : (1u << lanes) - 1u;
  return used == 0 ? 0 : all & ~((1u << (lanes - used)) - 1u);
}

// A TLP's bytes (lib/core's encoding) as the port carries them: the header with sop, then the
// bytes after it in beats. With `junk`, the bits no byte of the TLP uses (a 3 DW header's
// bits 31:0, the rest of the last beat, the beat of a TLP without payload) are random: the
// buffer must give them back as it took them.
Tlp MakeTlp(const Bytes& bytes, unsigned width, std::mt19937_64* junk) {
  const size_t bb = width / 8, hb = (bytes[0] & 0x20) != 0 ? 16 : 12;
  const size_t rest = bytes.size() > hb ? bytes.size() - hb : 0;
  const size_t n = std::max<size_t>(1, (rest + bb - 1) / bb);
  Tlp t;
  t.hdr = HeaderWords(bytes);
  if (junk != nullptr && hb == 12) t.hdr[0] = static_cast<uint32_t>((*junk)());
  t.len = static_cast<uint32_t>(bytes.size());
  for (size_t i = 0; i < n; ++i) {
    const size_t off = hb + i * bb;
    const size_t k = off < bytes.size() ? std::min(bb, bytes.size() - off) : 0;
    Beat b;
    b.data = BeatWords(bytes.data() + std::min(off, bytes.size()), k, width);
    if (junk != nullptr) {
      for (size_t j = k; j < bb; ++j) {
        const size_t bit = width - 8 - 8 * j;
        b.data[bit / 32] |= static_cast<uint32_t>((*junk)() & 0xff) << (bit % 32);
      }
    }
    b.keep = Keep(k, width);
    b.eop = i + 1 == n;
    t.beats.push_back(std::move(b));
  }
  return t;
}

// A posted write of `bytes` bytes (a multiple of 4, 4..4096) through lib/core's encoder.
Bytes MemWrite(uint32_t bytes, uint8_t fill) {
  Bytes payload(bytes);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(fill + i * 13);
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MWR;
  t.length_dw = static_cast<uint16_t>(bytes / 4);
  t.requester_id = 0x0100;
  t.first_be = 0xf;
  t.last_be = bytes > 4 ? 0xf : 0;
  t.addr = 0x10000;
  t.payload = payload.data();
  return dxpu::test::encode_ok(t);
}

// A TLP from lib/core's tests' generator, at most 300 bytes (a dozen held stay far from the
// ring's 8 KiB).
Bytes SmallTlp(dxpu::test::RandomTlpGenerator& gen) {
  for (;;) {
    Bytes b = dxpu::test::encode_ok(gen.next());
    if (b.size() <= 300) return b;
  }
}

// A memory read (a header, no payload) through lib/core's encoder.
Bytes MemRead(uint16_t tag) {
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MRD;
  t.length_dw = 1;
  t.requester_id = 0x0100;
  t.tag = tag;
  t.first_be = 0xf;
  t.addr = 0x2000 + 4u * (tag & 0xff);
  return dxpu::test::encode_ok(t);
}

template <typename Model, unsigned Width>
class Dut : public dxpu::rtl::Dut<Model> {
  using Base = dxpu::rtl::Dut<Model>;

 public:
  using Base::m;
  static constexpr unsigned kWidth = Width;
  static constexpr unsigned kBeatBytes = Width / 8;
  Dut() {
    Model& d = m();
    d.now = 0;
    d.cfg_rto = 0;
    d.seq_init = 0;
    d.seq_init_value = 0;
    SetBits(d.s_tlp_hdr, {});
    d.s_tlp_len = 0;
    SetBits(d.s_tlp_data, {});
    d.s_tlp_keep = 0;
    d.s_tlp_sop = 0;
    d.s_tlp_eop = 0;
    d.s_tlp_valid = 0;
    d.m_tlp_ready = 0;
    d.m_seq_load_ready = 0;
    d.ack_valid = 0;
    d.ack_seq = 0;
    d.nak_valid = 0;
    d.nak_seq = 0;
    d.rto_expire = 0;
    Base::Reset();
  }
};

// The bench: drives the input from a queue, the output's and the load's ready from stall
// percentages, acks / NAKs / RTO from what a test asks for the next cycle; checks every cycle
// against its own copy of lib/core's rules.
template <typename D>
class Bench {
 public:
  explicit Bench(uint32_t init, uint64_t seed = 1) : rng_(seed), init_(init) {
    una_ = sent_end_ = init;
    dut_.m().seq_init = 1;
    dut_.m().seq_init_value = init;
    dut_.Eval();
    dut_.Tick();
    dut_.m().seq_init = 0;
    dut_.Eval();
    EXPECT_EQ(dut_.m().m_una, init);
    EXPECT_EQ(dut_.m().m_next_seq, init);
  }

  D& dut() { return dut_; }
  auto& m() { return dut_.m(); }

  // Settings.
  unsigned idle_pct = 0, stall_pct = 0, load_stall_pct = 0;
  uint64_t rto = 1000;  // cfg_rto, in `now` units
  uint64_t now = 0;
  bool auto_time = true;  // now advances by one per cycle
  bool auto_ack = false;  // ack every TLP as soon as it is out
  std::mt19937_64* junk = nullptr;

  // For the next cycle only.
  std::optional<uint32_t> ack, nak;
  bool rto_pulse = false;

  void Push(const Bytes& bytes) { to_send_.push_back(MakeTlp(bytes, D::kWidth, junk)); }
  size_t queued() const { return to_send_.size(); }
  const std::vector<Tlp>& accepted() const { return accepted_; }
  // TLPs out (eop taken), with their sequence numbers, in order.
  const std::vector<std::pair<uint32_t, Tlp>>& out() const { return out_; }
  uint32_t init() const { return init_; }
  uint32_t una() const { return una_; }
  uint32_t sent_end() const { return sent_end_; }
  uint64_t loads() const { return loads_; }
  uint64_t sops_in() const { return sops_in_; }
  uint64_t beats_in() const { return beats_in_; }
  uint64_t beats_out() const { return beats_out_; }
  uint64_t naks_acted() const { return naks_acted_; }
  uint64_t rto_replays() const { return rto_replays_; }
  uint64_t cycles() const { return dut_.cycles(); }

  void Step() {
    auto& d = m();
    // What the previous cycle put into the output register.
    const uint32_t sp_before = d.m_send_ptr;
    const uint64_t now_in = now;
    DriveInput();
    d.m_tlp_ready = Pct() >= stall_pct ? 1 : 0;
    d.m_seq_load_ready = Pct() >= load_stall_pct ? 1 : 0;
    if (auto_ack && !out_.empty()) ack = out_.back().first + 1;
    d.now = now;
    d.cfg_rto = rto;
    d.ack_valid = ack.has_value() ? 1 : 0;
    d.ack_seq = ack.value_or(0);
    d.nak_valid = nak.has_value() ? 1 : 0;
    d.nak_seq = nak.value_or(0);
    d.rto_expire = rto_pulse ? 1 : 0;
    d.seq_init = 0;
    dut_.Eval();
    ObserveInput();
    ObserveLoad();
    ObserveOutput();
    const bool advance = d.m_tlp_valid == 0 || d.m_tlp_ready != 0;

    // lib/core's take_ack / take_nak on the bench's una and sent_end.
    const uint32_t una_before = una_;
    bool ack_bad = false, nak_bad = false;
    if (ack) {
      ack_bad = Before(sent_end_, *ack);
      if (!ack_bad && Before(una_, *ack)) una_ = *ack;
    }
    if (nak) {
      nak_bad = Before(sent_end_, *nak);
      if (!nak_bad && Before(una_, *nak)) una_ = *nak;
    }
    bad_acks_ += (ack_bad ? 1 : 0) + (nak_bad ? 1 : 0);
    const bool nak_good = nak.has_value() && !nak_bad;
    const uint32_t nak_v = nak.value_or(0);
    const uint64_t ignored_before = d.m_cnt_naks_ignored;
    const bool rto_now = rto_pulse;
    if (rto_now) {
      ++rtos_;
      if (una_ != sent_end_) ++rto_replays_;
    }
    ack.reset();
    nak.reset();
    rto_pulse = false;

    dut_.Tick();
    if (auto_time) ++now;

    // The cycle's send: a sop newly in the output register was issued from send_ptr, after
    // every ack of the cycles before (nothing acknowledged is ever sent again).
    const bool issued = advance && d.m_tlp_valid != 0 && d.m_tlp_sop != 0;
    if (issued) {
      const uint32_t s = d.m_tlp_seq;
      EXPECT_EQ(s, sp_before) << "a TLP out of turn";
      EXPECT_FALSE(Before(s, una_before)) << "TLP " << s << " sent after una " << una_before;
      if (s == sent_end_) {
        ++sent_end_;
        ++tx_;
      } else {
        EXPECT_TRUE(Before(s, sent_end_)) << "TLP " << s << " never stored";
        ++retx_;
      }
    }
    // The NAK rule and the new send_ptr.
    const uint32_t sp1 = issued ? sp_before + 1 : sp_before;
    const uint32_t sp2 = Before(sp1, una_) ? una_ : sp1;
    bool act = false;
    if (nak_good) {
      ++naks_;
      const bool repeat = nak_acted_ && last_nak_seq_ == nak_v && now_in < last_nak_time_ + rto;
      act = nak_v == una_ && una_ != sp2 && !repeat;
      if (act) {
        nak_acted_ = true;
        last_nak_seq_ = nak_v;
        last_nak_time_ = now_in;
        ++naks_acted_;
      } else {
        ++naks_ignored_;
      }
    }
    EXPECT_EQ(uint64_t{d.m_cnt_naks_ignored} - ignored_before, nak_good && !act ? 1u : 0u)
        << "NAK " << nak_v << " at " << now_in;
    EXPECT_EQ(d.m_send_ptr, act || rto_now ? una_ : sp2);
    EXPECT_EQ(d.m_una, una_);
    EXPECT_EQ(d.m_sent_end, sent_end_);
    EXPECT_EQ(d.m_next_seq, init_ + static_cast<uint32_t>(accepted_.size()));
    EXPECT_EQ(d.m_in_flight, d.m_next_seq - una_);
    EXPECT_LE(d.m_in_flight, kWindow);
  }

  // Steps until pred() or `limit` cycles; false (and a failure) on the limit.
  template <typename Pred>
  bool RunUntil(Pred pred, uint64_t limit, const char* what) {
    for (uint64_t i = 0; i < limit; ++i) {
      if (pred()) return true;
      Step();
      if (::testing::Test::HasFailure()) return false;
    }
    if (pred()) return true;
    ADD_FAILURE() << "wedged waiting for " << what << " after " << limit << " cycles";
    return false;
  }
  void Run(uint64_t n) {
    for (uint64_t i = 0; i < n && !::testing::Test::HasFailure(); ++i) Step();
  }

  // Counters against the bench's.
  void CheckCounters() {
    auto& d = m();
    EXPECT_EQ(d.m_cnt_tlps_tx, tx_);
    EXPECT_EQ(d.m_cnt_tlps_retx, retx_);
    EXPECT_EQ(d.m_cnt_naks, naks_);
    EXPECT_EQ(d.m_cnt_naks_ignored, naks_ignored_);
    EXPECT_EQ(d.m_cnt_rto, rtos_);
    EXPECT_EQ(d.m_cnt_bad_ack, bad_acks_);
  }
  uint64_t tx() const { return tx_; }
  uint64_t retx() const { return retx_; }

  // Whether the input takes the TLP at the head of the queue now (no cycle spent).
  bool SopReadyNow() {
    if (to_send_.empty() || beat_ != 0) return false;
    Drive(to_send_.front(), 0);
    dut_.Eval();
    const bool r = m().s_tlp_ready != 0;
    m().s_tlp_valid = 0;
    dut_.Eval();
    return r;
  }

 private:
  unsigned Pct() { return static_cast<unsigned>(rng_() % 100); }

  void Drive(const Tlp& t, size_t b) {
    auto& d = m();
    SetBits(d.s_tlp_hdr, t.hdr);
    d.s_tlp_len = t.len;
    SetBits(d.s_tlp_data, t.beats[b].data);
    d.s_tlp_keep = t.beats[b].keep;
    d.s_tlp_sop = b == 0 ? 1 : 0;
    d.s_tlp_eop = t.beats[b].eop ? 1 : 0;
    d.s_tlp_valid = 1;
  }

  void DriveInput() {
    auto& d = m();
    d.s_tlp_valid = 0;
    if (!to_send_.empty() && (beat_ != 0 || Pct() >= idle_pct)) {
      Drive(to_send_.front(), beat_);
    } else {
      d.s_tlp_sop = 0;
      d.s_tlp_eop = 0;
    }
  }

  void ObserveInput() {
    auto& d = m();
    if (d.s_tlp_valid == 0 || d.s_tlp_ready == 0) return;
    ++beats_in_;
    if (beat_ == 0) ++sops_in_;
    if (++beat_ == to_send_.front().beats.size()) {
      accepted_.push_back(std::move(to_send_.front()));
      to_send_.pop_front();
      beat_ = 0;
    }
  }

  void ObserveLoad() {
    auto& d = m();
    if (d.m_seq_load == 0) return;
    EXPECT_EQ(d.m_tlp_valid, 0) << "seq_load before the output drained";
    if (d.m_seq_load_ready != 0) {
      enc_ = d.m_seq_load_value;
      enc_valid_ = true;
      ++loads_;
    }
  }

  void ObserveOutput() {
    auto& d = m();
    if (d.m_tlp_valid == 0 || d.m_tlp_ready == 0) return;
    ++beats_out_;
    if (d.m_tlp_sop != 0) {
      EXPECT_FALSE(in_out_) << "sop inside a TLP";
      EXPECT_TRUE(enc_valid_) << "a TLP before any sequence load";
      EXPECT_EQ(d.m_tlp_seq, enc_) << "the encapsulator would number it " << enc_;
      ++enc_;
      cur_ = Tlp{GetBits(d.m_tlp_hdr, 4), d.m_tlp_len, {}};
      cur_seq_ = d.m_tlp_seq;
      in_out_ = true;
    } else {
      EXPECT_TRUE(in_out_) << "a beat outside a TLP";
      EXPECT_EQ(d.m_tlp_seq, cur_seq_);
    }
    cur_.beats.push_back(
        Beat{GetBits(d.m_tlp_data, D::kWidth / 32), d.m_tlp_keep, d.m_tlp_eop != 0});
    if (d.m_tlp_eop != 0 || cur_.beats.size() > 4096) {
      in_out_ = false;
      const uint32_t idx = cur_seq_ - init_;
      if (idx >= accepted_.size()) {
        ADD_FAILURE() << "TLP " << cur_seq_ << " out, never accepted";
      } else if (!(cur_ == accepted_[idx])) {
        ADD_FAILURE() << "TLP " << cur_seq_ << " out:\n  " << Describe(cur_) << "\nin:\n  "
                      << Describe(accepted_[idx]);
      }
      out_.emplace_back(cur_seq_, std::move(cur_));
      cur_ = Tlp{};
    }
  }

  D dut_;
  std::mt19937_64 rng_;
  uint32_t init_;
  std::deque<Tlp> to_send_;
  size_t beat_ = 0;
  std::vector<Tlp> accepted_;
  std::vector<std::pair<uint32_t, Tlp>> out_;
  Tlp cur_;
  uint32_t cur_seq_ = 0;
  bool in_out_ = false;
  uint32_t enc_ = 0;
  bool enc_valid_ = false;
  uint32_t una_ = 0, sent_end_ = 0;
  bool nak_acted_ = false;
  uint32_t last_nak_seq_ = 0;
  uint64_t last_nak_time_ = 0;
  uint64_t loads_ = 0, sops_in_ = 0, beats_in_ = 0, beats_out_ = 0;
  uint64_t tx_ = 0, retx_ = 0, naks_ = 0, naks_ignored_ = 0, naks_acted_ = 0, rtos_ = 0,
           rto_replays_ = 0, bad_acks_ = 0;
};

template <typename T>
class ReplayBufTest : public ::testing::Test {};

using Widths = ::testing::Types<Dut<Vrtl_replay_buf_w64, 64>, Dut<Vrtl_replay_buf_w256, 256>>;
TYPED_TEST_SUITE(ReplayBufTest, Widths);

// Sequence numbers of the TLPs out, from the n-th on.
std::vector<uint32_t> SeqsOut(const std::vector<std::pair<uint32_t, Tlp>>& out, size_t from = 0) {
  std::vector<uint32_t> s;
  for (size_t i = from; i < out.size(); ++i) s.push_back(out[i].first);
  return s;
}
std::vector<uint32_t> Range(uint32_t first, uint32_t n) {
  std::vector<uint32_t> s;
  for (uint32_t i = 0; i < n; ++i) s.push_back(first + i);
  return s;
}

// First transmissions in order: a sequence load first, then every TLP bit for bit with the
// next number.
TYPED_TEST(ReplayBufTest, FirstTransmissionInOrder) {
  dxpu::test::RandomTlpGenerator gen(11);
  std::mt19937_64 junk(12);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  Bench<TypeParam> b(100);
  b.junk = &junk;
  for (int i = 0; i < 10; ++i) b.Push(SmallTlp(gen));
  b.Push(MemRead(1));
  b.Push(MemWrite(4, 1));
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 12; }, 20000, "12 TLPs out"));
  b.Run(5);
  EXPECT_EQ(SeqsOut(b.out()), Range(100, 12));
  EXPECT_EQ(b.loads(), 1u);
  EXPECT_EQ(b.m().m_next_seq, 112u);
  EXPECT_EQ(b.m().m_sent_end, 112u);
  EXPECT_EQ(b.m().m_send_ptr, 112u);
  EXPECT_EQ(b.m().m_in_flight, 12u);
  EXPECT_EQ(b.m().m_cnt_tlps_tx, 12u);
  EXPECT_EQ(b.m().m_cnt_tlps_retx, 0u);
  EXPECT_EQ(b.m().m_cnt_full_cycles, 0u);
  b.CheckCounters();
}

// Full by count: WINDOW TLPs held, the next waits (nothing lost); an ack frees and the rest go
// in; an old ack changes nothing.
TYPED_TEST(ReplayBufTest, AckFreesAndFullByCount) {
  Bench<TypeParam> b(7);
  for (uint16_t i = 0; i < 20; ++i) b.Push(MemRead(i));
  b.Run(200);
  EXPECT_EQ(b.accepted().size(), kWindow);
  EXPECT_EQ(b.m().m_in_flight, kWindow);
  EXPECT_EQ(b.out().size(), kWindow);
  EXPECT_GT(b.m().m_cnt_full_cycles, 100u);
  EXPECT_FALSE(b.SopReadyNow());
  b.ack = 7 + 5;
  b.Step();
  EXPECT_EQ(b.m().m_una, 12u);
  EXPECT_EQ(b.m().m_in_flight, kWindow - 5);
  ASSERT_TRUE(b.RunUntil([&] { return b.queued() == 0; }, 100, "the rest in"));
  b.Run(10);
  EXPECT_EQ(b.m().m_in_flight, kWindow - 1);
  EXPECT_EQ(SeqsOut(b.out()), Range(7, 20));
  const uint32_t full = b.m().m_cnt_full_cycles;
  b.ack = 7 + 2;  // old: harmless
  b.Step();
  EXPECT_EQ(b.m().m_una, 12u);
  EXPECT_EQ(b.m().m_cnt_bad_ack, 0u);
  b.ack = 7 + 20;  // everything
  b.Run(3);
  EXPECT_EQ(b.m().m_in_flight, 0u);
  EXPECT_EQ(b.m().m_cnt_full_cycles, full);
  b.CheckCounters();
}

// Full by bytes: 1 KiB writes fill the 8 KiB ring after 8, well below the window; an ack of one
// lets the ninth in.
TYPED_TEST(ReplayBufTest, FullByBytes) {
  Bench<TypeParam> b(0xabc);
  const uint32_t per_tlp = 1024;  // payload bytes: exactly 1024 / beat bytes beats each
  for (uint8_t i = 0; i < 10; ++i) b.Push(MemWrite(per_tlp, i));
  b.Run(2000);
  const uint32_t fit = kRingBytes / per_tlp;
  EXPECT_EQ(b.accepted().size(), fit);
  EXPECT_LT(b.m().m_in_flight, kWindow);
  EXPECT_EQ(b.out().size(), fit);
  EXPECT_GT(b.m().m_cnt_full_cycles, 500u);
  EXPECT_FALSE(b.SopReadyNow());
  b.ack = 0xabc + 1;
  ASSERT_TRUE(b.RunUntil([&] { return b.accepted().size() == fit + 1; }, 500, "the ninth in"));
  b.Run(200);
  EXPECT_EQ(b.accepted().size(), fit + 1);
  EXPECT_FALSE(b.SopReadyNow());
  b.ack = 0xabc + 3;
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 10; }, 2000, "all out"));
  EXPECT_EQ(SeqsOut(b.out()), Range(0xabc, 10));
  b.CheckCounters();
}

// A NAK mid-stream: the output restarts at nak_seq after a sequence load, sends exactly
// [nak_seq, sent_end) again bit for bit, then continues with first transmissions.
TYPED_TEST(ReplayBufTest, NakReplaysFromItsNumber) {
  dxpu::test::RandomTlpGenerator gen(21);
  std::mt19937_64 junk(22);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  Bench<TypeParam> b(1000);
  b.junk = &junk;
  b.stall_pct = 20;
  for (int i = 0; i < 10; ++i) b.Push(SmallTlp(gen));
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 10; }, 50000, "10 out"));
  b.Run(5);
  b.nak = 1004;
  b.Step();
  EXPECT_EQ(b.m().m_una, 1004u);
  EXPECT_EQ(b.m().m_send_ptr, 1004u);
  EXPECT_EQ(b.m().m_cnt_naks, 1u);
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 16; }, 50000, "the replay"));
  b.Run(5);
  EXPECT_EQ(b.out().size(), 16u);
  EXPECT_EQ(b.loads(), 2u);
  for (int i = 0; i < 3; ++i) b.Push(SmallTlp(gen));
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 19; }, 50000, "3 more"));
  std::vector<uint32_t> want = Range(1000, 10);
  for (uint32_t s : Range(1004, 6)) want.push_back(s);
  for (uint32_t s : Range(1010, 3)) want.push_back(s);
  EXPECT_EQ(SeqsOut(b.out()), want);
  EXPECT_EQ(b.m().m_cnt_tlps_tx, 13u);
  EXPECT_EQ(b.m().m_cnt_tlps_retx, 6u);
  EXPECT_EQ(b.m().m_cnt_naks_ignored, 0u);
  b.CheckCounters();
}

// An ack during a replay may free the TLP half-way out: its beats stay held until they are
// read. The ring is full (8 x 1 KiB); the replay of TLP 0 goes out slowly; ack(1) frees it
// while a ninth TLP waits for room that starts at TLP 0's first beat.
TYPED_TEST(ReplayBufTest, AckOfTheTlpBeingReplayedKeepsItsBeats) {
  Bench<TypeParam> b(0);
  for (uint8_t i = 0; i < 8; ++i) b.Push(MemWrite(1024, i));
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 8; }, 3000, "8 out"));
  b.Push(MemWrite(1024, 0x80));
  b.Run(20);
  EXPECT_EQ(b.accepted().size(), 8u);
  b.stall_pct = 60;
  b.nak = 0;
  b.Step();
  ASSERT_TRUE(b.RunUntil([&] { return b.m().m_tlp_valid != 0 && b.m().m_tlp_seq == 0; }, 100,
                         "the replay's first beat"));
  b.Run(3);
  b.ack = 1;
  b.Step();
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 17; }, 20000, "all out"));
  std::vector<uint32_t> want = Range(0, 8);
  for (uint32_t s : Range(0, 9)) want.push_back(s);
  EXPECT_EQ(SeqsOut(b.out()), want);
  b.CheckCounters();
}

// lib/core's repeated-NAK rule: the same NAK within cfg_rto of the last one acted on is ignored
// (counted), at cfg_rto it acts again; a stale NAK (before una) and a NAK with nothing in
// flight are ignored too.
TYPED_TEST(ReplayBufTest, RepeatedNakWithinRtoIgnored) {
  Bench<TypeParam> b(50);
  b.auto_time = false;
  b.rto = 500;
  b.now = 10000;
  for (uint16_t i = 0; i < 8; ++i) b.Push(MemRead(i));
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 8; }, 200, "8 out"));
  b.nak = 53;  // acts: replay 53..57
  b.Step();
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 13; }, 200, "the replay"));
  b.Run(5);
  b.now = 10000 + 499;
  b.nak = 53;  // within rto: ignored
  b.Step();
  EXPECT_EQ(b.m().m_cnt_naks, 2u);
  EXPECT_EQ(b.m().m_cnt_naks_ignored, 1u);
  b.Run(50);
  EXPECT_EQ(b.out().size(), 13u);
  b.nak = 52;  // stale: before una
  b.Step();
  EXPECT_EQ(b.m().m_cnt_naks_ignored, 2u);
  EXPECT_EQ(b.m().m_una, 53u);
  b.now = 10000 + 500;
  b.nak = 53;  // at rto: acts
  b.Step();
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 18; }, 200, "the second replay"));
  b.Run(20);
  EXPECT_EQ(b.out().size(), 18u);
  b.nak = 58;  // acknowledges everything; nothing in flight to replay: ignored
  b.Step();
  b.Run(20);
  EXPECT_EQ(b.out().size(), 18u);
  EXPECT_EQ(b.m().m_in_flight, 0u);
  EXPECT_EQ(b.m().m_cnt_naks, 5u);
  EXPECT_EQ(b.m().m_cnt_naks_ignored, 3u);
  std::vector<uint32_t> want = Range(50, 8);
  for (int r = 0; r < 2; ++r)
    for (uint32_t s : Range(53, 5)) want.push_back(s);
  EXPECT_EQ(SeqsOut(b.out()), want);
  b.CheckCounters();
}

// The retransmission timer: a replay from una; with nothing unacknowledged it sends nothing.
TYPED_TEST(ReplayBufTest, RtoReplaysFromUna) {
  Bench<TypeParam> b(0);
  b.load_stall_pct = 50;
  for (uint8_t i = 0; i < 6; ++i) b.Push(MemWrite(4u + 60u * i, i));
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 6; }, 2000, "6 out"));
  b.ack = 2;
  b.Step();
  b.rto_pulse = true;
  b.Step();
  EXPECT_EQ(b.m().m_send_ptr, 2u);
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 10; }, 2000, "the replay"));
  b.Run(50);
  EXPECT_EQ(b.out().size(), 10u);
  b.ack = 6;
  b.Step();
  b.rto_pulse = true;
  b.Step();
  b.Run(50);
  EXPECT_EQ(b.out().size(), 10u);
  std::vector<uint32_t> want = Range(0, 6);
  for (uint32_t s : Range(2, 4)) want.push_back(s);
  EXPECT_EQ(SeqsOut(b.out()), want);
  EXPECT_EQ(b.m().m_cnt_rto, 2u);
  EXPECT_EQ(b.m().m_cnt_tlps_retx, 4u);
  EXPECT_EQ(b.loads(), 2u);
  b.CheckCounters();
}

// An ack or NAK naming a TLP never sent (after sent_end, even one stored and waiting) is
// ignored and counted.
TYPED_TEST(ReplayBufTest, BadAckIgnoredAndCounted) {
  Bench<TypeParam> b(200);
  for (uint16_t i = 0; i < 6; ++i) b.Push(MemRead(i));
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 6; }, 200, "6 out"));
  b.stall_pct = 100;  // the next ones wait in the buffer, unsent
  for (uint16_t i = 0; i < 4; ++i) b.Push(MemRead(i));
  b.Run(30);
  EXPECT_EQ(b.m().m_next_seq, 210u);
  EXPECT_EQ(b.m().m_sent_end, 207u);  // one in the output register
  b.ack = 208;
  b.Step();
  b.nak = 210;
  b.Step();
  b.ack = 0x80000000u;
  b.Step();
  EXPECT_EQ(b.m().m_una, 200u);
  EXPECT_EQ(b.m().m_cnt_bad_ack, 3u);
  EXPECT_EQ(b.m().m_cnt_naks, 0u);
  b.ack = 207;  // good: the one in the output register was sent
  b.Step();
  EXPECT_EQ(b.m().m_una, 207u);
  b.stall_pct = 0;
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 10; }, 200, "the rest"));
  EXPECT_EQ(SeqsOut(b.out()), Range(200, 10));
  b.CheckCounters();
}

// Sequence numbers across 2^32: acks, a NAK and the replay wrap with them.
TYPED_TEST(ReplayBufTest, SequenceWrap) {
  dxpu::test::RandomTlpGenerator gen(31);
  Bench<TypeParam> b(0xfffffff0u);
  b.stall_pct = 30;
  for (int i = 0; i < 12; ++i) b.Push(SmallTlp(gen));
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 12; }, 50000, "12 out"));
  b.ack = 0xfffffff8u;
  b.Step();
  for (int i = 0; i < 12; ++i) b.Push(SmallTlp(gen));
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 24; }, 50000, "12 more"));
  EXPECT_EQ(b.m().m_next_seq, 8u);
  b.Run(5);
  b.nak = 0xfffffffeu;
  b.Step();
  ASSERT_TRUE(b.RunUntil([&] { return b.out().size() == 34; }, 50000, "the replay"));
  b.ack = 8;
  b.Run(5);
  EXPECT_EQ(b.m().m_una, 8u);
  EXPECT_EQ(b.m().m_in_flight, 0u);
  std::vector<uint32_t> want = Range(0xfffffff0u, 24);
  for (uint32_t s : Range(0xfffffffeu, 10)) want.push_back(s);
  EXPECT_EQ(SeqsOut(b.out()), want);
  EXPECT_EQ(b.m().m_cnt_tlps_retx, 10u);
  b.CheckCounters();
}

// The far end: a wire that loses some TLPs and delays the rest (in order); a receiver with
// lib/core's rules (dxfp_session.c deliver_tlps: in order delivered, a gap dropped and NAKed
// once per rto, duplicates dropped); its cumulative acks and NAKs back through a delaying
// channel that duplicates some NAKs.
class LossyPeer {
 public:
  LossyPeer(uint32_t init, uint64_t rto, unsigned drop_pct, std::mt19937_64& rng)
      : rng_(rng), rto_(rto), drop_pct_(drop_pct), expected_(init), last_ack_sent_(init) {}

  uint32_t expected() const { return expected_; }
  const std::vector<uint32_t>& delivered() const { return delivered_; }

  // A TLP leaves the buffer at cycle `now`.
  void Send(uint32_t seq, uint64_t now) {
    if (rng_() % 100 < drop_pct_) return;
    wire_last_ = std::max(wire_last_, now + 3 + rng_() % 30);
    wire_.push_back({wire_last_, seq});
  }

  // Cycle `now` at the receiver: arrivals, acks; then what comes back now, into the bench's
  // inputs for the cycle (an ack, maybe a NAK with it).
  template <typename B>
  void Cycle(uint64_t now, B& b) {
    while (!wire_.empty() && wire_.front().at <= now) {
      Arrive(wire_.front().seq, now);
      wire_.pop_front();
    }
    if (expected_ != last_ack_sent_ && (rng_() % 8 == 0 || now >= last_ack_time_ + 60)) {
      SendBack(false, expected_, now + 2 + rng_() % 60);
      last_ack_sent_ = expected_;
      last_ack_time_ = now;
    }
    if (back_.empty() || back_.front().at > now) return;
    const Feedback f = back_.front();
    back_.pop_front();
    (f.nak ? b.nak : b.ack) = f.seq;
    if (!f.nak && !back_.empty() && back_.front().nak && back_.front().at <= now) {
      b.nak = back_.front().seq;
      back_.pop_front();
    }
  }

 private:
  struct InFlight {
    uint64_t at;
    uint32_t seq;
  };
  struct Feedback {
    uint64_t at;
    bool nak;
    uint32_t seq;
  };

  void Arrive(uint32_t s, uint64_t now) {
    if (s == expected_) {
      delivered_.push_back(s);
      ++expected_;
      nak_outstanding_ = false;
    } else if (Before(expected_, s)) {
      // A gap: dropped; NAK the expected number, again only after rto.
      if (!nak_outstanding_ || nak_seq_ != expected_ || now >= nak_time_ + rto_) {
        nak_outstanding_ = true;
        nak_seq_ = expected_;
        nak_time_ = now;
        SendBack(true, expected_, now + 2 + rng_() % 40);
        if (rng_() % 3 == 0) SendBack(true, expected_, now + rng_() % 20);  // duplicated
      }
    }  // else a duplicate: dropped
  }
  void SendBack(bool nak, uint32_t seq, uint64_t at) {
    back_last_ = std::max(back_last_, at);
    back_.push_back({back_last_, nak, seq});
  }

  std::mt19937_64& rng_;
  uint64_t rto_;
  unsigned drop_pct_;
  std::deque<InFlight> wire_;
  std::deque<Feedback> back_;
  uint64_t wire_last_ = 0, back_last_ = 0;
  uint32_t expected_, last_ack_sent_;
  bool nak_outstanding_ = false;
  uint32_t nak_seq_ = 0;
  uint64_t nak_time_ = 0, last_ack_time_ = 0;
  std::vector<uint32_t> delivered_;
};

struct LossyRun {
  uint64_t tlps = 0, naks_acted = 0, naks_ignored = 0, rto_replays = 0, full_cycles = 0, retx = 0,
           bad_acks = 0;
};

// ntlps random TLPs through the buffer to a LossyPeer; a retransmission timer (no progress for
// a while with TLPs unacknowledged, and now and then at random); now and then an ack or NAK of
// a TLP never sent.
template <typename D>
LossyRun RunLossy(uint64_t seed, size_t ntlps, unsigned idle, unsigned stall, unsigned load_stall,
                  unsigned drop_pct) {
  std::mt19937_64 rng(seed);
  dxpu::test::RandomTlpGenerator gen(seed ^ 0x9e3779b97f4a7c15ull);
  std::mt19937_64 junk(seed + 1);
  const uint32_t init = rng() % 2 == 0 ? 0xffffffffu - static_cast<uint32_t>(rng() % 300)
                                       : static_cast<uint32_t>(rng());
  Bench<D> b(init, seed + 2);
  b.junk = &junk;
  b.idle_pct = idle;
  b.stall_pct = stall;
  b.load_stall_pct = load_stall;
  b.rto = 150;
  LossyPeer peer(init, b.rto, drop_pct, rng);
  constexpr uint64_t kRtoCycles = 1500;
  size_t pushed = 0, seen_out = 0;
  uint64_t last_progress = 0;
  uint32_t last_una = init;
  const uint64_t limit = 5000 + ntlps * 1000;
  const uint32_t end = init + static_cast<uint32_t>(ntlps);
  while (peer.expected() != end || b.m().m_una != end) {
    if (b.cycles() > limit) {
      ADD_FAILURE() << "wedged: delivered " << peer.expected() - init << " of " << ntlps << ", una "
                    << b.m().m_una << ", send_ptr " << b.m().m_send_ptr << ", sent_end "
                    << b.m().m_sent_end;
      return {};
    }
    for (; pushed < ntlps && b.queued() < 4; ++pushed) b.Push(dxpu::test::encode_ok(gen.next()));
    for (; seen_out < b.out().size(); ++seen_out) peer.Send(b.out()[seen_out].first, b.cycles());
    peer.Cycle(b.cycles(), b);
    if (rng() % 700 == 0) {
      const uint32_t bad = b.m().m_sent_end + 1 + static_cast<uint32_t>(rng() % 1000);
      if (!b.ack) {
        b.ack = bad;
      } else if (!b.nak) {
        b.nak = bad;
      }
    }
    if (b.m().m_una != last_una) {
      last_una = b.m().m_una;
      last_progress = b.cycles();
    }
    if ((b.m().m_una != b.m().m_sent_end && b.cycles() >= last_progress + kRtoCycles) ||
        rng() % 1500 == 0) {
      b.rto_pulse = true;
      last_progress = b.cycles();
    }
    b.Step();
    if (::testing::Test::HasFailure()) return {};
  }
  b.Run(20);
  EXPECT_EQ(peer.delivered().size(), ntlps);
  for (size_t i = 0; i < peer.delivered().size(); ++i) {
    EXPECT_EQ(peer.delivered()[i], init + static_cast<uint32_t>(i));  // once each, in order
  }
  EXPECT_EQ(b.accepted().size(), ntlps);
  EXPECT_EQ(b.m().m_in_flight, 0u);
  EXPECT_EQ(b.m().m_cnt_tlps_tx, ntlps);
  b.CheckCounters();
  return LossyRun{ntlps,
                  b.naks_acted(),
                  b.m().m_cnt_naks_ignored,
                  b.rto_replays(),
                  b.m().m_cnt_full_cycles,
                  b.m().m_cnt_tlps_retx,
                  b.m().m_cnt_bad_ack};
}

// Random TLPs from lib/core's tests' generator through the buffer, a wire that loses some, a
// receiver that delivers in order and NAKs gaps, acks and NAKs delayed (some NAKs duplicated),
// an RTO timer, bad acks; random back-pressure on the input, the output and the load. Every
// TLP accepted is delivered exactly once, in order, bit for bit (the bench compares every TLP
// out with the one in); nothing acknowledged is sent again; every counter agrees.
TYPED_TEST(ReplayBufTest, RandomLossyChannelDeliversEveryTlpOnceInOrder) {
  const dxpu::rtl::TestSeed seed_trace;
  const uint64_t seed = seed_trace.value();
  std::mt19937_64 rng(seed);
  LossyRun all;
  for (const auto& [idle, stall, load_stall, drop] : {std::tuple{0u, 0u, 0u, 3u},
                                                      {30u, 0u, 50u, 5u},
                                                      {0u, 50u, 0u, 2u},
                                                      {40u, 60u, 30u, 8u},
                                                      {10u, 70u, 70u, 4u}}) {
    const LossyRun r = RunLossy<TypeParam>(rng(), 1500, idle, stall, load_stall, drop);
    if (::testing::Test::HasFailure()) return;
    all.tlps += r.tlps;
    all.naks_acted += r.naks_acted;
    all.naks_ignored += r.naks_ignored;
    all.rto_replays += r.rto_replays;
    all.full_cycles += r.full_cycles;
    all.retx += r.retx;
    all.bad_acks += r.bad_acks;
  }
  std::printf(
      "%llu TLPs: %llu NAK replays, %llu NAKs ignored, %llu RTO replays, %llu retransmissions, "
      "%llu bad acks, %llu full cycles\n",
      static_cast<unsigned long long>(all.tlps), static_cast<unsigned long long>(all.naks_acted),
      static_cast<unsigned long long>(all.naks_ignored),
      static_cast<unsigned long long>(all.rto_replays), static_cast<unsigned long long>(all.retx),
      static_cast<unsigned long long>(all.bad_acks),
      static_cast<unsigned long long>(all.full_cycles));
  EXPECT_GT(all.naks_acted, 0u);
  EXPECT_GT(all.naks_ignored, 0u);
  EXPECT_GT(all.rto_replays, 0u);
  EXPECT_GT(all.full_cycles, 0u);
  EXPECT_GT(all.bad_acks, 0u);
}

// Throughput, unstalled, every TLP acked as soon as it is out: single-beat TLPs (one header per
// cycle) and 512-byte writes (one beat per cycle), in and out, measured over the cycles run.
template <typename D>
void MeasureThroughput(const Bytes& tlp, uint64_t cycles, double* in_per_cycle,
                       double* out_per_cycle, uint64_t* tlps_in) {
  Bench<D> b(0x12345678u);
  b.auto_ack = true;
  for (int i = 0; i < 4; ++i) b.Push(tlp);
  b.Run(50);  // past the first sequence load
  const uint64_t in0 = b.beats_in(), out0 = b.beats_out(), sop0 = b.sops_in();
  for (uint64_t c = 0; c < cycles && !::testing::Test::HasFailure(); ++c) {
    if (b.queued() < 2) b.Push(tlp);
    b.Step();
  }
  *in_per_cycle = static_cast<double>(b.beats_in() - in0) / static_cast<double>(cycles);
  *out_per_cycle = static_cast<double>(b.beats_out() - out0) / static_cast<double>(cycles);
  *tlps_in = b.sops_in() - sop0;
  EXPECT_EQ(b.m().m_cnt_full_cycles, 0u);
  EXPECT_EQ(b.m().m_cnt_tlps_retx, 0u);
}

TYPED_TEST(ReplayBufTest, OneHeaderPerCycleUnstalled) {
  const auto start = std::chrono::steady_clock::now();
  double in = 0, out = 0;
  uint64_t tlps = 0;
  constexpr uint64_t kCycles = 100000;
  MeasureThroughput<TypeParam>(MemRead(3), kCycles, &in, &out, &tlps);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "dxpu_replay_buf DATA_WIDTH=%u: single-beat TLPs: %llu in over %llu cycles, %.4f headers "
      "per cycle in, %.4f out; %.0f simulated cycles/s\n",
      TypeParam::kWidth, static_cast<unsigned long long>(tlps),
      static_cast<unsigned long long>(kCycles), in, out, static_cast<double>(kCycles) / secs);
  EXPECT_EQ(tlps, kCycles);
  EXPECT_GE(out, 0.9999);
}

TYPED_TEST(ReplayBufTest, BeatsPerCycleUnstalled) {
  double in = 0, out = 0;
  uint64_t tlps = 0;
  constexpr uint64_t kCycles = 50000;
  MeasureThroughput<TypeParam>(MemWrite(512, 9), kCycles, &in, &out, &tlps);
  std::printf(
      "dxpu_replay_buf DATA_WIDTH=%u: 512-byte writes: %llu in over %llu cycles, %.4f beats per "
      "cycle in, %.4f out (%.2f bytes per cycle)\n",
      TypeParam::kWidth, static_cast<unsigned long long>(tlps),
      static_cast<unsigned long long>(kCycles), in, out, out * TypeParam::kBeatBytes);
  EXPECT_GE(in, 0.999);
  EXPECT_GE(out, 0.999);
}

}  // namespace
