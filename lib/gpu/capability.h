// capability.h - the PCI capabilities and PCIe extended capabilities this model implements:
// their IDs, versions and names. Where each sits in a function's configuration space is a
// profile's choice (DeviceProfile::capabilities); how long each is, CapabilitySize.
#ifndef DXPU_LIB_GPU_CAPABILITY_H_
#define DXPU_LIB_GPU_CAPABILITY_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace dxpu::gpu {

enum class CapabilityId : uint8_t {
  // In the capability list of the first 256 bytes.
  kPowerManagement,  // 0x01, version 3
  kMsi,              // 0x05, 64-bit address, per-vector masking per profile
  kPciExpress,       // 0x10, version 2, Endpoint
  kMsix,             // 0x11
  // In the extended capability list from 0x100.
  kAer,              // 0x0001 v2, Advanced Error Reporting
  kVirtualChannel,   // 0x0002 v1, VC0 only
  kSerialNumber,     // 0x0003 v1, Device Serial Number
  kPowerBudgeting,   // 0x0004 v1
  kResizableBar,     // 0x0015 v1
  kLtr,              // 0x0018 v1, Latency Tolerance Reporting
  kSecondaryPcie,    // 0x0019 v1
  kL1PmSubstates,    // 0x001e v1
  kPhysicalLayer16,  // 0x0026 v1, Physical Layer 16.0 GT/s
  // In the capability list of the first 256 bytes again (listed last to keep the values above):
  // its bytes are the placement's (CapabilityPlacement::vendor_bytes), and a profile may list
  // it more than once (virtio's structures are one each).
  kVendorSpecific,  // 0x09
};

// Every CapabilityId, in declaration order.
std::span<const CapabilityId> AllCapabilities();

// True for the extended capabilities (those at or above 0x100).
bool IsExtended(CapabilityId id);

// The ID the hardware reports: the 8-bit capability ID, or the 16-bit extended capability ID.
uint16_t PciCapabilityId(CapabilityId id);

// The version in an extended capability's header (0 for the standard ones, which have none).
uint8_t ExtendedCapabilityVersion(CapabilityId id);

// "Power Management", "MSI-X", "Advanced Error Reporting", ...
std::string_view CapabilityName(CapabilityId id);

// The capability a standard (extended == false) or extended ID names, if this model has it.
std::optional<CapabilityId> FindCapability(bool extended, uint16_t pci_id);

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_CAPABILITY_H_
