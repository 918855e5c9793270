// png_decode.cc - see png_decode.h. Written from the PNG and zlib/deflate specifications,
// independently of png_writer.cc but for PngCrc32/Adler32 (tested on their own against known
// values).
#include "png_decode.h"

#include <string_view>

#include "virtio/gpu/png_writer.h"

namespace dxpu::virtio::gpu::test {
namespace {

uint32_t Be32(std::span<const uint8_t> b, size_t at) {
  return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | b[at + 3];
}

}  // namespace

DecodedPng DecodeStoredPng(std::span<const uint8_t> png) {
  DecodedPng out;
  constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (png.size() < 8 || !std::equal(kSignature, kSignature + 8, png.begin())) {
    out.error = "bad signature";
    return out;
  }
  std::vector<uint8_t> z;
  bool seen_ihdr = false;
  bool seen_iend = false;
  size_t at = 8;
  while (at < png.size()) {
    if (png.size() - at < 12) {
      out.error = "truncated chunk";
      return out;
    }
    const uint32_t length = Be32(png, at);
    if (png.size() - at - 12 < length) {
      out.error = "chunk past the end";
      return out;
    }
    const std::string_view type(reinterpret_cast<const char*>(&png[at + 4]), 4);
    const auto data = png.subspan(at + 8, length);
    if (PngCrc32(png.subspan(at + 4, length + 4)) != Be32(png, at + 8 + length)) {
      out.error = "bad CRC in " + std::string(type);
      return out;
    }
    if (seen_iend) {
      out.error = "chunk after IEND";
      return out;
    }
    if (type == "IHDR") {
      if (length != 13 || seen_ihdr || at != 8) {
        out.error = "bad IHDR";
        return out;
      }
      seen_ihdr = true;
      out.width = Be32(data, 0);
      out.height = Be32(data, 4);
      out.color_type = data[9];
      if (data[8] != 8 || (data[9] != 2 && data[9] != 6) || data[10] || data[11] || data[12]) {
        out.error = "unsupported IHDR";
        return out;
      }
    } else if (type == "IDAT") {
      z.insert(z.end(), data.begin(), data.end());
      ++out.idat_chunks;
    } else if (type == "IEND") {
      seen_iend = true;
    }
    at += 12 + length;
  }
  if (!seen_ihdr || !seen_iend) {
    out.error = "missing IHDR or IEND";
    return out;
  }
  // zlib: CMF, FLG, stored blocks, Adler-32 big-endian.
  if (z.size() < 6 || (z[0] & 0x0f) != 8 || ((z[0] << 8) | z[1]) % 31 != 0 || (z[1] & 0x20)) {
    out.error = "bad zlib header";
    return out;
  }
  std::vector<uint8_t> filtered;
  size_t p = 2;
  for (bool final = false; !final;) {
    if (z.size() - p < 5) {
      out.error = "truncated block";
      return out;
    }
    final = z[p] & 1;
    if ((z[p] >> 1) != 0) {
      out.error = "not a stored block";
      return out;
    }
    const uint16_t len = static_cast<uint16_t>(z[p + 1] | z[p + 2] << 8);
    const uint16_t nlen = static_cast<uint16_t>(z[p + 3] | z[p + 4] << 8);
    if (static_cast<uint16_t>(~nlen) != len || z.size() - p - 5 < len) {
      out.error = "bad LEN/NLEN";
      return out;
    }
    const auto block = std::span(z).subspan(p + 5, len);
    filtered.insert(filtered.end(), block.begin(), block.end());
    ++out.stored_blocks;
    out.largest_block = std::max<size_t>(out.largest_block, len);
    p += 5 + len;
  }
  if (z.size() - p != 4 || Be32(z, p) != Adler32(filtered)) {
    out.error = "bad Adler-32";
    return out;
  }
  const size_t row = size_t{out.width} * (out.color_type == 6 ? 4 : 3);
  if (filtered.size() != (row + 1) * out.height) {
    out.error = "wrong image data size";
    return out;
  }
  for (size_t y = 0; y < out.height; ++y) {
    if (filtered[y * (row + 1)] != 0) {
      out.error = "filter type not 0";
      return out;
    }
    const auto pixels = std::span(filtered).subspan(y * (row + 1) + 1, row);
    out.pixels.insert(out.pixels.end(), pixels.begin(), pixels.end());
  }
  return out;
}

}  // namespace dxpu::virtio::gpu::test
