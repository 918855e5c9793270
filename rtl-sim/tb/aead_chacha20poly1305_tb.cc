// aead_chacha20poly1305_tb.cc - testbench of rtl/dxpu_aead_chacha20poly1305.sv at 64 and 256
// bits: frames of a 32-byte header and 0..9000 bytes of payload with random keys and counters (the
// AAD is the header then the counter, big-endian, as a sealed DxFP frame carries them), encrypted
// and decrypted back to back with random input gaps and output back-pressure; every byte out and
// every tag compared with libsodium's crypto_aead_chacha20poly1305_ietf_*(); a flipped bit of
// ciphertext, tag or header, a payload of the wrong length, or a frame sealed with the header
// alone as its AAD, must give tag_bad. Throughput
// measured: one beat per cycle within a frame, at both widths. $DXPU_SEED replays a run.
#include <gtest/gtest.h>
#include <sodium.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "Vrtl_aead_chacha20poly1305.h"
#include "Vrtl_aead_chacha20poly1305_w256.h"
#include "aead_tb.h"
#include "rtl_tb.h"

namespace {

using dxpu::rtl::BeatBytes;
using dxpu::rtl::BeatWords;
using dxpu::rtl::GetBits;
using dxpu::rtl::RandomBytes;
using dxpu::rtl::SetBits;

constexpr size_t kHdr = 32;
constexpr size_t kTag = 16;

// The 96-bit nonce of Noise's ChaChaPoly: 32 zero bits, then the counter little-endian.
std::array<uint8_t, 12> NoiseNonce(uint64_t n) {
  std::array<uint8_t, 12> nonce{};
  for (int i = 0; i < 8; ++i) nonce[4 + i] = static_cast<uint8_t>(n >> (8 * i));
  return nonce;
}

// The AAD of a sealed frame: its header, then the counter n as the frame carries it.
std::vector<uint8_t> Aad(const std::vector<uint8_t>& hdr, uint64_t n) {
  std::vector<uint8_t> aad = hdr;
  for (int i = 7; i >= 0; --i) aad.push_back(static_cast<uint8_t>(n >> (8 * i)));
  return aad;
}

// One frame in, and what must come out.
struct Frame {
  std::vector<uint8_t> hdr, key;
  uint64_t n = 0;
  bool decrypt = false;
  uint32_t len = 0;              // s_len (decrypt)
  std::vector<uint8_t> payload;  // in
  std::vector<uint8_t> out;      // the payload out
  bool ok = false;               // decrypt: the verdict
  std::string what;              // for failure messages
};

Frame Encrypt(std::mt19937_64& rng, size_t len) {
  Frame f{RandomBytes(rng, kHdr),
          RandomBytes(rng, 32),
          rng(),
          false,
          0,
          RandomBytes(rng, len),
          {},
          false,
          "encrypt " + std::to_string(len)};
  const auto nonce = NoiseNonce(f.n);
  f.out.resize(len + kTag);
  unsigned long long maclen = 0;  // NOLINT(google-runtime-int): libsodium's type
  const auto aad = Aad(f.hdr, f.n);
  crypto_aead_chacha20poly1305_ietf_encrypt_detached(f.out.data(), f.out.data() + len, &maclen,
                                                     f.payload.data(), len, aad.data(), aad.size(),
                                                     nullptr, nonce.data(), f.key.data());
  return f;
}

// A sealed frame to decrypt, with `flaw` applied: 0 none, 1 a ciphertext bit, 2 a tag bit, 3 a
// header bit, 4 bytes missing, 5 bytes extra, 6 s_len below 16, 7 sealed with the header alone
// as the AAD (the counter left out, as before the protocol's AAD). The expected plaintext is the
// keystream XOR whatever ciphertext bytes came (up to s_len - 16); the verdict is libsodium's
// on what the RTL was given, and bad whenever the bytes do not match s_len.
Frame Decrypt(std::mt19937_64& rng, size_t len, int flaw) {
  Frame e = Encrypt(rng, len);
  Frame f{e.hdr,
          e.key,
          e.n,
          true,
          static_cast<uint32_t>(len + kTag),
          e.out,
          {},
          false,
          "decrypt " + std::to_string(len) + " flaw " + std::to_string(flaw)};
  const auto bit = [&](size_t nbytes) { return static_cast<size_t>(rng() % (8 * nbytes)); };
  if (flaw == 1 && len > 0) {
    const size_t b = bit(len);
    f.payload[b / 8] ^= static_cast<uint8_t>(1u << (b % 8));
  } else if (flaw == 1 || flaw == 2) {
    const size_t b = bit(kTag);
    f.payload[len + b / 8] ^= static_cast<uint8_t>(1u << (b % 8));
  } else if (flaw == 3) {
    const size_t b = bit(kHdr);
    f.hdr[b / 8] ^= static_cast<uint8_t>(1u << (b % 8));
  } else if (flaw == 4) {
    f.payload.resize(f.payload.size() - 1 - rng() % std::min<size_t>(f.payload.size(), 20));
  } else if (flaw == 5) {
    const auto extra = RandomBytes(rng, 1 + rng() % 20);
    f.payload.insert(f.payload.end(), extra.begin(), extra.end());
  } else if (flaw == 6) {
    f.len = static_cast<uint32_t>(rng() % kTag);
  } else if (flaw == 7) {
    const auto nonce7 = NoiseNonce(f.n);
    unsigned long long maclen = 0;  // NOLINT(google-runtime-int): libsodium's type
    crypto_aead_chacha20poly1305_ietf_encrypt_detached(f.payload.data(), f.payload.data() + len,
                                                       &maclen, e.payload.data(), len, f.hdr.data(),
                                                       kHdr, nullptr, nonce7.data(), f.key.data());
  }
  const size_t ct_len = f.len >= kTag ? f.len - kTag : 0;
  const size_t got = std::min(ct_len, f.payload.size());
  const auto nonce = NoiseNonce(f.n);
  f.out.resize(got);
  crypto_stream_chacha20_ietf_xor_ic(f.out.data(), f.payload.data(), got, nonce.data(), 1,
                                     f.key.data());
  if (f.payload.size() == f.len && f.len >= kTag) {
    std::vector<uint8_t> pt(ct_len);
    const auto aad = Aad(f.hdr, f.n);
    f.ok = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
               pt.data(), nullptr, f.payload.data(), ct_len, f.payload.data() + ct_len, aad.data(),
               aad.size(), nonce.data(), f.key.data()) == 0;
  }
  if (flaw == 0) {
    EXPECT_TRUE(f.ok) << "libsodium refused its own frame";
  }
  return f;
}

template <typename Model, unsigned Width>
class Dut : public dxpu::rtl::Dut<Model> {
  using Base = dxpu::rtl::Dut<Model>;

 public:
  using Base::m;
  static constexpr unsigned kWidth = Width;
  static constexpr size_t kBeatBytes = Width / 8;
  static size_t Beats(size_t payload) {
    return std::max<size_t>(1, (payload + kBeatBytes - 1) / kBeatBytes);
  }
  Dut() {
    IdleInput();
    m().m_ready = 0;
    Base::Reset();
  }
  void IdleInput() {
    SetBits(m().s_hdr, {});
    SetBits(m().s_key, {});
    m().s_nonce = 0;
    m().s_decrypt = 0;
    m().s_len = 0;
    SetBits(m().s_data, {});
    m().s_bytes = 0;
    m().s_sop = 0;
    m().s_eop = 0;
    m().s_valid = 0;
  }
  // Beat `b` of frame f (b of Beats(payload)).
  void Drive(const Frame& f, size_t b, std::mt19937_64& rng) {
    constexpr size_t kB = kBeatBytes;
    const bool last = b + 1 == Beats(f.payload.size());
    const size_t n = last ? f.payload.size() - kB * b : kB;
    std::vector<uint8_t> bytes(f.payload.begin() + static_cast<ptrdiff_t>(kB * b),
                               f.payload.begin() + static_cast<ptrdiff_t>(kB * b + n));
    const auto junk = RandomBytes(rng, kB - n);  // past the last byte: not looked at
    bytes.insert(bytes.end(), junk.begin(), junk.end());
    SetBits(m().s_data, BeatWords(bytes.data(), kB, Width));
    m().s_bytes = static_cast<uint8_t>(n);
    m().s_sop = b == 0;
    m().s_eop = last;
    m().s_valid = 1;
    // The frame's values with its first beat; junk on the others.
    const auto hdr = b == 0 ? f.hdr : RandomBytes(rng, kHdr);
    const auto key = b == 0 ? f.key : RandomBytes(rng, 32);
    SetBits(m().s_hdr, BeatWords(hdr.data(), kHdr, 256));
    SetBits(m().s_key, BeatWords(key.data(), 32, 256));
    m().s_nonce = b == 0 ? f.n : rng();
    m().s_decrypt = b == 0 ? f.decrypt : (rng() & 1);
    m().s_len = b == 0 ? f.len : static_cast<uint32_t>(rng() & 0x3fff);
  }
  // A beat outside any frame (no sop): dropped.
  void DriveStray(std::mt19937_64& rng) {
    Drive(Frame{RandomBytes(rng, kHdr),
                RandomBytes(rng, 32),
                0,
                false,
                0,
                RandomBytes(rng, 2 * kBeatBytes),
                {},
                false,
                ""},
          1, rng);
  }
};

struct Stalls {
  unsigned valid_pct = 100;
  unsigned ready_pct = 100;
};

struct Result {
  uint64_t cycles = 0;
  uint64_t first_data_cycle = 0, last_data_cycle = 0;  // payload beats of the last frame in
  uint64_t strays = 0;
};

// Streams the frames in (with `strays` beats without sop between some), collects every beat out
// and checks each frame: header on its first beat, bytes, flags, the verdict on its last.
template <typename D>
Result Stream(D& dut, std::mt19937_64& rng, const std::vector<Frame>& frames, Stalls st,
              unsigned stray_pct = 0) {
  Result r;
  size_t in_frame = 0, in_beat = 0, out_frame = 0;
  // A stray beat is decided between frames only: a beat offered stays until taken.
  bool stray_now = rng() % 100 < stray_pct;
  std::vector<uint8_t> got;
  const uint64_t c0 = dut.cycles();
  for (uint64_t guard = 0; out_frame < frames.size(); ++guard) {
    if (guard > 200000 + 50 * frames.size()) {
      ADD_FAILURE() << "no progress: frame " << out_frame << " of " << frames.size() << " out";
      break;
    }
    // Input.
    dut.IdleInput();
    if (in_frame < frames.size() && rng() % 100 < st.valid_pct) {
      if (stray_now)
        dut.DriveStray(rng);
      else
        dut.Drive(frames[in_frame], in_beat, rng);
    }
    dut.m().m_ready = rng() % 100 < st.ready_pct;
    dut.Eval();
    if (dut.m().s_valid && dut.m().s_ready) {
      if (stray_now) {
        stray_now = false;
        ++r.strays;
      } else {
        const Frame& f = frames[in_frame];
        if (in_beat == 0) r.first_data_cycle = dut.cycles();
        r.last_data_cycle = dut.cycles();
        if (++in_beat == D::Beats(f.payload.size())) {
          ++in_frame;
          in_beat = 0;
          stray_now = rng() % 100 < stray_pct;
        }
      }
    }
    // Output.
    if (dut.m().m_valid && dut.m().m_ready) {
      if (out_frame >= frames.size()) {
        ADD_FAILURE() << "a beat after the last frame";
        break;
      }
      const Frame& f = frames[out_frame];
      const bool sop = dut.m().m_sop, eop = dut.m().m_eop;
      EXPECT_EQ(sop, got.empty()) << f.what << ": sop on a frame's first beat only";
      if (sop) {
        const auto hdr = BeatBytes(GetBits(dut.m().m_hdr, 8), kHdr, 256);
        EXPECT_EQ(hdr, f.hdr) << f.what << ": header out";
        EXPECT_EQ(dut.m().m_nonce, f.n) << f.what << ": counter out";
      }
      EXPECT_EQ(static_cast<bool>(dut.m().m_decrypt), f.decrypt) << f.what;
      const size_t n = dut.m().m_bytes;
      EXPECT_TRUE(n == D::kBeatBytes || eop) << f.what << ": a short beat before the last";
      const auto b = BeatBytes(GetBits(dut.m().m_data, D::kWidth / 32), n, D::kWidth);
      got.insert(got.end(), b.begin(), b.end());
      if (!eop) {
        EXPECT_FALSE(dut.m().m_tag_ok || dut.m().m_tag_bad) << f.what;
      } else {
        EXPECT_EQ(got, f.out) << f.what << ": payload out";
        EXPECT_EQ(static_cast<bool>(dut.m().m_tag_ok), f.decrypt && f.ok) << f.what;
        EXPECT_EQ(static_cast<bool>(dut.m().m_tag_bad), f.decrypt && !f.ok) << f.what;
        got.clear();
        ++out_frame;
        if (::testing::Test::HasFailure()) break;
      }
    }
    dut.Tick();
  }
  dut.IdleInput();
  dut.m().m_ready = 0;
  r.cycles = dut.cycles() - c0;
  return r;
}

size_t RandomLength(std::mt19937_64& rng) { return rng() % 3 == 0 ? rng() % 9001 : rng() % 100; }

template <typename T>
class AeadTest : public dxpu::rtl::SodiumTest {};

using Models = ::testing::Types<Dut<Vrtl_aead_chacha20poly1305, 64>,
                                Dut<Vrtl_aead_chacha20poly1305_w256, 256>>;
TYPED_TEST_SUITE(AeadTest, Models);

// Frames encrypted and decrypted back to back, random lengths 0..9000, every flaw, five mixes of
// back-pressure, stray beats between frames; then the counters.
TYPED_TEST(AeadTest, RandomFramesAgreeWithLibsodium) {
  const dxpu::rtl::TestSeed seed_trace;
  std::mt19937_64 rng(seed_trace.value());
  TypeParam dut;
  const Stalls mix[] = {{100, 100}, {70, 50}, {30, 90}, {90, 10}, {50, 50}};
  uint64_t frames = 0, bad = 0, strays = 0;
  for (int run = 0; run < 5 && !::testing::Test::HasFailure(); ++run) {
    std::vector<Frame> v;
    for (int i = 0; i < 60; ++i) {
      const size_t len = RandomLength(rng);
      if (rng() % 2 == 0) {
        v.push_back(Encrypt(rng, len));
      } else {
        const int flaw = rng() % 2 == 0 ? 0 : static_cast<int>(1 + rng() % 7);
        v.push_back(Decrypt(rng, len, flaw));
        bad += v.back().ok ? 0 : 1;
      }
    }
    frames += v.size();
    strays += Stream(dut, rng, v, mix[run], 10).strays;
  }
  dut.Eval();
  EXPECT_EQ(dut.m().m_cnt_frames, frames);
  EXPECT_EQ(dut.m().m_cnt_tag_bad, bad);
  EXPECT_EQ(dut.m().m_cnt_stray, strays);
  EXPECT_GT(bad, 0u);
  EXPECT_GT(strays, 0u);
}

// Every flaw on every short length (0..40 bytes: the tag across beat boundaries at every
// offset), and the same frames intact: only the intact ones pass.
TYPED_TEST(AeadTest, EveryFlawAtEveryShortLengthIsTagBad) {
  std::mt19937_64 rng(3);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  TypeParam dut;
  std::vector<Frame> v;
  for (size_t len = 0; len <= 40; ++len) {
    for (int flaw = 0; flaw <= 7; ++flaw) {
      v.push_back(Decrypt(rng, len, flaw));
      EXPECT_EQ(v.back().ok, flaw == 0) << v.back().what;
    }
  }
  Stream(dut, rng, v, {80, 70});
  dut.Eval();
  EXPECT_EQ(dut.m().m_cnt_tag_bad, 41u * 7);
}

// Throughput: a frame of 9,000 bytes unstalled takes a payload beat on every cycle from its
// first to its last; back-to-back frames of DxFP sizes, beats per cycle with the per-frame cost.
TYPED_TEST(AeadTest, OneBeatPerCycleUnstalled) {
  std::mt19937_64 rng(9);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  TypeParam dut;
  for (bool decrypt : {false, true}) {
    const Frame f = decrypt ? Decrypt(rng, 9000 - kTag, 0) : Encrypt(rng, 9000);
    const Result r = Stream(dut, rng, {f}, {});
    const uint64_t beats = TypeParam::Beats(f.payload.size());
    EXPECT_EQ(r.last_data_cycle - r.first_data_cycle + 1, beats)
        << "a payload beat refused within the frame";
    std::printf(
        "dxpu_aead_chacha20poly1305 DATA_WIDTH=%u %s: %llu payload beats on %llu consecutive "
        "cycles; %llu cycles from the first beat offered to the last out\n",
        TypeParam::kWidth, decrypt ? "decrypt" : "encrypt", static_cast<unsigned long long>(beats),
        static_cast<unsigned long long>(r.last_data_cycle - r.first_data_cycle + 1),
        static_cast<unsigned long long>(r.cycles));
  }
  for (size_t len : {64, 512, 1500, 4096, 9000}) {
    std::vector<Frame> v;
    uint64_t beats = 0;
    for (int i = 0; i < 20; ++i) {
      v.push_back(Encrypt(rng, len));
      beats += TypeParam::Beats(len);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const Result r = Stream(dut, rng, v, {});
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double rate = static_cast<double>(beats) / static_cast<double>(r.cycles);
    std::printf(
        "dxpu_aead_chacha20poly1305 DATA_WIDTH=%u: 20 frames of %zu bytes back to back: %.4f "
        "payload beats per cycle (%.1f cycles per frame beyond its beats); %.0f simulated "
        "cycles/s\n",
        TypeParam::kWidth, len, rate, static_cast<double>(r.cycles - beats) / 20.0,
        static_cast<double>(r.cycles) / secs);
    if (len == 9000) {
      EXPECT_GT(rate, TypeParam::kWidth == 64 ? 0.97 : 0.96);
    }
  }
}

}  // namespace
