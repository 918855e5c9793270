// scanout_png.h - the scanout as a PNG: what an operator sees with `dxpu bridge screenshot`.
#ifndef DXPU_LIB_VIRTIO_GPU_SCANOUT_PNG_H_
#define DXPU_LIB_VIRTIO_GPU_SCANOUT_PNG_H_

#include <cstdint>
#include <vector>

#include "virtio/gpu/scanout.h"

namespace dxpu::virtio::gpu {

// An RGB PNG of the scanout (a display shows no alpha: the resource's alpha is dropped);
// black at the mode's size when disabled; empty when the size is 0. With draw_cursor, a
// visible cursor is blended over it by its alpha at (x - hot_x, y - hot_y), clipped.
std::vector<uint8_t> RenderScanoutPng(const Scanout& scanout, bool draw_cursor = false);

}  // namespace dxpu::virtio::gpu

#endif  // DXPU_LIB_VIRTIO_GPU_SCANOUT_PNG_H_
