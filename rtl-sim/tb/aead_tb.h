// aead_tb.h - what the frame AEAD's testbenches (chacha20_tb.cc, poly1305_tb.cc,
// aead_chacha20poly1305_tb.cc) share: libsodium, their reference, set up once per suite, and
// random bytes from the test's seeded generator.
#ifndef DXPU_RTL_SIM_TB_AEAD_TB_H_
#define DXPU_RTL_SIM_TB_AEAD_TB_H_

#include <gtest/gtest.h>
#include <sodium.h>

#include <cstdint>
#include <random>
#include <vector>

namespace dxpu::rtl {

inline std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// A test suite whose reference is libsodium.
class SodiumTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_GE(sodium_init(), 0); }
};

}  // namespace dxpu::rtl

#endif  // DXPU_RTL_SIM_TB_AEAD_TB_H_
