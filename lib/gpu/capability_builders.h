// capability_builders.h - (internal to lib/gpu) the builders BuildPowerOnImage is made of. Each
// defines the registers of one part of the configuration space; a capability's builder fills
// its body, after the header BuildPowerOnImage writes (ID and next pointer).
#ifndef DXPU_LIB_GPU_CAPABILITY_BUILDERS_H_
#define DXPU_LIB_GPU_CAPABILITY_BUILDERS_H_

#include <cstdint>

#include "gpu/device_profile.h"
#include "gpu/register_file.h"

namespace dxpu::gpu::build {

// The type 0 header (0x00..0x3f) with its BARs; `first_capability` goes in 0x34.
void Header(RegisterFile& regs, const DeviceProfile& p, uint8_t first_capability);

// Standard capabilities (pci_capabilities.cc); `base` is the capability's offset.
void PowerManagement(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void Msi(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void Msix(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void PciExpress(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
// A Vendor-Specific capability: the placement's bytes from base + 2, read-only.
void VendorSpecific(RegisterFile& regs, const CapabilityPlacement& c);

// Extended capabilities (extended_capabilities.cc).
void Aer(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void VirtualChannel(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void SerialNumber(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void PowerBudgeting(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void ResizableBar(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void Ltr(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void SecondaryPcie(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void L1PmSubstates(RegisterFile& regs, const DeviceProfile& p, uint16_t base);
void PhysicalLayer16(RegisterFile& regs, const DeviceProfile& p, uint16_t base);

// The Resizable BAR capability's BAR Size encoding for `size` (1 MiB << n).
uint32_t RebarSizeCode(uint64_t size);

}  // namespace dxpu::gpu::build

#endif  // DXPU_LIB_GPU_CAPABILITY_BUILDERS_H_
