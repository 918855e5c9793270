// gpu_requests.cc - see gpu_requests.h.
#include "virtio/gpu/gpu_requests.h"

namespace dxpu::virtio::gpu {

Wire& Wire::U32(uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return *this;
}
Wire& Wire::U64(uint64_t v) {
  U32(static_cast<uint32_t>(v));
  return U32(static_cast<uint32_t>(v >> 32));
}
Wire& Wire::Hdr(uint32_t type, uint32_t flags, uint64_t fence_id, uint32_t ctx_id) {
  return U32(type).U32(flags).U64(fence_id).U32(ctx_id).U32(0);  // ring_idx, padding
}
Wire& Wire::PutRect(const Rect& r) { return U32(r.x).U32(r.y).U32(r.width).U32(r.height); }

uint32_t Le32(const std::vector<uint8_t>& b, size_t at) {
  if (b.size() < at + 4) return 0xdeadbeef;
  return uint32_t{b[at]} | uint32_t{b[at + 1]} << 8 | uint32_t{b[at + 2]} << 16 |
         uint32_t{b[at + 3]} << 24;
}
uint64_t Le64(const std::vector<uint8_t>& b, size_t at) {
  return uint64_t{Le32(b, at)} | uint64_t{Le32(b, at + 4)} << 32;
}

std::vector<uint8_t> Create2d(uint32_t id, uint32_t format, uint32_t width, uint32_t height) {
  return Wire().Hdr(kCmdResourceCreate2d).U32(id).U32(format).U32(width).U32(height).bytes;
}
std::vector<uint8_t> Unref(uint32_t id) {
  return Wire().Hdr(kCmdResourceUnref).U32(id).U32(0).bytes;
}
std::vector<uint8_t> AttachBacking(uint32_t id, const std::vector<MemEntry>& entries) {
  Wire w;
  w.Hdr(kCmdResourceAttachBacking).U32(id).U32(static_cast<uint32_t>(entries.size()));
  for (const MemEntry& e : entries) w.U64(e.address).U32(e.length).U32(0);
  return w.bytes;
}
std::vector<uint8_t> DetachBacking(uint32_t id) {
  return Wire().Hdr(kCmdResourceDetachBacking).U32(id).U32(0).bytes;
}
std::vector<uint8_t> SetScanoutCmd(uint32_t scanout_id, uint32_t id, const Rect& r) {
  return Wire().Hdr(kCmdSetScanout).PutRect(r).U32(scanout_id).U32(id).bytes;
}
std::vector<uint8_t> Flush(uint32_t id, const Rect& r) {
  return Wire().Hdr(kCmdResourceFlush).PutRect(r).U32(id).U32(0).bytes;
}
std::vector<uint8_t> TransferCmd(uint32_t id, const Rect& r, uint64_t offset) {
  return Wire().Hdr(kCmdTransferToHost2d).PutRect(r).U64(offset).U32(id).U32(0).bytes;
}
std::vector<uint8_t> GetEdidCmd(uint32_t scanout_id) {
  return Wire().Hdr(kCmdGetEdid).U32(scanout_id).U32(0).bytes;
}
std::vector<uint8_t> CursorCmd(uint32_t type, uint32_t scanout_id, int32_t x, int32_t y,
                               uint32_t id, uint32_t hot_x, uint32_t hot_y) {
  return Wire()
      .Hdr(type)
      .U32(scanout_id)
      .U32(static_cast<uint32_t>(x))
      .U32(static_cast<uint32_t>(y))
      .U32(0)
      .U32(id)
      .U32(hot_x)
      .U32(hot_y)
      .U32(0)
      .bytes;
}

}  // namespace dxpu::virtio::gpu
