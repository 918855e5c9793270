// png_writer_test.cc - the PNG writer: known CRC-32 and Adler-32 values, and PNGs decoded back
// (chunks, CRCs, stored blocks, Adler-32, every pixel); python3's zlib reads one too when
// python3 is installed.
#include "virtio/gpu/png_writer.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <string_view>

#include "png_decode.h"

namespace dxpu::virtio::gpu::test {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::vector<uint8_t> Pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

TEST(PngWriter, Crc32KnownValues) {
  EXPECT_EQ(PngCrc32(Bytes("IEND")), 0xAE426082u);
  EXPECT_EQ(PngCrc32(Bytes("123456789")), 0xCBF43926u);
  // Continuing a CRC over a split input gives the CRC of the whole.
  EXPECT_EQ(PngCrc32(Bytes("56789"), PngCrc32(Bytes("1234"))), 0xCBF43926u);
}

TEST(PngWriter, Adler32KnownValues) {
  EXPECT_EQ(Adler32({}), 1u);
  EXPECT_EQ(Adler32(Bytes("Wikipedia")), 0x11E60398u);
  // Past zlib's 5552-byte run, where the modulo must be taken.
  std::vector<uint8_t> ff(100000, 0xff);
  uint32_t a = 1, b = 0;
  for (uint8_t x : ff) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  EXPECT_EQ(Adler32(ff), b << 16 | a);
}

TEST(PngWriter, EndsWithTheIendChunk) {
  const std::vector<uint8_t> rgb(size_t{3} * 2 * 2, 0x40);
  const auto png = EncodePng({.width = 2, .height = 2, .color = PngColor::kRgb, .pixels = rgb});
  ASSERT_GE(png.size(), 12u);
  const std::vector<uint8_t> tail(png.end() - 12, png.end());
  EXPECT_EQ(tail, (std::vector<uint8_t>{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82}));
}

TEST(PngWriter, SmallRgbDecodesToTheSamePixels) {
  const auto rgb = Pattern(size_t{5} * 3 * 3, 1);
  const auto png = EncodePng({.width = 5, .height = 3, .color = PngColor::kRgb, .pixels = rgb});
  const DecodedPng d = DecodeStoredPng(png);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.width, 5u);
  EXPECT_EQ(d.height, 3u);
  EXPECT_EQ(d.color_type, 2);
  EXPECT_EQ(d.pixels, rgb);
  EXPECT_EQ(d.stored_blocks, 1u);
}

TEST(PngWriter, LargeRgbaSplitsIntoStoredBlocksAndIdatChunks) {
  // 700 x 500 RGBA: 1.4 MB of rows, so 22 stored blocks and two IDAT chunks; rows straddle
  // block boundaries.
  const auto rgba = Pattern(size_t{700} * 500 * 4, 2);
  const auto png =
      EncodePng({.width = 700, .height = 500, .color = PngColor::kRgba, .pixels = rgba});
  const DecodedPng d = DecodeStoredPng(png);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.color_type, 6);
  EXPECT_EQ(d.pixels, rgba);
  EXPECT_EQ(d.stored_blocks, (size_t{700} * 4 + 1) * 500 / kMaxStoredBlock + 1);
  EXPECT_EQ(d.largest_block, kMaxStoredBlock);
  EXPECT_EQ(d.idat_chunks, 2u);
}

TEST(PngWriter, ExactMultipleOfABlock) {
  // (14563 * 3 + 1) * 3 == 2 * 65535: two full blocks, the second one final, none empty.
  const uint32_t width = 14563, height = 3;
  const auto rgb = Pattern(size_t{width} * 3 * height, 3);
  const auto png = EncodePng({.width = width, .height = height, .pixels = rgb});
  const DecodedPng d = DecodeStoredPng(png);
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.pixels, rgb);
  EXPECT_EQ(d.stored_blocks, 2u);
  EXPECT_EQ(d.largest_block, kMaxStoredBlock);
}

TEST(PngWriter, RefusesImagesItCannotWrite) {
  const std::vector<uint8_t> rgb(12, 0);
  EXPECT_TRUE(EncodePng({.width = 0, .height = 1, .pixels = rgb}).empty());
  EXPECT_TRUE(EncodePng({.width = 2, .height = 0, .pixels = rgb}).empty());
  EXPECT_TRUE(EncodePng({.width = 2, .height = 2, .pixels = std::span(rgb).first(11)}).empty());
  EXPECT_TRUE(EncodePng({.width = 2, .height = 3, .pixels = rgb}).empty());
  EXPECT_TRUE(EncodePng({.width = 0x80000000u, .height = 1, .pixels = rgb}).empty());
  EXPECT_FALSE(EncodePng({.width = 2, .height = 2, .pixels = rgb}).empty());
}

// zlib itself inflates the IDAT stream: the writer's output is a real zlib stream (its
// Adler-32 and block framing as zlib checks them), not just one our own decoder accepts.
TEST(PngWriter, ZlibInflatesIt) {
  const uint32_t width = 300, height = 200;
  const auto rgba = Pattern(size_t{width} * 4 * height, 4);
  const auto png =
      EncodePng({.width = width, .height = height, .color = PngColor::kRgba, .pixels = rgba});
  // The IDAT chunks' data, concatenated: length, type, data, CRC from byte 8 on.
  std::vector<uint8_t> stream;
  for (size_t p = 8; p + 12 <= png.size();) {
    const uint32_t n = uint32_t{png[p]} << 24 | uint32_t{png[p + 1]} << 16 |
                       uint32_t{png[p + 2]} << 8 | png[p + 3];
    ASSERT_LE(p + 12 + n, png.size());
    if (std::string_view(reinterpret_cast<const char*>(&png[p + 4]), 4) == "IDAT")
      stream.insert(stream.end(), png.begin() + static_cast<ptrdiff_t>(p + 8),
                    png.begin() + static_cast<ptrdiff_t>(p + 8 + n));
    p += 12 + n;
  }
  const size_t stride = size_t{width} * 4 + 1;    // filter byte, then the row
  std::vector<uint8_t> raw(stride * height + 1);  // one byte more: zlib must not need it
  uLongf raw_len = raw.size();
  ASSERT_EQ(uncompress(raw.data(), &raw_len, stream.data(), stream.size()), Z_OK);
  ASSERT_EQ(raw_len, stride * height);
  std::vector<uint8_t> back;
  for (uint32_t y = 0; y < height; ++y) {
    EXPECT_EQ(raw[y * stride], 0) << "row " << y << ": filter type 0";
    back.insert(back.end(), raw.begin() + static_cast<ptrdiff_t>(y * stride + 1),
                raw.begin() + static_cast<ptrdiff_t>((y + 1) * stride));
  }
  EXPECT_EQ(back, rgba);
}

}  // namespace
}  // namespace dxpu::virtio::gpu::test
