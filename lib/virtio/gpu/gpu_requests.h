// gpu_requests.h - the driver's side of virtio-gpu's control and cursor queues: the request
// structures of OASIS virtio v1.2 section 5.7.6.8 built byte by byte (little-endian), and the
// fields of the answers read back. The virtio-gpu tests and `dxpu bench virtio` send them.
#ifndef DXPU_LIB_VIRTIO_GPU_GPU_REQUESTS_H_
#define DXPU_LIB_VIRTIO_GPU_GPU_REQUESTS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "virtio/gpu/virtio_gpu_protocol.h"

namespace dxpu::virtio::gpu {

// Little-endian request bytes.
class Wire {
 public:
  Wire& U32(uint32_t v);
  Wire& U64(uint64_t v);
  Wire& Hdr(uint32_t type, uint32_t flags = 0, uint64_t fence_id = 0, uint32_t ctx_id = 0);
  Wire& PutRect(const Rect& r);
  std::vector<uint8_t> bytes;
};

// A field of an answer; 0xdeadbeef past its end (Le64: from two such halves).
uint32_t Le32(const std::vector<uint8_t>& b, size_t at);
uint64_t Le64(const std::vector<uint8_t>& b, size_t at);

// The request structures of section 5.7.6.8 (fence flags given to Hdr where a caller needs them).
std::vector<uint8_t> Create2d(uint32_t id, uint32_t format, uint32_t width, uint32_t height);
std::vector<uint8_t> Unref(uint32_t id);
struct MemEntry {
  uint64_t address = 0;
  uint32_t length = 0;
};
std::vector<uint8_t> AttachBacking(uint32_t id, const std::vector<MemEntry>& entries);
std::vector<uint8_t> DetachBacking(uint32_t id);
std::vector<uint8_t> SetScanoutCmd(uint32_t scanout_id, uint32_t id, const Rect& r);
std::vector<uint8_t> Flush(uint32_t id, const Rect& r);
std::vector<uint8_t> TransferCmd(uint32_t id, const Rect& r, uint64_t offset);
std::vector<uint8_t> GetEdidCmd(uint32_t scanout_id);
std::vector<uint8_t> CursorCmd(uint32_t type, uint32_t scanout_id, int32_t x, int32_t y,
                               uint32_t id, uint32_t hot_x, uint32_t hot_y);

}  // namespace dxpu::virtio::gpu

#endif  // DXPU_LIB_VIRTIO_GPU_GPU_REQUESTS_H_
