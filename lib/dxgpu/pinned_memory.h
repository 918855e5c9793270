// pinned_memory.h - the pinned host buffers a program took with Runtime::MallocHost: each one
// a Port::AllocHost buffer, remembered by its address so that a pointer anywhere inside one
// translates to the IOVA a device's commands use (each device its own, where the port gives
// each its own). Thread-safe.
#ifndef DXPU_LIB_DXGPU_PINNED_MEMORY_H_
#define DXPU_LIB_DXGPU_PINNED_MEMORY_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "dxgpu/port.h"
#include "dxgpu/status.h"

namespace dxpu::dxgpu {

// Whether a buffer the port's AllocHost returned is fit for use: `data` set, at least `bytes`,
// per-device IOVAs either none or one per device, and every IOVA and `data` a multiple of
// `alignment`. kInternal naming `what` otherwise.
Status CheckHostBuffer(const Port& port, const HostBuffer& buffer, uint64_t bytes,
                       uint64_t alignment, const std::string& what);

class PinnedRegistry {
 public:
  explicit PinnedRegistry(Port& port) : port_(port) {}
  PinnedRegistry(const PinnedRegistry&) = delete;
  PinnedRegistry& operator=(const PinnedRegistry&) = delete;
  ~PinnedRegistry();

  // A new zero-filled buffer of `bytes` (> 0).
  Expected<HostBuffer> Allocate(uint64_t bytes);
  // Frees the buffer that starts at `data`; kInvalidArgument for any other pointer (one
  // inside a buffer, one never allocated, one already freed).
  Status Free(const void* data);
  // Device `device`'s IOVA of `data` when [data, data + bytes) lies inside one buffer;
  // kInvalidArgument (saying why) otherwise.
  Expected<uint64_t> Translate(const void* data, uint64_t bytes, size_t device) const;
  // Frees every buffer still allocated (the first error, if any).
  Status FreeAll();
  size_t buffer_count() const;

 private:
  Port& port_;
  mutable std::mutex mu_;
  std::map<uintptr_t, HostBuffer> buffers_;  // by data address
};

}  // namespace dxpu::dxgpu

#endif  // DXPU_LIB_DXGPU_PINNED_MEMORY_H_
