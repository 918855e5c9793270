// virtual_bars_test.cc - a host's copy of a device's BAR registers, and the rate limit on the
// bridge's refusal log.
#include "bridge-fw/virtual_bars.h"

#include <gtest/gtest.h>

#include <vector>

#include "lib/util/rate_limited_log.h"

namespace dxpu::bridge {
namespace {

VirtualBars Bars() {
  const std::vector<gpu::BarState> bars = {
      {0, 0x8000'0000, 16 << 20, false, false},
      {2, 0x100'0000'0000, uint64_t{64} << 30, true, true},
  };
  return VirtualBars(bars);
}

TEST(VirtualBars, SizingReadsBackTheSizeMaskAndFlags) {
  VirtualBars v = Bars();
  v.WriteDw(0x10, 0xffffffff, 0xf);
  EXPECT_EQ(v.ReadDw(0x10), 0xff000000U);  // 16 MiB, 32-bit, not prefetchable
  v.WriteDw(0x18, 0xffffffff, 0xf);
  v.WriteDw(0x1c, 0xffffffff, 0xf);
  EXPECT_EQ(v.ReadDw(0x18), 0x0000000cU);  // 64 GiB: low address bits read 0; 64-bit, pref
  EXPECT_EQ(v.ReadDw(0x1c), 0xfffffff0U);
  // Unimplemented BARs read 0 and ignore writes.
  v.WriteDw(0x14, 0xffffffff, 0xf);
  EXPECT_EQ(v.ReadDw(0x14), 0U);
  EXPECT_EQ(v.ReadDw(0x24), 0U);
  EXPECT_FALSE(v.HostAddress(1).has_value());
}

TEST(VirtualBars, AddressesAreTheHostsAndResetClearsThem) {
  VirtualBars v = Bars();
  v.WriteDw(0x10, 0xe1234567, 0xf);
  EXPECT_EQ(v.HostAddress(0), 0xe1000000U);  // bits below the size read 0
  v.WriteDw(0x18, 0x00000000, 0xf);
  v.WriteDw(0x1c, 0x00000020, 0xf);
  EXPECT_EQ(v.HostAddress(2), 0x20'0000'0000U);
  // Byte enables: only byte 3 of BAR0 changes.
  v.WriteDw(0x10, 0xd2345678, 0x8);
  EXPECT_EQ(v.HostAddress(0), 0xd2000000U);
  v.Reset();
  EXPECT_EQ(v.HostAddress(0), 0U);
  EXPECT_EQ(v.ReadDw(0x18), 0x0000000cU);
}

TEST(RateLimitedLog, BurstPerKeyThenCountsWhatItHeldBack) {
  util::RateLimitedLog log(1000, 2);
  uint64_t suppressed = 99;
  EXPECT_TRUE(log.Allow(1, 0, &suppressed));
  EXPECT_EQ(suppressed, 0U);
  EXPECT_TRUE(log.Allow(1, 10, &suppressed));
  EXPECT_FALSE(log.Allow(1, 20, &suppressed));
  EXPECT_FALSE(log.Allow(1, 30, &suppressed));
  EXPECT_TRUE(log.Allow(2, 30, &suppressed));    // another key has its own budget
  EXPECT_TRUE(log.Allow(1, 1000, &suppressed));  // a new interval
  EXPECT_EQ(suppressed, 2U);
  EXPECT_EQ(log.suppressed_total(), 2U);
}

}  // namespace
}  // namespace dxpu::bridge
