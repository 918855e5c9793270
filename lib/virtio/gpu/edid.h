// edid.h - a VESA EDID 1.4 base block (128 bytes) describing one display mode: what
// VIRTIO_GPU_CMD_GET_EDID answers, so the guest's DRM driver sees a monitor whose preferred
// (and only) mode is the configured display size.
#ifndef DXPU_LIB_VIRTIO_GPU_EDID_H_
#define DXPU_LIB_VIRTIO_GPU_EDID_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace dxpu::virtio::gpu {

inline constexpr size_t kEdidBlockSize = 128;
// A detailed timing descriptor holds 12-bit active sizes.
inline constexpr uint32_t kEdidMaxActive = 4095;

// width and height are clamped to [1, kEdidMaxActive]. The timing is CVT reduced blanking
// (160 pixels of horizontal blanking, 23 lines of vertical) at 60 Hz, or the highest refresh
// the descriptor's 16-bit pixel clock (at most 655.35 MHz) can express for large modes.
std::array<uint8_t, kEdidBlockSize> BuildEdid(uint32_t width, uint32_t height);

}  // namespace dxpu::virtio::gpu

#endif  // DXPU_LIB_VIRTIO_GPU_EDID_H_
