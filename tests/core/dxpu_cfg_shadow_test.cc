// The host's copy of a remote function's configuration space (lib/core/dxpu_cfg_shadow.h),
// checked against the GPU model's own configuration space (lib/gpu): after the same writes,
// the two read the same in every register the copy models.
#include "core/dxpu_cfg_shadow.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gpu/config_space.h"
#include "gpu/device_profile.h"
#include "gpu/pci_regs.h"

namespace dxpu {
namespace {

constexpr uint32_t kBar0 = 0x10;
constexpr uint32_t kRom = 0x30;

struct Attached {
  gpu::ConfigSpace model;
  dxpu_cfg_shadow shadow{};
};

// What a host does at attach: read the whole space, size each BAR (all-ones, read back,
// restore), keep the read-backs for the copy.
Attached Attach(const std::string& profile_name) {
  std::optional<gpu::DeviceProfile> profile = gpu::FindProfile(profile_name);
  EXPECT_TRUE(profile.has_value());
  std::optional<gpu::ConfigSpace> model = gpu::ConfigSpace::Create(*profile);
  EXPECT_TRUE(model.has_value());
  std::vector<uint8_t> space(DXPU_CFG_SPACE_SIZE);
  for (uint32_t off = 0; off < DXPU_CFG_SPACE_SIZE; off += 4) {
    const uint32_t v = model->Read(off, 4).value;
    for (uint32_t i = 0; i < 4; ++i) space[off + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  std::array<uint32_t, DXPU_CFG_BARS> readback{};
  for (uint32_t i = 0; i < DXPU_CFG_BARS; ++i) {
    const uint32_t reg = kBar0 + 4 * i;
    const uint32_t saved = model->Read(reg, 4).value;
    model->Write(reg, 4, 0xffffffff);
    readback[i] = model->Read(reg, 4).value;
    model->Write(reg, 4, saved);
  }
  const uint32_t rom_saved = model->Read(kRom, 4).value;
  model->Write(kRom, 4, 0xfffff800);
  const uint32_t rom = model->Read(kRom, 4).value;
  model->Write(kRom, 4, rom_saved);
  Attached a{.model = std::move(*model)};
  EXPECT_TRUE(
      dxpu_cfg_shadow_init(&a.shadow, space.data(), DXPU_CFG_SPACE_SIZE, readback.data(), rom));
  return a;
}

uint32_t CapabilityAt(const gpu::ConfigSpace& model, uint8_t id) {
  uint32_t at = model.Read(0x34, 1).value & 0xfc;
  for (int n = 0; n < 48 && at >= 0x40; ++n) {
    if ((model.Read(at, 1).value & 0xff) == id) return at;
    at = model.Read(at + 1, 1).value & 0xfc;
  }
  return 0;
}

// The bytes whose behaviour the copy models exactly: the header, the MSI-X capability and
// the PCI Express capability's read-only and RW1C registers. (Its control registers take what
// is written: which optional control bits a function implements is not visible from outside.)
struct Region {
  uint32_t start;
  uint32_t size;
};

struct Modelled {
  std::vector<Region> written;  // where random writes go
  std::vector<Region> compared;
};

Modelled ModelledRegions(const gpu::ConfigSpace& model) {
  Modelled m;
  m.written = {{0, 0x40}};
  m.compared = {{0, 0x40}};
  if (uint32_t exp = CapabilityAt(model, gpu::pci::kCapIdExp)) {
    m.written.push_back({exp, 0x3c});
    for (Region r : std::vector<Region>{{0x00, 0x08},   // header, PCIe Capabilities, DevCap
                                        {0x0a, 0x06},   // Device Status, Link Capabilities
                                        {0x12, 0x06},   // Link Status, Slot Capabilities
                                        {0x24, 0x04},   // Device Capabilities 2
                                        {0x2c, 0x04}})  // Link Capabilities 2
      m.compared.push_back({exp + r.start, r.size});
  }
  if (uint32_t msix = CapabilityAt(model, gpu::pci::kCapIdMsix)) {
    m.written.push_back({msix, 0x0c});
    m.compared.push_back({msix, 0x0c});
  }
  return m;
}

void ExpectSame(const Attached& a, const std::vector<Region>& regions, const std::string& after) {
  for (const Region& region : regions) {
    for (uint32_t off = region.start; off < region.start + region.size; ++off) {
      ASSERT_EQ(dxpu_cfg_shadow_read(&a.shadow, off, 1), a.model.Read(off, 1).value)
          << "at 0x" << std::hex << off << " after " << after;
    }
  }
}

class ShadowVsModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ShadowVsModel, StartsEqualAndReadsEveryByteTheSame) {
  Attached a = Attach(GetParam());
  for (uint32_t off = 0; off < DXPU_CFG_SPACE_SIZE; off += 4)
    ASSERT_EQ(dxpu_cfg_shadow_read(&a.shadow, off, 4), a.model.Read(off, 4).value) << off;
  for (uint32_t off = 0; off < 0x40; ++off)
    ASSERT_EQ(dxpu_cfg_shadow_read(&a.shadow, off, 1), a.model.Read(off, 1).value) << off;
}

TEST_P(ShadowVsModel, BarSizingReadsBackWhatTheFunctionDoes) {
  Attached a = Attach(GetParam());
  std::optional<gpu::DeviceProfile> profile = gpu::FindProfile(GetParam());
  ASSERT_TRUE(profile.has_value());
  for (const gpu::BarSpec& bar : profile->bars) {
    const uint32_t reg = kBar0 + 4 * bar.index;
    const uint32_t lo = dxpu_cfg_shadow_read(&a.shadow, reg, 4);
    ASSERT_TRUE(dxpu_cfg_shadow_write(&a.shadow, reg, 4, 0xffffffff));
    a.model.Write(reg, 4, 0xffffffff);
    const uint32_t lo_mask = dxpu_cfg_shadow_read(&a.shadow, reg, 4);
    EXPECT_EQ(lo_mask, a.model.Read(reg, 4).value);
    uint32_t hi_mask = 0;
    if (bar.is_64bit) {
      ASSERT_TRUE(dxpu_cfg_shadow_write(&a.shadow, reg + 4, 4, 0xffffffff));
      a.model.Write(reg + 4, 4, 0xffffffff);
      hi_mask = dxpu_cfg_shadow_read(&a.shadow, reg + 4, 4);
      EXPECT_EQ(hi_mask, a.model.Read(reg + 4, 4).value);
    }
    EXPECT_EQ(dxpu_cfg_bar_size(lo_mask, hi_mask), bar.size) << "BAR" << int{bar.index};
    // Placing it: the address bits stick, the type bits stay.
    ASSERT_TRUE(dxpu_cfg_shadow_write(&a.shadow, reg, 4, 0));
    a.model.Write(reg, 4, 0);
    EXPECT_EQ(dxpu_cfg_shadow_read(&a.shadow, reg, 4), lo & 0xfU);
    EXPECT_EQ(dxpu_cfg_shadow_read(&a.shadow, reg, 4), a.model.Read(reg, 4).value);
  }
}

// Random writes of every size to the modelled registers: after each, the copy reads what the
// function reads. (Initiate FLR is left out: it resets the function, which the host learns
// by reading the space again, not from its copy.)
TEST_P(ShadowVsModel, RandomWritesKeepTheCopyEqual) {
  Attached a = Attach(GetParam());
  const Modelled modelled = ModelledRegions(a.model);
  const std::vector<Region>& regions = modelled.written;
  ASSERT_EQ(regions.size(), 3U) << "the profile has a PCI Express and an MSI-X capability";
  const uint32_t exp = regions[1].start;
  std::mt19937 rng(7);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
  for (int n = 0; n < 20000; ++n) {
    const Region& region = regions[rng() % regions.size()];
    const uint32_t size = 1U << (rng() % 3);
    const uint32_t off = (region.start + rng() % region.size) & ~(size - 1);
    uint32_t value = rng();
    if (rng() % 4 == 0) value = (rng() % 2 != 0) ? 0xffffffff : 0;
    // Device Control bit 15 (Initiate FLR): byte exp + 9, bit 7.
    for (uint32_t i = 0; i < size; ++i)
      if (off + i == exp + 9) value &= ~(0x80U << (8 * i));
    ASSERT_TRUE(dxpu_cfg_shadow_write(&a.shadow, off, size, value));
    ASSERT_EQ(a.model.Write(off, size, value), gpu::ConfigStatus::kOk);
    ExpectSame(a, modelled.compared,
               "write of " + std::to_string(size) + " bytes at " + std::to_string(off));
    for (uint32_t i = 0; i < size; ++i) {  // Device Control: what was written
      if (off + i >= exp + 0x08 && off + i < exp + 0x0a) {
        ASSERT_EQ(dxpu_cfg_shadow_read(&a.shadow, off + i, 1), (value >> (8 * i)) & 0xffU);
      }
    }
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Profiles, ShadowVsModel,
                         ::testing::Values("dxgpu", "a100-40g", "h100-80g"));

TEST(CfgShadow, RefusesAccessesNoConfigurationRequestCarries) {
  std::vector<uint8_t> space(DXPU_CFG_SPACE_SIZE, 0x5a);
  std::array<uint32_t, DXPU_CFG_BARS> none{};
  dxpu_cfg_shadow sh{};
  ASSERT_TRUE(dxpu_cfg_shadow_init(&sh, space.data(), DXPU_CFG_SPACE_SIZE, none.data(), 0));
  EXPECT_FALSE(dxpu_cfg_access_ok(1, 2));
  EXPECT_FALSE(dxpu_cfg_access_ok(2, 4));
  EXPECT_FALSE(dxpu_cfg_access_ok(0, 3));
  EXPECT_FALSE(dxpu_cfg_access_ok(4096, 1));
  EXPECT_TRUE(dxpu_cfg_access_ok(4095, 1));
  EXPECT_EQ(dxpu_cfg_shadow_read(&sh, 2, 4), 0xffffffffU);
  EXPECT_EQ(dxpu_cfg_shadow_read(&sh, 0, 8), 0xffffffffU);
  EXPECT_EQ(dxpu_cfg_shadow_read(&sh, 4096, 4), 0xffffffffU);
  EXPECT_FALSE(dxpu_cfg_shadow_write(&sh, 0x3d, 2, 0));
  EXPECT_FALSE(dxpu_cfg_shadow_write(&sh, 0x1000, 4, 0));
  EXPECT_EQ(dxpu_cfg_shadow_read(&sh, 0x3c, 4), 0x5a5a5a5aU);
  // Neither 256 nor 4096 bytes: refused.
  EXPECT_FALSE(dxpu_cfg_shadow_init(&sh, space.data(), 512, none.data(), 0));
}

TEST(CfgShadow, ALegacyFunctionEndsAt256Bytes) {
  std::vector<uint8_t> space(DXPU_CFG_LEGACY_SIZE, 0);
  std::array<uint32_t, DXPU_CFG_BARS> none{};
  dxpu_cfg_shadow sh{};
  ASSERT_TRUE(dxpu_cfg_shadow_init(&sh, space.data(), DXPU_CFG_LEGACY_SIZE, none.data(), 0));
  EXPECT_EQ(dxpu_cfg_shadow_read(&sh, 0xfc, 4), 0U);
  EXPECT_EQ(dxpu_cfg_shadow_read(&sh, 0x100, 4), 0xffffffffU);
  EXPECT_TRUE(dxpu_cfg_shadow_write(&sh, 0x100, 4, 0x12345678));
  EXPECT_EQ(dxpu_cfg_shadow_read(&sh, 0x100, 4), 0xffffffffU);
}

TEST(CfgShadow, BarSizeFromReadBacks) {
  EXPECT_EQ(dxpu_cfg_bar_size(0xff000000, 0), 16ULL << 20);           // 32-bit, 16 MiB
  EXPECT_EQ(dxpu_cfg_bar_size(0xfe000008, 0), 32ULL << 20);           // 32-bit prefetchable
  EXPECT_EQ(dxpu_cfg_bar_size(0x0000000c, 0xfffffff0), 64ULL << 30);  // 64-bit, 64 GiB
  EXPECT_EQ(dxpu_cfg_bar_size(0xfe00000c, 0xffffffff), 32ULL << 20);  // 64-bit, 32 MiB
  EXPECT_EQ(dxpu_cfg_bar_size(0xffffff01, 0), 256U);                  // I/O, 256 bytes
  EXPECT_EQ(dxpu_cfg_bar_size(0xff01, 0), 256U);                      // I/O, 16 bits decoded
  EXPECT_EQ(dxpu_cfg_bar_size(0, 0), 0U);                             // not implemented
  EXPECT_EQ(dxpu_cfg_bar_size(0xffffffff, 0), 0U);                    // no function answered
  EXPECT_EQ(dxpu_cfg_bar_size(0x0000000c, 0), 0U);                    // no writable bit
}

}  // namespace
}  // namespace dxpu
