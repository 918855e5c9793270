// CRC32C against published vectors (RFC 3720 B.4, the "check" value of the
// CRC catalogue) and against a bit-at-a-time reference on random data.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/crc32c.h"

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
  std::printf("CRC32C instruction in use: %s\n", dxpu_crc32c_hw_available() ? "yes" : "no");
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

}  // namespace
