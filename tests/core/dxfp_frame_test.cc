// DxFP frame parser and writer: a frame laid out by hand from docs/protocol.md
// section 4, writer/parser round trips, packing to the MTU, every drop reason,
// and random and mutated frames (seed printed; DXPU_SEED replays).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "core/crc32c.h"
#include "core/dxfp_frame.h"
#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

using Bytes = std::vector<uint8_t>;

// Appends the CRC32C of everything so far, most significant byte first.
void seal(Bytes& b) {
  uint32_t crc = dxpu_crc32c(0, b.data(), b.size());
  b.push_back(static_cast<uint8_t>(crc >> 24));
  b.push_back(static_cast<uint8_t>(crc >> 16));
  b.push_back(static_cast<uint8_t>(crc >> 8));
  b.push_back(static_cast<uint8_t>(crc));
}

// A DATA frame carrying one TLP record, laid out by hand:
//   +0 Version 01, Type 03 (DATA), Flags 01 (ACK_REQ), reserved 00
//   +4 Length 0x0034 = 32 header + 4 record header + 12 TLP + 4 CRC = 52, Record count 0x0001
//   +8 dst session 0x11111111, +12 src session 0x22222222
//   +16 dst epoch 0xaaaaaaaa, +20 src epoch 0xbbbbbbbb, +24 seq 7, +28 ack 0x100
//   +32 record: type 01 (TLP), reserved 00, body length 0x000c
//   +36 MRd 3DW, Length 1, requester 01:00.0, tag 7, First BE 1111b, address 0xf0000010
//   +48 CRC32C of bytes 0..47
// The header of hand_frame().
dxfp_header hand_header() {
  dxfp_header h{};
  h.type = DXFP_DATA;
  h.flags = DXFP_F_ACK_REQ;
  h.dst_session = 0x11111111;
  h.src_session = 0x22222222;
  h.dst_epoch = 0xaaaaaaaa;
  h.src_epoch = 0xbbbbbbbb;
  h.seq = 7;
  h.ack = 0x100;
  return h;
}

Bytes hand_frame() {
  Bytes b = from_hex(
      "01 03 01 00  00 34 00 01  11 11 11 11  22 22 22 22"
      "aa aa aa aa  bb bb bb bb  00 00 00 07  00 00 01 00"
      "01 00 00 0c  00 00 00 01  01 00 07 0f  f0 00 00 10");
  seal(b);
  return b;
}

TEST(DxfpFrame, ParsesHandBuiltDataFrame) {
  Bytes b = hand_frame();
  ASSERT_EQ(b.size(), 52u);
  dxfp_frame f{};
  ASSERT_EQ(dxfp_frame_parse(b.data(), b.size(), DXFP_MAX_FRAME, &f), DXFP_OK);
  EXPECT_EQ(f.hdr.version, 1);
  EXPECT_EQ(f.hdr.type, DXFP_DATA);
  EXPECT_EQ(f.hdr.flags, DXFP_F_ACK_REQ);
  EXPECT_EQ(f.hdr.length, 52);
  EXPECT_EQ(f.hdr.nrec, 1);
  EXPECT_EQ(f.hdr.dst_session, 0x11111111u);
  EXPECT_EQ(f.hdr.src_session, 0x22222222u);
  EXPECT_EQ(f.hdr.dst_epoch, 0xaaaaaaaau);
  EXPECT_EQ(f.hdr.src_epoch, 0xbbbbbbbbu);
  EXPECT_EQ(f.hdr.seq, 7u);
  EXPECT_EQ(f.hdr.ack, 0x100u);
  dxfp_record_iter it{};
  dxfp_record r{};
  dxfp_record_iter_init(&it, &f);
  ASSERT_TRUE(dxfp_record_next(&it, &r));
  EXPECT_EQ(r.type, DXFP_REC_TLP);
  ASSERT_EQ(r.len, 12);
  dxpu_tlp t{};
  ASSERT_EQ(dxpu_tlp_decode(r.body, r.len, &t), DXPU_TLP_OK);
  EXPECT_EQ(t.kind, DXPU_TLP_MRD);
  EXPECT_EQ(t.addr, 0xf0000010u);
  EXPECT_FALSE(dxfp_record_next(&it, &r));
}

TEST(DxfpFrame, WriterProducesTheHandBuiltFrame) {
  const dxfp_header h = hand_header();
  Bytes buf(DXFP_MAX_FRAME);
  dxfp_writer w{};
  ASSERT_EQ(dxfp_writer_init(&w, buf.data(), buf.size(), &h), DXFP_OK);
  dxpu_tlp t{};
  ASSERT_EQ(decode(from_hex("00 00 00 01  01 00 07 0f  f0 00 00 10"), &t), DXPU_TLP_OK);
  ASSERT_EQ(dxfp_writer_add_tlp(&w, &t), DXFP_OK);
  size_t len = 0;
  dxfp_writer_finish(&w, &len);
  buf.resize(len);
  EXPECT_EQ(to_hex(buf), to_hex(hand_frame()));
}

TEST(DxfpFrame, FinishPiecesSealsRecordsOutsideTheBufferAsOneFrame) {
  // The hand-built frame again, its TLP record handed over as a piece of its own.
  const dxfp_header h = hand_header();
  Bytes head(DXFP_HDR_SIZE + DXFP_CRC_SIZE);
  dxfp_writer w{};
  ASSERT_EQ(dxfp_writer_init(&w, head.data(), head.size(), &h), DXFP_OK);
  const Bytes record = from_hex("01 00 00 0c  00 00 00 01  01 00 07 0f  f0 00 00 10");
  const dxfp_piece piece{record.data(), record.size()};
  uint8_t crc[DXFP_CRC_SIZE] = {};
  size_t len = 0;
  dxfp_writer_finish_pieces(&w, &piece, 1, 1, crc, &len);
  EXPECT_EQ(len, 52u);
  Bytes frame(len);
  std::memcpy(frame.data(), head.data(), DXFP_HDR_SIZE);
  std::memcpy(frame.data() + DXFP_HDR_SIZE, record.data(), record.size());
  std::memcpy(frame.data() + DXFP_HDR_SIZE + record.size(), crc, DXFP_CRC_SIZE);
  EXPECT_EQ(to_hex(frame), to_hex(hand_frame()));
}

TEST(DxfpFrame, ControlRecordsRoundTrip) {
  Bytes buf(1500);
  dxfp_header h{};
  h.type = DXFP_WELCOME;
  h.dst_session = 5;
  h.src_session = 9;
  dxfp_writer w{};
  ASSERT_EQ(dxfp_writer_init(&w, buf.data(), buf.size(), &h), DXFP_OK);
  dxfp_hello hello{1, 1, 0, 9000, 0x0123456789abcdefULL, 4096};
  dxfp_credits cr{{1, 2, 3}, {0xfffffff0u, 5, 0x80000000u}};
  ASSERT_EQ(dxfp_writer_add_hello(&w, &hello), DXFP_OK);
  ASSERT_EQ(dxfp_writer_add_credits(&w, &cr), DXFP_OK);
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MSG;
  t.msg_code = DXPU_TLP_MSG_ASSERT_INTA;
  t.msg_routing = DXPU_TLP_ROUTE_LOCAL;
  EXPECT_EQ(dxfp_writer_add_tlp(&w, &t), DXFP_ERR_BAD_TYPE);  // TLPs only in DATA
  dxfp_close cl{DXFP_CLOSE_SHUTDOWN, 1, 1};
  EXPECT_EQ(dxfp_writer_add_close(&w, &cl), DXFP_ERR_BAD_TYPE);  // CLOSE only in CLOSE
  size_t len = 0;
  dxfp_writer_finish(&w, &len);
  ASSERT_EQ(len, 32u + 28 + 28 + 4);

  dxfp_frame f{};
  ASSERT_EQ(dxfp_frame_parse(buf.data(), len, 1500, &f), DXFP_OK);
  dxfp_record_iter it{};
  dxfp_record r{};
  dxfp_record_iter_init(&it, &f);
  ASSERT_TRUE(dxfp_record_next(&it, &r));
  ASSERT_EQ(r.type, DXFP_REC_HELLO);
  dxfp_hello h2{};
  dxfp_hello_read(r.body, &h2);
  EXPECT_EQ(h2.max_frame, 9000);
  EXPECT_EQ(h2.node_id, 0x0123456789abcdefULL);
  EXPECT_EQ(h2.replay_window, 4096u);
  ASSERT_TRUE(dxfp_record_next(&it, &r));
  ASSERT_EQ(r.type, DXFP_REC_CREDIT);
  dxfp_credits c2{};
  dxfp_credits_read(r.body, &c2);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(c2.hdr[i], cr.hdr[i]);
    EXPECT_EQ(c2.data[i], cr.data[i]);
  }
  EXPECT_FALSE(dxfp_record_next(&it, &r));

  // CLOSE carries its reason and the versions spoken.
  dxfp_header hc{};
  hc.type = DXFP_CLOSE;
  ASSERT_EQ(dxfp_writer_init(&w, buf.data(), buf.size(), &hc), DXFP_OK);
  ASSERT_EQ(dxfp_writer_add_close(&w, &cl), DXFP_OK);
  dxfp_writer_finish(&w, &len);
  ASSERT_EQ(dxfp_frame_parse(buf.data(), len, 1500, &f), DXFP_OK);
  dxfp_record_iter_init(&it, &f);
  ASSERT_TRUE(dxfp_record_next(&it, &r));
  dxfp_close c3{};
  dxfp_close_read(r.body, &c3);
  EXPECT_EQ(c3.reason, DXFP_CLOSE_SHUTDOWN);
  EXPECT_EQ(c3.version_max, 1);
}

// 256-byte MWrs take 4 + 12 + 256 = 272 bytes each: (1500 - 36) / 272 = 5 fit
// in a 1500-byte frame and (9000 - 36) / 272 = 32 in a 9000-byte one.
TEST(DxfpFrame, PacksTlpsUpToTheFrameSize) {
  std::vector<uint8_t> payload(256, 0x5a);
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MWR;
  t.addr = 0x10000;
  t.length_dw = 64;
  t.first_be = 0xf;
  t.last_be = 0xf;
  t.payload = payload.data();
  for (auto [mtu, want] : {std::pair<size_t, int>{1500, 5}, {9000, 32}}) {
    Bytes buf(mtu);
    dxfp_header h{};
    h.type = DXFP_DATA;
    dxfp_writer w{};
    ASSERT_EQ(dxfp_writer_init(&w, buf.data(), buf.size(), &h), DXFP_OK);
    int n = 0;
    while (dxfp_writer_tlp_room(&w) >= dxpu_tlp_wire_len(&t)) {
      ASSERT_EQ(dxfp_writer_add_tlp(&w, &t), DXFP_OK);
      ++n;
    }
    EXPECT_EQ(dxfp_writer_add_tlp(&w, &t), DXFP_ERR_NO_SPACE);
    EXPECT_EQ(n, want) << "mtu " << mtu;
    size_t len = 0;
    dxfp_writer_finish(&w, &len);
    EXPECT_LE(len, mtu);
    dxfp_frame f{};
    EXPECT_EQ(dxfp_frame_parse(buf.data(), len, static_cast<uint32_t>(mtu), &f), DXFP_OK);
    EXPECT_EQ(f.hdr.nrec, want);
  }
}

dxfp_err parse(const Bytes& b, uint32_t max = DXFP_MAX_FRAME) {
  dxfp_frame f{};
  return dxfp_frame_parse(b.data(), b.size(), max, &f);
}

// Rewrites the CRC after an edit, so the check under test is the one reached.
Bytes resealed(Bytes b) {
  b.resize(b.size() - 4);
  seal(b);
  return b;
}

TEST(DxfpFrame, EveryDropReason) {
  Bytes good = hand_frame();
  EXPECT_EQ(parse(Bytes(good.begin(), good.begin() + 35)), DXFP_ERR_TRUNCATED);

  Bytes b = good;
  b.push_back(0);  // Ethernet padding after Length is ignored
  b.push_back(0);
  EXPECT_EQ(parse(b), DXFP_OK);

  b = good;
  b[5] = 56;  // Length beyond the bytes received
  EXPECT_EQ(parse(b), DXFP_ERR_TRUNCATED);
  b[5] = 32;  // below the minimum frame
  EXPECT_EQ(parse(b), DXFP_ERR_BAD_LENGTH);
  b[5] = 50;  // not a multiple of 4
  EXPECT_EQ(parse(b), DXFP_ERR_BAD_LENGTH);
  EXPECT_EQ(parse(good, 48), DXFP_ERR_BAD_LENGTH);  // above the session's max_frame

  b = good;
  b[40] ^= 0x01;  // one bit of the TLP
  EXPECT_EQ(parse(b), DXFP_ERR_BAD_CRC);
  b = good;
  b[51] ^= 0x80;  // one bit of the CRC itself
  EXPECT_EQ(parse(b), DXFP_ERR_BAD_CRC);

  b = good;
  b[0] = 2;
  b = resealed(b);
  dxfp_frame f{};
  EXPECT_EQ(dxfp_frame_parse(b.data(), b.size(), DXFP_MAX_FRAME, &f), DXFP_ERR_BAD_VERSION);
  EXPECT_EQ(f.hdr.version, 2);
  EXPECT_EQ(f.hdr.type, DXFP_DATA);

  for (uint8_t type : {0, 6, 0xff}) {  // 5 is COOKIE (docs/protocol.md 4.12)
    b = good;
    b[1] = type;
    EXPECT_EQ(parse(resealed(b)), DXFP_ERR_BAD_TYPE) << int(type);
  }

  struct Edit {
    size_t at;
    uint8_t value;
    const char* what;
  };
  const Edit malformed[] = {
      {3, 0x01, "reserved header byte"},
      {2, 0x04, "unknown flag"},
      {7, 0x02, "record count too high"},
      {7, 0x00, "record count too low"},
      {33, 0x01, "reserved record byte"},
      {35, 0x10, "record runs past the CRC"},
      {35, 0x08, "records end before the CRC"},
      {39, 0x02, "TLP record that does not decode (Length 2 in 12 bytes)"},
      {32, 0x02, "CREDIT record with a 12-byte body"},
  };
  for (const Edit& e : malformed) {
    b = good;
    b[e.at] = e.value;
    EXPECT_EQ(parse(resealed(b)), DXFP_ERR_MALFORMED) << e.what;
  }

  b = good;
  b[1] = DXFP_HELLO;  // a TLP record in a HELLO
  EXPECT_EQ(parse(resealed(b)), DXFP_ERR_MALFORMED);

  b = good;
  b[32] = 0x7f;  // an unknown record type is skipped
  EXPECT_EQ(parse(resealed(b)), DXFP_OK);
}

TEST(DxfpFrame, NonZeroPaddingIsMalformed) {
  // An unknown record with a 5-byte body: padded to 8; padding must be zero.
  Bytes b = from_hex(
      "01 03 00 00  00 30 00 01  00 00 00 01  00 00 00 02"
      "00 00 00 03  00 00 00 04  00 00 00 00  00 00 00 00"
      "7e 00 00 05  01 02 03 04  05 00 00 00");
  Bytes ok = b;
  seal(ok);
  EXPECT_EQ(parse(ok), DXFP_OK);
  b[43] = 1;
  seal(b);
  EXPECT_EQ(parse(b), DXFP_ERR_MALFORMED);
}

TEST(DxfpFrame, ErrorNamesAreDistinct) {
  std::vector<std::string> seen;
  for (int e = 0; e < DXFP_ERR_COUNT; ++e) {
    std::string n = dxfp_err_name(static_cast<dxfp_err>(e));
    EXPECT_NE(n, "unknown");
    for (const auto& s : seen) EXPECT_NE(n, s);
    seen.push_back(n);
  }
}

// Random DATA frames of random valid TLPs round-trip; mutated copies (with
// the CRC recomputed half the time, to reach the checks behind it) never
// crash, and any frame accepted holds only records that decode.
TEST(DxfpFrame, RandomAndMutatedFrames) {
  const uint64_t seed = test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  RandomTlpGenerator gen(seed);
  Bytes buf(DXFP_MAX_FRAME);
  for (int i = 0; i < 3000; ++i) {
    dxfp_header h{};
    h.type = DXFP_DATA;
    h.seq = static_cast<uint32_t>(rng());
    h.ack = static_cast<uint32_t>(rng());
    size_t cap = (rng() & 1) != 0 ? 1500 : 9000;
    dxfp_writer w{};
    ASSERT_EQ(dxfp_writer_init(&w, buf.data(), cap, &h), DXFP_OK);
    std::vector<Bytes> sent;
    for (int k = 0, n = static_cast<int>(rng() % 12); k < n; ++k) {
      dxpu_tlp t = gen.next();
      if (dxfp_writer_tlp_room(&w) < dxpu_tlp_wire_len(&t)) break;
      ASSERT_EQ(dxfp_writer_add_tlp(&w, &t), DXFP_OK);
      sent.push_back(encode_ok(t));
    }
    size_t len = 0;
    dxfp_writer_finish(&w, &len);
    Bytes frame(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(len));
    dxfp_frame f{};
    ASSERT_EQ(dxfp_frame_parse(frame.data(), frame.size(), static_cast<uint32_t>(cap), &f), DXFP_OK)
        << "seed=" << seed << " i=" << i;
    dxfp_record_iter it{};
    dxfp_record r{};
    dxfp_record_iter_init(&it, &f);
    for (const Bytes& s : sent) {
      ASSERT_TRUE(dxfp_record_next(&it, &r));
      ASSERT_EQ(Bytes(r.body, r.body + r.len), s) << "seed=" << seed << " i=" << i;
    }
    ASSERT_FALSE(dxfp_record_next(&it, &r));

    Bytes m = frame;
    for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
      m[rng() % m.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    if ((rng() & 1) != 0) m = resealed(m);
    auto exact = std::make_unique<uint8_t[]>(m.size());
    std::copy(m.begin(), m.end(), exact.get());
    dxfp_err err = dxfp_frame_parse(exact.get(), m.size(), static_cast<uint32_t>(cap), &f);
    ASSERT_LT(static_cast<int>(err), static_cast<int>(DXFP_ERR_COUNT));
    if (err != DXFP_OK) continue;
    dxfp_record_iter_init(&it, &f);
    while (dxfp_record_next(&it, &r)) {
      if (r.type != DXFP_REC_TLP) continue;
      dxpu_tlp t{};
      ASSERT_EQ(dxpu_tlp_decode(r.body, r.len, &t), DXPU_TLP_OK) << "seed=" << seed;
    }
  }
}

}  // namespace
}  // namespace dxpu::test
