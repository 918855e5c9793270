// dxfp_encap_tb.cc - testbench of rtl/dxpu_dxfp_encap.sv at 64 and 256 bits. The golden model
// is lib/core's writer as the session uses it for a DATA frame (dxfp_writer_init,
// dxfp_writer_add_credits, dxfp_writer_add_tlp for each TLP while it fits, dxfp_writer_finish):
// every frame that comes out must equal it byte for byte, CRC included, and parse with
// dxfp_frame_parse(). The stimulus is a script of segments (fields, max_frame, a sequence
// load, TLPs, then flush or send_empty); random idle cycles on the input and random
// back-pressure on the output. $DXPU_SEED replays a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <random>
#include <vector>

#include "Vrtl_dxfp_encap_w256.h"
#include "Vrtl_dxfp_encap_w64.h"
#include "core/dxfp_frame.h"
#include "core/tlp_codec.h"
#include "core/tlp_testutil.h"
#include "rtl_tb.h"

namespace {

using dxpu::rtl::GetBits;
using dxpu::rtl::HeaderWords;
using dxpu::rtl::SetBits;
using Bytes = std::vector<uint8_t>;

using dxpu::rtl::BeatWords;

struct Fields {
  uint32_t dst_session = 0, src_session = 0, dst_epoch = 0, src_epoch = 0, ack = 0;
  uint8_t flags = 0;
  dxfp_credits credits{};
  uint32_t max_frame = DXFP_MAX_FRAME;
};

// What the encapsulator is told to do between two closes that the script forces.
struct Segment {
  Fields f;
  bool load = false;
  uint32_t load_value = 0;
  std::vector<Bytes> tlps;
  bool send_empty = false;  // end with send_empty (else flush)
};

// lib/core's frames for a script: greedy packing as dxfp_session's build_data.
struct Golden {
  std::deque<Bytes> frames;
  uint64_t tlps = 0, oversize = 0;
};

Golden BuildGolden(const std::vector<Segment>& script) {
  Golden g;
  uint32_t next_seq = 0;
  std::vector<uint8_t> buf(DXFP_MAX_FRAME);
  for (const auto& seg : script) {
    if (seg.load) next_seq = seg.load_value;
    dxfp_writer w{};
    bool open = false;
    unsigned ntlp = 0;
    auto start = [&]() {
      dxfp_header h{};
      h.version = DXFP_VERSION;
      h.type = DXFP_DATA;
      h.flags = seg.f.flags;
      h.dst_session = seg.f.dst_session;
      h.src_session = seg.f.src_session;
      h.dst_epoch = seg.f.dst_epoch;
      h.src_epoch = seg.f.src_epoch;
      h.seq = next_seq;
      h.ack = seg.f.ack;
      EXPECT_EQ(dxfp_writer_init(&w, buf.data(), seg.f.max_frame, &h), DXFP_OK);
      EXPECT_EQ(dxfp_writer_add_credits(&w, &seg.f.credits), DXFP_OK);
      open = true;
      ntlp = 0;
    };
    auto finish = [&]() {
      size_t len = 0;
      dxfp_writer_finish(&w, &len);
      g.frames.emplace_back(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(len));
      open = false;
    };
    for (const auto& bytes : seg.tlps) {
      dxpu_tlp t{};
      EXPECT_EQ(dxpu_tlp_decode(bytes.data(), bytes.size(), &t), DXPU_TLP_OK);
      // A TLP larger than an empty frame is refused (lib/core's writer: no space) without
      // closing the open frame.
      if (60 + 4 + ((bytes.size() + 3) & ~size_t{3}) + 4 > (seg.f.max_frame & ~3u)) {
        ++g.oversize;
        continue;
      }
      if (!open) start();
      dxfp_err err = dxfp_writer_add_tlp(&w, &t);
      if (err == DXFP_ERR_NO_SPACE && ntlp > 0) {
        finish();
        start();
        err = dxfp_writer_add_tlp(&w, &t);
      }
      EXPECT_EQ(err, DXFP_OK);
      ++ntlp;
      ++g.tlps;
      ++next_seq;
    }
    if (seg.send_empty && !open) start();
    if (open && (ntlp > 0 || seg.send_empty)) finish();
  }
  return g;
}

template <typename Model, unsigned Width>
class Dut : public dxpu::rtl::Dut<Model> {
  using Base = dxpu::rtl::Dut<Model>;

 public:
  using Base::m;
  static constexpr unsigned kWidth = Width;
  static constexpr unsigned kBeatBytes = Width / 8;
  Dut() {
    Idle();
    SetFields(Fields{});
    m().m_frm_ready = 0;
    m().flush = 0;
    m().send_empty = 0;
    m().seq_load = 0;
    m().seq_load_value = 0;
    Base::Reset();
  }
  void Idle() {
    m().s_tlp_valid = 0;
    m().s_tlp_sop = 0;
    m().s_tlp_eop = 0;
    m().s_tlp_len = 0;
    m().s_tlp_keep = 0;
    SetBits(m().s_tlp_hdr, {});
    SetBits(m().s_tlp_data, {});
  }
  void SetFields(const Fields& f) {
    m().cfg_dst_session = f.dst_session;
    m().cfg_src_session = f.src_session;
    m().cfg_dst_epoch = f.dst_epoch;
    m().cfg_src_epoch = f.src_epoch;
    m().cfg_ack = f.ack;
    m().cfg_flags = f.flags;
    const std::array<uint32_t, 6> words = {f.credits.data[2], f.credits.hdr[2],  f.credits.data[1],
                                           f.credits.hdr[1],  f.credits.data[0], f.credits.hdr[0]};
    SetBits(m().cfg_credits, words);
    m().cfg_max_frame = f.max_frame;
  }
  // Beat b of a TLP: header beside payload.
  void DriveTlp(const Bytes& tlp, size_t b, size_t nbeats) {
    const size_t hb = (tlp[0] & 0x20) != 0 ? 16 : 12, off = hb + b * kBeatBytes;
    SetBits(m().s_tlp_hdr, HeaderWords(tlp));
    const size_t n = off < tlp.size() ? std::min<size_t>(kBeatBytes, tlp.size() - off) : 0;
    SetBits(m().s_tlp_data, BeatWords(tlp.data() + std::min(off, tlp.size()), n, Width));
    m().s_tlp_len = static_cast<uint32_t>(tlp.size());
    m().s_tlp_keep = 0;
    m().s_tlp_sop = b == 0;
    m().s_tlp_eop = b + 1 == nbeats;
    m().s_tlp_valid = 1;
  }
  // The output beat's bytes.
  Bytes OutBytes() {
    const auto words = GetBits(m().m_frm_data, Width / 32);
    Bytes out(m().m_frm_bytes);
    for (size_t i = 0; i < out.size(); ++i) {
      const size_t bit = Width - 8 - 8 * i;
      out[i] = static_cast<uint8_t>(words[bit / 32] >> (bit % 32));
    }
    return out;
  }
  static size_t Beats(const Bytes& tlp) {
    const size_t hb = (tlp[0] & 0x20) != 0 ? 16 : 12;
    const size_t payload = tlp.size() > hb ? tlp.size() - hb : 0;
    return std::max<size_t>(1, (payload + kBeatBytes - 1) / kBeatBytes);
  }
};

template <typename T>
class DxfpEncapTest : public ::testing::Test {};

using Widths = ::testing::Types<Dut<Vrtl_dxfp_encap_w64, 64>, Dut<Vrtl_dxfp_encap_w256, 256>>;
TYPED_TEST_SUITE(DxfpEncapTest, Widths);

struct RunStats {
  uint64_t frames = 0, bytes = 0, first_in = 0, last_out = 0;
};

// Runs the script through the DUT; checks every frame against the golden one.
template <typename D>
RunStats RunScript(D& dut, const std::vector<Segment>& script, std::mt19937_64& rng,
                   unsigned idle_pct, unsigned stall_pct) {
  Golden g = BuildGolden(script);
  const size_t nframes = g.frames.size();
  RunStats st;
  size_t seg = 0, tlp = 0, beat = 0;
  enum { kLoad, kTlps, kEnd, kDone } phase = kLoad;
  uint32_t frames_at_end = 0;
  Bytes got;
  const uint64_t limit = 200000 + 50ull * nframes * 300;
  for (uint64_t cyc = 0; st.frames < nframes || phase != kDone; ++cyc) {
    if (cyc > limit) {
      ADD_FAILURE() << "wedged: " << st.frames << " of " << nframes << " frames, segment " << seg;
      return st;
    }
    dut.Idle();
    dut.m().flush = 0;
    dut.m().send_empty = 0;
    dut.m().seq_load = 0;
    if (phase != kDone) {
      const Segment& s = script[seg];
      dut.SetFields(s.f);
      if (phase == kLoad && !s.load) phase = kTlps;
      if (phase == kTlps && tlp == s.tlps.size()) {
        phase = kEnd;
        frames_at_end = dut.m().m_cnt_frames;
      }
      if (phase == kLoad) {
        dut.m().seq_load = 1;
        dut.m().seq_load_value = s.load_value;
      } else if (phase == kTlps && rng() % 100 >= idle_pct) {
        dut.DriveTlp(s.tlps[tlp], beat, D::Beats(s.tlps[tlp]));
      } else if (phase == kEnd) {
        (s.send_empty ? dut.m().send_empty : dut.m().flush) = 1;
      }
    }
    dut.m().m_frm_ready = rng() % 100 >= stall_pct;
    dut.Eval();
    if (phase == kLoad && dut.m().seq_load_ready) phase = kTlps;
    if (dut.m().s_tlp_valid && dut.m().s_tlp_ready) {
      if (st.first_in == 0) st.first_in = dut.cycles();
      if (++beat == D::Beats(script[seg].tlps[tlp])) {
        beat = 0;
        ++tlp;
      }
    }
    if (phase == kEnd) {
      const bool done =
          script[seg].send_empty ? dut.m().m_cnt_frames != frames_at_end : dut.m().m_open_tlps == 0;
      if (done) {
        ++seg;
        tlp = beat = 0;
        phase = seg == script.size() ? kDone : kLoad;
      }
    }
    if (dut.m().m_frm_valid && dut.m().m_frm_ready) {
      const Bytes b = dut.OutBytes();
      EXPECT_EQ(b.size() % 4, 0u);
      if (!dut.m().m_frm_last) {
        EXPECT_EQ(b.size(), D::kBeatBytes);
      }
      got.insert(got.end(), b.begin(), b.end());
      if (dut.m().m_frm_last) {
        if (g.frames.empty()) {
          ADD_FAILURE() << "a frame came out that lib/core does not make";
          return st;
        }
        EXPECT_EQ(dxpu::test::to_hex(got), dxpu::test::to_hex(g.frames.front()))
            << "frame " << st.frames;
        dxfp_frame f{};
        EXPECT_EQ(dxfp_frame_parse(got.data(), got.size(), DXFP_MAX_FRAME, &f), DXFP_OK);
        if (::testing::Test::HasFailure()) return st;
        g.frames.pop_front();
        st.bytes += got.size();
        ++st.frames;
        st.last_out = dut.cycles();
        got.clear();
      }
    }
    dut.Tick();
  }
  for (int i = 0; i < 50; ++i) {  // nothing more comes out
    dut.m().m_frm_ready = 1;
    dut.Eval();
    EXPECT_FALSE(dut.m().m_frm_valid);
    dut.Tick();
  }
  EXPECT_EQ(dut.m().m_cnt_frames, nframes);
  EXPECT_EQ(dut.m().m_cnt_tlps, static_cast<uint32_t>(g.tlps));
  EXPECT_EQ(dut.m().m_cnt_oversize, static_cast<uint32_t>(g.oversize));
  return st;
}

Fields RandomFields(std::mt19937_64& rng) {
  Fields f;
  f.dst_session = static_cast<uint32_t>(rng());
  f.src_session = static_cast<uint32_t>(rng());
  f.dst_epoch = static_cast<uint32_t>(rng());
  f.src_epoch = static_cast<uint32_t>(rng());
  f.ack = static_cast<uint32_t>(rng());
  f.flags = static_cast<uint8_t>(rng() % 4);
  for (int c = 0; c < 3; ++c) {
    f.credits.hdr[c] = static_cast<uint32_t>(rng());
    f.credits.data[c] = static_cast<uint32_t>(rng());
  }
  static constexpr std::array<uint32_t, 7> kMax = {128, 200, 512, 1500, 4200, 9000, 9216};
  f.max_frame = kMax.at(rng() % kMax.size());
  return f;
}

std::vector<Segment> RandomScript(uint64_t seed, int segments) {
  std::mt19937_64 rng(seed);
  dxpu::test::RandomTlpGenerator gen(seed ^ 0x5bd1e995u);
  std::vector<Segment> script;
  for (int s = 0; s < segments; ++s) {
    Segment seg;
    seg.f = RandomFields(rng);
    seg.load = rng() % 4 == 0;
    seg.load_value = rng() % 2 == 0 ? static_cast<uint32_t>(-(rng() % 8)) : uint32_t(rng());
    const size_t n = rng() % 5 == 0 ? 0 : rng() % 40;
    for (size_t i = 0; i < n; ++i) seg.tlps.push_back(dxpu::test::encode_ok(gen.next()));
    seg.send_empty = rng() % 3 == 0;
    script.push_back(std::move(seg));
  }
  return script;
}

TYPED_TEST(DxfpEncapTest, DirectedFrames) {
  using dxpu::test::from_hex;
  const Bytes mrd = from_hex("00000001 0000000f 00001000");
  const Bytes mwr = from_hex("40000002 000000ff 00001000 11223344 55667788");
  const Bytes mwr4 = from_hex("60000001 0000000f 00000001 00002000 a1b2c3d4");
  const Bytes cpld = from_hex("4a000001 01000004 00000000 deadbeef");
  Fields f;
  f.dst_session = 0x11111111;
  f.src_session = 0x22222222;
  f.dst_epoch = 0x33333333;
  f.src_epoch = 0x44444444;
  f.ack = 0x55555555;
  f.flags = DXFP_F_ACK_REQ;
  for (int c = 0; c < 3; ++c) {
    f.credits.hdr[c] = 0x100u + static_cast<uint32_t>(c);
    f.credits.data[c] = 0x200u + static_cast<uint32_t>(c);
  }
  std::vector<Segment> script;
  // Four TLPs in one frame (flush), from a loaded sequence number that wraps.
  script.push_back({f, true, 0xfffffffe, {mrd, mwr, mwr4, cpld}, false});
  // A standalone acknowledgement (no TLP).
  script.push_back({f, false, 0, {}, true});
  // max_frame 128: 60 + 24 + 24 + 4 = 112 fits, another 24-byte record does not: two frames.
  f.max_frame = 128;
  script.push_back({f, false, 0, {mwr, mwr4, mwr, mrd}, false});
  // A TLP larger than an empty 128-byte frame is dropped and counted.
  Bytes big = from_hex("40000020 000000ff 00001000");
  big.resize(12 + 128, 0x5a);
  script.push_back({f, false, 0, {big, mrd}, true});
  const Golden g = BuildGolden(script);
  ASSERT_EQ(g.frames.size(), 5u);
  ASSERT_EQ(g.oversize, 1u);
  EXPECT_EQ(dxpu::test::to_hex(Bytes(g.frames[0].begin() + 24, g.frames[0].begin() + 28)),
            dxpu::test::to_hex(from_hex("fffffffe")));
  std::mt19937_64 rng(5);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  TypeParam dut;
  const RunStats st = RunScript(dut, script, rng, 0, 0);
  EXPECT_EQ(st.frames, 5u);
  EXPECT_EQ(dut.m().m_next_seq, 0xfffffffeu + 9u);
}

// Seeded random scripts: TLPs of every kind and size, random fields and max_frame, sequence
// loads near the wrap, flush and standalone frames; five mixes of back-pressure.
TYPED_TEST(DxfpEncapTest, RandomScriptsAgreeWithLibCore) {
  const dxpu::rtl::TestSeed seed_trace;
  const uint64_t seed = seed_trace.value();
  std::mt19937_64 rng(seed);
  uint64_t frames = 0;
  for (const auto& [idle, stall] :
       {std::pair{0u, 0u}, {30u, 0u}, {0u, 50u}, {40u, 60u}, {10u, 90u}}) {
    TypeParam dut;
    const auto script = RandomScript(rng(), 60);
    frames += RunScript(dut, script, rng, idle, stall).frames;
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(frames, 100u);
}

// Bytes per cycle, unstalled: 512-byte MWr TLPs offered on every cycle, the output always
// ready; 17 fit a 9216-byte frame. Measured from the first TLP beat taken to the last frame
// byte out. Also prints the simulation speed (never asserted).
TYPED_TEST(DxfpEncapTest, BytesPerCycleUnstalled) {
  Bytes mwr = dxpu::test::from_hex("40000080 000000ff 00001000");
  for (int i = 0; i < 512; ++i) mwr.push_back(static_cast<uint8_t>(i * 7));
  std::vector<Segment> script(1);
  script[0].tlps.assign(size_t{17} * 20, mwr);
  TypeParam dut;
  std::mt19937_64 rng(6);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  const auto start = std::chrono::steady_clock::now();
  const uint64_t c0 = dut.cycles();
  const RunStats st = RunScript(dut, script, rng, 0, 0);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(st.frames, 20u);
  const uint64_t span = st.last_out - st.first_in + 1;
  const double bpc = static_cast<double>(st.bytes) / static_cast<double>(span);
  std::printf(
      "dxpu_dxfp_encap DATA_WIDTH=%u: %llu frame bytes in %llu cycles: %.2f bytes per cycle "
      "(beat %u); %.0f simulated cycles/s\n",
      TypeParam::kWidth, static_cast<unsigned long long>(st.bytes),
      static_cast<unsigned long long>(span), bpc, TypeParam::kBeatBytes,
      static_cast<double>(dut.cycles() - c0) / secs);
  EXPECT_GT(bpc, 0.9 * TypeParam::kBeatBytes);
}

}  // namespace
