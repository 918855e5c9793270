// chacha20_tb.cc - testbench of rtl/dxpu_chacha20.sv (64 bits with round units of 2 and 5 double
// rounds per cycle, 256 bits with 5): random keys, nonces and block counters, keystreams of
// 0..2000 bytes read with random back-pressure and restarted mid-block, every byte compared with
// libsodium's crypto_stream_chacha20_ietf_xor_ic(); one beat per cycle unstalled (measured).
// $DXPU_SEED replays a run.
#include <gtest/gtest.h>
#include <sodium.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "Vrtl_chacha20_dr2.h"
#include "Vrtl_chacha20_dr5.h"
#include "Vrtl_chacha20_w256.h"
#include "aead_tb.h"
#include "rtl_tb.h"

namespace {

using dxpu::rtl::BeatBytes;
using dxpu::rtl::BeatWords;
using dxpu::rtl::GetBits;
using dxpu::rtl::RandomBytes;
using dxpu::rtl::SetBits;

template <typename Model, unsigned DoubleRounds, unsigned Width = 64>
class Dut : public dxpu::rtl::Dut<Model> {
  using Base = dxpu::rtl::Dut<Model>;

 public:
  using Base::m;
  static constexpr unsigned kDoubleRounds = DoubleRounds;
  static constexpr unsigned kWidth = Width;
  static constexpr size_t kBeatBytes = Width / 8;
  Dut() {
    Idle();
    m().m_ks_ready = 0;
    Base::Reset();
  }
  void Idle() {
    m().start = 0;
    SetBits(m().start_key, {});
    SetBits(m().start_nonce, {});
    m().start_ctr = 0;
  }
  // Drives `start` for one cycle.
  void Start(const std::vector<uint8_t>& key, const std::vector<uint8_t>& nonce, uint32_t ctr) {
    m().start = 1;
    SetBits(m().start_key, BeatWords(key.data(), 32, 256));
    SetBits(m().start_nonce, BeatWords(nonce.data(), 12, 96));
    m().start_ctr = ctr;
    Base::Tick();
    Idle();
  }
  std::vector<uint8_t> Beat() {
    return BeatBytes(GetBits(m().m_ks_data, Width / 32), kBeatBytes, Width);
  }
};

template <typename T>
class ChaCha20Test : public dxpu::rtl::SodiumTest {};

using Models = ::testing::Types<Dut<Vrtl_chacha20_dr2, 2>, Dut<Vrtl_chacha20_dr5, 5>,
                                Dut<Vrtl_chacha20_w256, 5, 256>>;
TYPED_TEST_SUITE(ChaCha20Test, Models);

// libsodium's keystream: `n` bytes from block `ctr`.
std::vector<uint8_t> Keystream(const std::vector<uint8_t>& key, const std::vector<uint8_t>& nonce,
                               uint32_t ctr, size_t n) {
  std::vector<uint8_t> zeros(n), ks(n);
  crypto_stream_chacha20_ietf_xor_ic(ks.data(), zeros.data(), n, nonce.data(), ctr, key.data());
  return ks;
}

// Reads `beats` beats with the output ready with probability `ready_pct`; returns the bytes.
template <typename D>
std::vector<uint8_t> ReadBeats(D& dut, std::mt19937_64& rng, size_t beats, unsigned ready_pct) {
  std::vector<uint8_t> got;
  for (uint64_t guard = 0; got.size() < beats * D::kBeatBytes; ++guard) {
    if (guard > 100 * beats + 100) {
      ADD_FAILURE() << "keystream stopped after " << got.size() << " bytes";
      break;
    }
    dut.m().m_ks_ready = rng() % 100 < ready_pct;
    dut.Eval();
    if (dut.m().m_ks_valid && dut.m().m_ks_ready) {
      const auto b = dut.Beat();
      got.insert(got.end(), b.begin(), b.end());
    }
    dut.Tick();
  }
  dut.m().m_ks_ready = 0;
  return got;
}

// Random keys, nonces and counters (those libsodium accepts: no wrap of the 32-bit counter within
// the stream); 0..2000 bytes; output back-pressure from none to 90 %; a fresh start sometimes in
// the middle of a block (while the next one is in the round unit): nothing of the old stream
// may come out after it.
TYPED_TEST(ChaCha20Test, RandomKeystreamsAgreeWithLibsodium) {
  const dxpu::rtl::TestSeed seed_trace;
  std::mt19937_64 rng(seed_trace.value());
  TypeParam dut;
  dut.Eval();
  EXPECT_FALSE(dut.m().m_ks_valid) << "no keystream before the first start";
  const unsigned ready_mix[] = {100, 80, 50, 10};
  for (int run = 0; run < 120 && !::testing::Test::HasFailure(); ++run) {
    const auto key = RandomBytes(rng, 32);
    const auto nonce = RandomBytes(rng, 12);
    const size_t len = rng() % 4 == 0 ? rng() % 2001 : rng() % 200;
    const uint32_t ctr =
        rng() % 4 == 0 ? static_cast<uint32_t>(rng() % 3) : static_cast<uint32_t>(rng() >> 40);
    const unsigned ready = ready_mix[run % 4];
    dut.Start(key, nonce, ctr);
    const size_t beats = (len + TypeParam::kBeatBytes - 1) / TypeParam::kBeatBytes;
    auto got = ReadBeats(dut, rng, beats, ready);
    const auto want = Keystream(key, nonce, ctr, beats * TypeParam::kBeatBytes);
    ASSERT_EQ(got, want) << "run " << run << ": " << len << " bytes from block " << ctr
                         << ", ready " << ready << " %";
    // Idle cycles with a block half-read: it stays.
    for (int i = 0; i < static_cast<int>(rng() % 12); ++i) dut.Tick();
  }
}

// One beat per cycle: after the first, 20,000 beats on 20,000 consecutive cycles, each right
// (at 256 bits a 64-byte block every two cycles).
TYPED_TEST(ChaCha20Test, OneBeatPerCycleUnstalled) {
  std::mt19937_64 rng(7);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  TypeParam dut;
  const auto key = RandomBytes(rng, 32);
  const auto nonce = RandomBytes(rng, 12);
  constexpr size_t kBeats = 20000;
  dut.Start(key, nonce, 1);
  dut.m().m_ks_ready = 1;
  uint64_t latency = 0;
  for (dut.Eval(); !dut.m().m_ks_valid && latency < 100; dut.Eval()) {
    dut.Tick();
    ++latency;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t c0 = dut.cycles();
  std::vector<uint8_t> got;
  size_t stalls = 0;
  constexpr size_t kBytes = kBeats * TypeParam::kBeatBytes;
  while (got.size() < kBytes) {
    dut.Eval();
    if (dut.m().m_ks_valid) {
      const auto b = dut.Beat();
      got.insert(got.end(), b.begin(), b.end());
    } else {
      ++stalls;
    }
    dut.Tick();
  }
  const uint64_t cycles = dut.cycles() - c0;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(got, Keystream(key, nonce, 1, kBytes));
  EXPECT_EQ(stalls, 0u);
  EXPECT_EQ(cycles, kBeats);
  EXPECT_LE(latency, 10 / TypeParam::kDoubleRounds + 2);
  const double rate = static_cast<double>(kBeats) / static_cast<double>(cycles);
  std::printf(
      "dxpu_chacha20 DATA_WIDTH=%u, %u double rounds/cycle: %.4f beats per cycle, first beat "
      "%llu cycles after start; %.0f simulated cycles/s\n",
      TypeParam::kWidth, TypeParam::kDoubleRounds, rate, static_cast<unsigned long long>(latency),
      static_cast<double>(cycles) / secs);
}

}  // namespace
