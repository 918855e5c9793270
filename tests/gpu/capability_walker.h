// capability_walker.h - walks a function's capability lists from its configuration bytes
// alone, as a host's PCI core does: the standard list from the pointer at 0x34 (if Status has
// Capabilities List), the extended list from 0x100, following next pointers, refusing
// pointers out of range and loops.
#ifndef DXPU_TESTS_GPU_CAPABILITY_WALKER_H_
#define DXPU_TESTS_GPU_CAPABILITY_WALKER_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dxpu::gpu::test {

struct FoundCapability {
  uint16_t offset = 0;
  uint16_t id = 0;      // 8-bit capability ID or 16-bit extended capability ID
  uint8_t version = 0;  // extended capabilities only

  bool operator==(const FoundCapability&) const = default;
};

struct CapabilityWalk {
  std::vector<FoundCapability> standard;
  std::vector<FoundCapability> extended;
  std::string error;  // empty when both lists were well formed
};

// `config` is a function's configuration space, 256 or 4096 bytes (the extended list is
// walked only in the latter).
CapabilityWalk WalkCapabilities(std::span<const uint8_t> config);

}  // namespace dxpu::gpu::test

#endif  // DXPU_TESTS_GPU_CAPABILITY_WALKER_H_
