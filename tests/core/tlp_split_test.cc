// Completer and requester helpers: Byte Count / Lower Address, completions
// split at the RCB, requests split at MPS / MRRS. Worked examples derived by
// hand, then properties over random requests (seed printed, DXPU_SEED replays).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

// PCIe Base Spec, "Calculating Byte Count": for a 1-DW read the count spans
// from the lowest to the highest enabled byte (1xx1b -> 4, 01x1b/1x10b -> 3,
// 0011b/0110b/1100b -> 2, one bit or 0000b -> 1).
TEST(TlpSplit, ByteCountOneDwTable) {
  struct Row {
    uint8_t be;
    uint32_t count;
  };
  const Row rows[] = {
      {0x9, 4}, {0xb, 4}, {0xd, 4}, {0xf, 4}, {0x5, 3}, {0x7, 3}, {0xa, 3}, {0xe, 3},
      {0x3, 2}, {0x6, 2}, {0xc, 2}, {0x1, 1}, {0x2, 1}, {0x4, 1}, {0x8, 1}, {0x0, 1},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(dxpu_tlp_read_byte_count(1, r.be, 0), r.count) << "be=" << int(r.be);
  }
}

// Multi-DW: Length*4 minus the disabled bytes before the first enabled byte
// of the first DW and after the last enabled byte of the last DW.
TEST(TlpSplit, ByteCountMultiDw) {
  EXPECT_EQ(dxpu_tlp_read_byte_count(2, 0xf, 0xf), 8u);
  EXPECT_EQ(dxpu_tlp_read_byte_count(2, 0xe, 0x1), 4u);   // 3 + 1
  EXPECT_EQ(dxpu_tlp_read_byte_count(4, 0x8, 0x7), 12u);  // 1 + 4 + 4 + 3
  EXPECT_EQ(dxpu_tlp_read_byte_count(1024, 0xf, 0xf), 4096u);
  EXPECT_EQ(dxpu_tlp_read_byte_count(1024, 0xc, 0x3), 4092u);
}

// Lower Address = Address[6:2] and the index of the first enabled byte.
TEST(TlpSplit, LowerAddress) {
  EXPECT_EQ(dxpu_tlp_read_lower_addr(0x1000, 0xf), 0x00);
  EXPECT_EQ(dxpu_tlp_read_lower_addr(0x1010, 0xf), 0x10);
  EXPECT_EQ(dxpu_tlp_read_lower_addr(0x107c, 0x8), 0x7f);
  EXPECT_EQ(dxpu_tlp_read_lower_addr(0x12345680, 0x2), 0x01);
  EXPECT_EQ(dxpu_tlp_read_lower_addr(0x1014, 0x0), 0x14);  // zero-length read
}

std::vector<dxpu_tlp_cpl_piece> split_cpl(uint64_t addr, uint16_t len, uint8_t fbe, uint8_t lbe,
                                          uint32_t rcb, uint32_t mps) {
  dxpu_tlp_cpl_split s{};
  EXPECT_EQ(dxpu_tlp_cpl_split_init(&s, addr, len, fbe, lbe, rcb, mps), DXPU_TLP_OK);
  std::vector<dxpu_tlp_cpl_piece> out;
  dxpu_tlp_cpl_piece p{};
  while (dxpu_tlp_cpl_split_next(&s, &p)) out.push_back(p);
  return out;
}

// 256 bytes at 0x1010 (64 DW), RCB 64, MPS 128:
//   1st: DWs 0x1010..0x107f = 28 DW (the MPS would reach 0x1090; the last RCB
//        boundary before that is 0x1080), Byte Count 256, Lower Address 0x10
//   2nd: 0x1080..0x10ff = 32 DW, Byte Count 256 - 112 = 144, Lower Address 0x00
//   3rd: 0x1100..0x110f = 4 DW, Byte Count 16, Lower Address 0x00
TEST(TlpSplit, CompletionsAtRcbWorkedExample) {
  auto pieces = split_cpl(0x1010, 64, 0xf, 0xf, 64, 128);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].offset_dw, 0);
  EXPECT_EQ(pieces[0].length_dw, 28);
  EXPECT_EQ(pieces[0].byte_count, 256);
  EXPECT_EQ(pieces[0].lower_addr, 0x10);
  EXPECT_EQ(pieces[1].offset_dw, 28);
  EXPECT_EQ(pieces[1].length_dw, 32);
  EXPECT_EQ(pieces[1].byte_count, 144);
  EXPECT_EQ(pieces[1].lower_addr, 0x00);
  EXPECT_EQ(pieces[2].offset_dw, 60);
  EXPECT_EQ(pieces[2].length_dw, 4);
  EXPECT_EQ(pieces[2].byte_count, 16);
  EXPECT_EQ(pieces[2].lower_addr, 0x00);
}

// 256 bytes at 0x1050 (64 DW, to 0x114f) with MPS 128; the RCB decides where
// the completer may cut. The MPS from 0x1050 reaches 0x10d0.
//   RCB 64:  cut at 0x10c0 -> 28 DW (BC 256, LA 0x50); the next MPS from
//            0x10c0 reaches 0x1140, a 64-byte boundary -> 32 DW (BC 144, LA 0x40);
//            rest 0x1140..0x114f -> 4 DW (BC 16, LA 0x40)
//   RCB 128: cut at 0x1080 -> 12 DW (BC 256, LA 0x50); then 0x1080..0x10ff ->
//            32 DW (BC 208, LA 0x00); rest 0x1100..0x114f -> 20 DW (BC 80, LA 0x00)
TEST(TlpSplit, CompletionsRcb64Versus128) {
  auto p64 = split_cpl(0x1050, 64, 0xf, 0xf, 64, 128);
  ASSERT_EQ(p64.size(), 3u);
  EXPECT_EQ(p64[0].length_dw, 28);
  EXPECT_EQ(p64[0].lower_addr, 0x50);
  EXPECT_EQ(p64[1].length_dw, 32);
  EXPECT_EQ(p64[1].byte_count, 144);
  EXPECT_EQ(p64[1].lower_addr, 0x40);
  EXPECT_EQ(p64[2].length_dw, 4);
  EXPECT_EQ(p64[2].byte_count, 16);
  EXPECT_EQ(p64[2].lower_addr, 0x40);

  auto p128 = split_cpl(0x1050, 64, 0xf, 0xf, 128, 128);
  ASSERT_EQ(p128.size(), 3u);
  EXPECT_EQ(p128[0].length_dw, 12);
  EXPECT_EQ(p128[0].byte_count, 256);
  EXPECT_EQ(p128[0].lower_addr, 0x50);
  EXPECT_EQ(p128[1].length_dw, 32);
  EXPECT_EQ(p128[1].byte_count, 208);
  EXPECT_EQ(p128[1].lower_addr, 0x00);
  EXPECT_EQ(p128[2].length_dw, 20);
  EXPECT_EQ(p128[2].byte_count, 80);
  EXPECT_EQ(p128[2].lower_addr, 0x00);
}

// A zero-length read completes with one DW, Byte Count 1 and the address.
TEST(TlpSplit, ZeroLengthReadCompletion) {
  auto pieces = split_cpl(0x2004, 1, 0x0, 0x0, 64, 128);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].length_dw, 1);
  EXPECT_EQ(pieces[0].byte_count, 1);
  EXPECT_EQ(pieces[0].lower_addr, 0x04);
}

TEST(TlpSplit, CompletionSplitRejectsBadParameters) {
  dxpu_tlp_cpl_split s{};
  EXPECT_EQ(dxpu_tlp_cpl_split_init(&s, 0x1000, 4, 0xf, 0xf, 32, 128), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_cpl_split_init(&s, 0x1000, 4, 0xf, 0xf, 64, 96), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_cpl_split_init(&s, 0x1000, 4, 0xf, 0xf, 64, 8192), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_cpl_split_init(&s, 0x1000, 4, 0x0, 0xf, 64, 128), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_cpl_split_init(&s, 0x1ffc, 2, 0xf, 0xf, 64, 128), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_cpl_split_init(&s, 0x1002, 1, 0xf, 0x0, 64, 128), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_cpl_split_init(&s, 0x1000, 0, 0xf, 0x0, 64, 128), DXPU_TLP_ERR_BAD_PARAM);
}

std::vector<dxpu_tlp_req_piece> split_req(uint64_t addr, uint64_t n, uint32_t max) {
  dxpu_tlp_req_split s{};
  EXPECT_EQ(dxpu_tlp_req_split_init(&s, addr, n, max), DXPU_TLP_OK);
  std::vector<dxpu_tlp_req_piece> out;
  dxpu_tlp_req_piece p{};
  while (dxpu_tlp_req_split_next(&s, &p)) out.push_back(p);
  return out;
}

// 10 bytes at 0x1003: bytes 0x1003..0x100c touch DWs 0x1000, 0x1004, 0x1008,
// 0x100c: Length 4, First BE 1000b (byte 3 only), Last BE 0001b (byte 0 only).
TEST(TlpSplit, RequestByteEnablesWorkedExample) {
  auto p = split_req(0x1003, 10, 128);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].addr, 0x1000u);
  EXPECT_EQ(p[0].length_dw, 4);
  EXPECT_EQ(p[0].first_be, 0x8);
  EXPECT_EQ(p[0].last_be, 0x1);
  EXPECT_EQ(p[0].nbytes, 10u);
  // Two bytes inside one DW: 0x2001..0x2002 -> Length 1, First BE 0110b, Last 0.
  p = split_req(0x2001, 2, 128);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].length_dw, 1);
  EXPECT_EQ(p[0].first_be, 0x6);
  EXPECT_EQ(p[0].last_be, 0x0);
}

// 300 bytes at 0x1f80 with max 4096: cut at the 4 KiB boundary 0x2000.
TEST(TlpSplit, RequestsNeverCross4K) {
  auto p = split_req(0x1f80, 300, 4096);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].addr, 0x1f80u);
  EXPECT_EQ(p[0].nbytes, 128u);
  EXPECT_EQ(p[1].addr, 0x2000u);
  EXPECT_EQ(p[1].offset, 128u);
  EXPECT_EQ(p[1].nbytes, 172u);
  EXPECT_EQ(p[1].length_dw, 43);
}

// A write of 1 MiB + 16 at 0x1_2345_6010 with MPS 256: the first piece runs to
// the 256-byte boundary 0x1_2345_6100 (240 bytes), then full 256-byte pieces.
TEST(TlpSplit, WriteAtMpsUsesAlignedFullPieces) {
  auto p = split_req(0x123456010ULL, (1u << 20) + 16, 256);
  ASSERT_EQ(p.size(), 4097u);
  EXPECT_EQ(p[0].nbytes, 240u);
  for (size_t i = 1; i + 1 < p.size(); ++i) ASSERT_EQ(p[i].nbytes, 256u) << i;
  EXPECT_EQ(p.back().nbytes, 32u);
}

TEST(TlpSplit, RequestSplitRejectsBadParameters) {
  dxpu_tlp_req_split s{};
  EXPECT_EQ(dxpu_tlp_req_split_init(&s, 0x1000, 0, 128), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_req_split_init(&s, 0x1000, 16, 64), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_req_split_init(&s, 0x1000, 16, 200), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_req_split_init(&s, 0x1000, 16, 8192), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_req_split_init(&s, ~0ULL - 7, 16, 128), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_req_split_init(&s, ~0ULL - 15, 16, 128), DXPU_TLP_ERR_BAD_PARAM);
  // The last 16 bytes below 2^64 - 1 are a valid range, split as one piece.
  auto p = split_req(~0ULL - 16, 16, 128);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].nbytes, 16u);
}

// Properties over random reads: the completions cover exactly the enabled
// bytes, in order; each encodes as a valid CplD; all but the last end on an
// RCB boundary and stay within MPS; Byte Count counts down to the last one's
// own bytes.
TEST(TlpSplit, RandomCompletionSplitsAreValidAndComplete) {
  const uint64_t seed = test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> payload(4096);
  for (int i = 0; i < 20000; ++i) {
    uint32_t off = rng() % 4096;
    uint32_t n = 1 + rng() % (4096 - off);
    uint64_t start = ((rng() % 0xfffffULL) << 12) + off;
    auto req = split_req(start, n, 4096);
    ASSERT_EQ(req.size(), 1u);
    uint32_t rcb = (rng() & 1) != 0 ? 64 : 128;
    uint32_t mps = 128u << (rng() % 6);
    auto cpls = split_cpl(req[0].addr, req[0].length_dw, req[0].first_be, req[0].last_be, rcb, mps);
    ASSERT_FALSE(cpls.empty());
    uint32_t remaining = n;
    uint16_t next_dw = 0;
    for (size_t k = 0; k < cpls.size(); ++k) {
      const auto& c = cpls[k];
      bool last = k + 1 == cpls.size();
      ASSERT_EQ(c.byte_count, remaining) << "seed=" << seed << " i=" << i;
      ASSERT_EQ(c.offset_dw, next_dw);
      ASSERT_LE(c.length_dw * 4u, mps);
      uint64_t cpl_start = req[0].addr + c.offset_dw * uint64_t{4};
      if (k == 0) {
        ASSERT_EQ(c.lower_addr, start & 0x7f);
      } else {
        ASSERT_EQ(cpl_start % rcb, 0u);
        ASSERT_EQ(c.lower_addr, cpl_start & 0x7f);
      }
      if (!last) {
        ASSERT_EQ((cpl_start + c.length_dw * uint64_t{4}) % rcb, 0u);
      }
      dxpu_tlp t{};
      t.kind = DXPU_TLP_CPLD;
      t.length_dw = c.length_dw;
      t.byte_count = c.byte_count;
      t.lower_addr = c.lower_addr;
      t.payload = payload.data();
      ASSERT_EQ(encode_err(t), DXPU_TLP_OK) << "seed=" << seed << " i=" << i << " k=" << k;
      uint32_t bytes =
          last ? remaining : static_cast<uint32_t>(c.length_dw * 4u - (c.lower_addr & 3u));
      remaining -= bytes;
      next_dw = static_cast<uint16_t>(next_dw + c.length_dw);
    }
    ASSERT_EQ(remaining, 0u);
    ASSERT_EQ(next_dw, req[0].length_dw);
  }
}

// Properties over random transfers: pieces are contiguous and cover the
// range, none exceeds max_bytes or crosses 4 KiB, each is a valid MWr, and
// the count is the number of max_bytes-aligned blocks the range touches.
TEST(TlpSplit, RandomRequestSplitsAreValidAndComplete) {
  const uint64_t seed = test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> payload(4096);
  for (int i = 0; i < 5000; ++i) {
    uint64_t start = rng() % (1ULL << 40);
    uint64_t n = 1 + rng() % ((rng() & 1) != 0 ? 300 : 70000);
    uint32_t max = 128u << (rng() % 6);
    auto pieces = split_req(start, n, max);
    uint64_t expect_count = (start + n - 1) / max - start / max + 1;
    ASSERT_EQ(pieces.size(), expect_count) << "seed=" << seed << " i=" << i;
    uint64_t covered = 0;
    for (const auto& p : pieces) {
      ASSERT_EQ(p.offset, covered);
      ASSERT_LE(p.nbytes, max);
      ASSERT_LE(p.length_dw * 4u, max);
      uint64_t first_byte = start + p.offset;
      ASSERT_EQ(p.addr, first_byte & ~3ULL);
      ASSERT_EQ(dxpu_tlp_read_byte_count(p.length_dw, p.first_be, p.last_be), p.nbytes);
      dxpu_tlp t{};
      t.kind = DXPU_TLP_MWR;
      t.addr = p.addr;
      t.length_dw = p.length_dw;
      t.first_be = p.first_be;
      t.last_be = p.last_be;
      t.payload = payload.data();
      ASSERT_EQ(encode_err(t), DXPU_TLP_OK) << "seed=" << seed << " i=" << i;
      covered += p.nbytes;
    }
    ASSERT_EQ(covered, n);
  }
}

}  // namespace
}  // namespace dxpu::test

// One request for a whole range: the header a request split's single piece gives, valid, and
// nothing for a range that takes more than one TLP.
TEST(TlpSplit, MemRequestCoversExactlyOneTlpOrNothing) {
  dxpu_tlp t{};
  ASSERT_TRUE(dxpu_tlp_mem_request(DXPU_TLP_MWR, 0x1001, 6, &t));
  EXPECT_EQ(t.kind, DXPU_TLP_MWR);
  EXPECT_EQ(t.addr, 0x1000u);
  EXPECT_EQ(t.length_dw, 2);
  EXPECT_EQ(t.first_be, 0xe);  // bytes 1..3 of the first DW
  EXPECT_EQ(t.last_be, 0x7);   // bytes 0..2 of the second
  EXPECT_EQ(t.requester_id, 0);
  EXPECT_EQ(t.payload, nullptr);
  ASSERT_TRUE(dxpu_tlp_mem_request(DXPU_TLP_MRD, 0x2002, 1, &t));
  EXPECT_EQ(t.length_dw, 1);
  EXPECT_EQ(t.first_be, 0x4);
  EXPECT_EQ(t.last_be, 0x0);

  dxpu_tlp untouched{};
  untouched.tag = 77;
  EXPECT_FALSE(dxpu_tlp_mem_request(DXPU_TLP_MRD, 0x1000, 0, &untouched));
  EXPECT_FALSE(dxpu_tlp_mem_request(DXPU_TLP_MRD, 0x1000, 4097, &untouched));
  EXPECT_FALSE(dxpu_tlp_mem_request(DXPU_TLP_MRD, 0x1ffe, 4, &untouched));  // crosses 4 KiB
  EXPECT_EQ(untouched.tag, 77);

  std::mt19937_64 rng(dxpu::test::test_seed());
  for (int i = 0; i < 20000; ++i) {
    const uint64_t addr = rng() & 0xffff'ffffULL;
    const auto n = static_cast<uint32_t>(1 + rng() % 4096);
    const bool fits = (addr & 0xfff) + n <= 0x1000;
    ASSERT_EQ(dxpu_tlp_mem_request(DXPU_TLP_MRD, addr, n, &t), fits) << addr << "+" << n;
    if (!fits) continue;
    ASSERT_EQ(dxpu_tlp_validate(&t), DXPU_TLP_OK) << addr << "+" << n;
    ASSERT_EQ(dxpu_tlp_read_byte_count(t.length_dw, t.first_be, t.last_be), n);
    ASSERT_EQ(dxpu_tlp_read_lower_addr(t.addr, t.first_be), addr & 0x7f);
  }
}
