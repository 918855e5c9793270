// Register access types: read-only and hardware-initialized bits ignore writes, RW bits take
// them, RW1C bits clear on 1; and the registers the model reads (Command, MSI, MSI-X, Device
// Control, PMCSR) behave as the specifications say.
#include <gtest/gtest.h>

#include <string>

#include "gpu/pci_regs.h"
#include "gpu_test_util.h"

namespace dxpu::gpu::test {
namespace {

uint16_t Cap(const ConfigSpace& config, CapabilityId id) {
  const std::optional<uint16_t> o = config.capability_offset(id);
  if (!o) throw std::runtime_error(std::string(CapabilityName(id)) + " missing");
  return *o;
}

class RegisterSemanticsTest : public ::testing::TestWithParam<std::string_view> {};

INSTANTIATE_TEST_SUITE_P(Profiles, RegisterSemanticsTest, ::testing::ValuesIn(ProfileNames()),
                         ParamName);

// All-ones into every DW (Initiate FLR excepted, which would reset everything): no read-only
// or hardware-initialized bit changes.
TEST_P(RegisterSemanticsTest, ReadOnlyBitsIgnoreWritesOfAllOnes) {
  const ConfigSpace reference = MakeConfigSpace(GetParam());
  ConfigSpace config = MakeConfigSpace(GetParam());
  const uint16_t devctl = Cap(config, CapabilityId::kPciExpress) + pci::kExpDevCtl;
  const std::optional<uint16_t> pb = config.capability_offset(CapabilityId::kPowerBudgeting);
  int resets = 0;
  config.set_reset_callback([&] { ++resets; });
  for (uint32_t dw = 0; dw < ConfigSpace::kSize / 4; ++dw) {
    uint32_t value = 0xffffffff;
    if (dw == devctl / 4u) value &= ~(uint32_t{pci::kExpDevCtlBcrFlr} << (8 * (devctl % 4)));
    ASSERT_EQ(config.WriteDw(dw, value, 0xf), ConfigStatus::kOk);
  }
  EXPECT_EQ(resets, 0);
  const RegisterFile& power_on = reference.registers();
  const std::vector<uint8_t> before = Dump(reference);
  const std::vector<uint8_t> after = Dump(config);
  int rw_bits = 0;
  for (uint32_t o = 0; o < ConfigSpace::kSize; ++o) {
    // The Power Budgeting Data register follows Data Select (hardware-updated by design).
    if (pb && o >= uint32_t{*pb} + pci::kPwrData && o < uint32_t{*pb} + pci::kPwrData + 4u)
      continue;
    for (unsigned bit = 0; bit < 8; ++bit) {
      const BitAccess access = power_on.AccessOf(o, bit);
      const bool was = ((before[o] >> bit) & 1) != 0;
      const bool now = ((after[o] >> bit) & 1) != 0;
      switch (access) {
        case BitAccess::kReadOnly:
        case BitAccess::kHwInit:
          EXPECT_EQ(now, was) << "read-only bit " << bit << " of byte 0x" << std::hex << o;
          break;
        case BitAccess::kWrite1ToClear:
          EXPECT_FALSE(now) << "RW1C bit " << bit << " of byte 0x" << std::hex << o;
          break;
        case BitAccess::kReadWrite:
          ++rw_bits;
          break;
      }
    }
  }
  EXPECT_GT(rw_bits, 100);  // Command, BARs, MSI/MSI-X, Device Control, AER masks, ...
}

TEST_P(RegisterSemanticsTest, CommandRegisterHasOnlyAnEndpointsWritableBits) {
  ConfigSpace config = MakeConfigSpace(GetParam());
  ASSERT_EQ(config.Write(pci::kCommand, 2, 0xffff), ConfigStatus::kOk);
  // Memory Space, Bus Master, Parity Error Response, SERR# Enable, Interrupt Disable.
  EXPECT_EQ(Read16(config, pci::kCommand), 0x0546);
  EXPECT_TRUE(config.memory_enabled());
  EXPECT_TRUE(config.bus_master_enabled());
  EXPECT_TRUE(config.intx_disabled());
  ASSERT_EQ(config.Write(pci::kCommand, 2, pci::kCommandMaster), ConfigStatus::kOk);
  EXPECT_FALSE(config.memory_enabled());
  EXPECT_TRUE(config.bus_master_enabled());
  EXPECT_FALSE(config.intx_disabled());
  // A one-byte write of the upper byte leaves the lower one alone.
  ASSERT_EQ(config.Write(pci::kCommand + 1, 1, 0x04), ConfigStatus::kOk);
  EXPECT_EQ(Read16(config, pci::kCommand), pci::kCommandMaster | pci::kCommandIntxDisable);
  // Writing Command does not disturb Status (same DW).
  EXPECT_EQ(Read16(config, pci::kStatus), pci::kStatusCapList);
}

TEST_P(RegisterSemanticsTest, StatusErrorBitsAreWriteOneToClear) {
  ConfigSpace config = MakeConfigSpace(GetParam());
  constexpr uint16_t kErrors = 0xf900;
  config.SetHardwareBits(pci::kStatus, 2, kErrors | pci::kStatusInterrupt);
  EXPECT_EQ(Read16(config, pci::kStatus), kErrors | pci::kStatusInterrupt | pci::kStatusCapList);
  ASSERT_EQ(config.Write(pci::kStatus, 2, 0), ConfigStatus::kOk);  // 0s clear nothing
  EXPECT_EQ(Read16(config, pci::kStatus), kErrors | pci::kStatusInterrupt | pci::kStatusCapList);
  ASSERT_EQ(config.Write(pci::kStatus, 2, pci::kStatusRecMasterAbort), ConfigStatus::kOk);
  EXPECT_EQ(Read16(config, pci::kStatus),
            (kErrors & ~pci::kStatusRecMasterAbort) | pci::kStatusInterrupt | pci::kStatusCapList);
  // All-ones clears every error bit; Interrupt Status and Capabilities List are read-only.
  ASSERT_EQ(config.Write(pci::kStatus, 2, 0xffff), ConfigStatus::kOk);
  EXPECT_EQ(Read16(config, pci::kStatus), pci::kStatusInterrupt | pci::kStatusCapList);
  // A 4-byte write of Command leaves Status's RW1C bits alone when their bytes carry 0s.
  config.SetHardwareBits(pci::kStatus, 2, pci::kStatusSigTargetAbort);
  ASSERT_EQ(config.Write(pci::kCommand, 4, pci::kCommandMemory), ConfigStatus::kOk);
  EXPECT_NE(Read16(config, pci::kStatus) & pci::kStatusSigTargetAbort, 0);
}

TEST_P(RegisterSemanticsTest, DeviceStatusAndAerStatusAreWriteOneToClear) {
  ConfigSpace config = MakeConfigSpace(GetParam());
  const uint16_t devsta = Cap(config, CapabilityId::kPciExpress) + pci::kExpDevSta;
  config.SetHardwareBits(devsta, 2, 0x000f | pci::kExpDevStaTrpnd);
  ASSERT_EQ(config.Write(devsta, 2, pci::kExpDevStaUrd | pci::kExpDevStaTrpnd), ConfigStatus::kOk);
  EXPECT_EQ(Read16(config, devsta), 0x0007 | pci::kExpDevStaTrpnd);  // Transactions Pending: RO
  ASSERT_EQ(config.Write(devsta, 2, 0xffff), ConfigStatus::kOk);
  EXPECT_EQ(Read16(config, devsta), pci::kExpDevStaTrpnd);

  const uint16_t aer = Cap(config, CapabilityId::kAer);
  config.SetHardwareBits(aer + pci::kErrUncorStatus, 4, pci::kErrUncUnsup | pci::kErrUncCompTime);
  ASSERT_EQ(config.Write(aer + pci::kErrUncorStatus, 4, pci::kErrUncUnsup), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, aer + pci::kErrUncorStatus), pci::kErrUncCompTime);
  config.SetHardwareBits(aer + pci::kErrCorStatus, 4, pci::kErrCorBadTlp);
  ASSERT_EQ(config.Write(aer + pci::kErrCorStatus, 4, 0xffffffff), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, aer + pci::kErrCorStatus), 0u);
  // The masks are RW only for implemented errors.
  ASSERT_EQ(config.Write(aer + pci::kErrUncorMask, 4, 0xffffffff), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, aer + pci::kErrUncorMask), 0x0057f010u);
  ASSERT_EQ(config.Write(aer + pci::kErrCorMask, 4, 0xffffffff), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, aer + pci::kErrCorMask), 0x000071c1u);
}

TEST_P(RegisterSemanticsTest, MsixMessageControlEnablesAndMasks) {
  ConfigSpace config = MakeConfigSpace(GetParam());
  const uint16_t msix = Cap(config, CapabilityId::kMsix);
  const uint16_t table_size = config.msix().table_size;
  ASSERT_EQ(config.Write(msix + pci::kMsixFlags, 2, pci::kMsixFlagsEnable), ConfigStatus::kOk);
  EXPECT_TRUE(config.msix().enabled);
  EXPECT_FALSE(config.msix().function_masked);
  ASSERT_EQ(config.Write(msix + pci::kMsixFlags, 2, 0xffff), ConfigStatus::kOk);
  EXPECT_EQ(Read16(config, msix + pci::kMsixFlags),
            pci::kMsixFlagsEnable | pci::kMsixFlagsMaskAll | (table_size - 1));
  EXPECT_TRUE(config.msix().function_masked);
  EXPECT_EQ(config.msix().table_size, table_size);  // Table Size is read-only
  // Linux writes the upper byte alone (pci_msix_clear_and_set_ctrl uses a word; others a byte).
  ASSERT_EQ(config.Write(msix + pci::kMsixFlags + 1, 1, 0x80), ConfigStatus::kOk);
  EXPECT_TRUE(config.msix().enabled);
  EXPECT_FALSE(config.msix().function_masked);
  ASSERT_EQ(config.Write(msix + pci::kMsixFlags, 2, 0), ConfigStatus::kOk);
  EXPECT_FALSE(config.msix().enabled);
  // Table and PBA locations are read-only.
  const uint32_t table = Read32(config, msix + pci::kMsixTable);
  ASSERT_EQ(config.Write(msix + pci::kMsixTable, 4, 0), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, msix + pci::kMsixTable), table);
}

TEST_P(RegisterSemanticsTest, MsiAddressDataEnableAndMask) {
  ConfigSpace config = MakeConfigSpace(GetParam());
  const uint16_t msi = Cap(config, CapabilityId::kMsi);
  const MsiState initial = config.msi();
  ASSERT_TRUE(initial.present);
  EXPECT_FALSE(initial.enabled);
  ASSERT_EQ(config.Write(msi + pci::kMsiAddressLo, 4, 0xfee01007), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(msi + pci::kMsiAddressHi, 4, 0x00000001), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(msi + pci::kMsiData64, 2, 0x4041), ConfigStatus::kOk);
  // Multiple Message Enable 32 (101b) and Enable; MMC and the 64-bit bit are read-only.
  ASSERT_EQ(config.Write(msi + pci::kMsiFlags, 2, 0xffff), ConfigStatus::kOk);
  const MsiState s = config.msi();
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.address, 0x1fee01004u);  // bits 1:0 are read-only 0
  EXPECT_EQ(s.data, 0x4041);
  EXPECT_EQ(s.vectors_capable, initial.vectors_capable);
  EXPECT_EQ(s.vectors_enabled, initial.vectors_capable);  // MME 111b, capped at MMC
  EXPECT_EQ(Read16(config, msi + pci::kMsiFlags) & ~0x0071u,
            Read16(MakeConfigSpace(GetParam()), msi + pci::kMsiFlags));
  if (s.per_vector_masking) {
    ASSERT_EQ(config.Write(msi + pci::kMsiMask64, 4, 0xffffffff), ConfigStatus::kOk);
    const uint32_t implemented =
        s.vectors_capable == 32 ? 0xffffffffu : (1u << s.vectors_capable) - 1;
    EXPECT_EQ(config.msi().mask, implemented);
    ASSERT_EQ(config.Write(msi + pci::kMsiPending64, 4, 0xffffffff), ConfigStatus::kOk);
    EXPECT_EQ(config.msi().pending, 0u);  // read-only
  }
}

TEST_P(RegisterSemanticsTest, MaxPayloadAndReadRequestSizes) {
  ConfigSpace config = MakeConfigSpace(GetParam());
  const uint16_t devctl = Cap(config, CapabilityId::kPciExpress) + pci::kExpDevCtl;
  const uint16_t keep = Read16(config, devctl) & ~(pci::kExpDevCtlPayload | pci::kExpDevCtlReadrq);
  auto program = [&](uint32_t mps_code, uint32_t mrrs_code) {
    ASSERT_EQ(config.Write(devctl, 2, keep | (mps_code << 5) | (mrrs_code << 12)),
              ConfigStatus::kOk);
    EXPECT_EQ((Read16(config, devctl) >> 5) & 7u, mps_code);
    EXPECT_EQ((Read16(config, devctl) >> 12) & 7u, mrrs_code);
  };
  program(1, 3);
  EXPECT_EQ(config.max_payload_size(), 256u);
  EXPECT_EQ(config.max_read_request_size(), 1024u);
  program(0, 0);
  EXPECT_EQ(config.max_payload_size(), 128u);
  EXPECT_EQ(config.max_read_request_size(), 128u);
  program(5, 5);  // 4096 asked: MPS stays within what the device supports
  EXPECT_EQ(config.max_payload_size(), config.profile().max_payload_supported);
  EXPECT_EQ(config.max_read_request_size(), 4096u);
  program(7, 7);  // reserved encodings
  EXPECT_EQ(config.max_read_request_size(), 4096u);
  EXPECT_EQ(Read16(config, devctl) & keep, keep) << "other Device Control bits kept";
}

TEST_P(RegisterSemanticsTest, PowerStateIgnoresUnsupportedD1AndD2) {
  ConfigSpace config = MakeConfigSpace(GetParam());
  const uint16_t pmcsr = Cap(config, CapabilityId::kPowerManagement) + pci::kPmCtrl;
  EXPECT_EQ(Read16(config, pmcsr), pci::kPmCtrlNoSoftReset);
  ASSERT_EQ(config.Write(pmcsr, 2, 1), ConfigStatus::kOk);  // D1: not supported
  EXPECT_EQ(config.power_state(), PowerState::kD0);
  ASSERT_EQ(config.Write(pmcsr, 2, 3), ConfigStatus::kOk);
  EXPECT_EQ(config.power_state(), PowerState::kD3hot);
  ASSERT_EQ(config.Write(pmcsr, 2, 2), ConfigStatus::kOk);  // D2: not supported, stays D3hot
  EXPECT_EQ(config.power_state(), PowerState::kD3hot);
  ASSERT_EQ(config.Write(pmcsr, 2, pci::kPmCtrlPmeEnable), ConfigStatus::kOk);
  EXPECT_EQ(Read16(config, pmcsr), pci::kPmCtrlNoSoftReset | pci::kPmCtrlPmeEnable);
  config.SetHardwareBits(pmcsr, 2, pci::kPmCtrlPmeStatus);
  ASSERT_EQ(config.Write(pmcsr, 2, pci::kPmCtrlPmeStatus | pci::kPmCtrlPmeEnable),
            ConfigStatus::kOk);
  EXPECT_EQ(Read16(config, pmcsr), pci::kPmCtrlNoSoftReset | pci::kPmCtrlPmeEnable);
}

TEST_P(RegisterSemanticsTest, LinkAndDeviceControl2WritableBits) {
  ConfigSpace config = MakeConfigSpace(GetParam());
  const uint16_t exp = Cap(config, CapabilityId::kPciExpress);
  ASSERT_EQ(config.Write(exp + pci::kExpLnkCtl, 2, 0xffff), ConfigStatus::kOk);
  EXPECT_EQ(Read16(config, exp + pci::kExpLnkCtl), 0x00cb);  // ASPM, RCB, CCC, ES
  EXPECT_EQ(Read16(config, exp + pci::kExpLnkSta),
            Read16(MakeConfigSpace(GetParam()), exp + pci::kExpLnkSta));
  const bool ltr = config.capability_offset(CapabilityId::kLtr).has_value();
  ASSERT_EQ(config.Write(exp + pci::kExpDevCtl2, 2, 0xffff), ConfigStatus::kOk);
  EXPECT_EQ(Read16(config, exp + pci::kExpDevCtl2), 0x035f | (ltr ? 0x0400 : 0));
  if (ltr) {
    const uint16_t l = Cap(config, CapabilityId::kLtr);
    ASSERT_EQ(config.Write(l + pci::kLtrMaxSnoopLat, 4, 0xffffffff), ConfigStatus::kOk);
    EXPECT_EQ(Read32(config, l + pci::kLtrMaxSnoopLat), 0x1fff1fffu);
  }
  if (std::optional<uint16_t> l1ss = config.capability_offset(CapabilityId::kL1PmSubstates)) {
    ASSERT_EQ(config.Write(*l1ss + pci::kL1ssCtl1, 4, 0xffffffff), ConfigStatus::kOk);
    EXPECT_EQ(Read32(config, *l1ss + pci::kL1ssCtl1), 0xe3ff000fu);
    ASSERT_EQ(config.Write(*l1ss + pci::kL1ssCtl2, 4, 0xffffffff), ConfigStatus::kOk);
    EXPECT_EQ(Read32(config, *l1ss + pci::kL1ssCtl2), 0x000000fbu);
  }
}

TEST(RegisterFile, AccessTypesFollowTheSpec) {
  RegisterFile regs;
  regs.Define(
      {.offset = 0x10, .size = 2, .value = 0x00f0, .rw = 0x000f, .rw1c = 0x00f0, .hwinit = 0xff00});
  EXPECT_EQ(regs.AccessOf(0x10, 0), BitAccess::kReadWrite);
  EXPECT_EQ(regs.AccessOf(0x10, 4), BitAccess::kWrite1ToClear);
  EXPECT_EQ(regs.AccessOf(0x11, 0), BitAccess::kHwInit);
  EXPECT_EQ(regs.AccessOf(0x12, 0), BitAccess::kReadOnly);
  regs.WriteByte(0x10, 0x3a);  // RW nibble = a, clear bits 4 and 5
  EXPECT_EQ(regs.Read(0x10, 1), 0xcau);
  regs.WriteByte(0x11, 0xff);  // HwInit: unchanged
  EXPECT_EQ(regs.Read(0x11, 1), 0x00u);
  EXPECT_EQ(regs.Read(0xffe, 4), 0xffff0000u);  // past the end reads all-ones
  regs.WriteByte(0x1000, 0xff);                 // ignored
  EXPECT_EQ(regs.WritableMask(0x10, 2), 0x000fu);
  EXPECT_EQ(regs.Write1ClearMask(0x10, 2), 0x00f0u);
}

}  // namespace
}  // namespace dxpu::gpu::test
