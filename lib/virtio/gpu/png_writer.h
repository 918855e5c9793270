// png_writer.h - writes an 8-bit RGB or RGBA image as a PNG file, with no library: the image
// data is a zlib stream of deflate "stored" (uncompressed) blocks, each row with filter type 0.
// Larger than a compressed PNG, but exact, small and dependency-free; a screenshot of the
// scanout is what it is for.
#ifndef DXPU_LIB_VIRTIO_GPU_PNG_WRITER_H_
#define DXPU_LIB_VIRTIO_GPU_PNG_WRITER_H_

#include <cstdint>
#include <span>
#include <vector>

namespace dxpu::virtio::gpu {

enum class PngColor : uint8_t {
  kRgb = 2,   // PNG colour type 2: 3 bytes a pixel
  kRgba = 6,  // PNG colour type 6: 4 bytes a pixel
};

struct PngImage {
  uint32_t width = 0;
  uint32_t height = 0;
  PngColor color = PngColor::kRgb;
  std::span<const uint8_t> pixels;  // rows top to bottom, width * (3 or 4) bytes each
};

// The PNG file's bytes; empty when the image is not one PNG can hold (a zero or over 2^31 - 1
// dimension) or `pixels` is not exactly width * height * bytes-per-pixel long.
std::vector<uint8_t> EncodePng(const PngImage& image);

// CRC-32 as PNG chunks and zlib use it (IEEE 802.3, reflected polynomial 0xedb88320), over
// `bytes`, continuing from `crc` (0 to start).
uint32_t PngCrc32(std::span<const uint8_t> bytes, uint32_t crc = 0);
// zlib's Adler-32, continuing from `adler` (1 to start).
uint32_t Adler32(std::span<const uint8_t> bytes, uint32_t adler = 1);

// The most bytes one stored deflate block carries (its LEN field is 16 bits).
inline constexpr size_t kMaxStoredBlock = 65535;

}  // namespace dxpu::virtio::gpu

#endif  // DXPU_LIB_VIRTIO_GPU_PNG_WRITER_H_
