// crc32c_tb.cc - testbench of rtl/dxpu_crc32c.sv at 64 and 256 bits: the check value and the
// RFC 3720 vectors, seeded random messages in beats of random fill with idle cycles, every
// intermediate and final CRC compared with lib/core's dxpu_crc32c(); one beat per cycle
// (measured). $DXPU_SEED replays a run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "Vrtl_crc32c_w256.h"
#include "Vrtl_crc32c_w64.h"
#include "core/crc32c.h"
#include "core/tlp_testutil.h"
#include "rtl_tb.h"

namespace {

using dxpu::rtl::SetBits;

using dxpu::rtl::BeatWords;

template <typename Model, unsigned Width>
class Dut : public dxpu::rtl::Dut<Model> {
  using Base = dxpu::rtl::Dut<Model>;

 public:
  using Base::m;
  static constexpr unsigned kWidth = Width;
  static constexpr unsigned kBeatBytes = Width / 8;
  Dut() {
    Idle();
    Base::Reset();
  }
  void Idle() {
    m().s_valid = 0;
    m().s_sop = 0;
    m().s_bytes = 0;
    SetBits(m().s_data, {});
  }
  void Drive(const uint8_t* p, size_t n, bool sop) {
    SetBits(m().s_data, BeatWords(p, n, Width));
    m().s_bytes = static_cast<uint32_t>(n);
    m().s_sop = sop;
    m().s_valid = 1;
  }
};

template <typename T>
class Crc32cTest : public ::testing::Test {};

using Widths = ::testing::Types<Dut<Vrtl_crc32c_w64, 64>, Dut<Vrtl_crc32c_w256, 256>>;
TYPED_TEST_SUITE(Crc32cTest, Widths);

// Feeds msg in beats of full width (the last partial); returns the final m_crc.
template <typename D>
uint32_t RunMessage(D& dut, const std::vector<uint8_t>& msg) {
  size_t off = 0;
  bool first = true;
  do {
    const size_t n = std::min<size_t>(D::kBeatBytes, msg.size() - off);
    dut.Drive(msg.data() + off, n, first);
    dut.Eval();
    EXPECT_EQ(dut.m().m_crc_next, dxpu_crc32c(0, msg.data(), off + n));
    dut.Tick();
    first = false;
    off += n;
  } while (off < msg.size());
  dut.Idle();
  dut.Eval();
  return dut.m().m_crc;
}

TYPED_TEST(Crc32cTest, CheckValueAndRfc3720Vectors) {
  TypeParam dut;
  dut.Eval();
  EXPECT_EQ(dut.m().m_crc, 0u) << "the CRC of no bytes after reset";
  const std::string check = "123456789";
  EXPECT_EQ(RunMessage(dut, std::vector<uint8_t>(check.begin(), check.end())), 0xe3069283u);
  EXPECT_EQ(RunMessage(dut, std::vector<uint8_t>(32, 0x00)), 0x8a9136aau);
  EXPECT_EQ(RunMessage(dut, std::vector<uint8_t>(32, 0xff)), 0x62a8ab43u);
  std::vector<uint8_t> inc(32), dec(32);
  for (size_t i = 0; i < 32; ++i) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(RunMessage(dut, inc), 0x46dd794eu);
  EXPECT_EQ(RunMessage(dut, dec), 0x113fdb5cu);
  // An empty beat with sop restarts at the CRC of nothing.
  dut.Drive(inc.data(), 0, true);
  dut.Eval();
  EXPECT_EQ(dut.m().m_crc_next, 0u);
  dut.Tick();
  dut.Idle();
  dut.Eval();
  EXPECT_EQ(dut.m().m_crc, 0u);
}

// Random messages (0..3000 bytes) in beats of random fill (0..all bytes), with idle cycles
// between beats: every intermediate CRC and the final one equal lib/core's.
TYPED_TEST(Crc32cTest, RandomBeatsAgreeWithLibCore) {
  const dxpu::rtl::TestSeed seed_trace;
  const uint64_t seed = seed_trace.value();
  std::mt19937_64 rng(seed);
  TypeParam dut;
  for (int msgs = 0; msgs < 1500 && !::testing::Test::HasFailure(); ++msgs) {
    std::vector<uint8_t> msg(rng() % 8 == 0 ? rng() % 3001 : rng() % 100);
    for (auto& b : msg) b = static_cast<uint8_t>(rng());
    size_t off = 0;
    bool first = true;
    while (first || off < msg.size()) {
      if (rng() % 4 == 0) {  // an idle cycle: nothing changes
        dut.Idle();
        dut.Eval();
        EXPECT_EQ(dut.m().m_crc_next, dut.m().m_crc);
        dut.Tick();
        continue;
      }
      const size_t n = std::min<size_t>(rng() % (TypeParam::kBeatBytes + 1), msg.size() - off);
      dut.Drive(msg.data() + off, n, first);
      dut.Eval();
      ASSERT_EQ(dut.m().m_crc_next, dxpu_crc32c(0, msg.data(), off + n))
          << "message of " << msg.size() << " bytes, at " << off << " + " << n;
      dut.Tick();
      off += n;
      first = false;
      dut.Idle();
      dut.Eval();
      ASSERT_EQ(dut.m().m_crc, dxpu_crc32c(0, msg.data(), off));
    }
  }
}

// One full beat per cycle: DATA_WIDTH/8 bytes per cycle, measured over 100,000 cycles.
TYPED_TEST(Crc32cTest, OneBeatPerCycle) {
  TypeParam dut;
  std::mt19937_64 rng(3);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  constexpr int kCycles = 100000;
  std::vector<uint8_t> msg(static_cast<size_t>(kCycles) * TypeParam::kBeatBytes);
  for (auto& b : msg) b = static_cast<uint8_t>(rng());
  const auto start = std::chrono::steady_clock::now();
  const uint64_t c0 = dut.cycles();
  for (int c = 0; c < kCycles; ++c) {
    dut.Drive(msg.data() + static_cast<size_t>(c) * TypeParam::kBeatBytes, TypeParam::kBeatBytes,
              c == 0);
    dut.Tick();
  }
  const uint64_t cycles = dut.cycles() - c0;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  dut.Idle();
  dut.Eval();
  EXPECT_EQ(dut.m().m_crc, dxpu_crc32c(0, msg.data(), msg.size()));
  const double bytes_per_cycle = static_cast<double>(msg.size()) / static_cast<double>(cycles);
  EXPECT_EQ(bytes_per_cycle, TypeParam::kBeatBytes);
  std::printf("dxpu_crc32c DATA_WIDTH=%u: %.1f bytes per cycle; %.0f simulated cycles/s\n",
              TypeParam::kWidth, bytes_per_cycle, kCycles / secs);
}

}  // namespace
