// extended_capabilities.cc - the PCIe extended capabilities from 0x100 (PCI Express Base 4.0
// sections 7.7 to 7.9): Advanced Error Reporting, Virtual Channel (VC0 only), Device Serial
// Number, Power Budgeting, Resizable BAR, Latency Tolerance Reporting, Secondary PCI Express,
// L1 PM Substates and Physical Layer 16.0 GT/s, each as an Endpoint (an Upstream Port)
// implements it. Sticky bits (RWS, RW1CS, ROS) are modelled as their non-sticky kinds: every
// reset clears them.
#include <bit>

#include "gpu/capability_builders.h"
#include "gpu/pci_regs.h"

namespace dxpu::gpu::build {
namespace {

uint16_t At(uint16_t base, uint32_t reg) { return static_cast<uint16_t>(base + reg); }

uint32_t LaneMask(uint8_t width) { return width >= 32 ? 0xffffffffu : (uint32_t{1} << width) - 1; }

// The AER error bits this function implements (the rest are reserved or for ports): Data
// Link Protocol, Poisoned TLP Received, Flow Control Protocol, Completion Timeout, Completer
// Abort, Unexpected Completion, Receiver Overflow, Malformed TLP, Unsupported Request,
// Uncorrectable Internal Error. No ECRC, ACS, multicast or TLP prefixes.
constexpr uint32_t kAerUncorrectable = pci::kErrUncDlp | pci::kErrUncPoisonTlp | pci::kErrUncFcp |
                                       pci::kErrUncCompTime | pci::kErrUncCompAbort |
                                       pci::kErrUncUnxComp | pci::kErrUncRxOver |
                                       pci::kErrUncMalfTlp | pci::kErrUncUnsup | pci::kErrUncIntn;
// Receiver Error, Bad TLP, Bad DLLP, REPLAY_NUM Rollover, Replay Timer Timeout, Advisory
// Non-Fatal, Corrected Internal Error.
constexpr uint32_t kAerCorrectable = pci::kErrCorRcvr | pci::kErrCorBadTlp | pci::kErrCorBadDllp |
                                     pci::kErrCorRepRoll | pci::kErrCorRepTimer |
                                     pci::kErrCorAdvNfat | pci::kErrCorInternal;

}  // namespace

uint32_t RebarSizeCode(uint64_t size) { return static_cast<uint32_t>(std::countr_zero(size) - 20); }

void Aer(RegisterFile& regs, const DeviceProfile& /*p*/, uint16_t base) {
  regs.Define({.offset = At(base, pci::kErrUncorStatus), .rw1c = kAerUncorrectable});
  // Mask: Uncorrectable Internal Error masked at power-on, as the spec requires.
  regs.Define(
      {.offset = At(base, pci::kErrUncorMask), .value = pci::kErrUncIntn, .rw = kAerUncorrectable});
  // Severity defaults: DLP, FCP, Receiver Overflow, Malformed TLP and Uncorrectable Internal
  // Error are fatal.
  regs.Define({.offset = At(base, pci::kErrUncorSever),
               .value = pci::kErrUncDlp | pci::kErrUncFcp | pci::kErrUncRxOver |
                        pci::kErrUncMalfTlp | pci::kErrUncIntn,
               .rw = kAerUncorrectable});
  regs.Define({.offset = At(base, pci::kErrCorStatus), .rw1c = kAerCorrectable});
  // Advisory Non-Fatal and Corrected Internal Error are masked at power-on.
  regs.Define({.offset = At(base, pci::kErrCorMask),
               .value = pci::kErrCorAdvNfat | pci::kErrCorInternal,
               .rw = kAerCorrectable});
  // Capabilities and Control: First Error Pointer (read-only, kept by the device); no ECRC,
  // no multiple header recording. Header Log (0x1c..0x2b): read-only, kept by the device. The
  // Root Port registers and TLP Prefix Log (0x2c..0x47) read 0.
  regs.Define({.offset = At(base, pci::kErrCap)});
}

void VirtualChannel(RegisterFile& regs, const DeviceProfile& /*p*/, uint16_t base) {
  // One VC (VC0), no arbitration tables: the capability registers read 0, and VC0's resource
  // control maps TC7..TC1 (RW) besides TC0 (always), with VC ID 0 and VC Enable hardwired.
  regs.Define({.offset = At(base, pci::kVcPortCap1), .hwinit = 0xffffffff});
  regs.Define({.offset = At(base, pci::kVcPortCap2), .hwinit = 0xffffffff});
  regs.Define({.offset = At(base, pci::kVcRes0Cap), .hwinit = 0xffffffff});
  regs.Define({.offset = At(base, pci::kVcRes0Ctrl),
               .value = pci::kVcResCtrlEnable | 0xff,
               .rw = 0xfe,
               .hwinit = pci::kVcResCtrlEnable | 0x01});
  // Port VC Control/Status and VC0 Resource Status read 0.
}

void SerialNumber(RegisterFile& regs, const DeviceProfile& p, uint16_t base) {
  regs.Define({.offset = At(base, pci::kDsnLow),
               .value = static_cast<uint32_t>(p.serial_number),
               .hwinit = 0xffffffff});
  regs.Define({.offset = At(base, pci::kDsnHigh),
               .value = static_cast<uint32_t>(p.serial_number >> 32),
               .hwinit = 0xffffffff});
}

void PowerBudgeting(RegisterFile& regs, const DeviceProfile& p, uint16_t base) {
  // Data Select (8 bits) is RW; Data shows the selected entry (ConfigSpace updates it on
  // each write of Data Select) and reads 0 past the last one. System Allocated: 0.
  regs.Define({.offset = At(base, pci::kPwrDsr), .size = 1, .rw = 0xff});
  regs.Define(
      {.offset = At(base, pci::kPwrData), .value = EncodePowerBudgetEntry(p.power_budget.at(0))});
  regs.Define({.offset = At(base, pci::kPwrCap), .size = 1, .hwinit = 0x01});
}

void ResizableBar(RegisterFile& regs, const DeviceProfile& p, uint16_t base) {
  uint32_t n = 0;
  uint32_t count = 0;
  for (const BarSpec& bar : p.bars) count += bar.resizable_sizes != 0 ? 1 : 0;
  for (const BarSpec& bar : p.bars) {
    if (bar.resizable_sizes == 0) continue;
    regs.Define({.offset = At(base, pci::kRebarCap + 8 * n),
                 .value = bar.resizable_sizes << 4,
                 .hwinit = 0xffffffff});
    // Control: BAR Index, Number of Resizable BARs (in the first control register only) and
    // the BAR Size, RW; ConfigSpace resizes the BAR when it changes.
    const uint32_t nbar = n == 0 ? count << pci::kRebarCtrlNbarShift : 0u;
    regs.Define({.offset = At(base, pci::kRebarCtrl + 8 * n),
                 .value = bar.index | nbar | (RebarSizeCode(bar.size) << pci::kRebarCtrlBarShift),
                 .rw = pci::kRebarCtrlBarSize,
                 .hwinit = pci::kRebarCtrlBarIdx | pci::kRebarCtrlNbarMask});
    ++n;
  }
}

void Ltr(RegisterFile& regs, const DeviceProfile& /*p*/, uint16_t base) {
  // Max Snoop / No-Snoop Latency: value [9:0] and scale [12:10] RW, power-on 0.
  regs.Define({.offset = At(base, pci::kLtrMaxSnoopLat), .size = 2, .rw = pci::kLtrValueScaleMask});
  regs.Define(
      {.offset = At(base, pci::kLtrMaxNosnoopLat), .size = 2, .rw = pci::kLtrValueScaleMask});
}

void SecondaryPcie(RegisterFile& regs, const DeviceProfile& p, uint16_t base) {
  // Link Control 3: Perform Equalization and its interrupt enable are for Downstream Ports
  // (or crosslinks), no lower SKP OS generation: reads 0. Lane Error Status: one RW1C bit per
  // lane. Lane Equalization Control: per lane, the transmitter presets the Downstream and
  // Upstream Port used at 8 GT/s (P7 both), read-only in an Upstream Port.
  regs.Define({.offset = At(base, pci::kSecpciLnkCtl3)});
  regs.Define({.offset = At(base, pci::kSecpciLaneErrStatus), .rw1c = LaneMask(p.link.width)});
  for (uint32_t lane = 0; lane < p.link.width; ++lane) {
    regs.Define({.offset = At(base, pci::kSecpciLaneEqCtl + 2 * lane),
                 .size = 2,
                 .value = 0x0707,
                 .hwinit = 0xffff});
  }
}

void L1PmSubstates(RegisterFile& regs, const DeviceProfile& /*p*/, uint16_t base) {
  // Capabilities: PCI-PM L1.2, PCI-PM L1.1, ASPM L1.2, ASPM L1.1 and L1 PM Substates
  // supported; Port Common_Mode_Restore_Time 40 us; Port T_POWER_ON 50 us (scale 10 us,
  // value 5).
  constexpr uint32_t kSupported = 0x1f;
  constexpr uint32_t kCmRestore40us = 40u << 8;
  constexpr uint32_t kTPowerOn50us = (1u << 16) | (5u << 19);
  regs.Define({.offset = At(base, pci::kL1ssCap),
               .value = kSupported | kCmRestore40us | kTPowerOn50us,
               .hwinit = 0xffffffff});
  // Control 1: the four enables and LTR_L1.2_THRESHOLD are RW; Common_Mode_Restore_Time is
  // reserved in an Upstream Port. Control 2: T_POWER_ON scale and value RW.
  regs.Define(
      {.offset = At(base, pci::kL1ssCtl1), .rw = pci::kL1ssCtl1Enables | pci::kL1ssCtl1Ltr12Th});
  regs.Define({.offset = At(base, pci::kL1ssCtl2), .rw = pci::kL1ssCtl2TPowerOn});
}

void PhysicalLayer16(RegisterFile& regs, const DeviceProfile& p, uint16_t base) {
  // Capabilities and Control: reserved, read 0. Status: 16 GT/s equalization complete with
  // phases 1-3 successful (the link trained at 16 GT/s); Link Equalization Request 16 GT/s
  // RW1C. Data parity mismatch status: one RW1C bit per lane (local, first and second
  // retimer; with no retimer those stay 0).
  regs.Define({.offset = At(base, pci::kPl16Cap)});
  regs.Define({.offset = At(base, pci::kPl16Ctl)});
  regs.Define({.offset = At(base, pci::kPl16Status),
               .value = pci::kPl16StatusEqDone,
               .rw1c = pci::kPl16StatusEqRequest});
  const uint32_t lanes = LaneMask(p.link.width);
  regs.Define({.offset = At(base, pci::kPl16LocalParityMismatch), .rw1c = lanes});
  regs.Define({.offset = At(base, pci::kPl16Retimer1ParityMismatch), .rw1c = lanes});
  regs.Define({.offset = At(base, pci::kPl16Retimer2ParityMismatch), .rw1c = lanes});
  // Lane Equalization Control: per lane, the 16 GT/s transmitter presets of the Downstream
  // and Upstream Port (P7 both), read-only in an Upstream Port.
  for (uint32_t lane = 0; lane < p.link.width; ++lane) {
    regs.Define(
        {.offset = At(base, pci::kPl16LaneEqCtl + lane), .size = 1, .value = 0x77, .hwinit = 0xff});
  }
}

}  // namespace dxpu::gpu::build
