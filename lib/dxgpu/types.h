// types.h - the values libdxgpu's API hands out: device pointers, stream and event handles,
// a device's properties. Handles are plain values; the runtime checks them on every call (a
// destroyed or made-up handle is kInvalidArgument).
#ifndef DXPU_LIB_DXGPU_TYPES_H_
#define DXPU_LIB_DXGPU_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace dxpu::dxgpu {

// A place in one device's memory: the device and the address (0 .. memory_bytes). Pointer
// arithmetic with +, as with a raw pointer: the result must stay inside the allocation when
// used.
struct DevicePtr {
  uint32_t device = 0;
  uint64_t address = 0;

  DevicePtr operator+(uint64_t offset) const { return {device, address + offset}; }
  bool operator==(const DevicePtr&) const = default;
};

// Which GEMM operands are read transposed (BLAS's transa/transb).
struct GemmTranspose {
  bool a = false;
  bool b = false;
};

// A stream: an ordered queue of work on one device. 0 is never a valid id.
struct Stream {
  uint64_t id = 0;
  bool operator==(const Stream&) const = default;
};

// An event: a point in a stream, with the device's time when it was reached.
struct Event {
  uint64_t id = 0;
  bool operator==(const Event&) const = default;
};

struct DeviceProperties {
  size_t index = 0;
  std::string profile;   // "dxgpu", "a100-40g", "h100-80g"
  std::string location;  // where the port reaches it
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint64_t memory_bytes = 0;  // MEM_SIZE, read at open
  uint16_t msix_vectors = 0;
  uint32_t version = 0;  // the VERSION register
  // The roofline the model times kernels with, when the profile is a built-in one.
  bool has_roofline = false;
  double peak_fp32_flops = 0;         // FLOP/s
  double memory_bandwidth_bytes = 0;  // bytes/s
  uint64_t launch_overhead_ns = 0;
};

struct MemoryInfo {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
  uint64_t largest_free_block = 0;
};

}  // namespace dxpu::dxgpu

#endif  // DXPU_LIB_DXGPU_TYPES_H_
