// poly1305_tb.cc - testbench of rtl/dxpu_poly1305.sv at 64 and 256 bits (a block every two beats;
// two blocks a beat): random keys and messages of 0..2000 bytes
// with random input gaps and tag back-pressure, every tag compared with libsodium's: plain
// Poly1305 (crypto_onetimeauth_poly1305) and the AEAD's padded message with its length block
// (random AAD and ciphertext, the tag of crypto_aead_chacha20poly1305_ietf_encrypt_detached, the
// key from crypto_stream_chacha20_ietf); one beat per cycle unstalled (measured). $DXPU_SEED
// replays a run.
#include <gtest/gtest.h>
#include <sodium.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "Vrtl_poly1305.h"
#include "Vrtl_poly1305_w256.h"
#include "aead_tb.h"
#include "rtl_tb.h"

namespace {

using dxpu::rtl::BeatBytes;
using dxpu::rtl::BeatWords;
using dxpu::rtl::GetBits;
using dxpu::rtl::RandomBytes;
using dxpu::rtl::SetBits;

// A message as the module takes it: segments (plain: one; AEAD: AAD then ciphertext).
struct Message {
  std::vector<uint8_t> key;
  bool aead = false;
  std::vector<std::vector<uint8_t>> segments;
};

template <typename Model, unsigned Width>
class Dut : public dxpu::rtl::Dut<Model> {
  using Base = dxpu::rtl::Dut<Model>;

 public:
  using Base::m;
  static constexpr unsigned kWidth = Width;
  static constexpr size_t kBeatBytes = Width / 8;
  Dut() {
    m().key_valid = 0;
    SetBits(m().key, {});
    m().key_aead = 0;
    IdleInput();
    m().m_tag_ready = 0;
    Base::Reset();
  }
  void IdleInput() {
    m().s_valid = 0;
    SetBits(m().s_data, {});
    m().s_bytes = 0;
    m().s_aad = 0;
    m().s_last = 0;
  }
  std::vector<uint8_t> Tag() { return BeatBytes(GetBits(m().m_tag, 4), 16, 128); }
};

struct Stalls {
  unsigned valid_pct = 100;  // a beat offered on this share of cycles
  unsigned ready_pct = 100;  // the tag taken on this share of cycles
};

// Runs one message through: the key, its beats (full ones, then each segment's last with its
// bytes), the tag. Returns the tag; counts the cycles a beat was offered and not taken.
template <typename D>
std::vector<uint8_t> RunMessage(D& dut, std::mt19937_64& rng, const Message& msg, Stalls st,
                                uint64_t* refused = nullptr) {
  constexpr size_t kB = D::kBeatBytes;
  uint64_t guard = 0;
  const auto step = [&] {
    dut.Tick();
    if (++guard > 100000) ADD_FAILURE() << "no progress";
  };
  dut.m().key_valid = 1;
  SetBits(dut.m().key, BeatWords(msg.key.data(), 32, 256));
  dut.m().key_aead = msg.aead;
  for (dut.Eval(); !dut.m().key_ready && guard <= 100000; dut.Eval()) step();
  step();
  dut.m().key_valid = 0;
  for (size_t s = 0; s < msg.segments.size(); ++s) {
    const auto& seg = msg.segments[s];
    // Full beats, the last one with what is left (an empty segment: one beat of 0 bytes).
    const size_t nbeats = seg.empty() ? 1 : (seg.size() + kB - 1) / kB;
    for (size_t b = 0; b < nbeats && guard <= 100000;) {
      if (rng() % 100 >= st.valid_pct) {
        dut.IdleInput();
        step();
        continue;
      }
      const bool last = b + 1 == nbeats;
      const size_t n = last ? seg.size() - kB * b : kB;
      auto w = BeatWords(seg.data() + kB * b, n, D::kWidth);
      // Bytes past a last beat's count are random: the module must not look at them.
      if (last && n < kB) {
        const auto junk = RandomBytes(rng, kB);
        std::vector<uint8_t> full(seg.begin() + static_cast<ptrdiff_t>(kB * b), seg.end());
        full.insert(full.end(), junk.begin(), junk.begin() + static_cast<ptrdiff_t>(kB - n));
        w = BeatWords(full.data(), kB, D::kWidth);
      }
      SetBits(dut.m().s_data, w);
      dut.m().s_bytes = static_cast<uint8_t>(n);
      dut.m().s_aad = msg.aead && s == 0;
      dut.m().s_last = last;
      dut.m().s_valid = 1;
      dut.Eval();
      if (dut.m().s_ready)
        ++b;
      else if (refused != nullptr)
        ++*refused;
      step();
    }
  }
  dut.IdleInput();
  for (;;) {
    dut.m().m_tag_ready = rng() % 100 < st.ready_pct;
    dut.Eval();
    if (dut.m().m_tag_valid && dut.m().m_tag_ready) break;
    step();
    if (guard > 100000) return {};
  }
  auto tag = dut.Tag();
  step();
  dut.m().m_tag_ready = 0;
  return tag;
}

std::array<uint8_t, 16> PlainTag(const Message& msg) {
  std::array<uint8_t, 16> tag{};
  crypto_onetimeauth_poly1305(tag.data(), msg.segments[0].data(), msg.segments[0].size(),
                              msg.key.data());
  return tag;
}

size_t RandomLength(std::mt19937_64& rng) { return rng() % 4 == 0 ? rng() % 2001 : rng() % 80; }

const Stalls kStallMix[] = {{100, 100}, {70, 50}, {30, 90}, {90, 10}, {50, 50}};

template <typename T>
class Poly1305Test : public dxpu::rtl::SodiumTest {};

using Models = ::testing::Types<Dut<Vrtl_poly1305, 64>, Dut<Vrtl_poly1305_w256, 256>>;
TYPED_TEST_SUITE(Poly1305Test, Models);

TYPED_TEST(Poly1305Test, RandomMessagesAgreeWithLibsodium) {
  const dxpu::rtl::TestSeed seed_trace;
  std::mt19937_64 rng(seed_trace.value());
  TypeParam dut;
  for (int i = 0; i < 300 && !::testing::Test::HasFailure(); ++i) {
    Message msg{RandomBytes(rng, 32), false, {RandomBytes(rng, RandomLength(rng))}};
    // Keys with all of r's unclamped bits set, and s all ones (the carries of h + s).
    if (i % 10 == 1) std::fill(msg.key.begin(), msg.key.end(), 0xff);
    const auto tag = RunMessage(dut, rng, msg, kStallMix[i % 5]);
    const auto want = PlainTag(msg);
    ASSERT_EQ(tag, std::vector<uint8_t>(want.begin(), want.end()))
        << "message " << i << " of " << msg.segments[0].size() << " bytes";
  }
}

// Messages whose h comes near 2^130 - 5: blocks of all ones with r = 1 (h + m mod p at the top of
// the range, the final reduction's subtraction taken).
TYPED_TEST(Poly1305Test, ReductionEdgesAgreeWithLibsodium) {
  std::mt19937_64 rng(11);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  TypeParam dut;
  for (size_t len : {0, 1, 15, 16, 17, 31, 32, 33, 48, 64, 200}) {
    for (int variant = 0; variant < 3; ++variant) {
      Message msg{std::vector<uint8_t>(32, 0), false, {std::vector<uint8_t>(len, 0xff)}};
      msg.key[0] = variant == 0 ? 1 : 0xff;  // r = 1, or r with its low limb full
      if (variant == 2) std::fill(msg.key.begin(), msg.key.begin() + 16, 0xff);
      std::fill(msg.key.begin() + 16, msg.key.end(), variant == 1 ? 0xff : 0x00);
      const auto tag = RunMessage(dut, rng, msg, {});
      const auto want = PlainTag(msg);
      EXPECT_EQ(tag, std::vector<uint8_t>(want.begin(), want.end()))
          << len << " bytes, variant " << variant;
    }
  }
}

// The AEAD message: AAD and ciphertext of 0..2000 bytes each, padded, with the length block.
TYPED_TEST(Poly1305Test, AeadPaddingAgreesWithLibsodium) {
  const dxpu::rtl::TestSeed seed_trace;
  std::mt19937_64 rng(seed_trace.value());
  TypeParam dut;
  for (int i = 0; i < 300 && !::testing::Test::HasFailure(); ++i) {
    const auto key = RandomBytes(rng, 32);
    const auto nonce = RandomBytes(rng, 12);
    const auto aad = RandomBytes(rng, i % 3 == 0 ? 32 : RandomLength(rng));
    const auto pt = RandomBytes(rng, RandomLength(rng));
    std::vector<uint8_t> ct(pt.size());
    std::array<uint8_t, 16> want{};
    unsigned long long maclen = 0;  // NOLINT(google-runtime-int): libsodium's type
    crypto_aead_chacha20poly1305_ietf_encrypt_detached(ct.data(), want.data(), &maclen, pt.data(),
                                                       pt.size(), aad.data(), aad.size(), nullptr,
                                                       nonce.data(), key.data());
    Message msg{std::vector<uint8_t>(32), true, {aad, ct}};
    crypto_stream_chacha20_ietf(msg.key.data(), 32, nonce.data(), key.data());
    const auto tag = RunMessage(dut, rng, msg, kStallMix[i % 5]);
    ASSERT_EQ(tag, std::vector<uint8_t>(want.begin(), want.end()))
        << "message " << i << ": AAD " << aad.size() << " bytes, ciphertext " << ct.size();
  }
}

// One beat per cycle: a message of 16,000 bytes (whole blocks) offered on every cycle: never
// refused after the first; the tag a few cycles after the last beat.
TYPED_TEST(Poly1305Test, OneBeatPerCycleUnstalled) {
  std::mt19937_64 rng(5);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  TypeParam dut;
  Message msg{RandomBytes(rng, 32), false, {RandomBytes(rng, 16000)}};
  uint64_t refused = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t c0 = dut.cycles();
  const auto tag = RunMessage(dut, rng, msg, {}, &refused);
  const uint64_t cycles = dut.cycles() - c0;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto want = PlainTag(msg);
  EXPECT_EQ(tag, std::vector<uint8_t>(want.begin(), want.end()));
  // At 256 bits the first beat waits the cycle that computes r^2; none after it.
  EXPECT_EQ(refused, TypeParam::kWidth == 256 ? 1u : 0u);
  constexpr uint64_t kBeats = 16000 / TypeParam::kBeatBytes;
  // The key's cycle, the beats, the tag's stages: nothing more.
  EXPECT_LE(cycles, kBeats + 8);
  std::printf(
      "dxpu_poly1305 DATA_WIDTH=%u: %llu beats in %llu cycles (key, beats, tag): %.4f beats per "
      "cycle; refused %llu; %.0f simulated cycles/s\n",
      TypeParam::kWidth, static_cast<unsigned long long>(kBeats),
      static_cast<unsigned long long>(cycles),
      static_cast<double>(kBeats) / static_cast<double>(cycles),
      static_cast<unsigned long long>(refused), static_cast<double>(cycles) / secs);
}

}  // namespace
