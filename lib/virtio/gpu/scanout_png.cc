// scanout_png.cc - the scanout's RGBA8 image to RGB, the cursor blended on, then png_writer.
#include "virtio/gpu/scanout_png.h"

#include "virtio/gpu/png_writer.h"

namespace dxpu::virtio::gpu {
namespace {

void BlendCursor(const Scanout& scanout, std::vector<uint8_t>& rgb) {
  const CursorState& cursor = scanout.cursor;
  if (!cursor.visible || cursor.rgba.size() != size_t{kCursorSize} * kCursorSize * 4) return;
  const int64_t left = int64_t{cursor.x} - cursor.hot_x;
  const int64_t top = int64_t{cursor.y} - cursor.hot_y;
  for (uint32_t cy = 0; cy < kCursorSize; ++cy) {
    const int64_t y = top + cy;
    if (y < 0 || y >= scanout.height) continue;
    for (uint32_t cx = 0; cx < kCursorSize; ++cx) {
      const int64_t x = left + cx;
      if (x < 0 || x >= scanout.width) continue;
      const uint8_t* c = &cursor.rgba[(size_t{cy} * kCursorSize + cx) * 4];
      uint8_t* d = &rgb[(static_cast<size_t>(y) * scanout.width + static_cast<size_t>(x)) * 3];
      const uint32_t a = c[3];
      for (int i = 0; i < 3; ++i) d[i] = static_cast<uint8_t>((c[i] * a + d[i] * (255 - a)) / 255);
    }
  }
}

}  // namespace

std::vector<uint8_t> RenderScanoutPng(const Scanout& scanout, bool draw_cursor) {
  const size_t pixels = size_t{scanout.width} * scanout.height;
  if (pixels == 0) return {};
  std::vector<uint8_t> rgb(pixels * 3, 0);
  if (scanout.enabled && scanout.rgba.size() == pixels * 4) {
    for (size_t i = 0; i < pixels; ++i) {
      rgb[i * 3 + 0] = scanout.rgba[i * 4 + 0];
      rgb[i * 3 + 1] = scanout.rgba[i * 4 + 1];
      rgb[i * 3 + 2] = scanout.rgba[i * 4 + 2];
    }
  }
  if (draw_cursor) BlendCursor(scanout, rgb);
  return EncodePng(PngImage{
      .width = scanout.width, .height = scanout.height, .color = PngColor::kRgb, .pixels = rgb});
}

}  // namespace dxpu::virtio::gpu
