// edid.cc - the EDID 1.4 base block: header, vendor/product, basic display parameters, sRGB
// chromaticity, one detailed timing (the preferred mode), a product name, two dummy
// descriptors, no extensions, and the checksum that makes the 128 bytes sum to 0 mod 256.
#include "virtio/gpu/edid.h"

#include <algorithm>
#include <string_view>

namespace dxpu::virtio::gpu {
namespace {

constexpr uint32_t kHorizontalBlank = 160;  // CVT-RB: front porch 48, sync 32, back porch 80
constexpr uint32_t kHorizontalFront = 48;
constexpr uint32_t kHorizontalSync = 32;
constexpr uint32_t kVerticalBlank = 23;  // front porch 3, sync 6, back porch 14
constexpr uint32_t kVerticalFront = 3;
constexpr uint32_t kVerticalSync = 6;
constexpr uint64_t kMaxPixelClock10kHz = 0xffff;

// A 96 dpi panel: 3.78 pixels a millimetre.
uint32_t Millimetres(uint32_t pixels) { return std::max<uint32_t>(1, pixels * 100 / 378); }

void PutDetailedTiming(uint8_t* d, uint32_t width, uint32_t height) {
  const uint64_t total = uint64_t{width + kHorizontalBlank} * (height + kVerticalBlank);
  const uint64_t clock = std::clamp<uint64_t>((total * 60 + 9999) / 10000, 1, kMaxPixelClock10kHz);
  const uint32_t width_mm = std::min<uint32_t>(Millimetres(width), 4095);
  const uint32_t height_mm = std::min<uint32_t>(Millimetres(height), 4095);
  d[0] = static_cast<uint8_t>(clock);
  d[1] = static_cast<uint8_t>(clock >> 8);
  d[2] = static_cast<uint8_t>(width);
  d[3] = static_cast<uint8_t>(kHorizontalBlank);
  d[4] = static_cast<uint8_t>(((width >> 8) & 0xf) << 4 | ((kHorizontalBlank >> 8) & 0xf));
  d[5] = static_cast<uint8_t>(height);
  d[6] = static_cast<uint8_t>(kVerticalBlank);
  d[7] = static_cast<uint8_t>(((height >> 8) & 0xf) << 4 | ((kVerticalBlank >> 8) & 0xf));
  d[8] = static_cast<uint8_t>(kHorizontalFront);
  d[9] = static_cast<uint8_t>(kHorizontalSync);
  d[10] = static_cast<uint8_t>((kVerticalFront & 0xf) << 4 | (kVerticalSync & 0xf));
  d[11] =
      static_cast<uint8_t>(((kHorizontalFront >> 8) & 3) << 6 | ((kHorizontalSync >> 8) & 3) << 4 |
                           ((kVerticalFront >> 4) & 3) << 2 | ((kVerticalSync >> 4) & 3));
  d[12] = static_cast<uint8_t>(width_mm);
  d[13] = static_cast<uint8_t>(height_mm);
  d[14] = static_cast<uint8_t>(((width_mm >> 8) & 0xf) << 4 | ((height_mm >> 8) & 0xf));
  d[15] = 0;  // no borders
  d[16] = 0;
  d[17] = 0x1a;  // digital separate sync, hsync positive, vsync negative (CVT-RB)
}

// A display descriptor: tag 0xfc (product name) or 0x10 (dummy); text ends with 0x0a and is
// padded with spaces.
void PutDisplayDescriptor(uint8_t* d, uint8_t tag, std::string_view text) {
  std::fill(d, d + 18, 0);
  d[3] = tag;
  if (tag == 0x10) return;
  size_t i = 0;
  for (; i < text.size() && i < 13; ++i) d[5 + i] = static_cast<uint8_t>(text[i]);
  if (i < 13) d[5 + i++] = 0x0a;
  for (; i < 13; ++i) d[5 + i] = 0x20;
}

}  // namespace

std::array<uint8_t, kEdidBlockSize> BuildEdid(uint32_t width, uint32_t height) {
  width = std::clamp<uint32_t>(width, 1, kEdidMaxActive);
  height = std::clamp<uint32_t>(height, 1, kEdidMaxActive);
  std::array<uint8_t, kEdidBlockSize> e{};
  constexpr uint8_t kHeader[8] = {0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00};
  std::copy(std::begin(kHeader), std::end(kHeader), e.begin());
  // Manufacturer "DXP": three 5-bit letters ('A' = 1), big-endian.
  const uint16_t vendor = ('D' - '@') << 10 | ('X' - '@') << 5 | ('P' - '@');
  e[8] = static_cast<uint8_t>(vendor >> 8);
  e[9] = static_cast<uint8_t>(vendor);
  e[10] = 0x10;  // product code 0x0010 (virtio-gpu's device type), little-endian
  e[11] = 0x00;
  e[16] = 0;   // week unspecified
  e[17] = 36;  // model year 2026 - 1990
  e[18] = 1;   // EDID 1.4
  e[19] = 4;
  e[20] = 0xa0;  // digital input, 8 bits a colour, interface not defined
  e[21] = static_cast<uint8_t>(std::clamp<uint32_t>(Millimetres(width) / 10, 1, 255));
  e[22] = static_cast<uint8_t>(std::clamp<uint32_t>(Millimetres(height) / 10, 1, 255));
  e[23] = 120;   // gamma 2.2: (2.2 - 1) * 100
  e[24] = 0x06;  // RGB 4:4:4, sRGB default colour space, preferred timing is native
  // sRGB chromaticity in 10-bit fractions: red, green, blue, white point (x then y each).
  constexpr uint16_t kChroma[8] = {655, 338, 307, 614, 154, 61, 320, 337};
  e[25] = static_cast<uint8_t>((kChroma[0] & 3) << 6 | (kChroma[1] & 3) << 4 |
                               (kChroma[2] & 3) << 2 | (kChroma[3] & 3));
  e[26] = static_cast<uint8_t>((kChroma[4] & 3) << 6 | (kChroma[5] & 3) << 4 |
                               (kChroma[6] & 3) << 2 | (kChroma[7] & 3));
  for (int i = 0; i < 8; ++i) e[27 + i] = static_cast<uint8_t>(kChroma[i] >> 2);
  // 35-37: no established timings. 38-53: eight unused standard timings.
  for (int i = 38; i < 54; ++i) e[i] = 0x01;
  PutDetailedTiming(&e[54], width, height);
  PutDisplayDescriptor(&e[72], 0xfc, "DxPU virtio");
  PutDisplayDescriptor(&e[90], 0x10, {});
  PutDisplayDescriptor(&e[108], 0x10, {});
  e[126] = 0;  // no extension blocks
  uint8_t sum = 0;
  for (size_t i = 0; i < kEdidBlockSize - 1; ++i) sum = static_cast<uint8_t>(sum + e[i]);
  e[127] = static_cast<uint8_t>(0x100 - sum);
  return e;
}

}  // namespace dxpu::virtio::gpu
