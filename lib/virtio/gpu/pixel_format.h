// pixel_format.h - the 2D resource formats virtio-gpu defines (v1.2 section 5.7.6.8), all 32
// bits a pixel, and their conversion to RGBA8 (what the scanout image and the PNG hold).
#ifndef DXPU_LIB_VIRTIO_GPU_PIXEL_FORMAT_H_
#define DXPU_LIB_VIRTIO_GPU_PIXEL_FORMAT_H_

#include <cstdint>
#include <optional>
#include <span>

namespace dxpu::virtio::gpu {

inline constexpr uint32_t kBytesPerPixel = 4;

// Where each of R, G, B and A sits among a pixel's four bytes in memory; alpha < 0: the
// format has no alpha (an X byte), the pixel is opaque.
struct PixelLayout {
  int r = 0;
  int g = 0;
  int b = 0;
  int a = -1;
};

// nullopt: not a format the spec lists.
std::optional<PixelLayout> LayoutOf(uint32_t format);

// Converts `pixels` pixels of `layout` at `in` to RGBA8 at `out` (both 4 * pixels bytes).
void ConvertToRgba(const PixelLayout& layout, std::span<const uint8_t> in, std::span<uint8_t> out);

}  // namespace dxpu::virtio::gpu

#endif  // DXPU_LIB_VIRTIO_GPU_PIXEL_FORMAT_H_
