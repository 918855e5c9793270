// The two ways into the configuration space: byte accesses (offset, size) and configuration
// TLP accesses (DW index, First DW Byte Enables). They agree, and accesses no TLP can make are
// refused without effect.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "gpu/pci_regs.h"
#include "gpu_test_util.h"

namespace dxpu::gpu::test {
namespace {

TEST(ConfigAccess, RefusesOutOfRangeBadSizesAndDwCrossings) {
  ConfigSpace config = MakeConfigSpace("dxgpu");
  const std::vector<uint8_t> before = Dump(config);
  struct Case {
    uint32_t offset;
    uint32_t size;
    ConfigStatus status;
  };
  const Case cases[] = {
      {4096, 1, ConfigStatus::kOutOfRange},
      {4096, 4, ConfigStatus::kOutOfRange},
      {0xffffffff, 1, ConfigStatus::kOutOfRange},
      {0x10000, 2, ConfigStatus::kOutOfRange},
      {0, 0, ConfigStatus::kBadSize},
      {0, 3, ConfigStatus::kBadSize},
      {0, 8, ConfigStatus::kBadSize},
      {0x10, 0xffffffff, ConfigStatus::kBadSize},
      {2, 4, ConfigStatus::kCrossesDw},
      {3, 2, ConfigStatus::kCrossesDw},
      {0x1, 4, ConfigStatus::kCrossesDw},
      {0xffe, 4, ConfigStatus::kCrossesDw},
      {0xfff, 2, ConfigStatus::kCrossesDw},
  };
  for (const Case& c : cases) {
    const ConfigRead r = config.Read(c.offset, c.size);
    EXPECT_EQ(r.status, c.status) << c.offset << "/" << c.size;
    EXPECT_EQ(r.value, 0xffffffffu);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(config.Write(c.offset, c.size, 0xffffffff), c.status) << c.offset << "/" << c.size;
  }
  EXPECT_EQ(config.ReadDw(1024).status, ConfigStatus::kOutOfRange);
  EXPECT_EQ(config.ReadDw(1024).value, 0xffffffffu);
  EXPECT_EQ(config.ReadDw(0xffffffff).status, ConfigStatus::kOutOfRange);
  EXPECT_EQ(config.WriteDw(1024, 0xffffffff, 0xf), ConfigStatus::kOutOfRange);
  EXPECT_EQ(config.WriteDw(1, 0xffffffff, 0x10), ConfigStatus::kBadByteEnables);
  EXPECT_EQ(config.WriteDw(1, 0xffffffff, 0xff), ConfigStatus::kBadByteEnables);
  EXPECT_EQ(Dump(config), before) << "refused writes must change nothing";

  // The edges that are allowed.
  EXPECT_TRUE(config.Read(0xffc, 4).ok());
  EXPECT_TRUE(config.Read(0xfff, 1).ok());
  EXPECT_TRUE(config.Read(0xffe, 2).ok());
  EXPECT_TRUE(config.Read(1, 2).ok());  // unaligned but inside one DW: byte enables 0110b
  EXPECT_TRUE(config.ReadDw(1023).ok());
  EXPECT_EQ(config.WriteDw(1, 0xffffffff, 0), ConfigStatus::kOk);  // no bytes enabled
  EXPECT_EQ(Dump(config), before);
  for (ConfigStatus s : {ConfigStatus::kOk, ConfigStatus::kOutOfRange, ConfigStatus::kBadSize,
                         ConfigStatus::kCrossesDw, ConfigStatus::kBadByteEnables}) {
    EXPECT_FALSE(ToString(s).empty());
  }
}

TEST(ConfigAccess, ReadsOfEverySizeAgreeWithTheDw) {
  const ConfigSpace config = MakeConfigSpace("h100-80g");
  for (uint32_t dw = 0; dw < ConfigSpace::kSize / 4; ++dw) {
    const uint32_t v = config.ReadDw(dw).value;
    ASSERT_EQ(config.Read(dw * 4, 4).value, v);
    for (uint32_t k = 0; k < 4; ++k) {
      ASSERT_EQ(config.Read(dw * 4 + k, 1).value, (v >> (8 * k)) & 0xff);
      if (k < 3) {
        ASSERT_EQ(config.Read(dw * 4 + k, 2).value, (v >> (8 * k)) & 0xffff);
      }
    }
  }
}

TEST(ConfigAccess, UnalignedWriteInsideADwTouchesOnlyItsBytes) {
  ConfigSpace config = MakeConfigSpace("dxgpu");
  // Bytes 0x3d..0x3e: Interrupt Pin (RO) and Min_Gnt (RO); 0x3c..0x3d: Line (RW) and Pin.
  ASSERT_EQ(config.Write(0x3c, 2, 0xffff), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, 0x3c), 0x000001ffu);
  ASSERT_EQ(config.Write(0x3d, 2, 0xffff), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, 0x3c), 0x000001ffu);
  // BAR0 bytes 1..2 (address bits 23:8 are below the 16 MiB size: read-only 0).
  ASSERT_EQ(config.Write(0x11, 2, 0xffff), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, 0x10), 0u);
  ASSERT_EQ(config.Write(0x13, 1, 0xab), ConfigStatus::kOk);
  EXPECT_EQ(Read32(config, 0x10), 0xab000000u);
}

// Random DW writes with random byte enables against one space, and the same bytes written
// one at a time against another: identical after every step.
TEST(ConfigAccess, DwWritesWithByteEnablesEqualByteWrites) {
  const uint64_t seed = TestSeed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (std::string_view name : ProfileNames()) {
    ConfigSpace by_dw = MakeConfigSpace(name);
    ConfigSpace by_byte = MakeConfigSpace(name);
    int resets_dw = 0;
    int resets_byte = 0;
    by_dw.set_reset_callback([&] { ++resets_dw; });
    by_byte.set_reset_callback([&] { ++resets_byte; });
    const DeviceProfile& p = by_dw.profile();
    for (int i = 0; i < 4000; ++i) {
      uint32_t dw = 0;
      if (rng() % 2 == 0) {  // somewhere inside the header or a capability
        const uint64_t pick = rng() % (p.capabilities.size() + 1);
        const uint32_t base = pick == 0 ? 0 : p.capabilities[pick - 1].offset;
        const uint32_t len =
            pick == 0 ? pci::kHeaderSize : CapabilitySize(p.capabilities[pick - 1].id, p);
        dw = (base + static_cast<uint32_t>(rng() % len)) / 4;
      } else {
        dw = static_cast<uint32_t>(rng() % (ConfigSpace::kSize / 4));
      }
      const auto be = static_cast<uint8_t>(rng() % 16);
      const auto value = static_cast<uint32_t>(rng());
      ASSERT_EQ(by_dw.WriteDw(dw, value, be), ConfigStatus::kOk);
      for (uint32_t k = 0; k < 4; ++k) {
        if (((be >> k) & 1u) != 0) {
          ASSERT_EQ(by_byte.Write(dw * 4 + k, 1, (value >> (8 * k)) & 0xff), ConfigStatus::kOk);
        }
      }
      ASSERT_TRUE(by_dw.registers() == by_byte.registers())
          << name << " step " << i << " DW " << dw << " BE " << int{be} << " value " << value
          << " seed " << seed;
      ASSERT_EQ(resets_dw, resets_byte);
    }
  }
}

}  // namespace
}  // namespace dxpu::gpu::test
