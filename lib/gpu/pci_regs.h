// pci_regs.h - offsets, capability IDs and register bits of a PCIe function's configuration
// space, as the PCI Local Bus Specification 3.0 (type 0 header) and the PCI Express Base
// Specification 4.0 define them. Names follow Linux's include/uapi/linux/pci_regs.h where it
// has one, so a reader can check each value against it. Capability-relative offsets are
// relative to the capability's first byte.
#ifndef DXPU_LIB_GPU_PCI_REGS_H_
#define DXPU_LIB_GPU_PCI_REGS_H_

#include <cstdint>

namespace dxpu::gpu::pci {

// Sizes.
inline constexpr uint32_t kConfigSpaceSize = 4096;  // PCIe: 4 KiB per function
inline constexpr uint32_t kLegacyConfigSize = 256;  // where the extended space begins
inline constexpr uint32_t kHeaderSize = 64;         // the type 0 header; capabilities follow
inline constexpr int kNumBars = 6;

// Type 0 header.
inline constexpr uint16_t kVendorId = 0x00;
inline constexpr uint16_t kDeviceId = 0x02;
inline constexpr uint16_t kCommand = 0x04;
inline constexpr uint16_t kStatus = 0x06;
inline constexpr uint16_t kRevisionId = 0x08;
inline constexpr uint16_t kClassProg = 0x09;  // class code, 3 bytes: prog-if, subclass, class
inline constexpr uint16_t kCacheLineSize = 0x0c;
inline constexpr uint16_t kLatencyTimer = 0x0d;
inline constexpr uint16_t kHeaderType = 0x0e;
inline constexpr uint16_t kBist = 0x0f;
inline constexpr uint16_t kBar0 = 0x10;  // BAR n at kBar0 + 4 n
inline constexpr uint16_t kCardbusCis = 0x28;
inline constexpr uint16_t kSubsystemVendorId = 0x2c;
inline constexpr uint16_t kSubsystemId = 0x2e;
inline constexpr uint16_t kRomAddress = 0x30;
inline constexpr uint16_t kCapabilityList = 0x34;
inline constexpr uint16_t kInterruptLine = 0x3c;
inline constexpr uint16_t kInterruptPin = 0x3d;
inline constexpr uint16_t kMinGnt = 0x3e;
inline constexpr uint16_t kMaxLat = 0x3f;

// Command register bits.
inline constexpr uint16_t kCommandIo = 0x0001;
inline constexpr uint16_t kCommandMemory = 0x0002;
inline constexpr uint16_t kCommandMaster = 0x0004;
inline constexpr uint16_t kCommandSpecial = 0x0008;     // hardwired 0 in PCIe
inline constexpr uint16_t kCommandInvalidate = 0x0010;  // hardwired 0 in PCIe
inline constexpr uint16_t kCommandVgaPalette = 0x0020;  // hardwired 0 in PCIe
inline constexpr uint16_t kCommandParity = 0x0040;
inline constexpr uint16_t kCommandWait = 0x0080;  // hardwired 0 in PCIe
inline constexpr uint16_t kCommandSerr = 0x0100;
inline constexpr uint16_t kCommandFastBack = 0x0200;  // hardwired 0 in PCIe
inline constexpr uint16_t kCommandIntxDisable = 0x0400;

// Status register bits.
inline constexpr uint16_t kStatusImmReady = 0x0001;
inline constexpr uint16_t kStatusInterrupt = 0x0008;
inline constexpr uint16_t kStatusCapList = 0x0010;
inline constexpr uint16_t kStatusMasterParity = 0x0100;  // Master Data Parity Error
inline constexpr uint16_t kStatusSigTargetAbort = 0x0800;
inline constexpr uint16_t kStatusRecTargetAbort = 0x1000;
inline constexpr uint16_t kStatusRecMasterAbort = 0x2000;
inline constexpr uint16_t kStatusSigSystemError = 0x4000;
inline constexpr uint16_t kStatusDetectedParity = 0x8000;

// Memory BAR low bits (all hardware-initialized).
inline constexpr uint32_t kBarSpaceIo = 0x1;
inline constexpr uint32_t kBarMemType64 = 0x4;
inline constexpr uint32_t kBarMemPrefetch = 0x8;
inline constexpr uint32_t kBarMemFlags = 0xf;  // bits below the address

// Capability list (in the first 256 bytes): ID byte, next-pointer byte.
inline constexpr uint8_t kCapIdPm = 0x01;
inline constexpr uint8_t kCapIdMsi = 0x05;
inline constexpr uint8_t kCapIdVndr = 0x09;  // Vendor-Specific: ID, next, length, ...
inline constexpr uint8_t kCapIdExp = 0x10;
inline constexpr uint8_t kCapIdMsix = 0x11;
inline constexpr uint16_t kCapListId = 0;
inline constexpr uint16_t kCapListNext = 1;

// Power Management capability.
inline constexpr uint16_t kPmPmc = 0x02;   // PM Capabilities (PMC)
inline constexpr uint16_t kPmCtrl = 0x04;  // PM Control/Status (PMCSR)
inline constexpr uint16_t kPmCtrlStateMask = 0x0003;
inline constexpr uint16_t kPmCtrlNoSoftReset = 0x0008;
inline constexpr uint16_t kPmCtrlPmeEnable = 0x0100;
inline constexpr uint16_t kPmCtrlPmeStatus = 0x8000;
inline constexpr uint16_t kPmSizeof = 8;

// MSI capability (this model always implements the 64-bit layout).
inline constexpr uint16_t kMsiFlags = 0x02;  // Message Control
inline constexpr uint16_t kMsiFlagsEnable = 0x0001;
inline constexpr uint16_t kMsiFlagsQmask = 0x000e;  // Multiple Message Capable
inline constexpr uint16_t kMsiFlagsQsize = 0x0070;  // Multiple Message Enable
inline constexpr uint16_t kMsiFlags64Bit = 0x0080;
inline constexpr uint16_t kMsiFlagsMaskBit = 0x0100;
inline constexpr uint16_t kMsiAddressLo = 0x04;
inline constexpr uint16_t kMsiAddressHi = 0x08;
inline constexpr uint16_t kMsiData64 = 0x0c;
inline constexpr uint16_t kMsiMask64 = 0x10;
inline constexpr uint16_t kMsiPending64 = 0x14;

// MSI-X capability.
inline constexpr uint16_t kMsixFlags = 0x02;  // Message Control
inline constexpr uint16_t kMsixFlagsQsize = 0x07ff;
inline constexpr uint16_t kMsixFlagsMaskAll = 0x4000;
inline constexpr uint16_t kMsixFlagsEnable = 0x8000;
inline constexpr uint16_t kMsixTable = 0x04;
inline constexpr uint16_t kMsixPba = 0x08;
inline constexpr uint32_t kMsixBirMask = 0x7;
inline constexpr uint16_t kMsixSizeof = 12;
inline constexpr uint32_t kMsixEntrySize = 16;  // one table entry, in the BAR

// PCI Express capability (version 2).
inline constexpr uint16_t kExpFlags = 0x02;  // PCI Express Capabilities register
inline constexpr uint16_t kExpDevCap = 0x04;
inline constexpr uint32_t kExpDevCapPayload = 0x00000007;
inline constexpr uint32_t kExpDevCapExtTag = 0x00000020;
inline constexpr uint32_t kExpDevCapRber = 0x00008000;
inline constexpr uint32_t kExpDevCapFlr = 0x10000000;
inline constexpr uint16_t kExpDevCtl = 0x08;
inline constexpr uint16_t kExpDevCtlCere = 0x0001;
inline constexpr uint16_t kExpDevCtlNfere = 0x0002;
inline constexpr uint16_t kExpDevCtlFere = 0x0004;
inline constexpr uint16_t kExpDevCtlUrre = 0x0008;
inline constexpr uint16_t kExpDevCtlRelaxEn = 0x0010;
inline constexpr uint16_t kExpDevCtlPayload = 0x00e0;  // Max_Payload_Size, 128 << n bytes
inline constexpr uint16_t kExpDevCtlExtTag = 0x0100;
inline constexpr uint16_t kExpDevCtlPhantom = 0x0200;
inline constexpr uint16_t kExpDevCtlAuxPme = 0x0400;
inline constexpr uint16_t kExpDevCtlNoSnoopEn = 0x0800;
inline constexpr uint16_t kExpDevCtlReadrq = 0x7000;  // Max_Read_Request_Size, 128 << n bytes
inline constexpr uint16_t kExpDevCtlBcrFlr = 0x8000;  // Initiate Function Level Reset
inline constexpr uint16_t kExpDevSta = 0x0a;
inline constexpr uint16_t kExpDevStaCed = 0x0001;
inline constexpr uint16_t kExpDevStaNfed = 0x0002;
inline constexpr uint16_t kExpDevStaFed = 0x0004;
inline constexpr uint16_t kExpDevStaUrd = 0x0008;
inline constexpr uint16_t kExpDevStaAuxpd = 0x0010;
inline constexpr uint16_t kExpDevStaTrpnd = 0x0020;
inline constexpr uint16_t kExpLnkCap = 0x0c;
inline constexpr uint16_t kExpLnkCtl = 0x10;
inline constexpr uint16_t kExpLnkCtlAspmc = 0x0003;
inline constexpr uint16_t kExpLnkCtlRcb = 0x0008;
inline constexpr uint16_t kExpLnkCtlCcc = 0x0040;
inline constexpr uint16_t kExpLnkCtlEs = 0x0080;
inline constexpr uint16_t kExpLnkSta = 0x12;
inline constexpr uint16_t kExpLnkStaSlc = 0x1000;  // Slot Clock Configuration
inline constexpr uint16_t kExpSltCap = 0x14;
inline constexpr uint16_t kExpDevCap2 = 0x24;
inline constexpr uint32_t kExpDevCap2CompTmoutDis = 0x00000010;
inline constexpr uint32_t kExpDevCap2Ltr = 0x00000800;
inline constexpr uint32_t kExpDevCap2TagComp10Bit = 0x00010000;
inline constexpr uint32_t kExpDevCap2ExtFmt = 0x00100000;
inline constexpr uint16_t kExpDevCtl2 = 0x28;
inline constexpr uint16_t kExpDevCtl2CompTimeout = 0x000f;
inline constexpr uint16_t kExpDevCtl2CompTmoutDis = 0x0010;
inline constexpr uint16_t kExpDevCtl2AtomicReq = 0x0040;
inline constexpr uint16_t kExpDevCtl2IdoReqEn = 0x0100;
inline constexpr uint16_t kExpDevCtl2IdoCmpEn = 0x0200;
inline constexpr uint16_t kExpDevCtl2LtrEn = 0x0400;
inline constexpr uint16_t kExpDevSta2 = 0x2a;
inline constexpr uint16_t kExpLnkCap2 = 0x2c;
inline constexpr uint16_t kExpLnkCtl2 = 0x30;
inline constexpr uint16_t kExpLnkCtl2SelDeemph = 0x0040;  // HwInit for Upstream Ports
inline constexpr uint16_t kExpLnkSta2 = 0x32;
inline constexpr uint16_t kExpLnkSta2EqMask = 0x001e;  // 8 GT/s equalization complete, phases
inline constexpr uint16_t kExpLnkSta2EqRequest = 0x0020;
inline constexpr uint16_t kExpEndpointSizeofV2 = 0x3c;  // through Slot Status 2

// Extended capabilities (from 0x100): a 32-bit header of ID[15:0], version[19:16],
// next[31:20].
inline constexpr uint16_t kExtCapIdErr = 0x0001;     // Advanced Error Reporting
inline constexpr uint16_t kExtCapIdVc = 0x0002;      // Virtual Channel
inline constexpr uint16_t kExtCapIdDsn = 0x0003;     // Device Serial Number
inline constexpr uint16_t kExtCapIdPwr = 0x0004;     // Power Budgeting
inline constexpr uint16_t kExtCapIdRebar = 0x0015;   // Resizable BAR
inline constexpr uint16_t kExtCapIdLtr = 0x0018;     // Latency Tolerance Reporting
inline constexpr uint16_t kExtCapIdSecpci = 0x0019;  // Secondary PCI Express
inline constexpr uint16_t kExtCapIdL1ss = 0x001e;    // L1 PM Substates
inline constexpr uint16_t kExtCapIdPl16gt = 0x0026;  // Physical Layer 16.0 GT/s

constexpr uint32_t ExtCapHeader(uint16_t id, uint8_t version, uint16_t next) {
  return static_cast<uint32_t>(id) | (static_cast<uint32_t>(version & 0xfu) << 16) |
         (static_cast<uint32_t>(next & 0xffcu) << 20);
}
constexpr uint16_t ExtCapId(uint32_t header) { return static_cast<uint16_t>(header & 0xffff); }
constexpr uint8_t ExtCapVersion(uint32_t header) {
  return static_cast<uint8_t>((header >> 16) & 0xf);
}
constexpr uint16_t ExtCapNext(uint32_t header) {
  return static_cast<uint16_t>((header >> 20) & 0xffc);
}

// Advanced Error Reporting.
inline constexpr uint16_t kErrUncorStatus = 0x04;
inline constexpr uint16_t kErrUncorMask = 0x08;
inline constexpr uint16_t kErrUncorSever = 0x0c;
inline constexpr uint16_t kErrCorStatus = 0x10;
inline constexpr uint16_t kErrCorMask = 0x14;
inline constexpr uint16_t kErrCap = 0x18;  // Advanced Error Capabilities and Control
inline constexpr uint16_t kErrHeaderLog = 0x1c;
inline constexpr uint32_t kErrUncDlp = 0x00000010;
inline constexpr uint32_t kErrUncPoisonTlp = 0x00001000;
inline constexpr uint32_t kErrUncFcp = 0x00002000;
inline constexpr uint32_t kErrUncCompTime = 0x00004000;
inline constexpr uint32_t kErrUncCompAbort = 0x00008000;
inline constexpr uint32_t kErrUncUnxComp = 0x00010000;
inline constexpr uint32_t kErrUncRxOver = 0x00020000;
inline constexpr uint32_t kErrUncMalfTlp = 0x00040000;
inline constexpr uint32_t kErrUncUnsup = 0x00100000;
inline constexpr uint32_t kErrUncIntn = 0x00400000;
inline constexpr uint32_t kErrCorRcvr = 0x00000001;
inline constexpr uint32_t kErrCorBadTlp = 0x00000040;
inline constexpr uint32_t kErrCorBadDllp = 0x00000080;
inline constexpr uint32_t kErrCorRepRoll = 0x00000100;
inline constexpr uint32_t kErrCorRepTimer = 0x00001000;
inline constexpr uint32_t kErrCorAdvNfat = 0x00002000;
inline constexpr uint32_t kErrCorInternal = 0x00004000;
inline constexpr uint16_t kErrSizeof = 0x48;  // through the TLP Prefix Log

// Virtual Channel (VC0 only).
inline constexpr uint16_t kVcPortCap1 = 0x04;
inline constexpr uint16_t kVcPortCap2 = 0x08;
inline constexpr uint16_t kVcPortCtrl = 0x0c;
inline constexpr uint16_t kVcPortStatus = 0x0e;
inline constexpr uint16_t kVcRes0Cap = 0x10;
inline constexpr uint16_t kVcRes0Ctrl = 0x14;
inline constexpr uint16_t kVcRes0Status = 0x1a;
inline constexpr uint32_t kVcResCtrlEnable = 0x80000000;
inline constexpr uint16_t kVcSizeofVc0 = 0x1c;

// Device Serial Number.
inline constexpr uint16_t kDsnLow = 0x04;
inline constexpr uint16_t kDsnHigh = 0x08;
inline constexpr uint16_t kDsnSizeof = 0x0c;

// Power Budgeting.
inline constexpr uint16_t kPwrDsr = 0x04;   // Data Select
inline constexpr uint16_t kPwrData = 0x08;  // Data, for the selected entry
inline constexpr uint16_t kPwrCap = 0x0c;
inline constexpr uint16_t kPwrSizeof = 0x10;

// Resizable BAR: per resizable BAR n, a Capability and a Control register.
inline constexpr uint16_t kRebarCap = 0x04;             // + 8 n
inline constexpr uint16_t kRebarCtrl = 0x08;            // + 8 n
inline constexpr uint32_t kRebarCapSizes = 0xfffffff0;  // bit 4 + k: 1 MiB << k supported
inline constexpr uint32_t kRebarCtrlBarIdx = 0x00000007;
inline constexpr uint32_t kRebarCtrlNbarMask = 0x000000e0;
inline constexpr uint32_t kRebarCtrlNbarShift = 5;
inline constexpr uint32_t kRebarCtrlBarSize = 0x00003f00;  // 1 MiB << n
inline constexpr uint32_t kRebarCtrlBarShift = 8;

// Latency Tolerance Reporting.
inline constexpr uint16_t kLtrMaxSnoopLat = 0x04;
inline constexpr uint16_t kLtrMaxNosnoopLat = 0x06;
inline constexpr uint16_t kLtrValueScaleMask = 0x1fff;  // value[9:0], scale[12:10]
inline constexpr uint16_t kLtrSizeof = 0x08;

// Secondary PCI Express.
inline constexpr uint16_t kSecpciLnkCtl3 = 0x04;
inline constexpr uint16_t kSecpciLaneErrStatus = 0x08;
inline constexpr uint16_t kSecpciLaneEqCtl = 0x0c;  // 2 bytes per lane

// L1 PM Substates.
inline constexpr uint16_t kL1ssCap = 0x04;
inline constexpr uint16_t kL1ssCtl1 = 0x08;
inline constexpr uint16_t kL1ssCtl2 = 0x0c;
inline constexpr uint32_t kL1ssCtl1Enables = 0x0000000f;        // PCI-PM/ASPM L1.2/L1.1
inline constexpr uint32_t kL1ssCtl1Ltr12Th = 0xe3ff0000;        // LTR_L1.2_THRESHOLD
inline constexpr uint32_t kL1ssCtl1CmRestoreTime = 0x0000ff00;  // RsvdP in Upstream Ports
inline constexpr uint32_t kL1ssCtl2TPowerOn = 0x000000fb;       // scale[1:0], value[7:3]
inline constexpr uint16_t kL1ssSizeof = 0x10;

// Physical Layer 16.0 GT/s.
inline constexpr uint16_t kPl16Cap = 0x04;
inline constexpr uint16_t kPl16Ctl = 0x08;
inline constexpr uint16_t kPl16Status = 0x0c;
inline constexpr uint16_t kPl16LocalParityMismatch = 0x10;
inline constexpr uint16_t kPl16Retimer1ParityMismatch = 0x14;
inline constexpr uint16_t kPl16Retimer2ParityMismatch = 0x18;
inline constexpr uint16_t kPl16LaneEqCtl = 0x20;  // 1 byte per lane
inline constexpr uint32_t kPl16StatusEqDone = 0x0000000f;
inline constexpr uint32_t kPl16StatusEqRequest = 0x00000010;

}  // namespace dxpu::gpu::pci

#endif  // DXPU_LIB_GPU_PCI_REGS_H_
