// virtio_gpu_protocol.cc - little-endian field access for virtio-gpu's wire structures.
#include "virtio/gpu/virtio_gpu_protocol.h"

namespace dxpu::virtio::gpu {

uint8_t WireReader::U8(size_t at) {
  if (at >= bytes_.size()) {
    ok_ = false;
    return 0;
  }
  return bytes_[at];
}

uint32_t WireReader::U32(size_t at) {
  if (at > bytes_.size() || bytes_.size() - at < 4) {
    ok_ = false;
    return 0;
  }
  uint32_t value = 0;
  for (size_t i = 0; i < 4; ++i) value |= uint32_t{bytes_[at + i]} << (8 * i);
  return value;
}

uint64_t WireReader::U64(size_t at) {
  uint64_t low = U32(at);
  uint64_t high = U32(at + 4);
  return low | (high << 32);
}

CtrlHdr WireReader::Hdr() {
  return CtrlHdr{
      .type = U32(0), .flags = U32(4), .fence_id = U64(8), .ctx_id = U32(16), .ring_idx = U8(20)};
}

Rect WireReader::RectAt(size_t at) {
  return Rect{.x = U32(at), .y = U32(at + 4), .width = U32(at + 8), .height = U32(at + 12)};
}

void WireWriter::U32(size_t at, uint32_t value) {
  if (at > bytes_.size() || bytes_.size() - at < 4) return;
  for (size_t i = 0; i < 4; ++i) bytes_[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

void WireWriter::U64(size_t at, uint64_t value) {
  U32(at, static_cast<uint32_t>(value));
  U32(at + 4, static_cast<uint32_t>(value >> 32));
}

void WireWriter::Hdr(const CtrlHdr& hdr) {
  U32(0, hdr.type);
  U32(4, hdr.flags);
  U64(8, hdr.fence_id);
  U32(16, hdr.ctx_id);
  if (bytes_.size() > 20) bytes_[20] = hdr.ring_idx;
}

void WireWriter::PutRect(size_t at, const Rect& rect) {
  U32(at, rect.x);
  U32(at + 4, rect.y);
  U32(at + 8, rect.width);
  U32(at + 12, rect.height);
}

}  // namespace dxpu::virtio::gpu
