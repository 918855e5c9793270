// Function Level Reset: writing Initiate FLR puts the whole configuration space back to its
// power-on state, calls the owner's callback once, and the bit reads back 0.
#include <gtest/gtest.h>

#include "gpu/bar_registers.h"
#include "gpu/pci_regs.h"
#include "gpu_test_util.h"

namespace dxpu::gpu::test {
namespace {

// Programs what a driver would: BARs, Command, MSI-X, MPS/MRRS, AER masks, LTR, a resized
// BAR; and sets status bits as the hardware would.
void Program(ConfigSpace& config) {
  ASSERT_EQ(config.Write(BarOffset(0), 4, 0xd0000000), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(BarOffset(3), 4, 0x00000040), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(pci::kCommand, 2, 0x0546), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(pci::kCacheLineSize, 1, 0x10), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(pci::kInterruptLine, 1, 0x0b), ConfigStatus::kOk);
  const uint16_t msix = *config.capability_offset(CapabilityId::kMsix);
  ASSERT_EQ(config.Write(msix + pci::kMsixFlags, 2, pci::kMsixFlagsEnable), ConfigStatus::kOk);
  const uint16_t exp = *config.capability_offset(CapabilityId::kPciExpress);
  ASSERT_EQ(config.Write(exp + pci::kExpDevCtl, 2, 0x302f), ConfigStatus::kOk);
  const uint16_t aer = *config.capability_offset(CapabilityId::kAer);
  ASSERT_EQ(config.Write(aer + pci::kErrUncorMask, 4, pci::kErrUncUnsup), ConfigStatus::kOk);
  const uint16_t ltr = *config.capability_offset(CapabilityId::kLtr);
  ASSERT_EQ(config.Write(ltr + pci::kLtrMaxSnoopLat, 4, 0x10011001), ConfigStatus::kOk);
  const uint16_t rebar = *config.capability_offset(CapabilityId::kResizableBar);
  ASSERT_EQ(config.Write(rebar + pci::kRebarCtrl + 1, 1, 10), ConfigStatus::kOk);  // 1 GiB
  ASSERT_EQ(config.bar(2)->size, uint64_t{1} << 30);
  config.SetHardwareBits(pci::kStatus, 2, pci::kStatusRecMasterAbort);
  config.SetHardwareBits(exp + pci::kExpDevSta, 2, pci::kExpDevStaUrd);
  config.SetHardwareBits(aer + pci::kErrUncorStatus, 4, pci::kErrUncUnsup);
}

TEST(FunctionLevelReset, InitiateFlrRestoresPowerOnStateAndCallsBack) {
  const std::vector<uint8_t> power_on = Dump(MakeConfigSpace("dxgpu"));
  ConfigSpace config = MakeConfigSpace("dxgpu");
  Program(config);
  ASSERT_NE(Dump(config), power_on);

  int calls = 0;
  uint16_t command_seen = 0xffff;
  config.set_reset_callback([&] {
    ++calls;
    command_seen = Read16(config, pci::kCommand);  // the space is already reset
  });
  const uint16_t devctl = *config.capability_offset(CapabilityId::kPciExpress) + pci::kExpDevCtl;
  const uint16_t current = Read16(config, devctl);
  ASSERT_EQ(config.Write(devctl, 2, current | pci::kExpDevCtlBcrFlr), ConfigStatus::kOk);

  EXPECT_EQ(calls, 1);
  EXPECT_EQ(command_seen, 0);
  EXPECT_EQ(Dump(config), power_on);
  EXPECT_EQ(Read16(config, devctl) & pci::kExpDevCtlBcrFlr, 0);
  EXPECT_FALSE(config.memory_enabled());
  EXPECT_FALSE(config.bus_master_enabled());
  EXPECT_FALSE(config.msix().enabled);
  EXPECT_EQ(config.bar(0)->address, 0u);
  EXPECT_EQ(config.bar(2)->size, uint64_t{256} << 20);
  EXPECT_EQ(config.max_payload_size(), 128u);
}

TEST(FunctionLevelReset, ThroughTheDwInterfaceWithOneByteEnabled) {
  for (std::string_view name : ProfileNames()) {
    ConfigSpace config = MakeConfigSpace(name);
    const std::vector<uint8_t> power_on = Dump(config);
    ASSERT_EQ(config.Write(pci::kCommand, 2, pci::kCommandMemory), ConfigStatus::kOk);
    int calls = 0;
    config.set_reset_callback([&] { ++calls; });
    const uint16_t devctl = *config.capability_offset(CapabilityId::kPciExpress) + pci::kExpDevCtl;
    // Initiate FLR is bit 15 of Device Control: bit 7 of the byte at devctl + 1.
    const uint32_t byte = devctl + 1u;
    const auto be = static_cast<uint8_t>(1u << (byte % 4));
    ASSERT_EQ(config.WriteDw(byte / 4, 0x80u << (8 * (byte % 4)), be), ConfigStatus::kOk);
    EXPECT_EQ(calls, 1) << name;
    EXPECT_EQ(Dump(config), power_on) << name;
  }
}

TEST(FunctionLevelReset, OtherDeviceControlWritesDoNotReset) {
  ConfigSpace config = MakeConfigSpace("h100-80g");
  int calls = 0;
  config.set_reset_callback([&] { ++calls; });
  const uint16_t devctl = *config.capability_offset(CapabilityId::kPciExpress) + pci::kExpDevCtl;
  ASSERT_EQ(config.Write(devctl, 2, 0x7fff), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(devctl, 1, 0xff), ConfigStatus::kOk);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(config.max_read_request_size(), 4096u);
}

TEST(FunctionLevelReset, WithoutACallbackStillResets) {
  ConfigSpace config = MakeConfigSpace("a100-40g");
  ASSERT_EQ(config.Write(pci::kCommand, 2, 0x0006), ConfigStatus::kOk);
  config.FunctionLevelReset();
  EXPECT_EQ(Read16(config, pci::kCommand), 0);
}

TEST(FunctionLevelReset, CallbackMayProgramTheSpaceAgain) {
  ConfigSpace config = MakeConfigSpace("dxgpu");
  int calls = 0;
  config.set_reset_callback([&] {
    ++calls;
    EXPECT_EQ(config.Write(pci::kInterruptLine, 1, 0x42), ConfigStatus::kOk);
  });
  config.FunctionLevelReset();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(config.Read(pci::kInterruptLine, 1).value, 0x42u);
}

}  // namespace
}  // namespace dxpu::gpu::test
