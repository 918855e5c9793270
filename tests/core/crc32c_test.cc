// CRC32C against published vectors (RFC 3720 B.4, the "check" value of the
// CRC catalogue) and against a bit-at-a-time reference on random data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/crc32c.h"

// The generated tables, including the hardware path's zeros_N tables, to check
// them entry by entry (crc32c.c compiles the latter only for that path).
#define DXPU_CRC32C_ZEROS_TABLES 1
#include "core/crc32c_table.h"

namespace {

// Reference: one bit at a time, straight from the reflected polynomial.
uint32_t crc32c_bitwise(const uint8_t* p, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1u) != 0 ? 0x82f63b78u : 0u);
  }
  return ~crc;
}

// Continue a CRC (the API's convention: crc as returned, not the register).
uint32_t crc32c_bitwise(uint32_t crc, const uint8_t* p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1u) != 0 ? 0x82f63b78u : 0u);
  }
  return ~crc;
}

// Random bytes from a fixed seed.
std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(Crc32c, CheckValue) {
  // CRC catalogue "CRC-32/ISCSI": check = crc("123456789").
  EXPECT_EQ(dxpu_crc32c(0, "123456789", 9), 0xe3069283u);
}

TEST(Crc32c, Rfc3720Vectors) {
  // RFC 3720, appendix B.4. The RFC lists the CRC bytes in wire order
  // (least significant byte first): "aa 36 91 8a" is the value 0x8a9136aa.
  std::vector<uint8_t> buf(32);
  std::memset(buf.data(), 0x00, 32);
  EXPECT_EQ(dxpu_crc32c(0, buf.data(), 32), 0x8a9136aau);
  std::memset(buf.data(), 0xff, 32);
  EXPECT_EQ(dxpu_crc32c(0, buf.data(), 32), 0x62a8ab43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(dxpu_crc32c(0, buf.data(), 32), 0x46dd794eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(dxpu_crc32c(0, buf.data(), 32), 0x113fdb5cu);
  // iSCSI SCSI Read (10) command PDU.
  static const uint8_t kPdu[48] = {0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                   0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
                                   0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
                                   0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                   0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(dxpu_crc32c(0, kPdu, sizeof kPdu), 0xd9963a56u);
}

TEST(Crc32c, EmptyInputLeavesCrcUnchanged) {
  EXPECT_EQ(dxpu_crc32c(0, nullptr, 0), 0u);
  EXPECT_EQ(dxpu_crc32c(0x12345678u, "", 0), 0x12345678u);
}

TEST(Crc32c, ChainingEqualsOneShot) {
  const char* s = "The quick brown fox jumps over the lazy dog";
  size_t n = std::strlen(s);
  uint32_t whole = dxpu_crc32c(0, s, n);
  EXPECT_EQ(whole, 0x22620404u);  // published CRC-32C of this sentence
  for (size_t cut = 0; cut <= n; ++cut) {
    EXPECT_EQ(dxpu_crc32c(dxpu_crc32c(0, s, cut), s + cut, n - cut), whole) << "cut=" << cut;
  }
}

// dxpu_crc32c() may use the CPU's instruction; it must agree with the portable
// code (and the portable code with the bitwise reference, below) everywhere.
TEST(Crc32c, FastPathMatchesPortable) {
  std::printf(
      "CRC32C instruction in use: %s; long buffers: %s; PCLMULQDQ path: %s; "
      "VPCLMULQDQ path: %s\n",
      dxpu_crc32c_hw_available() ? "yes" : "no", dxpu_crc32c_impl_name(),
      dxpu_crc32c_pclmul_available() ? "yes" : "no",
      dxpu_crc32c_vpclmul_available() ? "yes" : "no");
  std::mt19937 rng(7);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  std::vector<uint8_t> buf(9100);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (int i = 0; i < 5000; ++i) {
    size_t off = rng() % 16;
    size_t len = rng() % (buf.size() - off);
    uint32_t seed = (i % 3 == 0) ? 0 : static_cast<uint32_t>(rng());
    ASSERT_EQ(dxpu_crc32c(seed, buf.data() + off, len),
              dxpu_crc32c_portable(seed, buf.data() + off, len))
        << "off=" << off << " len=" << len;
  }
  EXPECT_EQ(dxpu_crc32c_portable(0, "123456789", 9), 0xe3069283u);
}

TEST(Crc32c, MatchesBitwiseReferenceOnRandomBuffers) {
  std::mt19937 rng(20261202);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  std::vector<uint8_t> buf(9100);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (int i = 0; i < 2000; ++i) {
    size_t off = rng() % 16;  // unaligned starts
    size_t len = rng() % (buf.size() - off);
    ASSERT_EQ(dxpu_crc32c_portable(0, buf.data() + off, len), crc32c_bitwise(buf.data() + off, len))
        << "off=" << off << " len=" << len;
  }
}

// The hardware path joins three chains over blocks of 1024, 256, 128 and 64
// bytes (groups of 3072, 768, 384 and 192) after a head of len % 192 bytes on
// one chain. Every length 0..10000 covers every combination of groups and
// every head length; every start offset 0..15 covers the unaligned loads.
// dxpu_crc32c() (whichever path it takes), the old single-chain path and the
// portable path must all equal the bit-at-a-time reference.
TEST(Crc32c, EveryLengthAndAlignmentMatchesReference) {
  const size_t kMaxLen = 10000;
  std::vector<uint8_t> buf = random_bytes(kMaxLen + 16, 20261203);
  for (size_t off = 0; off < 16; ++off) {
    const uint8_t* p = buf.data() + off;
    // Incremental bitwise reference: ref[len] = crc of p[0, len).
    uint32_t ref = 0;
    for (size_t len = 0; len <= kMaxLen; ++len) {
      ASSERT_EQ(dxpu_crc32c(0, p, len), ref) << "off=" << off << " len=" << len;
      ASSERT_EQ(dxpu_crc32c_portable(0, p, len), ref) << "off=" << off << " len=" << len;
      ASSERT_EQ(dxpu_crc32c_hw_single(0, p, len), ref) << "off=" << off << " len=" << len;
      if (len < kMaxLen) ref = crc32c_bitwise(ref, p + len, 1);
    }
  }
}

// The data ends exactly at the end of a heap block, so AddressSanitizer (the
// asan preset) reports any load past the last byte, for every path.
TEST(Crc32c, ReadsNothingPastTheEnd) {
  std::vector<uint8_t> src = random_bytes(10000, 5);
  for (size_t len = 0; len <= 10000; len += (len < 1600 ? 1 : 37)) {
    for (size_t off : {size_t{0}, size_t{3}}) {
      std::vector<uint8_t> block(off + len);
      std::copy_n(src.begin(), len, block.begin() + static_cast<std::ptrdiff_t>(off));
      uint32_t want = dxpu_crc32c_portable(0, src.data(), len);
      ASSERT_EQ(dxpu_crc32c(0, block.data() + off, len), want) << "len=" << len;
      ASSERT_EQ(dxpu_crc32c_hw_single(0, block.data() + off, len), want) << "len=" << len;
      ASSERT_EQ(dxpu_crc32c_portable(0, block.data() + off, len), want) << "len=" << len;
      ASSERT_EQ(dxpu_crc32c_hw_3way(0, block.data() + off, len), want) << "len=" << len;
      ASSERT_EQ(dxpu_crc32c_pclmul(0, block.data() + off, len), want) << "len=" << len;
      ASSERT_EQ(dxpu_crc32c_vpclmul(0, block.data() + off, len), want) << "len=" << len;
    }
  }
}

// A nonzero starting crc goes through the head chain (or, below one group,
// the single chain): every length with a few seeds.
TEST(Crc32c, EveryLengthWithSeedMatchesReference) {
  const size_t kMaxLen = 7000;
  std::vector<uint8_t> buf = random_bytes(kMaxLen + 3, 99);
  const uint8_t* p = buf.data() + 3;
  for (uint32_t seed : {0x00000001u, 0xffffffffu, 0x9a3c5e71u}) {
    uint32_t ref = seed;  // crc of p[0, len) continued from seed
    for (size_t len = 0; len <= kMaxLen; ++len) {
      ASSERT_EQ(dxpu_crc32c(seed, p, len), ref) << "seed=" << seed << " len=" << len;
      ASSERT_EQ(dxpu_crc32c_portable(seed, p, len), ref) << "seed=" << seed << " len=" << len;
      if (len < kMaxLen) ref = crc32c_bitwise(ref, p + len, 1);
    }
  }
}

// crc(A) continued with B equals crc(A || B), with the cut anywhere around
// the group and block boundaries of either piece.
TEST(Crc32c, IncrementalAcrossGroupBoundaries) {
  const size_t kTotal = 9216;
  std::vector<uint8_t> buf = random_bytes(kTotal + 16, 4242);
  std::vector<size_t> cuts;
  for (size_t edge : {0u, 64u, 128u, 192u, 256u, 384u, 576u, 768u, 1024u, 1536u, 2304u, 3072u,
                      4096u, 6144u, 9216u}) {
    for (size_t d = 0; d <= 17; ++d) {
      if (edge >= d) cuts.push_back(edge - d);
      if (edge + d <= kTotal) cuts.push_back(edge + d);
    }
  }
  for (size_t total : {kTotal, size_t{9211}, size_t{4096}, size_t{1500}, size_t{577}}) {
    for (size_t off : {size_t{0}, size_t{5}}) {
      const uint8_t* p = buf.data() + off;
      uint32_t whole = crc32c_bitwise(0, p, total);
      ASSERT_EQ(dxpu_crc32c(0, p, total), whole);
      for (size_t cut : cuts) {
        if (cut > total) continue;
        uint32_t a = dxpu_crc32c(0, p, cut);
        ASSERT_EQ(dxpu_crc32c(a, p + cut, total - cut), whole)
            << "total=" << total << " off=" << off << " cut=" << cut;
        // And the start of the second piece in turn split in two.
        size_t cut2 = cut + (total - cut) / 3;
        uint32_t b = dxpu_crc32c(a, p + cut, cut2 - cut);
        ASSERT_EQ(dxpu_crc32c(b, p + cut2, total - cut2), whole)
            << "total=" << total << " off=" << off << " cut=" << cut << " cut2=" << cut2;
      }
    }
  }
}

// Every implementation dxpu_crc32c() may take, each forced for every length
// (the folding paths take over from a length threshold in dxpu_crc32c(), but
// handle any length when called directly), so that each is compared with the
// portable reference on this machine whatever the dispatch picks. Where the
// CPU lacks one, its function computes through dxpu_crc32c() (still checked).
struct Crc32cImpl {
  const char* name;
  uint32_t (*fn)(uint32_t, const void*, size_t);
};

const Crc32cImpl kImpls[] = {
    {"dxpu_crc32c", dxpu_crc32c},     {"hw_single", dxpu_crc32c_hw_single},
    {"hw_3way", dxpu_crc32c_hw_3way}, {"pclmul", dxpu_crc32c_pclmul},
    {"vpclmul", dxpu_crc32c_vpclmul},
};

// Lengths 0..1100 cover the folding paths' short forms (whole 16- and 64-byte
// blocks, the 4 x 16-byte and 4 x 64-byte accumulators beside crc32 chains,
// every tail); start offsets 0..63 every alignment of a 64-byte load. A
// different nonzero seed for each length exercises the incoming register.
TEST(Crc32c, EveryImplEveryLengthAndOffsetMatchesPortable) {
  const size_t kMaxLen = 1100;
  std::vector<uint8_t> buf = random_bytes(kMaxLen + 64, 31337);
  for (size_t off = 0; off < 64; ++off) {
    const uint8_t* p = buf.data() + off;
    for (size_t len = 0; len <= kMaxLen; ++len) {
      uint32_t seed = static_cast<uint32_t>(len * 0x9e3779b9u + off);
      uint32_t want = dxpu_crc32c_portable(seed, p, len);
      for (const Crc32cImpl& impl : kImpls) {
        ASSERT_EQ(impl.fn(seed, p, len), want) << impl.name << " off=" << off << " len=" << len;
      }
    }
  }
}

// Up to 2600 bytes every length, at a few offsets: every remainder after the
// loops with 384-byte (from 768 bytes) and 512-byte (from 2048 bytes)
// iterations, and after the 320-byte iterations of the PCLMULQDQ path.
TEST(Crc32c, EveryImplEveryLengthTo2600MatchesPortable) {
  const size_t kMaxLen = 2600;
  std::vector<uint8_t> buf = random_bytes(kMaxLen + 64, 4711);
  for (size_t off : {size_t{0}, size_t{1}, size_t{13}, size_t{63}}) {
    const uint8_t* p = buf.data() + off;
    for (size_t len = 1100; len <= kMaxLen; ++len) {
      uint32_t seed = (len % 2 == 0) ? 0 : static_cast<uint32_t>(len * 0x85ebca6bu);
      uint32_t want = dxpu_crc32c_portable(seed, p, len);
      for (const Crc32cImpl& impl : kImpls) {
        ASSERT_EQ(impl.fn(seed, p, len), want) << impl.name << " off=" << off << " len=" << len;
      }
    }
  }
}

// Large buffers, and every length within 600 bytes of 4096 and 9216.
TEST(Crc32c, EveryImplLargeLengthsMatchPortable) {
  const size_t kMaxLen = 65536 + 7;
  std::vector<uint8_t> buf = random_bytes(kMaxLen + 64, 2718);
  std::vector<size_t> lens = {4096, 4100, 8232, 9216, 16384, 65536, 65536 + 7};
  for (size_t len = 4096 - 600; len <= 4096 + 600; ++len) lens.push_back(len);
  for (size_t len = 9216 - 600; len <= 9216 + 600; ++len) lens.push_back(len);
  for (size_t off : {size_t{0}, size_t{3}, size_t{32}, size_t{61}}) {
    const uint8_t* p = buf.data() + off;
    for (size_t len : lens) {
      for (uint32_t seed : {0u, 0xdeadbeefu}) {
        uint32_t want = dxpu_crc32c_portable(seed, p, len);
        for (const Crc32cImpl& impl : kImpls) {
          ASSERT_EQ(impl.fn(seed, p, len), want)
              << impl.name << " off=" << off << " len=" << len << " seed=" << seed;
        }
      }
    }
  }
  // And against the bitwise reference once, end to end.
  EXPECT_EQ(dxpu_crc32c(0, buf.data() + 5, kMaxLen), crc32c_bitwise(buf.data() + 5, kMaxLen));
}

// crc(A) continued with B equals crc(A || B) for every split point, with each
// implementation doing both halves.
TEST(Crc32c, EveryImplContinuesAtEverySplit) {
  std::vector<uint8_t> buf = random_bytes(9216 + 8, 1618);
  for (size_t total :
       {size_t{200}, size_t{777}, size_t{1500}, size_t{2100}, size_t{4096}, size_t{9216}}) {
    const uint8_t* p = buf.data() + 7;
    for (uint32_t seed : {0u, 0x12345678u}) {
      uint32_t whole = dxpu_crc32c_portable(seed, p, total);
      for (const Crc32cImpl& impl : kImpls) {
        ASSERT_EQ(impl.fn(seed, p, total), whole) << impl.name << " total=" << total;
        for (size_t cut = 0; cut <= total; ++cut) {
          uint32_t a = impl.fn(seed, p, cut);
          ASSERT_EQ(impl.fn(a, p + cut, total - cut), whole)
              << impl.name << " total=" << total << " cut=" << cut << " seed=" << seed;
        }
      }
    }
  }
}

// Each generated zeros_N table entry T[k][i] is the CRC register after N zero
// bytes from the register value i << 8k, computed here bit by bit.
void check_zeros_table(const uint32_t (*t)[256], size_t n) {
  for (int k = 0; k < 4; ++k) {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t reg = i << (8 * k);
      for (size_t bit = 0; bit < 8 * n; ++bit)
        reg = (reg >> 1) ^ ((reg & 1u) != 0 ? 0x82f63b78u : 0u);
      ASSERT_EQ(t[k][i], reg) << "N=" << n << " k=" << k << " i=" << i;
    }
  }
}

TEST(Crc32c, ZerosTablesMatchBitwiseShift) {
  check_zeros_table(dxpu_crc32c_zeros_64, 64);
  check_zeros_table(dxpu_crc32c_zeros_128, 128);
  check_zeros_table(dxpu_crc32c_zeros_256, 256);
  check_zeros_table(dxpu_crc32c_zeros_1024, 1024);
}

}  // namespace
