// Every rule the codec enforces, each hit by hand-built bytes (and, where the
// rule can be expressed in a struct, by encode) with its SPECIFIC error code,
// next to the nearest case the rule accepts. Byte layout: see the comment at
// the top of tlp_golden_test.cc and include/dxpu/tlp.h.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

// A new enumerator needs a vector below (and in ProvokeOne): this fails to
// compile until the count is updated.
static_assert(DXPU_TLP_ERR_COUNT == 25, "add a rule test for the new dxpu_tlp_err code");

// Decode from an exact-size heap copy, so that ASan catches any read past the end.
dxpu_tlp_err Decode(const std::vector<uint8_t>& bytes, dxpu_tlp* out) {
  auto exact = std::make_unique<uint8_t[]>(bytes.size() + (bytes.empty() ? 1 : 0));
  if (!bytes.empty()) std::memcpy(exact.get(), bytes.data(), bytes.size());
  return dxpu_tlp_decode(exact.get(), bytes.size(), out);
}

dxpu_tlp_err Decode(const std::vector<uint8_t>& bytes) {
  dxpu_tlp t{};
  return Decode(bytes, &t);
}

dxpu_tlp_err Peek(const std::vector<uint8_t>& bytes) {
  uint32_t size = 0;
  return dxpu_tlp_peek_size(bytes.data(), bytes.size(), &size);
}

// Hex header followed by n payload/digest bytes (0xA5).
std::vector<uint8_t> Bytes(std::string_view hex, size_t n = 0) {
  std::vector<uint8_t> v = from_hex(hex);
  v.insert(v.end(), n, 0xa5);
  return v;
}

std::vector<uint8_t> Prefix(const std::vector<uint8_t>& v, size_t n) {
  return {v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)};
}

// gtest prints enum values as numbers; show the names too.
std::string Name(dxpu_tlp_err e) { return dxpu_tlp_err_name(e); }

#define EXPECT_DECODE(bytes, err) EXPECT_EQ(Name(Decode(bytes)), Name(err)) << to_hex(bytes)
#define EXPECT_ENCODE(tlp, err) EXPECT_EQ(Name(encode_err(tlp)), Name(err))

// Payload storage for structs built below: big enough for any TLP.
const uint8_t kZeros[DXPU_TLP_MAX_PAYLOAD] = {};

dxpu_tlp MemReq(uint8_t kind, uint64_t addr, uint16_t length_dw, uint8_t first_be,
                uint8_t last_be) {
  dxpu_tlp t{};
  t.kind = kind;
  t.requester_id = 0x0100;
  t.addr = addr;
  t.length_dw = length_dw;
  t.first_be = first_be;
  t.last_be = last_be;
  if (kind == DXPU_TLP_MWR) t.payload = kZeros;
  return t;
}

dxpu_tlp CfgRd0() {
  dxpu_tlp t{};
  t.kind = DXPU_TLP_CFGRD0;
  t.length_dw = 1;
  t.first_be = 0xf;
  t.cfg_target = 0x0100;
  return t;
}

dxpu_tlp CplD(uint16_t length_dw, uint16_t byte_count, uint8_t lower_addr) {
  dxpu_tlp t{};
  t.kind = DXPU_TLP_CPLD;
  t.completer_id = 0x0100;
  t.length_dw = length_dw;
  t.byte_count = byte_count;
  t.lower_addr = lower_addr;
  t.payload = kZeros;
  return t;
}

dxpu_tlp Msg(uint8_t code, uint8_t routing) {
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MSG;
  t.requester_id = 0x0100;
  t.msg_code = code;
  t.msg_routing = routing;
  return t;
}

// Valid TLPs the truncation tests cut down. MRd 1 DW at 0x1000:
//   00 00 00 01 | 01 00 00 0F | 00 00 10 00
const char kMRd3[] = "00 00 00 01  01 00 00 0F  00 00 10 00";
// MRd 1 DW at 0x1_0000_1000, 4DW header.
const char kMRd4[] = "20 00 00 01  01 00 00 0F  00 00 00 01  00 00 10 00";
// MWr 2 DW at 0x1000 (payload appended by the tests).
const char kMWr3Len2[] = "40 00 00 02  01 00 00 FF  00 00 10 00";
// MWr 1 DW at 0x1000 with TD (byte 2 = 0x80).
const char kMWr3Td[] = "40 00 80 01  01 00 00 0F  00 00 10 00";

// ---- buffer length ----

TEST(TlpRules, ShorterThanDw0) {
  for (size_t n = 0; n < 4; ++n) {
    const auto b = Prefix(Bytes(kMRd3), n);
    EXPECT_DECODE(b, DXPU_TLP_ERR_SHORT_HEADER);
    EXPECT_EQ(Name(Peek(b)), Name(DXPU_TLP_ERR_SHORT_HEADER));
  }
}

TEST(TlpRules, ShorterThan3DwHeader) {
  const auto full = Bytes(kMRd3);
  for (size_t n = 4; n < 12; ++n) EXPECT_DECODE(Prefix(full, n), DXPU_TLP_ERR_SHORT_HEADER);
  EXPECT_DECODE(full, DXPU_TLP_OK);
  // Peek needs DW0 only.
  EXPECT_EQ(Name(Peek(Prefix(full, 4))), Name(DXPU_TLP_OK));
  // A CplD cut inside its header.
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 00 04"), DXPU_TLP_ERR_SHORT_HEADER);
}

TEST(TlpRules, ShorterThan4DwHeader) {
  const auto full = Bytes(kMRd4);
  for (size_t n = 4; n < 16; ++n) EXPECT_DECODE(Prefix(full, n), DXPU_TLP_ERR_SHORT_HEADER);
  EXPECT_DECODE(full, DXPU_TLP_OK);
  // A message is 4DW even though its first 12 bytes look complete.
  EXPECT_DECODE(Bytes("34 00 00 00  01 00 00 20  00 00 00 00"), DXPU_TLP_ERR_SHORT_HEADER);
}

TEST(TlpRules, ShorterThanPayload) {
  // MWr Length 2 needs 8 payload bytes after the 12-byte header.
  for (size_t n = 0; n < 8; ++n) EXPECT_DECODE(Bytes(kMWr3Len2, n), DXPU_TLP_ERR_SHORT_PAYLOAD);
  EXPECT_DECODE(Bytes(kMWr3Len2, 8), DXPU_TLP_OK);
  // Length 0 means 1024 DW: 4092 bytes are one DW short.
  EXPECT_DECODE(Bytes("40 00 00 00  01 00 00 FF  00 00 00 00", 4092), DXPU_TLP_ERR_SHORT_PAYLOAD);
  EXPECT_DECODE(Bytes("40 00 00 00  01 00 00 FF  00 00 00 00", 4096), DXPU_TLP_OK);
  // CplD of 1 DW with no data at all.
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 00 04  00 00 00 00"), DXPU_TLP_ERR_SHORT_PAYLOAD);
}

TEST(TlpRules, ShorterThanDigest) {
  // MWr 1 DW with TD: header 12 + payload 4 + digest 4 = 20 bytes.
  for (size_t n = 4; n < 8; ++n) EXPECT_DECODE(Bytes(kMWr3Td, n), DXPU_TLP_ERR_SHORT_PAYLOAD);
  EXPECT_DECODE(Bytes(kMWr3Td, 8), DXPU_TLP_OK);
  // MRd with TD: the digest follows the header directly.
  const char mrd_td[] = "00 00 80 01  01 00 00 0F  00 00 10 00";
  for (size_t n = 0; n < 4; ++n) EXPECT_DECODE(Bytes(mrd_td, n), DXPU_TLP_ERR_SHORT_PAYLOAD);
  EXPECT_DECODE(Bytes(mrd_td, 4), DXPU_TLP_OK);
}

TEST(TlpRules, ExtraBytesAreALengthMismatch) {
  // A read carries no data: 4 bytes after an MRd header are too many.
  EXPECT_DECODE(Bytes(kMRd3, 4), DXPU_TLP_ERR_LENGTH_MISMATCH);
  EXPECT_DECODE(Bytes(kMRd3, 1), DXPU_TLP_ERR_LENGTH_MISMATCH);
  // MWr Length 2 with 12 payload bytes.
  EXPECT_DECODE(Bytes(kMWr3Len2, 12), DXPU_TLP_ERR_LENGTH_MISMATCH);
  // MWr without TD followed by what would be a digest.
  EXPECT_DECODE(Bytes("40 00 00 01  01 00 00 0F  00 00 10 00", 8), DXPU_TLP_ERR_LENGTH_MISMATCH);
  // Cpl: Length is reserved (here 1); the Fmt says no data, so data bytes are extra.
  EXPECT_DECODE(Bytes("0A 00 00 01  01 00 00 04  00 00 00 00", 4), DXPU_TLP_ERR_LENGTH_MISMATCH);
  // Msg with 4 bytes after its 16-byte header.
  EXPECT_DECODE(Bytes("34 00 00 00  01 00 00 20  00 00 00 00  00 00 00 00", 4),
                DXPU_TLP_ERR_LENGTH_MISMATCH);
}

// ---- Fmt and Type ----

// DW0 byte 0 followed by a plausible rest: Length 1 and enough bytes for a 4DW
// header with data and digest, so only Fmt/Type can be at fault. The codec
// classifies DW0 before it looks at the length.
std::vector<uint8_t> WithByte0(uint8_t b0) {
  std::vector<uint8_t> v = Bytes("00 00 00 01  01 00 00 0F  00 00 00 01  00 00 10 00", 4);
  v[0] = b0;
  return v;
}

TEST(TlpRules, ReservedFmt) {
  // Fmt 101b, 110b, 111b with Type 00000b: 0xA0, 0xC0, 0xE0; and with other types.
  for (uint8_t b0 : {0xa0, 0xc0, 0xe0, 0xaa, 0xc4, 0xf4, 0xff}) {
    SCOPED_TRACE(static_cast<int>(b0));
    const auto b = WithByte0(b0);
    EXPECT_DECODE(b, DXPU_TLP_ERR_RESERVED_FMT);
    EXPECT_EQ(Name(Peek(Prefix(b, 4))), Name(DXPU_TLP_ERR_RESERVED_FMT));
  }
}

TEST(TlpRules, ReservedFmtTypeCombinations) {
  const uint8_t reserved[] = {
      0x24, 0x64,              // CfgRd0/CfgWr0 with a 4DW Fmt (001b, 011b)
      0x25, 0x65,              // CfgRd1/CfgWr1 with a 4DW Fmt
      0x10, 0x14, 0x50, 0x54,  // Msg/MsgD with a 3DW Fmt (000b, 010b)
      0x2a, 0x6a,              // Cpl/CplD with a 4DW Fmt
      0x0c, 0x2c, 0x0d, 0x2d,  // FetchAdd/Swap without data (Fmt 000b, 001b)
      0x0e, 0x2e,              // CAS without data
      0x41, 0x61,              // MRdLk with data (010b, 011b)
      0x22, 0x62,              // IORd/IOWr with a 4DW Fmt
      0x2b, 0x6b,              // CplLk/CplDLk with a 4DW Fmt
      0x3b,                    // TCfgRd with a 4DW Fmt
      0x03, 0x23, 0x43, 0x63,  // Type 00011b: unused
      0x06, 0x07, 0x08, 0x09,  // unused types
      0x0f, 0x18, 0x1a, 0x1f,  // unused types
  };
  for (uint8_t b0 : reserved) {
    SCOPED_TRACE(static_cast<int>(b0));
    const auto b = WithByte0(b0);
    EXPECT_DECODE(b, DXPU_TLP_ERR_RESERVED_TYPE);
    EXPECT_EQ(Name(Peek(Prefix(b, 4))), Name(DXPU_TLP_ERR_RESERVED_TYPE));
  }
}

TEST(TlpRules, DefinedButNotCarried) {
  const uint8_t unsupported[] = {
      0x02, 0x42,        // IORd, IOWr (Type 00010b)
      0x01, 0x21,        // MRdLk 3DW and 4DW (Type 00001b)
      0x0b, 0x4b,        // CplLk, CplDLk (Type 01011b)
      0x4c, 0x6c,        // FetchAdd 3DW, 4DW (Type 01100b)
      0x4d, 0x6d,        // Swap (01101b)
      0x4e, 0x6e,        // CAS (01110b)
      0x80, 0x91, 0x9f,  // TLP Prefix: Fmt 100b, any Type
      0x1b, 0x5b,        // TCfgRd, TCfgWr / Deferrable MWr 32-bit (Type 11011b)
      0x7b,              // Deferrable MWr, 64-bit (Fmt 011b, Type 11011b)
  };
  for (uint8_t b0 : unsupported) {
    SCOPED_TRACE(static_cast<int>(b0));
    const auto b = WithByte0(b0);
    EXPECT_DECODE(b, DXPU_TLP_ERR_UNSUPPORTED);
    EXPECT_EQ(Name(Peek(Prefix(b, 4))), Name(DXPU_TLP_ERR_UNSUPPORTED));
  }
}

// ---- memory requests ----

TEST(TlpRules, ReservedAddressType) {
  // byte 2 = AT 11b << 2 = 0x0C.
  EXPECT_DECODE(Bytes("00 00 0C 01  01 00 00 0F  00 00 10 00"), DXPU_TLP_ERR_RESERVED_AT);
  EXPECT_DECODE(Bytes("40 00 0C 01  01 00 00 0F  00 00 10 00", 4), DXPU_TLP_ERR_RESERVED_AT);
  EXPECT_DECODE(Bytes("00 00 08 01  01 00 00 0F  00 00 10 00"), DXPU_TLP_OK);  // AT 10b
  dxpu_tlp t = MemReq(DXPU_TLP_MRD, 0x1000, 1, 0xf, 0);
  t.at = DXPU_TLP_AT_RESERVED;
  EXPECT_ENCODE(t, DXPU_TLP_ERR_RESERVED_AT);
  t.at = DXPU_TLP_AT_TRANSLATED;
  EXPECT_ENCODE(t, DXPU_TLP_OK);
}

TEST(TlpRules, FourDwHeaderBelow4GiB) {
  // MRd 4DW with Address[63:32] = 0: must have used the 3DW form.
  EXPECT_DECODE(Bytes("20 00 00 01  01 00 00 0F  00 00 00 00  FF FF F0 00"),
                DXPU_TLP_ERR_ADDR64_BELOW_4G);
  EXPECT_DECODE(Bytes("60 00 00 01  01 00 00 0F  00 00 00 00  00 00 10 00", 4),
                DXPU_TLP_ERR_ADDR64_BELOW_4G);
  // Address 4 GiB exactly is fine in 4DW.
  EXPECT_DECODE(Bytes("20 00 00 01  01 00 00 0F  00 00 00 01  00 00 00 00"), DXPU_TLP_OK);
  // The encoder cannot make this mistake: an address below 4 GiB gets 3DW.
  const auto wire = encode_ok(MemReq(DXPU_TLP_MRD, 0xfffff000, 1, 0xf, 0));
  ASSERT_EQ(wire.size(), 12u);
  EXPECT_EQ(wire[0], 0x00);
}

TEST(TlpRules, OneDwRequestWithLastBe) {
  // Length 1, byte 7 = Last BE 0001b << 4 | First BE 1111b = 0x1F.
  EXPECT_DECODE(Bytes("00 00 00 01  01 00 00 1F  00 00 10 00"), DXPU_TLP_ERR_LAST_BE_1DW);
  EXPECT_DECODE(Bytes("00 00 00 01  01 00 00 F0  00 00 10 00"), DXPU_TLP_ERR_LAST_BE_1DW);
  EXPECT_DECODE(Bytes("40 00 00 01  01 00 00 8F  00 00 10 00", 4), DXPU_TLP_ERR_LAST_BE_1DW);
  // Configuration requests too.
  EXPECT_DECODE(Bytes("04 00 00 01  00 00 00 1F  01 00 00 00"), DXPU_TLP_ERR_LAST_BE_1DW);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MRD, 0x1000, 1, 0xf, 0x1), DXPU_TLP_ERR_LAST_BE_1DW);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MWR, 0x1000, 1, 0xf, 0xf), DXPU_TLP_ERR_LAST_BE_1DW);
  dxpu_tlp cfg = CfgRd0();
  cfg.last_be = 0xf;
  EXPECT_ENCODE(cfg, DXPU_TLP_ERR_LAST_BE_1DW);
}

TEST(TlpRules, MultiDwRequestWithFirstBeZero) {
  // Length 2, byte 7 = Last BE 1111b | First BE 0000b = 0xF0.
  EXPECT_DECODE(Bytes("00 00 00 02  01 00 00 F0  00 00 10 00"), DXPU_TLP_ERR_FIRST_BE_ZERO);
  // Both zero: the First BE rule is reported.
  EXPECT_DECODE(Bytes("00 00 00 02  01 00 00 00  00 00 10 00"), DXPU_TLP_ERR_FIRST_BE_ZERO);
  EXPECT_DECODE(Bytes("40 00 00 04  01 00 00 F0  00 00 10 00", 16), DXPU_TLP_ERR_FIRST_BE_ZERO);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MRD, 0x1000, 2, 0x0, 0xf), DXPU_TLP_ERR_FIRST_BE_ZERO);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MWR, 0x1000, 8, 0x0, 0xf), DXPU_TLP_ERR_FIRST_BE_ZERO);
}

TEST(TlpRules, MultiDwRequestWithLastBeZero) {
  // Length 2, byte 7 = Last BE 0000b | First BE 1111b = 0x0F.
  EXPECT_DECODE(Bytes("00 00 00 02  01 00 00 0F  00 00 10 00"), DXPU_TLP_ERR_LAST_BE_ZERO);
  EXPECT_DECODE(Bytes("40 00 00 03  01 00 00 0F  00 00 10 00", 12), DXPU_TLP_ERR_LAST_BE_ZERO);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MRD, 0x1000, 2, 0xf, 0x0), DXPU_TLP_ERR_LAST_BE_ZERO);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MWR, 0x1000, 3, 0xf, 0x0), DXPU_TLP_ERR_LAST_BE_ZERO);
}

TEST(TlpRules, NonContiguousByteEnablesRejected) {
  // 3-DW request: First BE 0111b leaves byte 3 of the first DW out (a hole).
  EXPECT_DECODE(Bytes("00 00 00 03  01 00 00 F7  00 00 10 00"), DXPU_TLP_ERR_BE_NONCONTIG);
  // 3-DW request: Last BE 1110b leaves byte 0 of the last DW out.
  EXPECT_DECODE(Bytes("00 00 00 03  01 00 00 EF  00 00 10 00"), DXPU_TLP_ERR_BE_NONCONTIG);
  // 3-DW request: Last BE 0101b is itself non-contiguous.
  EXPECT_DECODE(Bytes("00 00 00 03  01 00 00 5F  00 00 10 00"), DXPU_TLP_ERR_BE_NONCONTIG);
  // 2-DW request at 0x1004 (not QW-aligned: Address[2] = 1), First BE 0101b.
  EXPECT_DECODE(Bytes("00 00 00 02  01 00 00 F5  00 00 10 04"), DXPU_TLP_ERR_BE_NONCONTIG);
  // 2-DW request at 0x1004, First BE 0011b, Last BE 1100b: a hole in the middle.
  EXPECT_DECODE(Bytes("00 00 00 02  01 00 00 C3  00 00 10 04"), DXPU_TLP_ERR_BE_NONCONTIG);
  EXPECT_DECODE(Bytes("40 00 00 02  01 00 00 C3  00 00 10 04", 8), DXPU_TLP_ERR_BE_NONCONTIG);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MWR, 0x1000, 3, 0x7, 0xf), DXPU_TLP_ERR_BE_NONCONTIG);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MRD, 0x1004, 2, 0x3, 0xc), DXPU_TLP_ERR_BE_NONCONTIG);
}

TEST(TlpRules, NonContiguousByteEnablesAccepted) {
  // 1-DW request: any First BE, e.g. 0101b and 1001b.
  EXPECT_DECODE(Bytes("00 00 00 01  01 00 00 05  00 00 10 00"), DXPU_TLP_OK);
  EXPECT_DECODE(Bytes("40 00 00 01  01 00 00 09  00 00 10 00", 4), DXPU_TLP_OK);
  // QW-aligned 2-DW request (0x1008, Address[2] = 0): any non-zero pattern.
  EXPECT_DECODE(Bytes("00 00 00 02  01 00 00 A5  00 00 10 08"), DXPU_TLP_OK);
  EXPECT_DECODE(Bytes("40 00 00 02  01 00 00 C3  00 00 10 08", 8), DXPU_TLP_OK);
  // Contiguous across the DW boundary at a non-QW-aligned address: 1000b then 0001b.
  EXPECT_DECODE(Bytes("00 00 00 02  01 00 00 18  00 00 10 04"), DXPU_TLP_OK);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MRD, 0x1000, 1, 0x5, 0), DXPU_TLP_OK);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MWR, 0x1008, 2, 0x5, 0xa), DXPU_TLP_OK);
}

TEST(TlpRules, ZeroLengthRequestsAccepted) {
  // Length 1, First BE 0000b, Last BE 0000b: a zero-length read (a flush).
  dxpu_tlp t{};
  ASSERT_EQ(Name(Decode(Bytes("00 00 00 01  01 00 00 00  00 00 10 00"), &t)), Name(DXPU_TLP_OK));
  EXPECT_EQ(t.length_dw, 1);
  EXPECT_EQ(t.first_be, 0);
  EXPECT_EQ(t.last_be, 0);
  // A zero-length write, and a zero-length configuration read.
  EXPECT_DECODE(Bytes("40 00 00 01  01 00 00 00  00 00 10 00", 4), DXPU_TLP_OK);
  EXPECT_DECODE(Bytes("04 00 00 01  00 00 00 00  01 00 00 00"), DXPU_TLP_OK);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MRD, 0x1000, 1, 0, 0), DXPU_TLP_OK);
}

TEST(TlpRules, ReadWithProcessingHintHasNoByteEnables) {
  // MRd with TH: byte 7 is ST[7:0], so values that would break the byte-enable
  // rules are accepted (1 DW with ST 0x5A, 4 DW with ST 0x00, 3 DW with ST 0x35).
  EXPECT_DECODE(Bytes("00 01 00 01  01 00 00 5A  00 00 10 00"), DXPU_TLP_OK);
  EXPECT_DECODE(Bytes("00 01 00 04  01 00 00 00  00 00 10 00"), DXPU_TLP_OK);
  EXPECT_DECODE(Bytes("20 01 00 03  01 00 00 35  00 00 00 01  00 00 10 00"), DXPU_TLP_OK);
  // The 4 KiB rule still applies to it.
  EXPECT_DECODE(Bytes("00 01 00 02  01 00 00 5A  00 00 0F FC"), DXPU_TLP_ERR_CROSSES_4K);
  // A write with TH keeps its byte enables (ST is in the Tag byte instead).
  EXPECT_DECODE(Bytes("40 01 00 01  01 00 5A 1F  00 00 10 00", 4), DXPU_TLP_ERR_LAST_BE_1DW);
  EXPECT_DECODE(Bytes("40 01 00 02  01 00 5A 0F  00 00 10 00", 8), DXPU_TLP_ERR_LAST_BE_ZERO);
}

TEST(TlpRules, Crossing4KiB) {
  // 2 DW from 0xFFC touch 0xFFC..0x1003.
  EXPECT_DECODE(Bytes("00 00 00 02  01 00 00 FF  00 00 0F FC"), DXPU_TLP_ERR_CROSSES_4K);
  // Same in a 64-bit request.
  EXPECT_DECODE(Bytes("20 00 00 02  01 00 00 FF  00 00 00 01  00 00 0F FC"),
                DXPU_TLP_ERR_CROSSES_4K);
  // 1024 DW from a non-page-aligned address.
  EXPECT_DECODE(Bytes("40 00 00 00  01 00 00 FF  00 00 10 04", 4096), DXPU_TLP_ERR_CROSSES_4K);
  // With only byte 0 of the second DW enabled (Last BE 0001b) the DW range still crosses.
  EXPECT_DECODE(Bytes("00 00 00 02  01 00 00 1F  00 00 0F FC"), DXPU_TLP_ERR_CROSSES_4K);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MRD, 0xffc, 2, 0xf, 0xf), DXPU_TLP_ERR_CROSSES_4K);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MWR, 0x1'0000'0800ULL, 513, 0xf, 0xf), DXPU_TLP_ERR_CROSSES_4K);
}

TEST(TlpRules, EndingExactlyAt4KiBAccepted) {
  // 2 DW from 0xFF8 end at 0x1000 exactly; 1 DW at 0xFFC likewise.
  EXPECT_DECODE(Bytes("00 00 00 02  01 00 00 FF  00 00 0F F8"), DXPU_TLP_OK);
  EXPECT_DECODE(Bytes("00 00 00 01  01 00 00 0F  00 00 0F FC"), DXPU_TLP_OK);
  // 1024 DW from a page-aligned address.
  EXPECT_DECODE(Bytes("00 00 00 00  01 00 00 FF  00 00 20 00"), DXPU_TLP_OK);
  EXPECT_ENCODE(MemReq(DXPU_TLP_MWR, 0x1'0000'0800ULL, 512, 0xf, 0xf), DXPU_TLP_OK);
}

// ---- configuration requests ----

TEST(TlpRules, ConfigurationLength) {
  // CfgRd0 with Length 2, and with Length 0 (= 1024).
  EXPECT_DECODE(Bytes("04 00 00 02  00 00 00 FF  01 00 00 00"), DXPU_TLP_ERR_CFG_LENGTH);
  EXPECT_DECODE(Bytes("04 00 00 00  00 00 00 0F  01 00 00 00"), DXPU_TLP_ERR_CFG_LENGTH);
  // CfgWr1 with Length 2 and its 8 payload bytes.
  EXPECT_DECODE(Bytes("45 00 00 02  00 00 00 FF  01 00 00 10", 8), DXPU_TLP_ERR_CFG_LENGTH);
  dxpu_tlp t = CfgRd0();
  t.length_dw = 2;
  t.last_be = 0xf;
  EXPECT_ENCODE(t, DXPU_TLP_ERR_CFG_LENGTH);
}

TEST(TlpRules, ConfigurationTrafficClassAndAttributes) {
  // TC 1 (byte 1 = 0x10) and TC 7 (0x70).
  EXPECT_DECODE(Bytes("04 10 00 01  00 00 00 0F  01 00 00 00"), DXPU_TLP_ERR_CFG_ATTR);
  EXPECT_DECODE(Bytes("44 70 00 01  00 00 00 0F  01 00 00 00", 4), DXPU_TLP_ERR_CFG_ATTR);
  // Relaxed Ordering (byte 2 = 0x20) and No Snoop (byte 2 = 0x10).
  EXPECT_DECODE(Bytes("04 00 20 01  00 00 00 0F  01 00 00 00"), DXPU_TLP_ERR_CFG_ATTR);
  EXPECT_DECODE(Bytes("05 00 10 01  00 00 00 0F  01 00 00 00"), DXPU_TLP_ERR_CFG_ATTR);
  // ID-based Ordering (byte 1 = 0x04) is accepted.
  dxpu_tlp got{};
  ASSERT_EQ(Name(Decode(Bytes("04 04 00 01  00 00 00 0F  01 00 00 00"), &got)), Name(DXPU_TLP_OK));
  EXPECT_EQ(got.attr, DXPU_TLP_ATTR_IDO);

  dxpu_tlp t = CfgRd0();
  t.tc = 1;
  EXPECT_ENCODE(t, DXPU_TLP_ERR_CFG_ATTR);
  t.tc = 0;
  t.attr = DXPU_TLP_ATTR_RO;
  EXPECT_ENCODE(t, DXPU_TLP_ERR_CFG_ATTR);
  t.attr = DXPU_TLP_ATTR_NS;
  EXPECT_ENCODE(t, DXPU_TLP_ERR_CFG_ATTR);
  t.attr = DXPU_TLP_ATTR_IDO;
  EXPECT_ENCODE(t, DXPU_TLP_OK);
}

// ---- completions ----

TEST(TlpRules, ReservedCompletionStatus) {
  // byte 6 = Status << 5: 011b = 0x60, 101b = 0xA0, 110b = 0xC0, 111b = 0xE0. PCIe: a
  // completion with a reserved status is handled as Unsupported Request, so a Cpl decodes
  // as UR (its request ends) with every other field as sent.
  for (const char* hex :
       {"0A 00 00 00  01 00 60 04  00 00 00 00", "0A 00 00 00  01 00 A0 04  00 00 00 00",
        "0A 00 00 00  01 00 C0 04  00 00 00 00", "0A 00 00 00  01 00 E0 04  00 00 00 00",
        "0A 00 00 00  01 00 70 04  02 00 05 00"}) {
    dxpu_tlp t{};
    ASSERT_EQ(decode(Bytes(hex), &t), DXPU_TLP_OK) << hex;
    EXPECT_EQ(t.kind, DXPU_TLP_CPL);
    EXPECT_EQ(t.cpl_status, DXPU_TLP_CPL_UR) << hex;
    EXPECT_EQ(t.completer_id, 0x0100);
    EXPECT_EQ(t.byte_count, 4);
  }
  // The defined statuses decode as sent.
  for (uint8_t status : {0, 1, 2, 4}) {
    std::vector<uint8_t> b = Bytes("0A 00 00 00  01 00 00 04  00 00 00 00");
    b[6] = static_cast<uint8_t>(status << 5);
    dxpu_tlp t{};
    ASSERT_EQ(decode(b, &t), DXPU_TLP_OK);
    EXPECT_EQ(t.cpl_status, status);
  }
  // A CplD with a reserved status stays refused (data needs SC): it reports the status.
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 60 04  00 00 00 00", 4), DXPU_TLP_ERR_RESERVED_STATUS);
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 E0 04  00 00 00 00", 4), DXPU_TLP_ERR_RESERVED_STATUS);
  // Nothing here sends one: the encoder refuses a reserved status.
  for (uint8_t status : {3, 5, 6, 7}) {
    dxpu_tlp t{};
    t.kind = DXPU_TLP_CPL;
    t.completer_id = 0x0100;
    t.byte_count = 4;
    t.cpl_status = status;
    EXPECT_ENCODE(t, DXPU_TLP_ERR_RESERVED_STATUS);
  }
}

TEST(TlpRules, CompletionWithDataMustBeSuccessful) {
  // CplD 1 DW with UR (0x20), CRS (0x40), CA (0x80).
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 20 04  00 00 00 00", 4), DXPU_TLP_ERR_CPLD_STATUS);
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 40 04  00 00 00 00", 4), DXPU_TLP_ERR_CPLD_STATUS);
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 80 04  00 00 00 00", 4), DXPU_TLP_ERR_CPLD_STATUS);
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 00 04  00 00 00 00", 4), DXPU_TLP_OK);
  dxpu_tlp t = CplD(1, 4, 0);
  t.cpl_status = DXPU_TLP_CPL_UR;
  EXPECT_ENCODE(t, DXPU_TLP_ERR_CPLD_STATUS);
}

TEST(TlpRules, FinalCompletionLengthTooLong) {
  // Byte Count 4 at Lower Address 0 fits in 1 DW, yet Length is 2.
  EXPECT_DECODE(Bytes("4A 00 00 02  01 00 00 04  00 00 00 00", 8), DXPU_TLP_ERR_CPL_BYTE_COUNT);
  // Byte Count 5 at Lower Address 0x03 touches 2 DW (bytes 3..7), yet Length is 3.
  EXPECT_DECODE(Bytes("4A 00 00 03  01 00 00 05  00 00 00 03", 12), DXPU_TLP_ERR_CPL_BYTE_COUNT);
  // Byte Count 1 in a 2-DW completion.
  EXPECT_DECODE(Bytes("4A 00 00 02  01 00 00 01  00 00 00 00", 8), DXPU_TLP_ERR_CPL_BYTE_COUNT);
  // The exact lengths are accepted.
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 00 04  00 00 00 00", 4), DXPU_TLP_OK);
  EXPECT_DECODE(Bytes("4A 00 00 02  01 00 00 05  00 00 00 03", 8), DXPU_TLP_OK);
  EXPECT_ENCODE(CplD(2, 4, 0), DXPU_TLP_ERR_CPL_BYTE_COUNT);
  EXPECT_ENCODE(CplD(3, 5, 3), DXPU_TLP_ERR_CPL_BYTE_COUNT);
}

TEST(TlpRules, FinalCompletionLengthTooShort) {
  // With BCM (byte 6 = 0x10) Byte Count counts this completion only, so Byte
  // Count 8 needs 2 DW: Length 1 is too short.
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 10 08  00 00 00 00", 4), DXPU_TLP_ERR_CPL_BYTE_COUNT);
  // Lower Address 0x02 + Byte Count 4 touches 2 DW: Length 1 is too short.
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 10 04  00 00 00 02", 4), DXPU_TLP_ERR_CPL_BYTE_COUNT);
  EXPECT_DECODE(Bytes("4A 00 00 02  01 00 10 08  00 00 00 00", 8), DXPU_TLP_OK);
  dxpu_tlp t = CplD(1, 8, 0);
  t.flags = DXPU_TLP_F_BCM;
  EXPECT_ENCODE(t, DXPU_TLP_ERR_CPL_BYTE_COUNT);
  // Without BCM a completion shorter than Byte Count is read as a partial one
  // (more completions follow), so it must end on an RCB boundary instead.
  EXPECT_DECODE(Bytes("4A 00 00 01  01 00 00 08  00 00 00 00", 4), DXPU_TLP_ERR_CPL_SPLIT_ALIGN);
}

TEST(TlpRules, PartialCompletionMustEndOnRcb) {
  // Byte Count 64 but Length 2 from Lower Address 0: ends at 0x08, not at 64.
  EXPECT_DECODE(Bytes("4A 00 00 02  01 00 00 40  00 00 00 00", 8), DXPU_TLP_ERR_CPL_SPLIT_ALIGN);
  // From Lower Address 0x40, 4 DW end at 0x50.
  EXPECT_DECODE(Bytes("4A 00 00 04  01 00 00 64  00 00 00 40", 16), DXPU_TLP_ERR_CPL_SPLIT_ALIGN);
  // From Lower Address 0x20, 32 DW end at 0xA0 (a 32-byte boundary, not 64).
  EXPECT_DECODE(Bytes("4A 00 00 20  01 00 01 00  00 00 00 20", 128), DXPU_TLP_ERR_CPL_SPLIT_ALIGN);
  EXPECT_ENCODE(CplD(2, 64, 0), DXPU_TLP_ERR_CPL_SPLIT_ALIGN);
}

TEST(TlpRules, PartialCompletionOnRcbAccepted) {
  // Length 16 (64 bytes) from 0, Byte Count 128: ends at 0x40.
  EXPECT_DECODE(Bytes("4A 00 00 10  01 00 00 80  00 00 00 00", 64), DXPU_TLP_OK);
  // From Lower Address 0x30, 4 DW end at 0x40; also with a byte offset (0x32).
  EXPECT_DECODE(Bytes("4A 00 00 04  01 00 00 64  00 00 00 30", 16), DXPU_TLP_OK);
  EXPECT_DECODE(Bytes("4A 00 00 04  01 00 00 64  00 00 00 32", 16), DXPU_TLP_OK);
  // From Lower Address 0x60, 8 DW end at 0x80 (a 128-byte RCB boundary too).
  EXPECT_DECODE(Bytes("4A 00 00 08  01 00 01 00  00 00 00 60", 32), DXPU_TLP_OK);
  EXPECT_ENCODE(CplD(16, 128, 0), DXPU_TLP_OK);
}

// ---- messages ----

TEST(TlpRules, ReservedMessageRouting) {
  // Type 10110b (0x16) and 10111b (0x17) with Fmt 001b: 0x36, 0x37; MsgD 0x76.
  EXPECT_DECODE(Bytes("36 00 00 00  01 00 00 50  00 00 00 00  00 00 00 00"),
                DXPU_TLP_ERR_RESERVED_ROUTING);
  EXPECT_DECODE(Bytes("37 00 00 00  01 00 00 7F  00 00 00 00  00 00 00 00"),
                DXPU_TLP_ERR_RESERVED_ROUTING);
  EXPECT_DECODE(Bytes("76 00 00 01  01 00 00 50  00 00 00 00  00 00 00 00", 4),
                DXPU_TLP_ERR_RESERVED_ROUTING);
  EXPECT_ENCODE(Msg(0x50, 6), DXPU_TLP_ERR_RESERVED_ROUTING);
  EXPECT_ENCODE(Msg(0x50, 7), DXPU_TLP_ERR_RESERVED_ROUTING);
  // Other codes are carried opaquely over every defined routing.
  for (uint8_t r = 0; r <= DXPU_TLP_ROUTE_GATHER; ++r) EXPECT_ENCODE(Msg(0x50, r), DXPU_TLP_OK);
}

TEST(TlpRules, IntxMessageForm) {
  // Assert_INTA as MsgD (Fmt 011b, Type 10100b = 0x74) with 1 DW of data.
  EXPECT_DECODE(Bytes("74 00 00 01  01 00 00 20  00 00 00 00  00 00 00 00", 4),
                DXPU_TLP_ERR_MSG_FORM);
  // Assert_INTA routed to the RC (0x30), by ID (0x32), broadcast (0x33).
  EXPECT_DECODE(Bytes("30 00 00 00  01 00 00 20  00 00 00 00  00 00 00 00"), DXPU_TLP_ERR_MSG_FORM);
  EXPECT_DECODE(Bytes("32 00 00 00  01 00 00 20  00 00 00 00  00 00 00 00"), DXPU_TLP_ERR_MSG_FORM);
  EXPECT_DECODE(Bytes("33 00 00 00  01 00 00 27  00 00 00 00  00 00 00 00"), DXPU_TLP_ERR_MSG_FORM);
  // Deassert_INTD with TC 1 (byte 1 = 0x10).
  EXPECT_DECODE(Bytes("34 10 00 00  01 00 00 27  00 00 00 00  00 00 00 00"), DXPU_TLP_ERR_MSG_FORM);
  // Local, TC 0, no data: accepted.
  EXPECT_DECODE(Bytes("34 00 00 00  01 00 00 27  00 00 00 00  00 00 00 00"), DXPU_TLP_OK);

  EXPECT_ENCODE(Msg(DXPU_TLP_MSG_ASSERT_INTB, DXPU_TLP_ROUTE_TO_RC), DXPU_TLP_ERR_MSG_FORM);
  dxpu_tlp t = Msg(DXPU_TLP_MSG_ASSERT_INTC, DXPU_TLP_ROUTE_LOCAL);
  t.tc = 7;
  EXPECT_ENCODE(t, DXPU_TLP_ERR_MSG_FORM);
  t.tc = 0;
  t.kind = DXPU_TLP_MSGD;
  t.length_dw = 1;
  t.payload = kZeros;
  EXPECT_ENCODE(t, DXPU_TLP_ERR_MSG_FORM);
}

TEST(TlpRules, VendorMessageRouting) {
  // Vendor_Defined Type 1 (0x7F) and Type 0 (0x7E) routed by address (0x31).
  EXPECT_DECODE(Bytes("31 00 00 00  01 00 00 7F  00 00 00 00  00 00 10 00"), DXPU_TLP_ERR_MSG_FORM);
  EXPECT_DECODE(Bytes("71 00 00 01  01 00 00 7E  00 00 00 00  00 00 10 00", 4),
                DXPU_TLP_ERR_MSG_FORM);
  // Gathered and routed to the RC (101b, 0x35) is for PME_TO_Ack only.
  EXPECT_DECODE(Bytes("35 00 00 00  01 00 00 7F  00 00 1A F4  00 00 00 00"), DXPU_TLP_ERR_MSG_FORM);
  EXPECT_ENCODE(Msg(DXPU_TLP_MSG_VENDOR_TYPE1, DXPU_TLP_ROUTE_BY_ADDR), DXPU_TLP_ERR_MSG_FORM);
  // To the RC, by ID, broadcast and local are accepted.
  for (uint8_t b0 : {0x30, 0x32, 0x33, 0x34}) {
    auto b = Bytes("30 00 00 00  01 00 00 7F  02 00 1A F4  00 00 00 00");
    b[0] = b0;
    EXPECT_DECODE(b, DXPU_TLP_OK);
  }
}

// ---- encoder-only and helper errors ----

TEST(TlpRules, EncodeFieldOutOfRange) {
  const dxpu_tlp ok = MemReq(DXPU_TLP_MRD, 0x1000, 1, 0xf, 0);
  ASSERT_EQ(Name(encode_err(ok)), Name(DXPU_TLP_OK));
  auto expect_range = [&](const char* what, auto mutate) {
    dxpu_tlp t = ok;
    mutate(t);
    EXPECT_EQ(Name(encode_err(t)), Name(DXPU_TLP_ERR_FIELD_RANGE)) << what;
    EXPECT_EQ(Name(dxpu_tlp_validate(&t)), Name(DXPU_TLP_ERR_FIELD_RANGE)) << what;
  };
  expect_range("kind invalid", [](dxpu_tlp& t) { t.kind = DXPU_TLP_INVALID; });
  expect_range("kind past the end", [](dxpu_tlp& t) { t.kind = DXPU_TLP_KIND_COUNT; });
  expect_range("tc 8", [](dxpu_tlp& t) { t.tc = 8; });
  expect_range("attr 8", [](dxpu_tlp& t) { t.attr = 8; });
  expect_range("tag 0x400", [](dxpu_tlp& t) { t.tag = 0x400; });
  expect_range("first_be 0x10", [](dxpu_tlp& t) { t.first_be = 0x10; });
  expect_range("length 0", [](dxpu_tlp& t) { t.length_dw = 0; });
  expect_range("length 1025", [](dxpu_tlp& t) { t.length_dw = 1025; });
  expect_range("address not DW-aligned", [](dxpu_tlp& t) { t.addr = 0x1002; });
  expect_range("payload on a read", [](dxpu_tlp& t) { t.payload = kZeros; });
  expect_range("digest without TD", [](dxpu_tlp& t) { t.digest = 1; });
  expect_range("PH without TH", [](dxpu_tlp& t) { t.ph = 1; });
  expect_range("ST without TH", [](dxpu_tlp& t) { t.st = 1; });
  expect_range("read with TH and explicit byte enables", [](dxpu_tlp& t) {
    t.flags = DXPU_TLP_F_TH;
    t.first_be = 0x3;
  });
  expect_range("unknown flag", [](dxpu_tlp& t) { t.flags = 0x20; });
  expect_range("BCM on a request", [](dxpu_tlp& t) { t.flags = DXPU_TLP_F_BCM; });
  expect_range("cfg_target on a memory request", [](dxpu_tlp& t) { t.cfg_target = 1; });
  expect_range("msg_code on a memory request", [](dxpu_tlp& t) { t.msg_code = 0x20; });
  expect_range("byte_count on a request", [](dxpu_tlp& t) { t.byte_count = 4; });

  dxpu_tlp mwr = MemReq(DXPU_TLP_MWR, 0x1000, 1, 0xf, 0);
  mwr.payload = nullptr;
  EXPECT_ENCODE(mwr, DXPU_TLP_ERR_FIELD_RANGE);
  mwr = MemReq(DXPU_TLP_MWR, 0x1000, 1, 0xf, 0);
  mwr.flags = DXPU_TLP_F_TH;
  mwr.tag = 0x3c;  // with TH, Tag[7:0] is ST[7:0]: the tag's low byte must be zero
  EXPECT_ENCODE(mwr, DXPU_TLP_ERR_FIELD_RANGE);
  mwr.st = 0x3c;
  mwr.tag = 0;
  EXPECT_ENCODE(mwr, DXPU_TLP_OK);
  dxpu_tlp cfg = CfgRd0();
  cfg.cfg_reg = 0x102;  // Register Number has no bits 1:0
  EXPECT_ENCODE(cfg, DXPU_TLP_ERR_FIELD_RANGE);
  cfg.cfg_reg = 0x1000;  // past Ext Register Number 0xF
  EXPECT_ENCODE(cfg, DXPU_TLP_ERR_FIELD_RANGE);
  cfg = CfgRd0();
  cfg.st = 1;  // Steering Tags are for memory requests
  EXPECT_ENCODE(cfg, DXPU_TLP_ERR_FIELD_RANGE);
  dxpu_tlp cpld = CplD(1, 4, 0);
  cpld.byte_count = 0;
  EXPECT_ENCODE(cpld, DXPU_TLP_ERR_FIELD_RANGE);
  cpld.byte_count = 4097;
  EXPECT_ENCODE(cpld, DXPU_TLP_ERR_FIELD_RANGE);
  cpld = CplD(1, 4, 0x80);  // Lower Address is 7 bits
  EXPECT_ENCODE(cpld, DXPU_TLP_ERR_FIELD_RANGE);
  dxpu_tlp msg = Msg(DXPU_TLP_MSG_ASSERT_INTA, DXPU_TLP_ROUTE_LOCAL);
  msg.length_dw = 1;  // a Msg without data has no Length
  EXPECT_ENCODE(msg, DXPU_TLP_ERR_FIELD_RANGE);
}

TEST(TlpRules, EncodeNoSpace) {
  const dxpu_tlp t = MemReq(DXPU_TLP_MWR, 0x1000, 2, 0xf, 0xf);
  ASSERT_EQ(dxpu_tlp_wire_len(&t), 20u);
  std::vector<uint8_t> buf(20, 0xee);
  size_t len = 0;
  for (size_t cap : {0, 4, 12, 19}) {
    EXPECT_EQ(Name(dxpu_tlp_encode(&t, buf.data(), cap, &len)), Name(DXPU_TLP_ERR_NO_SPACE));
    EXPECT_EQ(buf, std::vector<uint8_t>(20, 0xee)) << "nothing is written, cap " << cap;
  }
  EXPECT_EQ(Name(dxpu_tlp_encode(&t, buf.data(), 20, &len)), Name(DXPU_TLP_OK));
  EXPECT_EQ(len, 20u);
  // A digest needs room too.
  dxpu_tlp td = MemReq(DXPU_TLP_MRD, 0x1000, 1, 0xf, 0);
  td.flags = DXPU_TLP_F_TD;
  EXPECT_EQ(Name(dxpu_tlp_encode(&td, buf.data(), 12, &len)), Name(DXPU_TLP_ERR_NO_SPACE));
  EXPECT_EQ(Name(dxpu_tlp_encode(&td, buf.data(), 16, &len)), Name(DXPU_TLP_OK));
}

TEST(TlpRules, RequestSplitBadParameters) {
  dxpu_tlp_req_split s{};
  for (uint32_t max_bytes : {0u, 64u, 100u, 129u, 3000u, 8192u}) {
    EXPECT_EQ(Name(dxpu_tlp_req_split_init(&s, 0x1000, 256, max_bytes)),
              Name(DXPU_TLP_ERR_BAD_PARAM))
        << max_bytes;
  }
  EXPECT_EQ(Name(dxpu_tlp_req_split_init(&s, 0x1000, 0, 256)), Name(DXPU_TLP_ERR_BAD_PARAM));
  // A range that wraps past the top of the address space.
  EXPECT_EQ(Name(dxpu_tlp_req_split_init(&s, ~0ULL - 0xff, 0x100, 256)),
            Name(DXPU_TLP_ERR_BAD_PARAM));
  EXPECT_EQ(Name(dxpu_tlp_req_split_init(&s, ~0ULL - 0xff, 0xff, 256)), Name(DXPU_TLP_OK));
  EXPECT_EQ(Name(dxpu_tlp_req_split_init(&s, 0x1000, 256, 128)), Name(DXPU_TLP_OK));
  EXPECT_EQ(Name(dxpu_tlp_req_split_init(&s, 0x1000, 256, 4096)), Name(DXPU_TLP_OK));
}

TEST(TlpRules, CompletionSplitBadParameters) {
  dxpu_tlp_cpl_split s{};
  // Read Completion Boundary: 64 or 128 only.
  for (uint32_t rcb : {0u, 32u, 96u, 256u}) {
    EXPECT_EQ(Name(dxpu_tlp_cpl_split_init(&s, 0x1000, 16, 0xf, 0xf, rcb, 256)),
              Name(DXPU_TLP_ERR_BAD_PARAM))
        << rcb;
  }
  // Max Payload Size: power of two 128..4096.
  for (uint32_t mps : {0u, 64u, 192u, 8192u}) {
    EXPECT_EQ(Name(dxpu_tlp_cpl_split_init(&s, 0x1000, 16, 0xf, 0xf, 64, mps)),
              Name(DXPU_TLP_ERR_BAD_PARAM))
        << mps;
  }
  // The request itself must be a valid read.
  EXPECT_EQ(Name(dxpu_tlp_cpl_split_init(&s, 0xffc, 2, 0xf, 0xf, 64, 256)),
            Name(DXPU_TLP_ERR_BAD_PARAM));  // crosses 4 KiB
  EXPECT_EQ(Name(dxpu_tlp_cpl_split_init(&s, 0x1000, 0, 0xf, 0xf, 64, 256)),
            Name(DXPU_TLP_ERR_BAD_PARAM));  // Length 0
  EXPECT_EQ(Name(dxpu_tlp_cpl_split_init(&s, 0x1000, 2, 0x0, 0xf, 64, 256)),
            Name(DXPU_TLP_ERR_BAD_PARAM));  // First BE 0 on 2 DW
  EXPECT_EQ(Name(dxpu_tlp_cpl_split_init(&s, 0x1000, 1, 0xf, 0xf, 64, 256)),
            Name(DXPU_TLP_ERR_BAD_PARAM));  // Last BE on 1 DW
  EXPECT_EQ(Name(dxpu_tlp_cpl_split_init(&s, 0x1000, 16, 0xf, 0xf, 64, 128)), Name(DXPU_TLP_OK));
  EXPECT_EQ(Name(dxpu_tlp_cpl_split_init(&s, 0x1000, 16, 0xf, 0xf, 128, 4096)), Name(DXPU_TLP_OK));
}

// ---- every code, once more, in one place ----

// One canonical way to provoke each error code.
dxpu_tlp_err ProvokeOne(dxpu_tlp_err code) {
  dxpu_tlp_req_split rs{};
  std::vector<uint8_t> buf(64);
  size_t len = 0;
  switch (code) {
    case DXPU_TLP_OK:
      return Decode(Bytes(kMRd3));
    case DXPU_TLP_ERR_SHORT_HEADER:
      return Decode(Bytes("00 00 00"));
    case DXPU_TLP_ERR_SHORT_PAYLOAD:
      return Decode(Bytes(kMWr3Len2, 4));
    case DXPU_TLP_ERR_LENGTH_MISMATCH:
      return Decode(Bytes(kMRd3, 4));
    case DXPU_TLP_ERR_RESERVED_FMT:
      return Decode(WithByte0(0xa0));
    case DXPU_TLP_ERR_RESERVED_TYPE:
      return Decode(WithByte0(0x03));
    case DXPU_TLP_ERR_UNSUPPORTED:
      return Decode(WithByte0(0x02));
    case DXPU_TLP_ERR_RESERVED_AT:
      return Decode(Bytes("00 00 0C 01  01 00 00 0F  00 00 10 00"));
    case DXPU_TLP_ERR_ADDR64_BELOW_4G:
      return Decode(Bytes("20 00 00 01  01 00 00 0F  00 00 00 00  00 00 10 00"));
    case DXPU_TLP_ERR_LAST_BE_1DW:
      return Decode(Bytes("00 00 00 01  01 00 00 1F  00 00 10 00"));
    case DXPU_TLP_ERR_FIRST_BE_ZERO:
      return Decode(Bytes("00 00 00 02  01 00 00 F0  00 00 10 00"));
    case DXPU_TLP_ERR_LAST_BE_ZERO:
      return Decode(Bytes("00 00 00 02  01 00 00 0F  00 00 10 00"));
    case DXPU_TLP_ERR_BE_NONCONTIG:
      return Decode(Bytes("00 00 00 03  01 00 00 F7  00 00 10 00"));
    case DXPU_TLP_ERR_CROSSES_4K:
      return Decode(Bytes("00 00 00 02  01 00 00 FF  00 00 0F FC"));
    case DXPU_TLP_ERR_CFG_LENGTH:
      return Decode(Bytes("04 00 00 02  00 00 00 FF  01 00 00 00"));
    case DXPU_TLP_ERR_CFG_ATTR:
      return Decode(Bytes("04 10 00 01  00 00 00 0F  01 00 00 00"));
    case DXPU_TLP_ERR_RESERVED_STATUS:  // a Cpl's reserved status decodes as UR; a CplD's not
      return Decode(Bytes("4A 00 00 01  01 00 60 04  00 00 00 00", 4));
    case DXPU_TLP_ERR_CPLD_STATUS:
      return Decode(Bytes("4A 00 00 01  01 00 20 04  00 00 00 00", 4));
    case DXPU_TLP_ERR_CPL_BYTE_COUNT:
      return Decode(Bytes("4A 00 00 02  01 00 00 04  00 00 00 00", 8));
    case DXPU_TLP_ERR_CPL_SPLIT_ALIGN:
      return Decode(Bytes("4A 00 00 02  01 00 00 40  00 00 00 00", 8));
    case DXPU_TLP_ERR_RESERVED_ROUTING:
      return Decode(Bytes("36 00 00 00  01 00 00 50  00 00 00 00  00 00 00 00"));
    case DXPU_TLP_ERR_MSG_FORM:
      return Decode(Bytes("30 00 00 00  01 00 00 20  00 00 00 00  00 00 00 00"));
    case DXPU_TLP_ERR_FIELD_RANGE: {
      dxpu_tlp t = MemReq(DXPU_TLP_MRD, 0x1000, 1, 0xf, 0);
      t.tc = 8;
      return encode_err(t);
    }
    case DXPU_TLP_ERR_NO_SPACE: {
      const dxpu_tlp t = MemReq(DXPU_TLP_MRD, 0x1000, 1, 0xf, 0);
      return dxpu_tlp_encode(&t, buf.data(), 11, &len);
    }
    case DXPU_TLP_ERR_BAD_PARAM:
      return dxpu_tlp_req_split_init(&rs, 0x1000, 256, 100);
    case DXPU_TLP_ERR_COUNT:
      break;
  }
  return DXPU_TLP_ERR_COUNT;  // no vector for this code
}

TEST(TlpRules, EveryErrorCodeHasAVector) {
  for (int e = DXPU_TLP_OK; e < DXPU_TLP_ERR_COUNT; ++e) {
    const auto code = static_cast<dxpu_tlp_err>(e);
    EXPECT_EQ(Name(ProvokeOne(code)), Name(code)) << "code " << e;
  }
}

TEST(TlpRules, ErrorNamesAreDistinct) {
  std::set<std::string> names;
  for (int e = DXPU_TLP_OK; e < DXPU_TLP_ERR_COUNT; ++e) {
    const auto code = static_cast<dxpu_tlp_err>(e);
    const char* name = dxpu_tlp_err_name(code);
    const char* text = dxpu_tlp_err_text(code);
    ASSERT_NE(name, nullptr) << e;
    ASSERT_NE(text, nullptr) << e;
    EXPECT_STRNE(name, "unknown") << e;
    EXPECT_STRNE(name, "") << e;
    EXPECT_STRNE(text, "unknown error") << e;
    EXPECT_STRNE(text, "") << e;
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name << " for code " << e;
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(DXPU_TLP_ERR_COUNT));
  EXPECT_STREQ(dxpu_tlp_err_name(DXPU_TLP_OK), "ok");
  EXPECT_STREQ(dxpu_tlp_err_name(DXPU_TLP_ERR_SHORT_HEADER), "short-header");
  EXPECT_STREQ(dxpu_tlp_err_name(DXPU_TLP_ERR_COUNT), "unknown");
  EXPECT_STREQ(dxpu_tlp_err_text(DXPU_TLP_ERR_COUNT), "unknown error");
}

#undef EXPECT_DECODE
#undef EXPECT_ENCODE

}  // namespace
}  // namespace dxpu::test
