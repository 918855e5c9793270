// rng.h - the simulator's deterministic random numbers: xoshiro256** seeded through
// splitmix64 from one 64-bit seed. Every draw is integer arithmetic or an exact
// integer-to-double conversion, so one seed gives the same numbers on every machine and
// compiler (unlike std::uniform_*_distribution, whose output is implementation-defined).
#ifndef DXPU_LIB_SIM_RNG_H_
#define DXPU_LIB_SIM_RNG_H_

#include <array>
#include <cstdint>

namespace dxpu::sim {

// splitmix64's output function: a bijective 64-bit mix.
uint64_t Mix64(uint64_t x);

class Rng {
 public:
  explicit Rng(uint64_t seed);

  // The seed this generator was made from (Fork derives from it, not from the state).
  uint64_t seed() const { return seed_; }

  // 64 random bits.
  uint64_t Next();
  // Uniform in [0, n), without modulo bias; 0 when n is 0.
  uint64_t Uniform(uint64_t n);
  // Uniform in [lo, hi], both included; lo when hi <= lo.
  uint64_t Range(uint64_t lo, uint64_t hi);
  // Uniform in [0, 1), a multiple of 2^-53.
  double UniformDouble();
  // True with probability p; always consumes exactly one draw. p <= 0 (or NaN) is never
  // true, p >= 1 always.
  bool Bernoulli(double p);

  // An independent generator for substream `stream_id`. It depends only on this
  // generator's seed and the id, not on how many numbers were drawn, so adding a consumer
  // (a new Fork) does not perturb any other stream. Forks nest: Fork(a).Fork(b).
  Rng Fork(uint64_t stream_id) const;

 private:
  uint64_t seed_;
  std::array<uint64_t, 4> s_{};
};

}  // namespace dxpu::sim

#endif  // DXPU_LIB_SIM_RNG_H_
