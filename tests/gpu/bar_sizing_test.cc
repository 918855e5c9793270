// BARs as a host sizes and programs them: write all-ones, read the size mask back, restore;
// then assign addresses and check what the function decodes.
#include <gtest/gtest.h>

#include <string>

#include "gpu/bar_registers.h"
#include "gpu/pci_regs.h"
#include "gpu_test_util.h"

namespace dxpu::gpu::test {
namespace {

struct SizedBar {
  uint8_t index = 0;
  uint64_t size = 0;
  bool is_64bit = false;
  bool prefetchable = false;
};

// Linux's __pci_read_base, in short: for each slot, save, write all-ones, read, restore.
std::vector<SizedBar> SizeBars(ConfigSpace& config) {
  std::vector<SizedBar> out;
  for (uint8_t i = 0; i < pci::kNumBars; ++i) {
    const uint16_t reg = BarOffset(i);
    const uint32_t orig = Read32(config, reg);
    EXPECT_EQ(config.Write(reg, 4, 0xffffffff), ConfigStatus::kOk);
    const uint32_t mask = Read32(config, reg);
    EXPECT_EQ(config.Write(reg, 4, orig), ConfigStatus::kOk);
    if (mask == 0) continue;  // not implemented
    EXPECT_EQ(orig & pci::kBarSpaceIo, 0u) << "BAR " << int{i} << " is an I/O BAR";
    SizedBar bar{.index = i,
                 .is_64bit = (orig & 0x6) == pci::kBarMemType64,
                 .prefetchable = (orig & pci::kBarMemPrefetch) != 0};
    if (bar.is_64bit) {
      const uint16_t hi = BarOffset(static_cast<uint8_t>(i + 1));
      const uint32_t orig_hi = Read32(config, hi);
      EXPECT_EQ(config.Write(hi, 4, 0xffffffff), ConfigStatus::kOk);
      const uint32_t mask_hi = Read32(config, hi);
      EXPECT_EQ(config.Write(hi, 4, orig_hi), ConfigStatus::kOk);
      const uint64_t mask64 = (uint64_t{mask_hi} << 32) | (mask & ~pci::kBarMemFlags);
      bar.size = ~mask64 + 1;
      ++i;
    } else {
      bar.size = uint32_t{~(mask & ~pci::kBarMemFlags) + 1};
    }
    out.push_back(bar);
  }
  return out;
}

class BarSizingTest : public ::testing::TestWithParam<std::string_view> {};

INSTANTIATE_TEST_SUITE_P(Profiles, BarSizingTest, ::testing::ValuesIn(ProfileNames()), ParamName);

TEST_P(BarSizingTest, SizingFindsTheProfilesBarsAndRestoresThem) {
  const DeviceProfile p = Profile(GetParam());
  ConfigSpace config = MakeConfigSpace(GetParam());
  const std::vector<uint8_t> before = Dump(config);
  const std::vector<SizedBar> sized = SizeBars(config);
  EXPECT_EQ(Dump(config), before) << "sizing must leave the BARs as they were";

  ASSERT_EQ(sized.size(), p.bars.size());
  for (const SizedBar& s : sized) {
    const BarSpec* spec = FindBar(p, s.index);
    ASSERT_NE(spec, nullptr) << "sizing found BAR " << int{s.index} << " the profile lacks";
    EXPECT_EQ(s.size, spec->size) << "BAR " << int{s.index};
    EXPECT_EQ(s.is_64bit, spec->is_64bit) << "BAR " << int{s.index};
    EXPECT_EQ(s.prefetchable, spec->prefetchable) << "BAR " << int{s.index};
    const std::optional<BarState> state = config.bar(s.index);
    ASSERT_TRUE(state.has_value());
    EXPECT_EQ(state->size, spec->size);
    EXPECT_EQ(state->address, 0u);
  }
}

TEST_P(BarSizingTest, UnimplementedSlotsReadZeroAndIgnoreWrites) {
  const DeviceProfile p = Profile(GetParam());
  ConfigSpace config = MakeConfigSpace(GetParam());
  for (uint8_t i = 0; i < pci::kNumBars; ++i) {
    const bool used =
        FindBar(p, i) != nullptr || (i > 0 && FindBar(p, static_cast<uint8_t>(i - 1)) &&
                                     FindBar(p, static_cast<uint8_t>(i - 1))->is_64bit);
    if (used) continue;
    EXPECT_EQ(config.Write(BarOffset(i), 4, 0xffffffff), ConfigStatus::kOk);
    EXPECT_EQ(Read32(config, BarOffset(i)), 0u) << "BAR " << int{i};
    EXPECT_FALSE(config.bar(i).has_value());
  }
}

TEST_P(BarSizingTest, ProgrammedAddressesDecode) {
  const DeviceProfile p = Profile(GetParam());
  ConfigSpace config = MakeConfigSpace(GetParam());
  // Assign each BAR a naturally aligned address, high in the 64-bit space when it can be.
  uint64_t next32 = 0xc0000000;
  uint64_t next64 = uint64_t{0x5} << 40;
  std::vector<std::pair<uint8_t, uint64_t>> assigned;
  for (const BarSpec& bar : p.bars) {
    uint64_t& next = bar.is_64bit ? next64 : next32;
    next = (next + bar.size - 1) & ~(bar.size - 1);
    const uint64_t address = next;
    next += bar.size;
    // Bits below the size are read-only 0: writing some there must not stick.
    const uint64_t junk = bar.size > 0x10 ? (bar.size >> 1) | 0x10 : 0;
    ASSERT_EQ(config.Write(BarOffset(bar.index), 4, static_cast<uint32_t>(address | junk)),
              ConfigStatus::kOk);
    if (bar.is_64bit) {
      ASSERT_EQ(config.Write(BarOffset(static_cast<uint8_t>(bar.index + 1)), 4,
                             static_cast<uint32_t>((address | junk) >> 32)),
                ConfigStatus::kOk);
    }
    assigned.emplace_back(bar.index, address);
  }
  for (const auto& [index, address] : assigned) {
    const std::optional<BarState> state = config.bar(index);
    ASSERT_TRUE(state.has_value());
    EXPECT_EQ(state->address, address) << "BAR " << int{index};
    // Flag bits survive an address write.
    const uint32_t low = Read32(config, BarOffset(index));
    EXPECT_EQ((low & 0x6) == pci::kBarMemType64, state->is_64bit);
  }

  // Decoding needs Memory Space Enable.
  const auto [first_index, first_address] = assigned.front();
  EXPECT_FALSE(config.DecodeMemory(first_address, 4).has_value());
  ASSERT_EQ(config.Write(pci::kCommand, 2, pci::kCommandMemory), ConfigStatus::kOk);
  ASSERT_TRUE(config.memory_enabled());
  for (const auto& [index, address] : assigned) {
    const uint64_t size = config.bar(index)->size;
    EXPECT_EQ(config.DecodeMemory(address, 4), (BarHit{index, 0}));
    EXPECT_EQ(config.DecodeMemory(address + size - 4, 4), (BarHit{index, size - 4}));
    EXPECT_FALSE(config.DecodeMemory(address + size - 2, 4).has_value()) << "straddles the end";
    EXPECT_FALSE(config.DecodeMemory(address + size, 4).has_value() &&
                 config.DecodeMemory(address + size, 4)->bar == index);
  }
  EXPECT_FALSE(config.DecodeMemory(0x1000, 4).has_value());

  // The MSI-X table's bus address follows its BAR.
  const std::optional<uint64_t> table = config.msix_table_address();
  ASSERT_TRUE(table.has_value());
  EXPECT_EQ(*table, config.bar(p.msix.table_bar)->address + p.msix.table_offset);
}

// A 64-bit BAR larger than 4 GiB also has read-only bits in its upper half.
TEST(BarSizing, UpperHalfOfA64GiBBarReadsBackItsSizeMask) {
  ConfigSpace config = MakeConfigSpace("a100-40g");
  ASSERT_EQ(config.Write(BarOffset(1), 4, 0xffffffff), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(BarOffset(2), 4, 0xffffffff), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, BarOffset(1)), 0x0000000cu);  // 64-bit, prefetchable, no low bits
  EXPECT_EQ(Read32(config, BarOffset(2)), 0xfffffff0u);  // 64 GiB = 2^36
  EXPECT_EQ(config.bar(1)->size, uint64_t{64} << 30);

  // BAR0 of the A100: 32-bit, non-prefetchable, 16 MiB.
  ASSERT_EQ(config.Write(BarOffset(0), 4, 0xffffffff), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, BarOffset(0)), 0xff000000u);
}

TEST(BarSizing, UpperHalfOfASmall64BitBarIsAFullRegister) {
  ConfigSpace config = MakeConfigSpace("dxgpu");  // BAR2: 256 MiB, 64-bit prefetchable
  ASSERT_EQ(config.Write(BarOffset(2), 4, 0xffffffff), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(BarOffset(3), 4, 0xffffffff), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, BarOffset(2)), 0xf000000cu);
  EXPECT_EQ(Read32(config, BarOffset(3)), 0xffffffffu);
  ASSERT_EQ(config.Write(BarOffset(3), 4, 0x12345678), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, BarOffset(3)), 0x12345678u);
}

TEST(BarSizing, DecodingStopsInD3hot) {
  ConfigSpace config = MakeConfigSpace("dxgpu");
  ASSERT_EQ(config.Write(BarOffset(0), 4, 0xd0000000), ConfigStatus::kOk);
  ASSERT_EQ(config.Write(pci::kCommand, 2, pci::kCommandMemory), ConfigStatus::kOk);
  EXPECT_TRUE(config.DecodeMemory(0xd0000010, 4).has_value());
  const uint16_t pm = *config.capability_offset(CapabilityId::kPowerManagement);
  ASSERT_EQ(config.Write(pm + pci::kPmCtrl, 2, 3), ConfigStatus::kOk);  // D3hot
  EXPECT_EQ(config.power_state(), PowerState::kD3hot);
  EXPECT_FALSE(config.DecodeMemory(0xd0000010, 4).has_value());
  ASSERT_EQ(config.Write(pm + pci::kPmCtrl, 2, 0), ConfigStatus::kOk);  // D0, No_Soft_Reset
  EXPECT_TRUE(config.DecodeMemory(0xd0000010, 4).has_value());
}

}  // namespace
}  // namespace dxpu::gpu::test
