// Seeded round trip of random valid TLPs, and decoding of random and mutated
// bytes. The seed is printed; DXPU_SEED=<n> replays a run, DXPU_ROUNDTRIP_N
// changes the count (default 100000).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

uint64_t iterations() {
  const char* env = std::getenv("DXPU_ROUNDTRIP_N");  // NOLINT(concurrency-mt-unsafe)
  return env != nullptr ? std::strtoull(env, nullptr, 0) : 100000;
}

TEST(TlpRoundTrip, RandomValidTlpsSurviveEncodeDecodeEncode) {
  const uint64_t seed = test_seed();
  const uint64_t n = iterations();
  std::printf("DXPU_SEED=%llu (%llu TLPs)\n", static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(n));
  RandomTlpGenerator gen(seed);
  uint64_t per_kind[DXPU_TLP_KIND_COUNT] = {};
  for (uint64_t i = 0; i < n; ++i) {
    dxpu_tlp t = gen.next();
    ASSERT_EQ(dxpu_tlp_validate(&t), DXPU_TLP_OK)
        << "generator made an invalid TLP at i=" << i << " seed=" << seed;
    std::vector<uint8_t> wire = encode_ok(t);
    ASSERT_EQ(wire.size(), dxpu_tlp_wire_len(&t)) << "i=" << i << " seed=" << seed;

    uint32_t peek = 0;
    ASSERT_EQ(dxpu_tlp_peek_size(wire.data(), 4, &peek), DXPU_TLP_OK);
    ASSERT_EQ(peek, wire.size());
    uint8_t kind = DXPU_TLP_INVALID;
    uint32_t payload = 0;
    ASSERT_EQ(dxpu_tlp_peek_kind(wire.data(), 4, &kind, &payload), DXPU_TLP_OK);
    ASSERT_EQ(kind, t.kind) << "i=" << i << " seed=" << seed;
    ASSERT_EQ(payload, dxpu_tlp_payload_len(&t)) << "i=" << i << " seed=" << seed;

    dxpu_tlp back{};
    ASSERT_EQ(decode(wire, &back), DXPU_TLP_OK)
        << "i=" << i << " seed=" << seed << " " << to_hex(wire);
    std::string why;
    ASSERT_TRUE(same_tlp(t, back, &why))
        << "field " << why << " differs at i=" << i << " seed=" << seed << " " << to_hex(wire);
    ASSERT_EQ(encode_ok(back), wire) << "re-encode differs at i=" << i << " seed=" << seed;
    ++per_kind[t.kind];
  }
  for (uint8_t k = DXPU_TLP_MRD; k < DXPU_TLP_KIND_COUNT; ++k) {
    EXPECT_GT(per_kind[k], n / 100) << dxpu_tlp_kind_name(k) << " under-represented";
  }
}

// Any bytes at all: decode either fails with a defined error or yields a TLP
// that re-encodes to bytes decoding to the same TLP. ASan checks the bounds.
TEST(TlpRoundTrip, RandomAndMutatedBytesNeverMisdecode) {
  const uint64_t seed = test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  RandomTlpGenerator gen(seed ^ 0x9e3779b97f4a7c15ULL);
  uint64_t ok = 0;
  uint64_t errs[DXPU_TLP_ERR_COUNT] = {};
  for (int i = 0; i < 50000; ++i) {
    std::vector<uint8_t> bytes;
    if (i % 2 == 0) {
      dxpu_tlp t = gen.next();
      bytes = encode_ok(t);
      // Flip one to three bits, or cut, or extend.
      switch (rng() % 3) {
        case 0:
          for (int f = 0, nf = 1 + static_cast<int>(rng() % 3); f < nf; ++f) {
            bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
          }
          break;
        case 1:
          bytes.resize(rng() % bytes.size());
          break;
        default:
          bytes.push_back(static_cast<uint8_t>(rng()));
          break;
      }
    } else {
      bytes.resize(rng() % 64);
      for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    }
    // Decode from an exact-size heap copy so ASan sees any overread.
    auto exact = std::make_unique<uint8_t[]>(bytes.size() + 1);
    std::copy(bytes.begin(), bytes.end(), exact.get());
    dxpu_tlp t{};
    dxpu_tlp_err err = dxpu_tlp_decode(exact.get(), bytes.size(), &t);
    ASSERT_LT(static_cast<unsigned>(err), static_cast<unsigned>(DXPU_TLP_ERR_COUNT));
    ++errs[err];
    if (err != DXPU_TLP_OK) continue;
    ++ok;
    std::vector<uint8_t> again = encode_ok(t);
    ASSERT_FALSE(again.empty()) << "decoded TLP does not re-encode, seed=" << seed << " i=" << i;
    dxpu_tlp t2{};
    ASSERT_EQ(decode(again, &t2), DXPU_TLP_OK);
    std::string why;
    ASSERT_TRUE(same_tlp(t, t2, &why)) << why << " seed=" << seed << " i=" << i;
  }
  EXPECT_GT(ok, 0u);
  EXPECT_GT(errs[DXPU_TLP_ERR_SHORT_PAYLOAD], 0u);
  EXPECT_GT(errs[DXPU_TLP_ERR_LENGTH_MISMATCH], 0u);
}

}  // namespace
}  // namespace dxpu::test
