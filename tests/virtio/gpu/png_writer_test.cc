// png_writer_test.cc - the PNG writer: known CRC-32 and Adler-32 values, and PNGs decoded back
// (chunks, CRCs, stored blocks, Adler-32, every pixel); python3's zlib reads one too when
// python3 is installed.
#include "virtio/gpu/png_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
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

// zlib itself (python3's) inflates the IDAT stream: the writer's output is a real zlib
// stream, not just one our decoder accepts.
TEST(PngWriter, Python3ZlibReadsIt) {
  // NOLINTNEXTLINE(cert-env33-c,concurrency-mt-unsafe): test setup, a fixed command
  if (std::system("python3 -c 'import zlib' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3 with zlib is not installed";
  }
  const auto rgba = Pattern(size_t{300} * 200 * 4, 4);
  const auto png =
      EncodePng({.width = 300, .height = 200, .color = PngColor::kRgba, .pixels = rgba});
  const std::string dir = ::testing::TempDir();
  const std::string png_path = dir + "/vgpu_png_test_" + std::to_string(getpid()) + ".png";
  const std::string raw_path = png_path + ".raw";
  std::ofstream(png_path, std::ios::binary)
      .write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
  const std::string script =
      "import sys,zlib,struct\n"
      "d=open(sys.argv[1],'rb').read(); p=8; z=b''\n"
      "while p<len(d):\n"
      "  n=struct.unpack('>I',d[p:p+4])[0]; t=d[p+4:p+8]\n"
      "  if t==b'IHDR': w,h=struct.unpack('>II',d[p+8:p+16])\n"
      "  if t==b'IDAT': z+=d[p+8:p+8+n]\n"
      "  p+=12+n\n"
      "r=zlib.decompress(z); s=w*4+1\n"
      "assert len(r)==s*h and all(r[y*s]==0 for y in range(h))\n"
      "open(sys.argv[2],'wb').write(b''.join(r[y*s+1:(y+1)*s] for y in range(h)))\n";
  const std::string script_path = png_path + ".py";
  std::ofstream(script_path) << script;
  const std::string command = "python3 " + script_path + " " + png_path + " " + raw_path;
  ASSERT_EQ(std::system(command.c_str()), 0);  // NOLINT(cert-env33-c,concurrency-mt-unsafe)
  std::ifstream raw(raw_path, std::ios::binary);
  const std::vector<uint8_t> back((std::istreambuf_iterator<char>(raw)),
                                  std::istreambuf_iterator<char>());
  EXPECT_EQ(back, rgba);
  std::remove(png_path.c_str());
  std::remove(raw_path.c_str());
  std::remove(script_path.c_str());
}

}  // namespace
}  // namespace dxpu::virtio::gpu::test
