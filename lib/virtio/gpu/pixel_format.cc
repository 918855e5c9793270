// pixel_format.cc - virtio-gpu's formats: the name lists the bytes in memory order
// (B8G8R8X8 is what Linux's DRM_FORMAT_XRGB8888 is on a little-endian machine).
#include "virtio/gpu/pixel_format.h"

#include <algorithm>

#include "virtio/gpu/virtio_gpu_protocol.h"

namespace dxpu::virtio::gpu {

std::optional<PixelLayout> LayoutOf(uint32_t format) {
  switch (format) {
    case kFormatB8G8R8A8:
      return PixelLayout{.r = 2, .g = 1, .b = 0, .a = 3};
    case kFormatB8G8R8X8:
      return PixelLayout{.r = 2, .g = 1, .b = 0, .a = -1};
    case kFormatA8R8G8B8:
      return PixelLayout{.r = 1, .g = 2, .b = 3, .a = 0};
    case kFormatX8R8G8B8:
      return PixelLayout{.r = 1, .g = 2, .b = 3, .a = -1};
    case kFormatR8G8B8A8:
      return PixelLayout{.r = 0, .g = 1, .b = 2, .a = 3};
    case kFormatX8B8G8R8:
      return PixelLayout{.r = 3, .g = 2, .b = 1, .a = -1};
    case kFormatA8B8G8R8:
      return PixelLayout{.r = 3, .g = 2, .b = 1, .a = 0};
    case kFormatR8G8B8X8:
      return PixelLayout{.r = 0, .g = 1, .b = 2, .a = -1};
    default:
      return std::nullopt;
  }
}

void ConvertToRgba(const PixelLayout& layout, std::span<const uint8_t> in, std::span<uint8_t> out) {
  const size_t pixels = std::min(in.size(), out.size()) / kBytesPerPixel;
  for (size_t i = 0; i < pixels; ++i) {
    const uint8_t* p = in.data() + i * kBytesPerPixel;
    uint8_t* q = out.data() + i * kBytesPerPixel;
    q[0] = p[layout.r];
    q[1] = p[layout.g];
    q[2] = p[layout.b];
    q[3] = layout.a < 0 ? 0xff : p[layout.a];
  }
}

}  // namespace dxpu::virtio::gpu
