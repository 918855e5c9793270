// Golden TLP vectors, worked out by hand from the PCI Express Base
// Specification's header layout (non-Flit mode), never produced by running the
// encoder. Each vector is checked both ways: decode(bytes) must give exactly
// the expected struct, and encode(struct) must give exactly the bytes.
//
// DW0, as include/dxpu/tlp.h draws it:
//   byte 0: Fmt[2:0] (bits 7:5) | Type[4:0] (bits 4:0)
//   byte 1: T9 (bit 7) | TC[2:0] (bits 6:4) | T8 (bit 3) | Attr[2] (bit 2) | LN (bit 1) | TH (bit
//   0) byte 2: TD (bit 7) | EP (bit 6) | Attr[1:0] (bits 5:4) | AT[1:0] (bits 3:2) | Length[9:8]
//   byte 3: Length[7:0]
// Requests: bytes 4-5 Requester ID, byte 6 Tag[7:0], byte 7 Last DW BE[7:4] | First DW BE[3:0].
// Memory: 3DW: bytes 8-11 Address[31:2] | PH[1:0]; 4DW: bytes 8-11 Address[63:32],
//   bytes 12-15 Address[31:2] | PH[1:0].
// Configuration: byte 8 Bus, byte 9 Device[7:3] Function[2:0], byte 10 Ext Register
//   Number[3:0], byte 11 Register Number[7:2].
// Completion: bytes 4-5 Completer ID, byte 6 Status[7:5] BCM[4] Byte Count[11:8] (3:0),
//   byte 7 Byte Count[7:0], bytes 8-9 Requester ID, byte 10 Tag[7:0], byte 11 Lower Address[6:0].
// Message: bytes 4-5 Requester ID, byte 6 Tag, byte 7 Message Code, bytes 8-15 per code.
// IDs are Bus[15:8] Device[7:3] Function[2:0]: 01:00.0 = 0x0100, 00:02.0 = 0x0010.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

// Every field of the decoded struct against the expected one, by name.
#define DXPU_EXPECT_FIELD(f)                                             \
  EXPECT_EQ(static_cast<uint64_t>(got.f), static_cast<uint64_t>(want.f)) \
      << #f << " of " << to_hex(wire)

// The two-way check: size from DW0 alone, decode to exactly `want` (payload
// pointing into `wire`), and encode of `want` to exactly `wire`.
void ExpectGolden(const std::vector<uint8_t>& wire, const dxpu_tlp& want) {
  ASSERT_GE(wire.size(), 4u);
  uint32_t size = 0;
  ASSERT_EQ(dxpu_tlp_peek_size(wire.data(), 4, &size), DXPU_TLP_OK);
  EXPECT_EQ(size, wire.size());
  EXPECT_EQ(dxpu_tlp_wire_len(&want), wire.size());
  EXPECT_EQ(dxpu_tlp_validate(&want), DXPU_TLP_OK);

  dxpu_tlp got{};
  ASSERT_EQ(decode(wire, &got), DXPU_TLP_OK) << to_hex(wire);
  DXPU_EXPECT_FIELD(kind);
  DXPU_EXPECT_FIELD(tc);
  DXPU_EXPECT_FIELD(attr);
  DXPU_EXPECT_FIELD(at);
  DXPU_EXPECT_FIELD(flags);
  DXPU_EXPECT_FIELD(ph);
  DXPU_EXPECT_FIELD(st);
  DXPU_EXPECT_FIELD(length_dw);
  DXPU_EXPECT_FIELD(requester_id);
  DXPU_EXPECT_FIELD(tag);
  DXPU_EXPECT_FIELD(first_be);
  DXPU_EXPECT_FIELD(last_be);
  DXPU_EXPECT_FIELD(addr);
  DXPU_EXPECT_FIELD(cfg_target);
  DXPU_EXPECT_FIELD(cfg_reg);
  DXPU_EXPECT_FIELD(completer_id);
  DXPU_EXPECT_FIELD(byte_count);
  DXPU_EXPECT_FIELD(cpl_status);
  DXPU_EXPECT_FIELD(lower_addr);
  DXPU_EXPECT_FIELD(msg_code);
  DXPU_EXPECT_FIELD(msg_routing);
  DXPU_EXPECT_FIELD(digest);
  EXPECT_EQ(std::memcmp(got.msg_hdr, want.msg_hdr, sizeof got.msg_hdr), 0) << "msg_hdr";
  const uint32_t n = dxpu_tlp_payload_len(&want);
  if (n != 0) {
    // Zero copy: the payload points into the buffer, right after the header.
    EXPECT_EQ(got.payload, wire.data() + dxpu_tlp_header_len(&want));
    EXPECT_EQ(std::memcmp(got.payload, want.payload, n), 0) << "payload";
  } else {
    EXPECT_EQ(got.payload, nullptr);
  }
  std::string why;
  EXPECT_TRUE(same_tlp(got, want, &why)) << why;

  EXPECT_EQ(to_hex(encode_ok(want)), to_hex(wire));
}

#undef DXPU_EXPECT_FIELD

std::vector<uint8_t> Concat(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// n bytes of a recognisable pattern, for long payloads.
std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

// ---- memory reads ----

TEST(TlpGolden, MRd32OneDw) {
  // MRd, 3DW header, 32-bit address 0xFEDCBA98, 1 DW, all four bytes enabled.
  //   byte 0 = Fmt 000b << 5 | Type 00000b                        = 0x00
  //   byte 1 = T9 0, TC 000b, T8 0, Attr[2] 0, LN 0, TH 0          = 0x00
  //   byte 2 = TD 0, EP 0, Attr[1:0] 00b, AT 00b, Length[9:8] 00b  = 0x00
  //   byte 3 = Length[7:0] = 1                                     = 0x01
  //   bytes 4-5 = Requester ID 01:00.0 = 0x0100                    = 01 00
  //   byte 6 = Tag 0x0C                                            = 0x0C
  //   byte 7 = Last DW BE 0000b << 4 | First DW BE 1111b           = 0x0F
  //   bytes 8-11 = Address[31:2] 0xFEDCBA98, PH (bits 1:0) 00b     = FE DC BA 98
  const auto wire = from_hex("00 00 00 01  01 00 0C 0F  FE DC BA 98");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MRD;
  want.length_dw = 1;
  want.requester_id = 0x0100;
  want.tag = 0x0c;
  want.first_be = 0xf;
  want.addr = 0xfedcba98;
  ExpectGolden(wire, want);
}

TEST(TlpGolden, MRd32MultiDwPartialByteEnables) {
  // MRd, 3DW, 3 DW from 0x80000104: bytes 0x106..0x10D are wanted, so the first
  // DW enables bytes 2,3 (1100b) and the last DW bytes 0,1 (0011b).
  //   byte 0 = Fmt 000b << 5 | Type 00000b               = 0x00
  //   byte 1 = 0x00, byte 2 = 0x00 (Length[9:8] 00b)
  //   byte 3 = Length 3                                  = 0x03
  //   bytes 4-5 = Requester 00:02.0 = (2 << 3) = 0x0010  = 00 10
  //   byte 6 = Tag 0x42
  //   byte 7 = Last BE 0011b << 4 | First BE 1100b       = 0x3C
  //   bytes 8-11 = 0x80000104 (bits 1:0 = PH 00b)        = 80 00 01 04
  const auto wire = from_hex("00 00 00 03  00 10 42 3C  80 00 01 04");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MRD;
  want.length_dw = 3;
  want.requester_id = 0x0010;
  want.tag = 0x42;
  want.first_be = 0xc;
  want.last_be = 0x3;
  want.addr = 0x80000104;
  ExpectGolden(wire, want);
}

TEST(TlpGolden, MRd64) {
  // MRd, 4DW header, 64-bit address 0x0000001234567800, 16 DW, all bytes.
  //   byte 0 = Fmt 001b << 5 | Type 00000b          = 0x20
  //   byte 1 = 0x00, byte 2 = 0x00
  //   byte 3 = Length 16                            = 0x10
  //   bytes 4-5 = Requester ID 0xABCD (AB:19.5)     = AB CD
  //   byte 6 = Tag 0x99
  //   byte 7 = Last BE 1111b << 4 | First BE 1111b  = 0xFF
  //   bytes 8-11 = Address[63:32] = 0x00000012      = 00 00 00 12
  //   bytes 12-15 = Address[31:2] 0x34567800, PH 00b = 34 56 78 00
  const auto wire = from_hex("20 00 00 10  AB CD 99 FF  00 00 00 12  34 56 78 00");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MRD;
  want.length_dw = 16;
  want.requester_id = 0xabcd;
  want.tag = 0x99;
  want.first_be = 0xf;
  want.last_be = 0xf;
  want.addr = 0x0000001234567800ULL;
  ExpectGolden(wire, want);
}

TEST(TlpGolden, MRd32Length512UsesLengthHighBits) {
  // MRd, 3DW, 512 DW (2048 bytes) from 0x10000800, ending exactly on the 4 KiB
  // boundary 0x10001000.
  //   byte 0 = 0x00
  //   byte 2 = Length[9:8]: 512 = 10_0000_0000b -> 10b  = 0x02
  //   byte 3 = Length[7:0] = 0x00
  //   bytes 4-5 = 01 00, byte 6 = Tag 0x00, byte 7 = FF
  //   bytes 8-11 = 10 00 08 00
  const auto wire = from_hex("00 00 02 00  01 00 00 FF  10 00 08 00");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MRD;
  want.length_dw = 512;
  want.requester_id = 0x0100;
  want.first_be = 0xf;
  want.last_be = 0xf;
  want.addr = 0x10000800;
  ExpectGolden(wire, want);
}

// ---- memory writes ----

TEST(TlpGolden, MWr32WithPayload) {
  // MWr, 3DW, 2 DW to 0xF0000008, payload 11 22 33 44 55 66 77 88.
  //   byte 0 = Fmt 010b << 5 | Type 00000b          = 0x40
  //   byte 1 = 0x00, byte 2 = 0x00, byte 3 = Length 2 = 0x02
  //   bytes 4-5 = Requester 00:01.0 = 1 << 3        = 00 08
  //   byte 6 = Tag 0x00 (posted, no TH)
  //   byte 7 = Last BE 1111b << 4 | First BE 1111b  = 0xFF
  //   bytes 8-11 = F0 00 00 08
  //   bytes 12-19 = payload, in wire order
  const auto wire = from_hex("40 00 00 02  00 08 00 FF  F0 00 00 08  11 22 33 44  55 66 77 88");
  const auto payload = from_hex("11 22 33 44 55 66 77 88");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MWR;
  want.length_dw = 2;
  want.requester_id = 0x0008;
  want.first_be = 0xf;
  want.last_be = 0xf;
  want.addr = 0xf0000008;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

TEST(TlpGolden, MWr64WithPayload) {
  // MWr, 4DW, 1 DW to 0x0000000100000FFC (the last DW of a page: allowed),
  // First BE 0110b (bytes 1 and 2), payload DE AD BE EF.
  //   byte 0 = Fmt 011b << 5 | Type 00000b      = 0x60
  //   byte 1 = 0x00, byte 2 = 0x00, byte 3 = 0x01
  //   bytes 4-5 = Requester 02:00.0             = 02 00
  //   byte 6 = Tag 0x01
  //   byte 7 = Last BE 0000b | First BE 0110b   = 0x06
  //   bytes 8-11 = Address[63:32] = 1           = 00 00 00 01
  //   bytes 12-15 = Address[31:2] 0x00000FFC    = 00 00 0F FC
  //   bytes 16-19 = payload                     = DE AD BE EF
  const auto wire = from_hex("60 00 00 01  02 00 01 06  00 00 00 01  00 00 0F FC  DE AD BE EF");
  const auto payload = from_hex("DE AD BE EF");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MWR;
  want.length_dw = 1;
  want.requester_id = 0x0200;
  want.tag = 0x01;
  want.first_be = 0x6;
  want.addr = 0x0000000100000ffcULL;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

TEST(TlpGolden, MWrLength1024EncodedAsZero) {
  // MWr, 3DW, 4096 bytes to the page-aligned 0x80000000: Length 1024 DW, which
  // the 10-bit Length field encodes as 00_0000_0000b.
  //   byte 0 = Fmt 010b << 5 | Type 00000b   = 0x40
  //   byte 1 = 0x00
  //   byte 2 = Length[9:8] = 00b             = 0x00
  //   byte 3 = Length[7:0] = 0x00
  //   bytes 4-5 = 01 00, byte 6 = 00, byte 7 = FF
  //   bytes 8-11 = 80 00 00 00
  //   bytes 12-4107 = payload (4096 bytes)
  const auto payload = Pattern(4096, 0x5a);
  const auto wire = Concat(from_hex("40 00 00 00  01 00 00 FF  80 00 00 00"), payload);
  ASSERT_EQ(wire.size(), 12u + 4096u);
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MWR;
  want.length_dw = 1024;
  want.requester_id = 0x0100;
  want.first_be = 0xf;
  want.last_be = 0xf;
  want.addr = 0x80000000;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

// ---- DW0 fields ----

TEST(TlpGolden, TenBitTags) {
  // MRd 1 DW at 0x00002000 with 10-bit tags: Tag[9] is T9 (byte 1 bit 7),
  // Tag[8] is T8 (byte 1 bit 3), Tag[7:0] is byte 6.
  struct Vec {
    uint16_t tag;
    const char* hex;
  };
  const Vec vecs[] = {
      // 0x3A5 = 11_1010_0101b: T9 1, T8 1 -> byte 1 = 0x80 | 0x08 = 0x88; byte 6 = 0xA5
      {0x3a5, "00 88 00 01  01 00 A5 0F  00 00 20 00"},
      // 0x25A = 10_0101_1010b: T9 1, T8 0 -> byte 1 = 0x80; byte 6 = 0x5A
      {0x25a, "00 80 00 01  01 00 5A 0F  00 00 20 00"},
      // 0x15A = 01_0101_1010b: T9 0, T8 1 -> byte 1 = 0x08; byte 6 = 0x5A
      {0x15a, "00 08 00 01  01 00 5A 0F  00 00 20 00"},
      // 0x0FF: T9 0, T8 0 -> byte 1 = 0x00; byte 6 = 0xFF
      {0x0ff, "00 00 00 01  01 00 FF 0F  00 00 20 00"},
  };
  for (const Vec& v : vecs) {
    SCOPED_TRACE(v.hex);
    dxpu_tlp want{};
    want.kind = DXPU_TLP_MRD;
    want.length_dw = 1;
    want.requester_id = 0x0100;
    want.tag = v.tag;
    want.first_be = 0xf;
    want.addr = 0x2000;
    ExpectGolden(from_hex(v.hex), want);
  }
}

TEST(TlpGolden, TrafficClassAndAllAttributes) {
  // MWr, 3DW, 1 DW to 0x10000000, TC 5, Attr = IDO | RO | NS = 111b.
  //   byte 0 = 0x40
  //   byte 1 = TC 101b << 4 = 0x50 | Attr[2] (bit 2) 0x04     = 0x54
  //   byte 2 = Attr[1:0] 11b << 4 = 0x30                      = 0x30
  //   byte 3 = 0x01
  //   bytes 4-5 = Requester 03:00.0 = 03 00, byte 6 = 00, byte 7 = 0F
  //   bytes 8-11 = 10 00 00 00, payload 01 02 03 04
  const auto wire = from_hex("40 54 30 01  03 00 00 0F  10 00 00 00  01 02 03 04");
  const auto payload = from_hex("01 02 03 04");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MWR;
  want.tc = 5;
  want.attr = DXPU_TLP_ATTR_IDO | DXPU_TLP_ATTR_RO | DXPU_TLP_ATTR_NS;
  want.length_dw = 1;
  want.requester_id = 0x0300;
  want.first_be = 0xf;
  want.addr = 0x10000000;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

TEST(TlpGolden, AttributesOneAtATime) {
  struct Vec {
    uint8_t tc;
    uint8_t attr;
    const char* hex;
  };
  const Vec vecs[] = {
      // TC 7, Relaxed Ordering only: byte 1 = 111b << 4 = 0x70; byte 2 = Attr[1:0] 10b << 4 = 0x20
      {7, DXPU_TLP_ATTR_RO, "00 70 20 01  01 00 00 0F  00 00 30 00"},
      // No Snoop only: byte 2 = Attr[1:0] 01b << 4 = 0x10
      {0, DXPU_TLP_ATTR_NS, "00 00 10 01  01 00 00 0F  00 00 30 00"},
      // ID-based Ordering only: Attr[2] is byte 1 bit 2 = 0x04; byte 2 = 0x00
      {0, DXPU_TLP_ATTR_IDO, "00 04 00 01  01 00 00 0F  00 00 30 00"},
      // TC 1, IDO + NS: byte 1 = 0x10 | 0x04 = 0x14; byte 2 = 0x10
      {1, DXPU_TLP_ATTR_IDO | DXPU_TLP_ATTR_NS, "00 14 10 01  01 00 00 0F  00 00 30 00"},
  };
  for (const Vec& v : vecs) {
    SCOPED_TRACE(v.hex);
    dxpu_tlp want{};
    want.kind = DXPU_TLP_MRD;
    want.tc = v.tc;
    want.attr = v.attr;
    want.length_dw = 1;
    want.requester_id = 0x0100;
    want.first_be = 0xf;
    want.addr = 0x3000;
    ExpectGolden(from_hex(v.hex), want);
  }
}

TEST(TlpGolden, ProcessingHintIn32BitAddress) {
  // MWr, 3DW, TH 1 with PH 10b, Steering Tag 0x3C. In a memory write with TH
  // the Tag[7:0] byte carries ST[7:0] (the struct's tag keeps only T9/T8).
  //   byte 0 = 0x40
  //   byte 1 = TH (bit 0)                              = 0x01
  //   byte 2 = 0x00, byte 3 = 0x01
  //   bytes 4-5 = 01 00, byte 6 = ST 0x3C, byte 7 = 0F
  //   bytes 8-11 = Address 0x40000040 | PH 10b = ...42 = 40 00 00 42
  //   payload CA FE BA BE
  const auto wire = from_hex("40 01 00 01  01 00 3C 0F  40 00 00 42  CA FE BA BE");
  const auto payload = from_hex("CA FE BA BE");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MWR;
  want.flags = DXPU_TLP_F_TH;
  want.ph = 2;
  want.st = 0x3c;
  want.length_dw = 1;
  want.requester_id = 0x0100;
  want.first_be = 0xf;
  want.addr = 0x40000040;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

TEST(TlpGolden, ProcessingHintIn64BitAddress) {
  // MWr, 4DW, TH 1 with PH 11b and ST 0xA7, to 0x0000001080000000; PH sits in
  // bits 1:0 of byte 15 (the low address DW), not in the high DW (whose bits
  // 1:0 are 00b here, so a decoder reading PH from the wrong DW would see 00b).
  //   byte 0 = Fmt 011b << 5 = 0x60, byte 1 = TH = 0x01, byte 2 = 0x00, byte 3 = 0x01
  //   bytes 4-5 = 01 00, byte 6 = ST 0xA7, byte 7 = 0F
  //   bytes 8-11 = Address[63:32] = 0x00000010            = 00 00 00 10
  //   bytes 12-15 = 0x80000000 | PH 11b                  = 80 00 00 03
  //   payload 00 00 00 00
  const auto wire = from_hex("60 01 00 01  01 00 A7 0F  00 00 00 10  80 00 00 03  00 00 00 00");
  const auto payload = from_hex("00 00 00 00");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MWR;
  want.flags = DXPU_TLP_F_TH;
  want.ph = 3;
  want.st = 0xa7;
  want.length_dw = 1;
  want.requester_id = 0x0100;
  want.first_be = 0xf;
  want.addr = 0x0000001080000000ULL;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

TEST(TlpGolden, ProcessingHintOnReadCarriesSteeringTagInByteEnables) {
  // MRd with TH: the spec repurposes the byte-enable byte (byte 7) for ST[7:0]
  // and implies the byte enables: First 1111b, Last 0000b for 1 DW, 1111b for
  // more. The Tag byte stays the Tag (a read needs its completion).
  struct Vec {
    uint16_t length_dw;
    uint8_t ph;
    uint8_t st;
    uint16_t tag;
    const char* hex;
  };
  const Vec vecs[] = {
      // 1 DW at 0x1000, PH 01b, ST 0x5A, Tag 0x0C:
      //   byte 1 = TH 0x01; byte 6 = Tag 0x0C; byte 7 = ST 0x5A (not BEs);
      //   bytes 8-11 = 0x00001000 | PH 01b = 00 00 10 01
      {1, 1, 0x5a, 0x0c, "00 01 00 01  01 00 0C 5A  00 00 10 01"},
      // 4 DW at 0x1000, PH 10b, ST 0x00 (would be First BE 0000b), Tag 0x0D:
      //   byte 3 = 0x04; byte 7 = ST 0x00; bytes 8-11 = 00 00 10 02
      {4, 2, 0x00, 0x0d, "00 01 00 04  01 00 0D 00  00 00 10 02"},
  };
  for (const Vec& v : vecs) {
    SCOPED_TRACE(v.hex);
    dxpu_tlp want{};
    want.kind = DXPU_TLP_MRD;
    want.flags = DXPU_TLP_F_TH;
    want.ph = v.ph;
    want.st = v.st;
    want.length_dw = v.length_dw;
    want.requester_id = 0x0100;
    want.tag = v.tag;
    want.first_be = 0xf;
    want.last_be = v.length_dw > 1 ? 0xf : 0x0;
    want.addr = 0x1000;
    ExpectGolden(from_hex(v.hex), want);
  }
}

TEST(TlpGolden, AddressType) {
  struct Vec {
    uint8_t at;
    const char* hex;
  };
  const Vec vecs[] = {
      // AT 01b (Translation Request): byte 2 = 01b << 2 = 0x04
      {DXPU_TLP_AT_TRANSLATION_REQ, "00 00 04 01  01 00 07 0F  00 00 30 00"},
      // AT 10b (Translated): byte 2 = 10b << 2 = 0x08
      {DXPU_TLP_AT_TRANSLATED, "00 00 08 01  01 00 07 0F  00 00 30 00"},
  };
  for (const Vec& v : vecs) {
    SCOPED_TRACE(v.hex);
    dxpu_tlp want{};
    want.kind = DXPU_TLP_MRD;
    want.at = v.at;
    want.length_dw = 1;
    want.requester_id = 0x0100;
    want.tag = 0x07;
    want.first_be = 0xf;
    want.addr = 0x3000;
    ExpectGolden(from_hex(v.hex), want);
  }
}

TEST(TlpGolden, Poisoned) {
  // MWr, 3DW, EP set: byte 2 bit 6 = 0x40.
  //   40 00 40 01 | 01 00 00 0F | 50 00 00 00 | payload 00 00 00 00
  const auto wire = from_hex("40 00 40 01  01 00 00 0F  50 00 00 00  00 00 00 00");
  const auto payload = from_hex("00 00 00 00");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MWR;
  want.flags = DXPU_TLP_F_EP;
  want.length_dw = 1;
  want.requester_id = 0x0100;
  want.first_be = 0xf;
  want.addr = 0x50000000;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

TEST(TlpGolden, DigestAfterPayload) {
  // MWr, 3DW, TD set (byte 2 bit 7 = 0x80): the 4-byte TLP Digest follows the
  // payload, big-endian like the header.
  //   40 00 80 01 | 01 00 00 0F | 60 00 00 00 | payload AA BB CC DD | ECRC 12 34 56 78
  const auto wire = from_hex("40 00 80 01  01 00 00 0F  60 00 00 00  AA BB CC DD  12 34 56 78");
  const auto payload = from_hex("AA BB CC DD");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MWR;
  want.flags = DXPU_TLP_F_TD;
  want.length_dw = 1;
  want.requester_id = 0x0100;
  want.first_be = 0xf;
  want.addr = 0x60000000;
  want.digest = 0x12345678;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

TEST(TlpGolden, DigestAfterHeaderWithoutPayload) {
  // MRd, 3DW, TD set: no payload, so the digest directly follows the 12-byte header.
  //   00 00 80 01 | 01 00 00 0F | 60 00 00 00 | ECRC 87 65 43 21
  const auto wire = from_hex("00 00 80 01  01 00 00 0F  60 00 00 00  87 65 43 21");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MRD;
  want.flags = DXPU_TLP_F_TD;
  want.length_dw = 1;
  want.requester_id = 0x0100;
  want.first_be = 0xf;
  want.addr = 0x60000000;
  want.digest = 0x87654321;
  ExpectGolden(wire, want);
}

// ---- configuration ----

TEST(TlpGolden, CfgRd0ExtendedRegister) {
  // CfgRd0 of offset 0x104 of 03:1F.7, from the Root Complex 00:00.0.
  // Offset 0x104 = Ext Register Number 1 (offset bits 11:8), Register Number
  // 0x01 (offset bits 7:2).
  //   byte 0 = Fmt 000b << 5 | Type 00100b                  = 0x04
  //   byte 1 = 0x00 (TC must be 0), byte 2 = 0x00, byte 3 = Length 1 = 0x01
  //   bytes 4-5 = Requester 0x0000, byte 6 = Tag 0x10
  //   byte 7 = Last BE 0000b | First BE 1111b                = 0x0F
  //   byte 8 = Bus 0x03
  //   byte 9 = Device 0x1F << 3 | Function 7 = 0xF8 | 0x7   = 0xFF
  //   byte 10 = Ext Register Number 1                        = 0x01
  //   byte 11 = Register Number 0x01 << 2                    = 0x04
  const auto wire = from_hex("04 00 00 01  00 00 10 0F  03 FF 01 04");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_CFGRD0;
  want.length_dw = 1;
  want.tag = 0x10;
  want.first_be = 0xf;
  want.cfg_target = DXPU_BDF(0x03, 0x1f, 7);
  want.cfg_reg = 0x104;
  ASSERT_EQ(want.cfg_target, 0x03ff);
  ExpectGolden(wire, want);
}

TEST(TlpGolden, CfgRd0LastExtendedRegister) {
  // CfgRd0 of offset 0xFFC (Ext 0xF, Register 0x3F) of 00:00.0, First BE 1000b.
  //   04 00 00 01 | 00 00 00 08 | 00 00 0F FC   (byte 11 = 0x3F << 2 = 0xFC)
  const auto wire = from_hex("04 00 00 01  00 00 00 08  00 00 0F FC");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_CFGRD0;
  want.length_dw = 1;
  want.first_be = 0x8;
  want.cfg_reg = 0xffc;
  ExpectGolden(wire, want);
}

TEST(TlpGolden, CfgWr1WithPayload) {
  // CfgWr1 to 05:02.1 offset 0x010 (BAR0), First BE 0011b, data 78 56 34 12.
  //   byte 0 = Fmt 010b << 5 | Type 00101b                = 0x45
  //   byte 1 = 0x00, byte 2 = 0x00, byte 3 = 0x01
  //   bytes 4-5 = 00 00, byte 6 = Tag 0x11, byte 7 = 0x03
  //   byte 8 = Bus 0x05, byte 9 = Device 2 << 3 | Function 1 = 0x11
  //   byte 10 = Ext Register Number 0 = 0x00
  //   byte 11 = Register Number 0x04 << 2 = 0x10
  //   payload 78 56 34 12
  const auto wire = from_hex("45 00 00 01  00 00 11 03  05 11 00 10  78 56 34 12");
  const auto payload = from_hex("78 56 34 12");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_CFGWR1;
  want.length_dw = 1;
  want.tag = 0x11;
  want.first_be = 0x3;
  want.cfg_target = DXPU_BDF(5, 2, 1);
  want.cfg_reg = 0x010;
  want.payload = payload.data();
  ASSERT_EQ(want.cfg_target, 0x0511);
  ExpectGolden(wire, want);
}

// ---- completions ----

TEST(TlpGolden, CplEachStatus) {
  // Cpl (no data), 3DW: byte 0 = Fmt 000b << 5 | Type 01010b = 0x0A. Length is
  // reserved for a Cpl and is sent as 0. Completer 01:00.0 -> bytes 4-5 = 01 00.
  // byte 6 = Status << 5 | BCM << 4 | Byte Count[11:8].
  struct Vec {
    uint8_t status;
    uint16_t byte_count;
    uint16_t tag;
    uint8_t lower_addr;
    const char* hex;
  };
  const Vec vecs[] = {
      // SC 000b, Byte Count 4 (a CfgWr's completion): byte 6 = 0x00, byte 7 = 0x04
      {DXPU_TLP_CPL_SC, 4, 0x10, 0x00, "0A 00 00 00  01 00 00 04  00 00 10 00"},
      // UR 001b -> byte 6 = 001b << 5 = 0x20; Byte Count 64 = 0x040 -> byte 7 = 0x40;
      // Lower Address 0x20 -> byte 11 = 0x20
      {DXPU_TLP_CPL_UR, 64, 0x11, 0x20, "0A 00 00 00  01 00 20 40  00 00 11 20"},
      // CRS 010b -> byte 6 = 0x40; Byte Count 4
      {DXPU_TLP_CPL_CRS, 4, 0x12, 0x00, "0A 00 00 00  01 00 40 04  00 00 12 00"},
      // CA 100b -> byte 6 = 0x80; Byte Count 4096 encoded as 0 -> byte 6 low nibble 0, byte 7 = 0
      {DXPU_TLP_CPL_CA, 4096, 0x13, 0x00, "0A 00 00 00  01 00 80 00  00 00 13 00"},
      // SC with 10-bit tag 0x3A5: T9 T8 in byte 1 = 0x88, Tag[7:0] in byte 10 = 0xA5
      {DXPU_TLP_CPL_SC, 4, 0x3a5, 0x00, "0A 88 00 00  01 00 00 04  00 00 A5 00"},
  };
  for (const Vec& v : vecs) {
    SCOPED_TRACE(v.hex);
    dxpu_tlp want{};
    want.kind = DXPU_TLP_CPL;
    want.completer_id = 0x0100;
    want.cpl_status = v.status;
    want.byte_count = v.byte_count;
    want.tag = v.tag;
    want.lower_addr = v.lower_addr;
    ExpectGolden(from_hex(v.hex), want);
  }
}

TEST(TlpGolden, CplDByteCountAndLowerAddress) {
  // CplD for a 3-DW read of DW address 0x10000044 with First BE 1100b and Last
  // BE 0111b: bytes 0x46..0x4E, Byte Count 2 + 4 + 3 = 9, Lower Address 0x46.
  // One completion carries it all: Length 3.
  //   byte 0 = Fmt 010b << 5 | Type 01010b         = 0x4A
  //   byte 1 = 0x00, byte 2 = 0x00, byte 3 = 0x03
  //   bytes 4-5 = Completer 01:00.0                = 01 00
  //   byte 6 = SC 000b, BCM 0, Byte Count[11:8] 0  = 0x00
  //   byte 7 = Byte Count[7:0] = 9                 = 0x09
  //   bytes 8-9 = Requester 00:01.0                = 00 08
  //   byte 10 = Tag 0x2B
  //   byte 11 = Lower Address 0x46                 = 0x46
  //   payload 12 bytes 00..0B
  const auto payload = from_hex("00 01 02 03 04 05 06 07 08 09 0A 0B");
  const auto wire = Concat(from_hex("4A 00 00 03  01 00 00 09  00 08 2B 46"), payload);
  dxpu_tlp want{};
  want.kind = DXPU_TLP_CPLD;
  want.length_dw = 3;
  want.completer_id = 0x0100;
  want.requester_id = 0x0008;
  want.tag = 0x2b;
  want.byte_count = 9;
  want.lower_addr = 0x46;
  want.payload = payload.data();
  ExpectGolden(wire, want);
  EXPECT_EQ(dxpu_tlp_read_byte_count(3, 0xc, 0x7), 9u);
  EXPECT_EQ(dxpu_tlp_read_lower_addr(0x10000044, 0xc), 0x46);
}

TEST(TlpGolden, CplDByteCount4096EncodedAsZero) {
  // A 4096-byte read of a page, completed at MPS 256: the first completion
  // carries 64 DW and Byte Count 4096 (all remaining), which the 12-bit field
  // encodes as 0. It ends at 0x100, on an RCB boundary.
  //   byte 0 = 0x4A, byte 2 = 0x00, byte 3 = Length 64 = 0x40
  //   bytes 4-5 = 01 00
  //   byte 6 = SC 000b << 5 | BCM 0 | Byte Count[11:8] 0000b = 0x00
  //   byte 7 = Byte Count[7:0] = 0x00
  //   bytes 8-9 = 00 08, byte 10 = Tag 0x2C, byte 11 = Lower Address 0x00
  const auto payload = Pattern(256, 0x11);
  const auto wire = Concat(from_hex("4A 00 00 40  01 00 00 00  00 08 2C 00"), payload);
  dxpu_tlp want{};
  want.kind = DXPU_TLP_CPLD;
  want.length_dw = 64;
  want.completer_id = 0x0100;
  want.requester_id = 0x0008;
  want.tag = 0x2c;
  want.byte_count = 4096;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

TEST(TlpGolden, CplDByteCountHighBits) {
  // The next completion of the same read: 4096 - 256 = 3840 = 0xF00 bytes
  // remain, from address 0x100 (Lower Address 0x100 & 0x7F = 0x00).
  //   byte 6 = SC 000b << 5 | BCM 0 | Byte Count[11:8] 1111b = 0x0F
  //   byte 7 = Byte Count[7:0] = 0x00
  const auto payload = Pattern(256, 0x22);
  const auto wire = Concat(from_hex("4A 00 00 40  01 00 0F 00  00 08 2C 00"), payload);
  dxpu_tlp want{};
  want.kind = DXPU_TLP_CPLD;
  want.length_dw = 64;
  want.completer_id = 0x0100;
  want.requester_id = 0x0008;
  want.tag = 0x2c;
  want.byte_count = 3840;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

TEST(TlpGolden, CplDWholePageInOneCompletion) {
  // The same 4096-byte read in a single completion: Length 1024 (encoded 0)
  // and Byte Count 4096 (encoded 0).
  //   4A 00 00 00 | 01 00 00 00 | 00 08 2C 00 | 4096 bytes
  const auto payload = Pattern(4096, 0x33);
  const auto wire = Concat(from_hex("4A 00 00 00  01 00 00 00  00 08 2C 00"), payload);
  dxpu_tlp want{};
  want.kind = DXPU_TLP_CPLD;
  want.length_dw = 1024;
  want.completer_id = 0x0100;
  want.requester_id = 0x0008;
  want.tag = 0x2c;
  want.byte_count = 4096;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

TEST(TlpGolden, CplDByteCountModified) {
  // A PCI-X completer's CplD with BCM set: Byte Count 256 = 0x100 counts this
  // completion's bytes only. Completer 04:00.0.
  //   byte 6 = SC 000b << 5 | BCM (bit 4) 0x10 | Byte Count[11:8] 0001b = 0x11
  //   byte 7 = Byte Count[7:0] = 0x00
  //   4A 00 00 40 | 04 00 11 00 | 00 08 2D 00 | 256 bytes
  const auto payload = Pattern(256, 0x44);
  const auto wire = Concat(from_hex("4A 00 00 40  04 00 11 00  00 08 2D 00"), payload);
  dxpu_tlp want{};
  want.kind = DXPU_TLP_CPLD;
  want.flags = DXPU_TLP_F_BCM;
  want.length_dw = 64;
  want.completer_id = 0x0400;
  want.requester_id = 0x0008;
  want.tag = 0x2d;
  want.byte_count = 256;
  want.payload = payload.data();
  ExpectGolden(wire, want);
}

// ---- messages ----

TEST(TlpGolden, MsgAssertIntaAndDeassertIntd) {
  // Msg, always 4DW: byte 0 = Fmt 001b << 5 | Type 10r2r1r0b with routing 100b
  // (local, terminate at receiver) = 0x20 | 0x14 = 0x34. TC 0; Length reserved
  // (0). Bytes 8-15 reserved for INTx (0).
  struct Vec {
    uint16_t requester_id;
    uint8_t code;
    const char* hex;
  };
  const Vec vecs[] = {
      // Assert_INTA (0x20) from 01:00.0: bytes 4-5 = 01 00, byte 7 = 0x20
      {0x0100, DXPU_TLP_MSG_ASSERT_INTA, "34 00 00 00  01 00 00 20  00 00 00 00  00 00 00 00"},
      // Deassert_INTD (0x27) from 02:00.0: bytes 4-5 = 02 00, byte 7 = 0x27
      {0x0200, DXPU_TLP_MSG_DEASSERT_INTD, "34 00 00 00  02 00 00 27  00 00 00 00  00 00 00 00"},
  };
  for (const Vec& v : vecs) {
    SCOPED_TRACE(v.hex);
    dxpu_tlp want{};
    want.kind = DXPU_TLP_MSG;
    want.requester_id = v.requester_id;
    want.msg_code = v.code;
    want.msg_routing = DXPU_TLP_ROUTE_LOCAL;
    ExpectGolden(from_hex(v.hex), want);
  }
}

TEST(TlpGolden, VendorDefinedType1RoutedById) {
  // Msg, Vendor_Defined Type 1 (code 0x7F), routed by ID (r = 010b) to 02:00.0,
  // Vendor ID 0x1AF4, vendor data 01 02 03 04.
  //   byte 0 = Fmt 001b << 5 | Type 10010b = 0x20 | 0x12 = 0x32
  //   byte 1 = 0x00, byte 2 = 0x00, byte 3 = 0x00 (Length reserved)
  //   bytes 4-5 = Requester 01:00.0, byte 6 = Tag 0x00, byte 7 = Code 0x7F
  //   bytes 8-9 = target ID 02:00.0 = 02 00
  //   bytes 10-11 = Vendor ID = 1A F4
  //   bytes 12-15 = vendor-defined = 01 02 03 04
  const auto wire = from_hex("32 00 00 00  01 00 00 7F  02 00 1A F4  01 02 03 04");
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MSG;
  want.requester_id = 0x0100;
  want.msg_code = DXPU_TLP_MSG_VENDOR_TYPE1;
  want.msg_routing = DXPU_TLP_ROUTE_BY_ID;
  const uint8_t hdr[8] = {0x02, 0x00, 0x1a, 0xf4, 0x01, 0x02, 0x03, 0x04};
  std::memcpy(want.msg_hdr, hdr, sizeof hdr);
  ExpectGolden(wire, want);

  dxpu_tlp got{};
  ASSERT_EQ(decode(wire, &got), DXPU_TLP_OK);
  EXPECT_EQ(dxpu_tlp_msg_target_id(&got), 0x0200);
  EXPECT_EQ(dxpu_tlp_msg_vendor_id(&got), 0x1af4);
}

TEST(TlpGolden, MsgDVendorDefinedType0WithPayload) {
  // MsgD, Vendor_Defined Type 0 (code 0x7E), routed to the Root Complex
  // (r = 000b), TC 1, Vendor ID 0x8086, 2 DW of data.
  //   byte 0 = Fmt 011b << 5 | Type 10000b = 0x60 | 0x10 = 0x70
  //   byte 1 = TC 001b << 4                = 0x10
  //   byte 2 = 0x00, byte 3 = Length 2     = 0x02
  //   bytes 4-5 = Requester 03:00.0, byte 6 = 0x00, byte 7 = Code 0x7E
  //   bytes 8-9 = reserved (not routed by ID) = 00 00
  //   bytes 10-11 = Vendor ID = 80 86, bytes 12-15 = DE AD BE EF
  //   payload 01..08
  const auto payload = from_hex("01 02 03 04 05 06 07 08");
  const auto wire = Concat(from_hex("70 10 00 02  03 00 00 7E  00 00 80 86  DE AD BE EF"), payload);
  dxpu_tlp want{};
  want.kind = DXPU_TLP_MSGD;
  want.tc = 1;
  want.length_dw = 2;
  want.requester_id = 0x0300;
  want.msg_code = DXPU_TLP_MSG_VENDOR_TYPE0;
  want.msg_routing = DXPU_TLP_ROUTE_TO_RC;
  const uint8_t hdr[8] = {0x00, 0x00, 0x80, 0x86, 0xde, 0xad, 0xbe, 0xef};
  std::memcpy(want.msg_hdr, hdr, sizeof hdr);
  want.payload = payload.data();
  ExpectGolden(wire, want);

  dxpu_tlp got{};
  ASSERT_EQ(decode(wire, &got), DXPU_TLP_OK);
  EXPECT_EQ(dxpu_tlp_msg_vendor_id(&got), 0x8086);
}

// ---- dxpu_tlp_peek_size and dxpu_tlp_format ----

TEST(TlpGolden, PeekSizeFromDw0Alone) {
  struct Vec {
    const char* dw0;
    uint32_t size;
  };
  const Vec vecs[] = {
      {"00 00 00 01", 12},          // MRd 3DW: header only, Length is not payload
      {"20 00 00 10", 16},          // MRd 4DW
      {"00 00 80 01", 16},          // MRd 3DW + digest
      {"40 00 00 02", 12 + 8},      // MWr 3DW, 2 DW
      {"60 00 00 01", 16 + 4},      // MWr 4DW, 1 DW
      {"40 00 80 01", 12 + 4 + 4},  // MWr 3DW, 1 DW + digest
      {"40 00 00 00", 12 + 4096},   // MWr 3DW, Length 0 = 1024 DW
      {"40 00 03 FF", 12 + 4092},   // MWr 3DW, Length 1023
      {"0A 00 00 00", 12},          // Cpl
      {"0A 00 00 05", 12},          // Cpl: Length is reserved and ignored
      {"4A 00 00 03", 12 + 12},     // CplD, 3 DW
      {"34 00 00 00", 16},          // Msg
      {"70 10 00 02", 16 + 8},      // MsgD, 2 DW
      {"45 00 00 01", 12 + 4},      // CfgWr1
  };
  for (const Vec& v : vecs) {
    SCOPED_TRACE(v.dw0);
    const auto dw0 = from_hex(v.dw0);
    uint32_t size = 0;
    ASSERT_EQ(dxpu_tlp_peek_size(dw0.data(), dw0.size(), &size), DXPU_TLP_OK);
    EXPECT_EQ(size, v.size);
  }
  // A longer buffer (a stream) gives the size of the first TLP only.
  const auto stream = from_hex("40 00 00 01  01 00 00 0F  10 00 00 00  01 02 03 04  00 00 00 01");
  uint32_t size = 0;
  ASSERT_EQ(dxpu_tlp_peek_size(stream.data(), stream.size(), &size), DXPU_TLP_OK);
  EXPECT_EQ(size, 16u);
}

std::string Format(const std::vector<uint8_t>& wire) {
  dxpu_tlp t{};
  EXPECT_EQ(decode(wire, &t), DXPU_TLP_OK) << to_hex(wire);
  char buf[256];
  const int n = dxpu_tlp_format(&t, buf, sizeof buf);
  EXPECT_GT(n, 0);
  EXPECT_LT(static_cast<size_t>(n), sizeof buf);
  EXPECT_EQ(std::strlen(buf), static_cast<size_t>(n));
  return buf;
}

TEST(TlpGolden, FormatNamesTheKind) {
  const std::string mrd = Format(from_hex("00 88 00 01  01 00 A5 0F  00 00 20 00"));
  EXPECT_NE(mrd.find("MRd"), std::string::npos) << mrd;
  EXPECT_NE(mrd.find("tag=0x3a5"), std::string::npos) << mrd;
  EXPECT_NE(mrd.find("addr=0x2000"), std::string::npos) << mrd;

  const std::string cfg = Format(from_hex("04 00 00 01  00 00 10 0F  03 FF 01 04"));
  EXPECT_NE(cfg.find("CfgRd0"), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("03:1f.7"), std::string::npos) << cfg;
  EXPECT_NE(cfg.find("reg=0x104"), std::string::npos) << cfg;

  const std::string cpld = Format(Concat(from_hex("4A 00 00 03  01 00 00 09  00 08 2B 46"),
                                         from_hex("00 01 02 03 04 05 06 07 08 09 0A 0B")));
  EXPECT_NE(cpld.find("CplD"), std::string::npos) << cpld;
  EXPECT_NE(cpld.find("status=SC"), std::string::npos) << cpld;
  EXPECT_NE(cpld.find("bc=9"), std::string::npos) << cpld;
  EXPECT_NE(cpld.find("la=0x46"), std::string::npos) << cpld;

  const std::string cpl = Format(from_hex("0A 00 00 00  01 00 20 40  00 00 11 20"));
  EXPECT_EQ(cpl.rfind("Cpl ", 0), 0u) << cpl;
  EXPECT_NE(cpl.find("status=UR"), std::string::npos) << cpl;

  const std::string msg = Format(from_hex("32 00 00 00  01 00 00 7F  02 00 1A F4  01 02 03 04"));
  EXPECT_EQ(msg.rfind("Msg ", 0), 0u) << msg;
  EXPECT_NE(msg.find("code=0x7f"), std::string::npos) << msg;
}

TEST(TlpGolden, FormatTruncatesLikeSnprintf) {
  dxpu_tlp t{};
  ASSERT_EQ(decode(from_hex("00 00 00 01  01 00 0C 0F  FE DC BA 98"), &t), DXPU_TLP_OK);
  char full[256];
  const int n = dxpu_tlp_format(&t, full, sizeof full);
  ASSERT_GT(n, 8);
  char small[8];
  std::memset(small, 'x', sizeof small);
  EXPECT_EQ(dxpu_tlp_format(&t, small, sizeof small), n);
  EXPECT_EQ(small[sizeof small - 1], '\0');
  EXPECT_EQ(std::string(small), std::string(full, sizeof small - 1));
  EXPECT_EQ(std::string(dxpu_tlp_kind_name(DXPU_TLP_CPLD)), "CplD");
  EXPECT_EQ(std::string(dxpu_tlp_kind_name(DXPU_TLP_INVALID)), "?");
}

}  // namespace
}  // namespace dxpu::test
