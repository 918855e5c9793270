// little_endian.h - loads and stores of the little-endian fields virtio lays out (rings,
// descriptors, request headers, configuration structures). Callers check the bounds.
#ifndef DXPU_LIB_VIRTIO_LITTLE_ENDIAN_H_
#define DXPU_LIB_VIRTIO_LITTLE_ENDIAN_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dxpu::virtio {

inline uint64_t LoadLe(std::span<const uint8_t> p, size_t at, int bytes) {
  uint64_t v = 0;
  for (int k = 0; k < bytes; ++k) v |= uint64_t{p[at + static_cast<size_t>(k)]} << (8 * k);
  return v;
}
inline uint16_t LoadLe16(std::span<const uint8_t> p, size_t at) {
  return static_cast<uint16_t>(LoadLe(p, at, 2));
}
inline uint32_t LoadLe32(std::span<const uint8_t> p, size_t at) {
  return static_cast<uint32_t>(LoadLe(p, at, 4));
}
inline uint64_t LoadLe64(std::span<const uint8_t> p, size_t at) { return LoadLe(p, at, 8); }

inline void AppendLe(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) out.push_back(static_cast<uint8_t>(v >> (8 * k)));
}
inline void StoreLe(std::span<uint8_t> p, size_t at, uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k)
    p[at + static_cast<size_t>(k)] = static_cast<uint8_t>(v >> (8 * k));
}

}  // namespace dxpu::virtio

#endif  // DXPU_LIB_VIRTIO_LITTLE_ENDIAN_H_
