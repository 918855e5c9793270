// pci_capabilities.cc - the capabilities in the first 256 bytes: Power Management (PCI Bus
// Power Management Interface 1.2), MSI and MSI-X (PCI Local Bus 3.0 section 6.8), and the PCI
// Express capability, version 2, of an Endpoint (PCI Express Base 4.0 section 7.5.3).
#include <bit>

#include "gpu/capability_builders.h"
#include "gpu/pci_regs.h"

namespace dxpu::gpu::build {
namespace {

uint16_t At(uint16_t base, uint16_t reg) { return static_cast<uint16_t>(base + reg); }

// log2(bytes / 128): the Max_Payload_Size / Max_Read_Request_Size encoding.
uint32_t SizeCode(uint32_t bytes) { return static_cast<uint32_t>(std::countr_zero(bytes >> 7)); }

}  // namespace

void PowerManagement(RegisterFile& regs, const DeviceProfile& /*p*/, uint16_t base) {
  // PMC: version 3 (PCI PM 1.2), no D1/D2, no aux current, PME# from D0 and D3hot.
  constexpr uint32_t kPmeFromD0 = 0x0800;
  constexpr uint32_t kPmeFromD3hot = 0x4000;
  regs.Define({.offset = At(base, pci::kPmPmc),
               .size = 2,
               .value = 0x0003 | kPmeFromD0 | kPmeFromD3hot,
               .hwinit = 0xffff});
  // PMCSR: PowerState RW (ConfigSpace discards writes of the unsupported D1/D2),
  // No_Soft_Reset set (D3hot -> D0 keeps the configuration), PME_En RW, PME_Status RW1C, no
  // Data register. The bridge-extension and Data bytes (+6, +7) read 0.
  regs.Define({.offset = At(base, pci::kPmCtrl),
               .size = 2,
               .value = pci::kPmCtrlNoSoftReset,
               .rw = pci::kPmCtrlStateMask | pci::kPmCtrlPmeEnable,
               .rw1c = pci::kPmCtrlPmeStatus,
               .hwinit = pci::kPmCtrlNoSoftReset});
}

void Msi(RegisterFile& regs, const DeviceProfile& p, uint16_t base) {
  const auto mmc = static_cast<uint32_t>(std::countr_zero(uint32_t{p.msi.vectors}));
  const uint32_t mask_bit = p.msi.per_vector_masking ? pci::kMsiFlagsMaskBit : 0u;
  regs.Define({.offset = At(base, pci::kMsiFlags),
               .size = 2,
               .value = (mmc << 1) | pci::kMsiFlags64Bit | mask_bit,
               .rw = pci::kMsiFlagsEnable | pci::kMsiFlagsQsize,
               .hwinit = pci::kMsiFlagsQmask | pci::kMsiFlags64Bit | pci::kMsiFlagsMaskBit});
  regs.Define({.offset = At(base, pci::kMsiAddressLo), .size = 4, .rw = 0xfffffffc});
  regs.Define({.offset = At(base, pci::kMsiAddressHi), .size = 4, .rw = 0xffffffff});
  // Message Data; Extended Message Data (+0x0e) is not implemented and reads 0.
  regs.Define({.offset = At(base, pci::kMsiData64), .size = 2, .rw = 0xffff});
  if (p.msi.per_vector_masking) {
    const uint32_t implemented =
        p.msi.vectors >= 32 ? 0xffffffffu : (uint32_t{1} << p.msi.vectors) - 1;
    regs.Define({.offset = At(base, pci::kMsiMask64), .size = 4, .rw = implemented});
    // Pending Bits: read-only, set by the device.
    regs.Define({.offset = At(base, pci::kMsiPending64), .size = 4});
  }
}

void Msix(RegisterFile& regs, const DeviceProfile& p, uint16_t base) {
  regs.Define({.offset = At(base, pci::kMsixFlags),
               .size = 2,
               .value = static_cast<uint32_t>(p.msix.vectors - 1),
               .rw = pci::kMsixFlagsMaskAll | pci::kMsixFlagsEnable,
               .hwinit = pci::kMsixFlagsQsize});
  regs.Define({.offset = At(base, pci::kMsixTable),
               .size = 4,
               .value = p.msix.table_offset | p.msix.table_bar,
               .hwinit = 0xffffffff});
  regs.Define({.offset = At(base, pci::kMsixPba),
               .size = 4,
               .value = p.msix.pba_offset | p.msix.pba_bar,
               .hwinit = 0xffffffff});
}

void PciExpress(RegisterFile& regs, const DeviceProfile& p, uint16_t base) {
  const bool has_ltr = FindCapabilityOffset(p, CapabilityId::kLtr).has_value();
  const auto speed = static_cast<uint32_t>(p.link.speed);
  const uint32_t width = p.link.width;

  // PCI Express Capabilities: version 2, Device/Port Type 0000b (PCI Express Endpoint), no
  // slot, Interrupt Message Number 0.
  regs.Define({.offset = At(base, pci::kExpFlags), .size = 2, .value = 0x0002, .hwinit = 0x01ff});

  // Device Capabilities: Max_Payload_Size Supported, no phantom functions, 8-bit tags, L0s
  // acceptable latency "no limit" (111b), L1 "up to 64 us" (110b), Role-Based Error Reporting,
  // FLR capable. The Captured Slot Power Limit (bits 27:18) is read-only, set by a
  // Set_Slot_Power_Limit message.
  constexpr uint32_t kL0sNoLimit = 7u << 6;
  constexpr uint32_t kL1Upto64us = 6u << 9;
  regs.Define({.offset = At(base, pci::kExpDevCap),
               .size = 4,
               .value = SizeCode(p.max_payload_supported) | pci::kExpDevCapExtTag | kL0sNoLimit |
                        kL1Upto64us | pci::kExpDevCapRber | pci::kExpDevCapFlr,
               .hwinit = 0xf003ffff});

  // Device Control: the error reporting enables, Relaxed Ordering, Max_Payload_Size,
  // Extended Tag, No Snoop, Max_Read_Request_Size and Initiate FLR are RW (Phantom Functions
  // and Aux Power PM are hardwired 0: neither is supported). Power-on: Relaxed Ordering, Extended
  // Tag and No Snoop enabled, MPS 128 bytes, MRRS 512 bytes. Initiate FLR always reads 0.
  constexpr uint32_t kMrrs512 = 2u << 12;
  regs.Define({.offset = At(base, pci::kExpDevCtl),
               .size = 2,
               .value = pci::kExpDevCtlRelaxEn | pci::kExpDevCtlExtTag | pci::kExpDevCtlNoSnoopEn |
                        kMrrs512,
               .rw = pci::kExpDevCtlCere | pci::kExpDevCtlNfere | pci::kExpDevCtlFere |
                     pci::kExpDevCtlUrre | pci::kExpDevCtlRelaxEn | pci::kExpDevCtlPayload |
                     pci::kExpDevCtlExtTag | pci::kExpDevCtlNoSnoopEn | pci::kExpDevCtlReadrq |
                     pci::kExpDevCtlBcrFlr});
  // Device Status: the four error-detected bits are RW1C; AUX Power Detected and
  // Transactions Pending are read-only, kept by the device.
  regs.Define(
      {.offset = At(base, pci::kExpDevSta),
       .size = 2,
       .rw1c = pci::kExpDevStaCed | pci::kExpDevStaNfed | pci::kExpDevStaFed | pci::kExpDevStaUrd});

  // Link Capabilities: speed, width, ASPM L1 supported (for L1 PM Substates), L1 exit latency
  // 2-4 us (010b), ASPM Optionality Compliance; no Clock PM; Surprise Down, DLL Link Active
  // and Link Bandwidth Notification reporting are for Downstream Ports; Port Number 0.
  constexpr uint32_t kAspmL1 = 2u << 10;
  constexpr uint32_t kL1Exit2to4us = 2u << 15;
  constexpr uint32_t kAspmOptionalityCompliance = 1u << 22;
  regs.Define({.offset = At(base, pci::kExpLnkCap),
               .size = 4,
               .value = speed | (width << 4) | kAspmL1 | kL1Exit2to4us | kAspmOptionalityCompliance,
               .hwinit = 0xffffffff});
  // Link Control: ASPM Control, RCB, Common Clock Configuration and Extended Synch are RW;
  // Link Disable, Retrain Link and the bandwidth interrupt enables are reserved in an
  // Endpoint; Clock PM and Autonomous Width Disable are hardwired 0 (not supported).
  regs.Define(
      {.offset = At(base, pci::kExpLnkCtl),
       .size = 2,
       .rw = pci::kExpLnkCtlAspmc | pci::kExpLnkCtlRcb | pci::kExpLnkCtlCcc | pci::kExpLnkCtlEs});
  // Link Status: trained at the maximum speed and width, using the slot's reference clock.
  regs.Define({.offset = At(base, pci::kExpLnkSta),
               .size = 2,
               .value = speed | (width << 4) | pci::kExpLnkStaSlc,
               .hwinit = pci::kExpLnkStaSlc});
  // Slot and Root registers (0x14..0x23): not implemented by an Endpoint, read 0.

  // Device Capabilities 2: Completion Timeout ranges A-D and disable supported, LTR when the
  // LTR capability is there, 10-bit tag completer (required at 16 GT/s and up), Extended Fmt.
  const uint32_t devcap2 = 0xfu | pci::kExpDevCap2CompTmoutDis |
                           (has_ltr ? pci::kExpDevCap2Ltr : 0u) |
                           (p.link.speed >= LinkSpeed::k16GT ? pci::kExpDevCap2TagComp10Bit : 0u) |
                           pci::kExpDevCap2ExtFmt;
  regs.Define(
      {.offset = At(base, pci::kExpDevCap2), .size = 4, .value = devcap2, .hwinit = 0xffffffff});
  // Device Control 2: Completion Timeout Value and Disable, AtomicOp Requester Enable, IDO
  // request/completion enables, LTR Mechanism Enable (with LTR). ARI Forwarding, AtomicOp
  // Egress Blocking and End-End TLP Prefix Blocking are for ports; OBFF and 10-bit tag
  // requester are not supported.
  regs.Define({.offset = At(base, pci::kExpDevCtl2),
               .size = 2,
               .rw = pci::kExpDevCtl2CompTimeout | pci::kExpDevCtl2CompTmoutDis |
                     pci::kExpDevCtl2AtomicReq | pci::kExpDevCtl2IdoReqEn |
                     pci::kExpDevCtl2IdoCmpEn | (has_ltr ? pci::kExpDevCtl2LtrEn : 0u)});
  // Link Capabilities 2: Supported Link Speeds Vector, every speed up to the maximum.
  regs.Define({.offset = At(base, pci::kExpLnkCap2),
               .size = 4,
               .value = ((1u << speed) - 1) << 1,
               .hwinit = 0xffffffff});
  // Link Control 2: Target Link Speed (power-on: the maximum), compliance and margin fields
  // RW(S); Selectable De-emphasis is HwInit in an Upstream Port.
  regs.Define({.offset = At(base, pci::kExpLnkCtl2),
               .size = 2,
               .value = speed,
               .rw = 0xffffu & ~uint32_t{pci::kExpLnkCtl2SelDeemph},
               .hwinit = pci::kExpLnkCtl2SelDeemph});
  // Link Status 2: 8 GT/s equalization complete (phases 1-3 successful) when the link runs at
  // 8 GT/s or more; Link Equalization Request is RW1C.
  regs.Define({.offset = At(base, pci::kExpLnkSta2),
               .size = 2,
               .value = p.link.speed >= LinkSpeed::k8GT ? pci::kExpLnkSta2EqMask : 0u,
               .rw1c = pci::kExpLnkSta2EqRequest});
  // Slot Capabilities/Control/Status 2 (0x34..0x3b): read 0.
}

void VendorSpecific(RegisterFile& regs, const CapabilityPlacement& c) {
  for (size_t i = 0; i < c.vendor_bytes.size(); ++i) {
    regs.Define({.offset = static_cast<uint16_t>(c.offset + 2 + i),
                 .size = 1,
                 .value = c.vendor_bytes[i],
                 .hwinit = 0xff});
  }
}

}  // namespace dxpu::gpu::build
