// Memory requests routed by a function's own BARs (lib/core/dxpu_cfg_route.h), as a switch's
// downstream port routes them: a function with a 16 MiB 32-bit BAR 0, a 256 MiB 64-bit
// prefetchable BAR 2 above 4 GiB and an I/O BAR 4, its BARs programmed as the host's PCI core
// programs them (through the shadow's own write path).
#include "core/dxpu_cfg_route.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

namespace {

constexpr uint32_t kCommand = 0x04;
constexpr uint32_t kBar0 = 0x10;
constexpr uint64_t kBar0Base = 0xFE000000;
constexpr uint64_t kBar0Size = 16u << 20;
constexpr uint64_t kBar2Base = 0x4000000000;
constexpr uint64_t kBar2Size = 256u << 20;

dxpu_cfg_shadow Function() {
  std::vector<uint8_t> space(DXPU_CFG_LEGACY_SIZE);
  space[0x0E] = 0;              // a type 0 header
  space[kBar0 + 4 * 2] = 0x0C;  // BAR 2: memory, 64-bit, prefetchable
  space[kBar0 + 4 * 4] = 0x01;  // BAR 4: I/O
  // What each BAR register reads back after all-ones is written: the size's mask and type.
  const std::array<uint32_t, DXPU_CFG_BARS> readback = {0xFF000000, 0,          0xF000000C,
                                                        0xFFFFFFFF, 0xFFFFFF01, 0};
  dxpu_cfg_shadow sh{};
  EXPECT_TRUE(dxpu_cfg_shadow_init(&sh, space.data(), DXPU_CFG_LEGACY_SIZE, readback.data(), 0));
  EXPECT_TRUE(dxpu_cfg_shadow_write(&sh, kBar0, 4, static_cast<uint32_t>(kBar0Base)));
  EXPECT_TRUE(dxpu_cfg_shadow_write(&sh, kBar0 + 8, 4, static_cast<uint32_t>(kBar2Base)));
  EXPECT_TRUE(dxpu_cfg_shadow_write(&sh, kBar0 + 12, 4, static_cast<uint32_t>(kBar2Base >> 32)));
  EXPECT_TRUE(dxpu_cfg_shadow_write(&sh, kBar0 + 16, 4, 0x1000));
  EXPECT_TRUE(dxpu_cfg_shadow_write(&sh, kCommand, 2, 0x3));  // I/O and memory decoding on
  return sh;
}

bool Claims(const dxpu_cfg_shadow& sh, uint64_t addr, uint32_t len, unsigned* bar = nullptr) {
  return dxpu_cfg_claims_mem(&sh, addr, len, bar);
}

TEST(CfgRoute, ARequestInsideABarIsItsFunctions) {
  const dxpu_cfg_shadow sh = Function();
  unsigned bar = 99;
  EXPECT_TRUE(Claims(sh, kBar0Base, 4, &bar));
  EXPECT_EQ(bar, 0u);
  EXPECT_TRUE(Claims(sh, kBar0Base + kBar0Size - 1, 1));
  EXPECT_TRUE(Claims(sh, kBar0Base + 0x1000, 4096));
  EXPECT_TRUE(Claims(sh, kBar2Base, 8, &bar));
  EXPECT_EQ(bar, 2u);
  EXPECT_TRUE(Claims(sh, kBar2Base + kBar2Size - 4096, 4096));
}

TEST(CfgRoute, NothingOutsideOrAcrossABarsEnd) {
  const dxpu_cfg_shadow sh = Function();
  EXPECT_FALSE(Claims(sh, kBar0Base - 1, 1));
  EXPECT_FALSE(Claims(sh, kBar0Base + kBar0Size, 1));
  EXPECT_FALSE(Claims(sh, kBar0Base + kBar0Size - 2, 4));  // across the end
  EXPECT_FALSE(Claims(sh, kBar2Base + kBar2Size, 4));
  EXPECT_FALSE(Claims(sh, kBar2Base & 0xFFFFFFFF, 4));  // the 64-bit BAR's low half alone
  EXPECT_FALSE(Claims(sh, 0x1000, 4));                  // the I/O BAR's address
  EXPECT_FALSE(Claims(sh, kBar0Base, 0));
  EXPECT_FALSE(Claims(sh, UINT64_MAX - 1, 4));  // wraps
}

TEST(CfgRoute, NothingWhileMemoryDecodingIsOff) {
  dxpu_cfg_shadow sh = Function();
  ASSERT_TRUE(dxpu_cfg_shadow_write(&sh, kCommand, 2, 0x1));
  EXPECT_FALSE(Claims(sh, kBar0Base, 4));
  EXPECT_FALSE(Claims(sh, kBar2Base, 4));
  ASSERT_TRUE(dxpu_cfg_shadow_write(&sh, kCommand, 2, 0x2));
  EXPECT_TRUE(Claims(sh, kBar0Base, 4));
}

TEST(CfgRoute, AMovedBarRoutesAtItsNewAddress) {
  dxpu_cfg_shadow sh = Function();
  ASSERT_TRUE(dxpu_cfg_shadow_write(&sh, kBar0, 4, 0xFD000000));
  EXPECT_FALSE(Claims(sh, kBar0Base, 4));
  EXPECT_TRUE(Claims(sh, 0xFD000000, 4));
}

}  // namespace
