// scanout.h - what the virtio-gpu display shows: the image of the scanned-out resource as of
// its last flush (or SET_SCANOUT), converted to RGBA8, and the cursor. The bridge reads it
// (VirtioGpuDevice::scanout()) to report it and to write it as a PNG (scanout_png.h).
#ifndef DXPU_LIB_VIRTIO_GPU_SCANOUT_H_
#define DXPU_LIB_VIRTIO_GPU_SCANOUT_H_

#include <cstdint>
#include <vector>

#include "virtio/gpu/virtio_gpu_protocol.h"

namespace dxpu::virtio::gpu {

struct CursorState {
  bool visible = false;
  uint32_t resource_id = 0;  // the resource its image was copied from at UPDATE_CURSOR
  // Where the hot spot is on the scanout: signed, as Linux sends a cursor partly off the
  // left or top edge with negative coordinates.
  int32_t x = 0;
  int32_t y = 0;
  uint32_t hot_x = 0;
  uint32_t hot_y = 0;
  std::vector<uint8_t> rgba;  // kCursorSize x kCursorSize RGBA8 when visible, else empty
};

struct Scanout {
  bool enabled = false;
  uint32_t resource_id = 0;  // 0: disabled
  Rect source;               // the resource's rectangle shown (SET_SCANOUT's rectangle)
  // The image's size: source's when enabled; the display mode's when disabled (the PNG of a
  // disabled display is black at the mode's size).
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint8_t> rgba;  // width * height * 4 bytes when enabled, else empty
  uint64_t flushes = 0;       // RESOURCE_FLUSHes that reached it: a frame counter
  CursorState cursor;
};

}  // namespace dxpu::virtio::gpu

#endif  // DXPU_LIB_VIRTIO_GPU_SCANOUT_H_
