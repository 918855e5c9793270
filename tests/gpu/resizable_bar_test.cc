// Registers with side effects beyond their own bits: Resizable BAR (the BAR Size field resizes
// the BAR) and Power Budgeting (Data Select chooses what Data shows).
#include <gtest/gtest.h>

#include "gpu/bar_registers.h"
#include "gpu/pci_regs.h"
#include "gpu_test_util.h"

namespace dxpu::gpu::test {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Sizing as a host does it, for a 64-bit BAR.
uint64_t Size64(ConfigSpace& config, uint8_t index) {
  const uint32_t lo = Read32(config, BarOffset(index));
  const uint32_t hi = Read32(config, BarOffset(static_cast<uint8_t>(index + 1)));
  EXPECT_EQ(config.Write(BarOffset(index), 4, 0xffffffff), ConfigStatus::kOk);
  EXPECT_EQ(config.Write(BarOffset(static_cast<uint8_t>(index + 1)), 4, 0xffffffff),
            ConfigStatus::kOk);
  const uint64_t mask =
      (uint64_t{Read32(config, BarOffset(static_cast<uint8_t>(index + 1)))} << 32) |
      (Read32(config, BarOffset(index)) & ~0xfu);
  EXPECT_EQ(config.Write(BarOffset(index), 4, lo), ConfigStatus::kOk);
  EXPECT_EQ(config.Write(BarOffset(static_cast<uint8_t>(index + 1)), 4, hi), ConfigStatus::kOk);
  return ~mask + 1;
}

TEST(ResizableBar, BarSizeFieldResizesTheBar) {
  ConfigSpace config = MakeConfigSpace("dxgpu");  // BAR2: 256 MiB, resizable 64 MiB..1 GiB
  const uint16_t ctrl = *config.capability_offset(CapabilityId::kResizableBar) + pci::kRebarCtrl;
  EXPECT_EQ(Size64(config, 2), 256 * kMiB);
  // Place the BAR at 4 GiB + 256 MiB, then grow it to 1 GiB: the address bits now below the
  // size read 0, the rest stay.
  ASSERT_EQ(config.Write(BarOffset(2), 4, 0x10000000), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(BarOffset(3), 4, 0x1), ConfigStatus::kOk);
  const uint32_t keep = Read32(config, ctrl) & ~pci::kRebarCtrlBarSize;
  ASSERT_EQ(config.Write(ctrl, 4, keep | (10u << 8)), ConfigStatus::kOk);  // 1 MiB << 10
  EXPECT_EQ(Size64(config, 2), 1024 * kMiB);
  EXPECT_EQ(config.bar(2)->size, 1024 * kMiB);
  EXPECT_EQ(config.bar(2)->address, uint64_t{1} << 32);
  EXPECT_EQ((Read32(config, ctrl) & pci::kRebarCtrlBarSize) >> 8, 10u);
  // Shrink to 64 MiB: the address stays, now assignable at 64 MiB granularity.
  ASSERT_EQ(config.Write(ctrl + 1, 1, 6), ConfigStatus::kOk);
  EXPECT_EQ(Size64(config, 2), 64 * kMiB);
  ASSERT_EQ(config.Write(BarOffset(2), 4, 0x04000000), ConfigStatus::kOk);
  EXPECT_EQ(config.bar(2)->address, (uint64_t{1} << 32) + 64 * kMiB);
}

TEST(ResizableBar, SizesTheCapabilityDoesNotOfferAreIgnored) {
  ConfigSpace config = MakeConfigSpace("dxgpu");
  const uint16_t ctrl = *config.capability_offset(CapabilityId::kResizableBar) + pci::kRebarCtrl;
  const uint32_t before = Read32(config, ctrl);
  for (uint32_t code : {0u, 5u, 11u, 27u, 63u}) {
    ASSERT_EQ(config.Write(ctrl + 1, 1, code), ConfigStatus::kOk);
    EXPECT_EQ(Read32(config, ctrl), before) << "size code " << code;
    EXPECT_EQ(config.bar(2)->size, 256 * kMiB);
  }
  // BAR Index and Number of Resizable BARs are read-only.
  ASSERT_EQ(config.Write(ctrl, 1, 0xff), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, ctrl), before);
}

TEST(ResizableBar, EachBarOfAMultiBarCapabilityResizesAlone) {
  ConfigSpace config = MakeConfigSpace("h100-80g");  // BAR0, BAR2, BAR4 in that order
  const uint16_t rebar = *config.capability_offset(CapabilityId::kResizableBar);
  EXPECT_EQ((Read32(config, rebar + pci::kRebarCtrl) & pci::kRebarCtrlNbarMask) >> 5, 3u);
  const uint16_t bar2_ctrl = rebar + pci::kRebarCtrl + 8;
  EXPECT_EQ(Read32(config, bar2_ctrl) & pci::kRebarCtrlBarIdx, 2u);
  ASSERT_EQ(config.Write(bar2_ctrl + 1, 1, 8), ConfigStatus::kOk);  // 256 MiB
  EXPECT_EQ(config.bar(2)->size, 256 * kMiB);
  EXPECT_EQ(config.bar(0)->size, 16 * kMiB);
  EXPECT_EQ(config.bar(4)->size, 32 * kMiB);
  // BAR0 offers only 16 MiB.
  ASSERT_EQ(config.Write(rebar + pci::kRebarCtrl + 1, 1, 5), ConfigStatus::kOk);
  EXPECT_EQ(config.bar(0)->size, 16 * kMiB);
}

TEST(PowerBudgeting, DataSelectChoosesTheEntryDataShows) {
  ConfigSpace config = MakeConfigSpace("dxgpu");
  const DeviceProfile& p = config.profile();
  const uint16_t pb = *config.capability_offset(CapabilityId::kPowerBudgeting);
  for (uint32_t i = 0; i < p.power_budget.size(); ++i) {
    ASSERT_EQ(config.Write(pb + pci::kPwrDsr, 1, i), ConfigStatus::kOk);
    EXPECT_EQ(Read32(config, pb + pci::kPwrData), EncodePowerBudgetEntry(p.power_budget[i]));
  }
  ASSERT_EQ(config.Write(pb + pci::kPwrDsr, 4, 0xffffff03), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, pb + pci::kPwrDsr), 3u);   // only the select byte is RW
  EXPECT_EQ(Read32(config, pb + pci::kPwrData), 0u);  // past the last entry
  ASSERT_EQ(config.Write(pb + pci::kPwrData, 4, 0x12345678), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, pb + pci::kPwrData), 0u);  // Data is read-only
}

TEST(PowerBudgeting, EntryEncoding) {
  using E = PowerBudgetEntry;
  // Base Power 25 W, scale 1.0x, D0, Maximum (111b), 12V (000b).
  EXPECT_EQ(EncodePowerBudgetEntry({E::PmState::kD0, E::Type::kMaximum, E::Rail::k12V, 25}),
            25u | (7u << 15));
  // D3, Idle (010b), 3.3V (001b), 239 W: the largest plain value.
  EXPECT_EQ(EncodePowerBudgetEntry({E::PmState::kD3, E::Type::kIdle, E::Rail::k3_3V, 239}),
            239u | (3u << 13) | (2u << 15) | (1u << 18));
  auto base = [](uint16_t w) {
    return EncodePowerBudgetEntry({E::PmState::kD0, E::Type::kSustained, E::Rail::k12V, w}) & 0xff;
  };
  EXPECT_EQ(base(240), 0xf0u);
  EXPECT_EQ(base(250), 0xf0u);
  EXPECT_EQ(base(251), 0xf1u);
  EXPECT_EQ(base(275), 0xf1u);
  EXPECT_EQ(base(300), 0xf2u);
  EXPECT_EQ(base(400), 0xf3u);
}

}  // namespace
}  // namespace dxpu::gpu::test
