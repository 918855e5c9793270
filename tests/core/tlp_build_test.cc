// The shared TLP builders (lib/core/tlp_build.h): every field of a completion, a configuration
// request and a DW-aligned write split, against the PCIe rules, worked out by hand; then each
// built TLP through the codec (it must validate and round-trip).
#include "core/tlp_build.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

dxpu_tlp Read(uint64_t addr, uint16_t length_dw, uint8_t first_be, uint8_t last_be) {
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MRD;
  t.addr = addr;
  t.length_dw = length_dw;
  t.first_be = first_be;
  t.last_be = last_be;
  t.requester_id = 0x0a10;
  t.tag = 0x2c5;  // a 10-bit tag
  t.tc = 3;
  t.attr = DXPU_TLP_ATTR_RO | DXPU_TLP_ATTR_IDO;
  return t;
}

// The built TLP is valid and survives the wire.
void ExpectWireOk(const dxpu_tlp& t) {
  ASSERT_EQ(dxpu_tlp_validate(&t), DXPU_TLP_OK);
  const std::vector<uint8_t> bytes = encode_ok(t);
  dxpu_tlp back{};
  ASSERT_EQ(decode(bytes, &back), DXPU_TLP_OK);
  std::string why;
  EXPECT_TRUE(same_tlp(t, back, &why)) << why;
}

// An MRd answered UR: a Cpl with the IDs, tag, TC and Attr of the request, Byte Count and
// Lower Address as the first completion of the read would carry (PCIe "Calculating Byte
// Count", "Calculating Lower Address").
TEST(TlpBuild, UnsupportedReadCarriesByteCountAndLowerAddress) {
  // 3 DW at 0x1234_5674: first BE 1100b (bytes 2, 3), last BE 0011b (bytes 0, 1).
  const dxpu_tlp req = Read(0x1234'5674, 3, 0xc, 0x3);
  dxpu_tlp c{};
  dxpu_tlp_completion_for(&req, 0x0300, DXPU_TLP_CPL_UR, &c);
  EXPECT_EQ(c.kind, DXPU_TLP_CPL);
  EXPECT_EQ(c.cpl_status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(c.requester_id, 0x0a10);
  EXPECT_EQ(c.tag, 0x2c5);
  EXPECT_EQ(c.tc, 3);
  EXPECT_EQ(c.attr, DXPU_TLP_ATTR_RO | DXPU_TLP_ATTR_IDO);
  EXPECT_EQ(c.completer_id, 0x0300);
  EXPECT_EQ(c.length_dw, 0);  // a Cpl carries no data
  EXPECT_EQ(c.byte_count, 2 + 4 + 2);
  EXPECT_EQ(c.lower_addr, (0x74 & 0x7c) | 2);  // Address[6:2] and the first enabled byte
  EXPECT_EQ(c.payload, nullptr);
  ExpectWireOk(c);
}

TEST(TlpBuild, UnsupportedOneDwReadsByteEnables) {
  struct Row {
    uint8_t be;
    uint16_t count;
    uint8_t low;
  };
  // 1 DW: the span from the lowest to the highest enabled byte; 0000b counts 1 at offset 0.
  for (const Row& r : {Row{0xf, 4, 0}, Row{0x9, 4, 0}, Row{0x6, 2, 1}, Row{0x8, 1, 3},
                       Row{0x0, 1, 0}, Row{0xe, 3, 1}}) {
    const dxpu_tlp req = Read(0xfee0'0040, 1, r.be, 0);
    dxpu_tlp c{};
    dxpu_tlp_completion_for(&req, 0x0100, DXPU_TLP_CPL_CA, &c);
    EXPECT_EQ(c.kind, DXPU_TLP_CPL) << int(r.be);
    EXPECT_EQ(c.cpl_status, DXPU_TLP_CPL_CA);
    EXPECT_EQ(c.byte_count, r.count) << int(r.be);
    EXPECT_EQ(c.lower_addr, 0x40 | r.low) << int(r.be);
    ExpectWireOk(c);
  }
}

TEST(TlpBuild, WholeReadCompletionIsOneCplD) {
  // 1024 DW from a 4 KiB boundary: Byte Count 4096, Lower Address 0, Length 1024.
  const dxpu_tlp req = Read(0x2'0000'0000, 1024, 0xf, 0xf);
  dxpu_tlp c{};
  dxpu_tlp_completion_for(&req, 0x0100, DXPU_TLP_CPL_SC, &c);
  EXPECT_EQ(c.kind, DXPU_TLP_CPLD);
  EXPECT_EQ(c.cpl_status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(c.length_dw, 1024);
  EXPECT_EQ(c.byte_count, 4096);
  EXPECT_EQ(c.lower_addr, 0);
  EXPECT_EQ(c.payload, nullptr);  // the caller's data
  static const std::array<uint8_t, 4096> data{};
  c.payload = data.data();
  ExpectWireOk(c);
}

TEST(TlpBuild, SplitReadCompletionPieces) {
  // 40 DW at 0x...f8 (first BE 1110b): at RCB 64 and MPS 128 the pieces end on RCB
  // boundaries; each piece's Length, Byte Count and Lower Address come from the split.
  const dxpu_tlp req = Read(0x10f8, 40, 0xe, 0xf);
  dxpu_tlp_cpl_split split{};
  ASSERT_EQ(
      dxpu_tlp_cpl_split_init(&split, req.addr, req.length_dw, req.first_be, req.last_be, 64, 128),
      DXPU_TLP_OK);
  static const std::array<uint8_t, 4096> data{};
  dxpu_tlp_cpl_piece p{};
  uint32_t covered = 0;
  int n = 0;
  while (dxpu_tlp_cpl_split_next(&split, &p)) {
    dxpu_tlp c{};
    dxpu_tlp_completion_for(&req, 0x0100, DXPU_TLP_CPL_SC, &c);
    dxpu_tlp_completion_piece(&c, &p);
    EXPECT_EQ(c.kind, DXPU_TLP_CPLD);
    EXPECT_EQ(c.length_dw, p.length_dw);
    EXPECT_EQ(c.byte_count, p.byte_count);
    EXPECT_EQ(c.lower_addr, p.lower_addr);
    EXPECT_EQ(c.byte_count, 159u - covered);  // 3 + 39 * 4 bytes in all
    c.payload = data.data();
    ExpectWireOk(c);
    covered += c.length_dw * 4u - (c.lower_addr & 3u);
    ++n;
  }
  EXPECT_EQ(n, 2);  // [0x10f9, 0x1140): the last RCB boundary MPS reaches; [0x1140, 0x1198)
}

// The same read answered through the CplD split: the same pieces, each carrying its own DWs of
// the data, in order and whole.
TEST(TlpBuild, CplDSplitCarriesEachPiecesData) {
  const dxpu_tlp req = Read(0x10f8, 40, 0xe, 0xf);
  std::array<uint8_t, 160> data{};
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  dxpu_tlp_cpld_split split{};
  ASSERT_EQ(dxpu_tlp_cpld_split_init(&split, &req, 0x0100, 64, 128), DXPU_TLP_OK);
  std::vector<uint8_t> carried;
  dxpu_tlp c{};
  int n = 0;
  while (dxpu_tlp_cpld_split_next(&split, data.data(), &c)) {
    EXPECT_EQ(c.kind, DXPU_TLP_CPLD);
    EXPECT_EQ(c.requester_id, req.requester_id);
    EXPECT_EQ(c.tag, req.tag);
    EXPECT_EQ(c.completer_id, 0x0100);
    ExpectWireOk(c);
    carried.insert(carried.end(), c.payload, c.payload + size_t{c.length_dw} * 4);
    ++n;
  }
  EXPECT_EQ(n, 2);
  EXPECT_EQ(carried, std::vector<uint8_t>(data.begin(), data.end()));
  dxpu_tlp w = req;
  w.kind = DXPU_TLP_MWR;  // not a read
  EXPECT_NE(dxpu_tlp_cpld_split_init(&split, &w, 0x0100, 64, 128), DXPU_TLP_OK);
  EXPECT_NE(dxpu_tlp_cpld_split_init(&split, &req, 0x0100, 64, 100), DXPU_TLP_OK);
}

TEST(TlpBuild, ConfigReadIsAnsweredWithOneDwCplD) {
  dxpu_tlp req{};
  dxpu_tlp_config_request(DXPU_TLP_CFGRD0, 0x0300, 0x10, 0xf, &req);
  req.requester_id = 0x0008;
  req.tag = 17;
  dxpu_tlp c{};
  dxpu_tlp_completion_for(&req, 0x0300, DXPU_TLP_CPL_SC, &c);
  EXPECT_EQ(c.kind, DXPU_TLP_CPLD);
  EXPECT_EQ(c.length_dw, 1);
  EXPECT_EQ(c.byte_count, 4);
  EXPECT_EQ(c.lower_addr, 0);
  EXPECT_EQ(c.requester_id, 0x0008);
  EXPECT_EQ(c.tag, 17);
  EXPECT_EQ(c.completer_id, 0x0300);
  EXPECT_EQ(c.tc, 0);
  const std::array<uint8_t, 4> dw{0xde, 0x10, 0x00, 0x20};
  c.payload = dw.data();
  ExpectWireOk(c);
  // Type 1 reads return data too; any other status is a Cpl of Byte Count 4.
  dxpu_tlp_config_request(DXPU_TLP_CFGRD1, 0x0300, 0x10, 0xf, &req);
  dxpu_tlp_completion_for(&req, 0x0300, DXPU_TLP_CPL_SC, &c);
  EXPECT_EQ(c.kind, DXPU_TLP_CPLD);
  for (uint8_t status : {DXPU_TLP_CPL_UR, DXPU_TLP_CPL_CRS, DXPU_TLP_CPL_CA}) {
    dxpu_tlp_completion_for(&req, 0x0300, status, &c);
    EXPECT_EQ(c.kind, DXPU_TLP_CPL);
    EXPECT_EQ(c.cpl_status, status);
    EXPECT_EQ(c.length_dw, 0);
    EXPECT_EQ(c.byte_count, 4);
    EXPECT_EQ(c.lower_addr, 0);
    ExpectWireOk(c);
  }
}

TEST(TlpBuild, WriteSuccessIsCplWithoutData) {
  dxpu_tlp req{};
  dxpu_tlp_config_request(DXPU_TLP_CFGWR0, 0x0100, 0x04, 0x3, &req);
  const std::array<uint8_t, 4> dw{0x06, 0x00, 0x00, 0x00};
  req.payload = dw.data();
  req.tag = 0x3ff;
  dxpu_tlp c{};
  dxpu_tlp_completion_for(&req, 0x0100, DXPU_TLP_CPL_SC, &c);
  EXPECT_EQ(c.kind, DXPU_TLP_CPL);
  EXPECT_EQ(c.cpl_status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(c.length_dw, 0);
  EXPECT_EQ(c.byte_count, 4);
  EXPECT_EQ(c.lower_addr, 0);
  EXPECT_EQ(c.tag, 0x3ff);
  EXPECT_EQ(c.payload, nullptr);
  ExpectWireOk(c);
}

TEST(TlpBuild, ConfigRequestFields) {
  dxpu_tlp t{};
  // Extended register 0x1a7: its DW 0x1a4; Length 1, the byte enables as given.
  dxpu_tlp_config_request(DXPU_TLP_CFGWR0, 0x1234, 0x1a7, 0x8, &t);
  EXPECT_EQ(t.kind, DXPU_TLP_CFGWR0);
  EXPECT_EQ(t.cfg_target, 0x1234);
  EXPECT_EQ(t.cfg_reg, 0x1a4);
  EXPECT_EQ(t.length_dw, 1);
  EXPECT_EQ(t.first_be, 0x8);
  EXPECT_EQ(t.last_be, 0);
  EXPECT_EQ(t.requester_id, 0);
  EXPECT_EQ(t.tag, 0);
  EXPECT_EQ(t.tc, 0);
  EXPECT_EQ(t.attr, 0);
  EXPECT_EQ(t.payload, nullptr);
  const std::array<uint8_t, 4> dw{};
  t.payload = dw.data();
  ExpectWireOk(t);
  dxpu_tlp_config_request(DXPU_TLP_CFGRD1, 0x0108, 0xfff, 0xf, &t);
  EXPECT_EQ(t.kind, DXPU_TLP_CFGRD1);
  EXPECT_EQ(t.cfg_reg, 0xffc);
  ExpectWireOk(t);
}

struct Piece {
  uint64_t addr;
  uint16_t length_dw;
  uint8_t first_be, last_be;
  std::vector<uint8_t> payload;
};

std::vector<Piece> SplitWrite(uint64_t addr, const std::vector<uint8_t>& src, uint32_t max_bytes) {
  dxpu_tlp_mwr_split s{};
  EXPECT_EQ(dxpu_tlp_mwr_split_init(&s, addr, src.data(), src.size(), max_bytes), DXPU_TLP_OK);
  std::vector<uint8_t> buf(max_bytes, 0xee);  // stale bytes: the split must clear them
  std::vector<Piece> out;
  dxpu_tlp t{};
  while (dxpu_tlp_mwr_split_next(&s, buf.data(), &t)) {
    EXPECT_EQ(t.kind, DXPU_TLP_MWR);
    EXPECT_EQ(t.payload, buf.data());
    EXPECT_EQ(t.requester_id, 0);
    EXPECT_EQ(t.tag, 0);
    EXPECT_LE(t.length_dw * 4u, max_bytes);
    ExpectWireOk(t);
    out.push_back({t.addr, t.length_dw, t.first_be, t.last_be,
                   std::vector<uint8_t>(t.payload, t.payload + dxpu_tlp_payload_len(&t))});
  }
  return out;
}

// Every enabled byte of every piece is the source's byte at its address, every disabled one
// zero, and together the pieces cover the range once.
void ExpectCovers(const std::vector<Piece>& pieces, uint64_t addr,
                  const std::vector<uint8_t>& src) {
  uint64_t next = addr;
  for (const Piece& p : pieces) {
    for (uint32_t i = 0; i < p.length_dw * 4u; ++i) {
      const uint64_t a = p.addr + i;
      const uint32_t dw = i / 4;
      const uint8_t be = dw == 0 ? p.first_be : (dw + 1u == p.length_dw ? p.last_be : uint8_t{0xf});
      const bool on = ((be >> (i & 3)) & 1) != 0;
      ASSERT_EQ(on, a >= addr && a < addr + src.size()) << std::hex << a;
      if (on) {
        ASSERT_EQ(a, next) << std::hex << a;
        ++next;
      }
      EXPECT_EQ(p.payload[i], on ? src[a - addr] : 0) << std::hex << a;
    }
  }
  EXPECT_EQ(next, addr + src.size());
}

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + 1);
  return v;
}

TEST(TlpBuild, UnalignedWriteSplitAtMaxBytesAndPages) {
  // 600 bytes from 0x1f7e to 0x21d6, max 256: cut at 0x2000 (a 256-byte block and the page)
  // and at 0x2100.
  const uint64_t addr = 0x1f7e;
  const std::vector<uint8_t> src = Pattern(600);
  const std::vector<Piece> pieces = SplitWrite(addr, src, 256);
  ASSERT_EQ(pieces.size(), 3u);
  // [0x1f7e, 0x2000): 130 bytes from DW 0x1f7c, 33 DW, first BE 1100b.
  EXPECT_EQ(pieces[0].addr, 0x1f7cu);
  EXPECT_EQ(pieces[0].length_dw, 33);
  EXPECT_EQ(pieces[0].first_be, 0xc);
  EXPECT_EQ(pieces[0].last_be, 0xf);
  // [0x2000, 0x2100): whole.
  EXPECT_EQ(pieces[1].addr, 0x2000u);
  EXPECT_EQ(pieces[1].length_dw, 64);
  EXPECT_EQ(pieces[1].first_be, 0xf);
  EXPECT_EQ(pieces[1].last_be, 0xf);
  // [0x2100, 0x21d6): 214 bytes, 54 DW, the last DW's bytes 0 and 1.
  EXPECT_EQ(pieces[2].addr, 0x2100u);
  EXPECT_EQ(pieces[2].length_dw, 54);
  EXPECT_EQ(pieces[2].first_be, 0xf);
  EXPECT_EQ(pieces[2].last_be, 0x3);
  ExpectCovers(pieces, addr, src);
}

TEST(TlpBuild, WriteSplitAtFourKiBWithLargestPayload) {
  // max 4096: only the page boundary cuts. [0xffd, 0x1006): 3 bytes, then 6.
  const uint64_t addr = 0x7'0000'0ffd;
  const std::vector<uint8_t> src = Pattern(9);
  const std::vector<Piece> pieces = SplitWrite(addr, src, 4096);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0].addr, 0x7'0000'0ffcu);
  EXPECT_EQ(pieces[0].length_dw, 1);
  EXPECT_EQ(pieces[0].first_be, 0xe);
  EXPECT_EQ(pieces[0].last_be, 0);  // a 1-DW write has no last BE
  EXPECT_EQ(pieces[1].addr, 0x7'0000'1000u);
  EXPECT_EQ(pieces[1].length_dw, 2);
  EXPECT_EQ(pieces[1].first_be, 0xf);
  EXPECT_EQ(pieces[1].last_be, 0x3);
  ExpectCovers(pieces, addr, src);
}

TEST(TlpBuild, WriteInsideOneDw) {
  // Bytes 1 and 2 of a DW: one MWr, Length 1, first BE 0110b.
  const std::vector<uint8_t> src = {0xaa, 0xbb};
  const std::vector<Piece> pieces = SplitWrite(0x4001, src, 128);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].addr, 0x4000u);
  EXPECT_EQ(pieces[0].length_dw, 1);
  EXPECT_EQ(pieces[0].first_be, 0x6);
  EXPECT_EQ(pieces[0].last_be, 0);
  EXPECT_EQ(pieces[0].payload, (std::vector<uint8_t>{0, 0xaa, 0xbb, 0}));
}

TEST(TlpBuild, WriteSplitEveryOffsetAndSize) {
  // Against the rules for every start within a 128-byte block and sizes across a cut.
  for (uint32_t max : {128u, 512u}) {
    for (uint64_t off = 0; off < 8; ++off) {
      for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{5}, size_t{127}, size_t{128},
                       size_t{129}, size_t{1000}}) {
        const uint64_t addr = 0x3f80 + off;
        const std::vector<uint8_t> src = Pattern(n);
        const std::vector<Piece> pieces = SplitWrite(addr, src, max);
        for (const Piece& p : pieces) {
          // A piece stays inside its naturally aligned max-byte block (so inside a page).
          EXPECT_EQ(p.addr / max, (p.addr + uint64_t{p.length_dw} * 4 - 1) / max);
        }
        ExpectCovers(pieces, addr, src);
      }
    }
  }
}

TEST(TlpBuild, WriteSplitRefusesBadParameters) {
  const std::array<uint8_t, 8> src{};
  dxpu_tlp_mwr_split s{};
  EXPECT_EQ(dxpu_tlp_mwr_split_init(&s, 0x1000, src.data(), 0, 256), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_mwr_split_init(&s, 0x1000, src.data(), 8, 96), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_mwr_split_init(&s, 0x1000, src.data(), 8, 8192), DXPU_TLP_ERR_BAD_PARAM);
  EXPECT_EQ(dxpu_tlp_mwr_split_init(&s, ~uint64_t{0} - 3, src.data(), 8, 256),
            DXPU_TLP_ERR_BAD_PARAM);  // wraps
  EXPECT_EQ(dxpu_tlp_mwr_split_init(&s, 0x1000, nullptr, 8, 256), DXPU_TLP_ERR_BAD_PARAM);
}

}  // namespace
}  // namespace dxpu::test
