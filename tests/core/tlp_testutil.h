// Helpers shared by the TLP codec tests: hex conversion, encode into a
// vector, field-by-field comparison, and a seeded generator of valid TLPs.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/tlp_codec.h"

namespace dxpu::test {

// "40 00 00 01 ..." or "4000000100..." (spaces ignored) -> bytes. Aborts the
// test program on a malformed literal: vectors are written by hand.
std::vector<uint8_t> from_hex(std::string_view hex);
std::string to_hex(const std::vector<uint8_t>& bytes);

// Encode, expecting success; the vector holds exactly the TLP.
std::vector<uint8_t> encode_ok(const dxpu_tlp& t);

// Encode and return only the error (DXPU_TLP_OK on success).
dxpu_tlp_err encode_err(const dxpu_tlp& t);

// Decode a byte vector; returns the error and fills *out.
dxpu_tlp_err decode(const std::vector<uint8_t>& bytes, dxpu_tlp* out);

// Every field equal, payload compared by content (not pointer).
bool same_tlp(const dxpu_tlp& a, const dxpu_tlp& b, std::string* why);

// The seed for randomised tests: $DXPU_SEED if set, else a fresh one. The
// caller prints it so that any failure can be replayed.
uint64_t test_seed();

// Generates TLPs that are valid by construction, over every carried kind and
// every optional field. The payload lives in the generator and stays valid
// until the next call.
class RandomTlpGenerator {
 public:
  explicit RandomTlpGenerator(uint64_t seed) : rng_(seed) {}
  dxpu_tlp next();

 private:
  uint32_t uniform(uint32_t lo, uint32_t hi);  // inclusive
  bool coin() { return uniform(0, 1) == 1; }
  void fill_common(dxpu_tlp* t);
  void fill_mem(dxpu_tlp* t);
  void fill_cfg(dxpu_tlp* t);
  void fill_cpl(dxpu_tlp* t);
  void fill_msg(dxpu_tlp* t);
  void fill_payload(dxpu_tlp* t);

  std::mt19937_64 rng_;
  std::vector<uint8_t> payload_;
};

}  // namespace dxpu::test
