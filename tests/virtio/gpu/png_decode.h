// png_decode.h - a strict reader for the PNGs png_writer.h writes (stored deflate blocks only,
// filter type 0, 8-bit RGB or RGBA): every chunk's CRC, the zlib header, each block's
// LEN/NLEN and the Adler-32 checked, so a test can compare the pixels that come back.
#ifndef DXPU_TESTS_VIRTIO_GPU_PNG_DECODE_H_
#define DXPU_TESTS_VIRTIO_GPU_PNG_DECODE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dxpu::virtio::gpu::test {

struct DecodedPng {
  std::string error;  // empty: decoded
  uint32_t width = 0;
  uint32_t height = 0;
  uint8_t color_type = 0;
  std::vector<uint8_t> pixels;
  size_t idat_chunks = 0;
  size_t stored_blocks = 0;
  size_t largest_block = 0;
};

DecodedPng DecodeStoredPng(std::span<const uint8_t> png);

}  // namespace dxpu::virtio::gpu::test

#endif  // DXPU_TESTS_VIRTIO_GPU_PNG_DECODE_H_
