// png_writer.cc - PNG (ISO/IEC 15948): signature, IHDR, IDAT chunks carrying one zlib stream
// (RFC 1950) of stored deflate blocks (RFC 1951 section 3.2.4), IEND.
#include "virtio/gpu/png_writer.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace dxpu::virtio::gpu {
namespace {

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    table[n] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

// Each IDAT chunk carries at most this much of the zlib stream (any size is valid; this keeps
// a reader's buffer small).
constexpr size_t kIdatChunkBytes = size_t{1} << 20;
constexpr uint32_t kMaxDimension = 0x7fffffff;

void PutBe32(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v >> 24));
  out.push_back(static_cast<uint8_t>(v >> 16));
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

// length, type, data, CRC over type and data.
void PutChunk(std::vector<uint8_t>& out, std::string_view type, std::span<const uint8_t> data) {
  PutBe32(out, static_cast<uint32_t>(data.size()));
  const size_t type_at = out.size();
  out.insert(out.end(), type.begin(), type.end());
  out.insert(out.end(), data.begin(), data.end());
  PutBe32(out, PngCrc32(std::span(out).subspan(type_at)));
}

// The filtered image (a filter-type byte 0 before each row) as a zlib stream of stored blocks.
std::vector<uint8_t> ZlibStored(const PngImage& image, size_t row_bytes) {
  const size_t filtered = (row_bytes + 1) * image.height;
  const size_t blocks = std::max<size_t>(1, (filtered + kMaxStoredBlock - 1) / kMaxStoredBlock);
  std::vector<uint8_t> z;
  z.reserve(2 + filtered + blocks * 5 + 4);
  z.push_back(0x78);  // CM 8 (deflate), 32 KiB window
  z.push_back(0x01);  // FLEVEL 0, no dictionary; (0x78 << 8 | 0x01) % 31 == 0
  uint32_t adler = 1;
  size_t row = 0;
  size_t in_row = 0;  // position within row `row` of the filtered data, 0 = the filter byte
  size_t left = filtered;
  do {
    const size_t block = std::min(left, kMaxStoredBlock);
    left -= block;
    z.push_back(left == 0 ? 1 : 0);  // BFINAL, BTYPE 00 (stored)
    z.push_back(static_cast<uint8_t>(block));
    z.push_back(static_cast<uint8_t>(block >> 8));
    z.push_back(static_cast<uint8_t>(~block));
    z.push_back(static_cast<uint8_t>(~block >> 8));
    size_t need = block;
    while (need > 0) {
      const size_t start = z.size();
      if (in_row == 0) {
        z.push_back(0);  // filter type 0 (None)
        ++in_row;
        --need;
      } else {
        const size_t take = std::min(need, row_bytes + 1 - in_row);
        const uint8_t* src = image.pixels.data() + row * row_bytes + (in_row - 1);
        z.insert(z.end(), src, src + take);
        in_row += take;
        need -= take;
      }
      adler = Adler32(std::span(z).subspan(start), adler);
      if (in_row == row_bytes + 1) {
        ++row;
        in_row = 0;
      }
    }
  } while (left > 0);
  PutBe32(z, adler);
  return z;
}

}  // namespace

uint32_t PngCrc32(std::span<const uint8_t> bytes, uint32_t crc) {
  crc = ~crc;
  for (uint8_t b : bytes) crc = kCrcTable[(crc ^ b) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t Adler32(std::span<const uint8_t> bytes, uint32_t adler) {
  constexpr uint32_t kMod = 65521;
  uint32_t a = adler & 0xffff;
  uint32_t b = adler >> 16;
  // 5552 bytes is the most that can be summed before b can overflow 32 bits (zlib's NMAX).
  while (!bytes.empty()) {
    const size_t n = std::min<size_t>(bytes.size(), 5552);
    for (size_t i = 0; i < n; ++i) {
      a += bytes[i];
      b += a;
    }
    a %= kMod;
    b %= kMod;
    bytes = bytes.subspan(n);
  }
  return b << 16 | a;
}

std::vector<uint8_t> EncodePng(const PngImage& image) {
  if (image.width == 0 || image.height == 0 || image.width > kMaxDimension ||
      image.height > kMaxDimension) {
    return {};
  }
  const size_t channels = image.color == PngColor::kRgba ? 4 : 3;
  const size_t row_bytes = size_t{image.width} * channels;
  if (image.pixels.size() / row_bytes != image.height || image.pixels.size() % row_bytes != 0) {
    return {};
  }
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> ihdr;
  PutBe32(ihdr, image.width);
  PutBe32(ihdr, image.height);
  ihdr.push_back(8);  // bit depth
  ihdr.push_back(static_cast<uint8_t>(image.color));
  ihdr.push_back(0);  // compression: deflate
  ihdr.push_back(0);  // filter method 0
  ihdr.push_back(0);  // no interlace
  PutChunk(png, "IHDR", ihdr);
  const std::vector<uint8_t> z = ZlibStored(image, row_bytes);
  for (size_t at = 0; at < z.size(); at += kIdatChunkBytes) {
    PutChunk(png, "IDAT", std::span(z).subspan(at, std::min(kIdatChunkBytes, z.size() - at)));
  }
  PutChunk(png, "IEND", {});
  return png;
}

}  // namespace dxpu::virtio::gpu
