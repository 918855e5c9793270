// config_header.cc - the type 0 configuration header of a PCIe endpoint (PCI Local Bus 3.0
// section 6.1, as PCI Express Base 4.0 section 7.5.1 narrows it for PCIe functions).
#include "gpu/bar_registers.h"
#include "gpu/capability_builders.h"
#include "gpu/pci_regs.h"

namespace dxpu::gpu::build {

void Header(RegisterFile& regs, const DeviceProfile& p, uint8_t first_capability) {
  regs.Define({.offset = pci::kVendorId, .size = 2, .value = p.vendor_id, .hwinit = 0xffff});
  regs.Define({.offset = pci::kDeviceId, .size = 2, .value = p.device_id, .hwinit = 0xffff});

  // Command: a PCIe endpoint without I/O BARs implements Memory Space, Bus Master, Parity
  // Error Response, SERR# Enable and Interrupt Disable; Special Cycles, Memory Write and
  // Invalidate, VGA Palette Snoop, IDSEL Stepping and Fast Back-to-Back are hardwired to 0 in
  // PCIe, and I/O Space is too when there is no I/O BAR.
  regs.Define({.offset = pci::kCommand,
               .size = 2,
               .rw = pci::kCommandMemory | pci::kCommandMaster | pci::kCommandParity |
                     pci::kCommandSerr | pci::kCommandIntxDisable});
  // Status: Capabilities List set; Interrupt Status is read-only (set while INTx is asserted);
  // the error bits are RW1C. 66 MHz, Fast Back-to-Back and DEVSEL timing are 0 in PCIe.
  regs.Define({.offset = pci::kStatus,
               .size = 2,
               .value = first_capability != 0 ? pci::kStatusCapList : 0u,
               .rw1c = pci::kStatusMasterParity | pci::kStatusSigTargetAbort |
                       pci::kStatusRecTargetAbort | pci::kStatusRecMasterAbort |
                       pci::kStatusSigSystemError | pci::kStatusDetectedParity,
               .hwinit = pci::kStatusCapList});

  regs.Define({.offset = pci::kRevisionId,
               .size = 4,
               .value = p.revision_id | (p.class_code << 8),
               .hwinit = 0x000000ff});
  // Cache Line Size: RW with no effect in PCIe (kept for software compatibility). Latency
  // Timer, BIST: 0. Header Type 0, single function.
  regs.Define({.offset = pci::kCacheLineSize, .size = 1, .rw = 0xff});

  for (const BarSpec& bar : p.bars) DefineBar(regs, bar, bar.size);

  regs.Define({.offset = pci::kSubsystemVendorId,
               .size = 2,
               .value = p.subsystem_vendor_id,
               .hwinit = 0xffff});
  regs.Define({.offset = pci::kSubsystemId, .size = 2, .value = p.subsystem_id, .hwinit = 0xffff});
  // Expansion ROM BAR: not implemented, reads 0.
  regs.Define({.offset = pci::kCapabilityList, .size = 1, .value = first_capability});
  // Interrupt Line: RW scratch for software. Interrupt Pin: INTA#. Min_Gnt, Max_Lat: 0.
  regs.Define({.offset = pci::kInterruptLine, .size = 1, .rw = 0xff});
  regs.Define({.offset = pci::kInterruptPin, .size = 1, .value = 0x01, .hwinit = 0xff});
}

}  // namespace dxpu::gpu::build
