// rng.cc - xoshiro256** (Blackman and Vigna, 2018) seeded with splitmix64.
#include "sim/rng.h"

#include <bit>
#include <cstdint>

namespace dxpu::sim {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;  // splitmix64's increment

}  // namespace

uint64_t Mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Rng::Rng(uint64_t seed) : seed_(seed) {
  // splitmix64 never yields four zero words in a row, so the state is never all zero.
  uint64_t x = seed;
  for (uint64_t& word : s_) {
    x += kGolden;
    word = Mix64(x);
  }
}

uint64_t Rng::Next() {
  const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = std::rotl(s_[3], 45);
  return result;
}

uint64_t Rng::Uniform(uint64_t n) {
  if (n == 0) return 0;
  // Reject the lowest (2^64 mod n) values so that every residue is equally likely.
  const uint64_t threshold = (0 - n) % n;
  for (;;) {
    const uint64_t r = Next();
    if (r >= threshold) return r % n;
  }
}

uint64_t Rng::Range(uint64_t lo, uint64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t span = hi - lo;
  if (span == UINT64_MAX) return Next();
  return lo + Uniform(span + 1);
}

double Rng::UniformDouble() {
  // The top 53 bits, scaled by 2^-53: exact in IEEE double.
  return static_cast<double>(Next() >> 11) * 0x1.0p-53;
}

bool Rng::Bernoulli(double p) { return UniformDouble() < p; }

Rng Rng::Fork(uint64_t stream_id) const {
  // Two rounds of mixing so that nearby (seed, id) pairs land far apart, and Fork(a).Fork(b)
  // differs from Fork(b).Fork(a).
  return Rng(Mix64(Mix64(seed_ ^ kGolden) + Mix64(stream_id + kGolden)));
}

}  // namespace dxpu::sim
