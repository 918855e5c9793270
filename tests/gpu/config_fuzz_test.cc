// Random configuration writes of random sizes at random offsets, valid or not: no crash, no
// read-only or hardware-initialized bit ever changes, a refused access changes nothing, and
// every Function Level Reset lands exactly on the power-on state. The seed is printed;
// DXPU_SEED=<n> replays a run.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "gpu/pci_regs.h"
#include "gpu_test_util.h"

namespace dxpu::gpu::test {
namespace {

TEST(ConfigFuzz, RandomWritesNeverChangeReadOnlyBits) {
  const uint64_t seed = TestSeed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  for (std::string_view name : ProfileNames()) {
    ConfigSpace config = MakeConfigSpace(name);
    const RegisterFile power_on = config.registers();
    int resets = 0;
    config.set_reset_callback([&] { ++resets; });
    const std::optional<uint16_t> pb = config.capability_offset(CapabilityId::kPowerBudgeting);
    int refused = 0;
    int flrs = 0;
    for (int i = 0; i < 10000; ++i) {
      // Mostly valid accesses, some refused ones: offsets past the end, odd sizes, DW
      // crossings, byte enables wider than 4 bits. A quarter go through the DW interface.
      const bool by_dw = rng() % 4 == 0;
      uint32_t offset = rng() % 16 == 0 ? static_cast<uint32_t>(rng() % 8192)
                                        : static_cast<uint32_t>(rng() % 4096);
      const uint32_t sizes[] = {1, 2, 4, 1, 2, 4, 0, 3, 8};
      const uint32_t size = sizes[rng() % 9];
      if (rng() % 8 != 0) offset &= ~(size == 4 ? 3u : size == 2 ? 1u : 0u);  // mostly aligned
      const auto byte_enables = static_cast<uint8_t>(rng() % 16 == 0 ? rng() % 256 : rng() % 16);
      // Bias towards all-ones and zeros, which hit every bit.
      const uint64_t kind = rng() % 4;
      const uint32_t value = kind == 0 ? 0xffffffff : kind == 1 ? 0 : static_cast<uint32_t>(rng());

      const RegisterFile before = config.registers();
      const int resets_before = resets;
      const ConfigStatus status = by_dw ? config.WriteDw(offset / 4, value, byte_enables)
                                        : config.Write(offset, size, value);
      const bool valid = by_dw ? offset < 4096 && byte_enables <= 0xf
                               : offset < 4096 && (size == 1 || size == 2 || size == 4) &&
                                     (offset % 4) + size <= 4;
      ASSERT_EQ(status == ConfigStatus::kOk, valid)
          << name << (by_dw ? " DW write at " : " write at ") << offset << " size " << size
          << " byte enables " << int{byte_enables} << " seed " << seed;
      const RegisterFile& after = config.registers();
      if (!valid) {
        ++refused;
        ASSERT_TRUE(after == before) << "a refused write changed something; seed " << seed;
        if (!by_dw) {
          ASSERT_EQ(config.Read(offset, size).value, 0xffffffffu);
        }
        continue;
      }
      if (resets != resets_before) {
        ++flrs;
        ASSERT_EQ(resets, resets_before + 1);
        ASSERT_TRUE(after == power_on) << name << " FLR did not restore power-on; seed " << seed;
        continue;
      }
      for (uint32_t o = 0; o < ConfigSpace::kSize; ++o) {
        if (pb && o >= uint32_t{*pb} + pci::kPwrData && o < uint32_t{*pb} + pci::kPwrData + 4u)
          continue;
        const uint8_t b = before.bytes()[o];
        const uint8_t a = after.bytes()[o];
        if (a == b) continue;
        for (unsigned bit = 0; bit < 8; ++bit) {
          if (((a ^ b) >> bit & 1) == 0) continue;
          const BitAccess access = before.AccessOf(o, bit);
          ASSERT_TRUE(access == BitAccess::kReadWrite ||
                      (access == BitAccess::kWrite1ToClear && ((a >> bit) & 1) == 0))
              << name << ": bit " << bit << " of byte 0x" << std::hex << o << std::dec
              << " changed by a write at " << offset << " (size " << size << ", DW " << by_dw
              << ", byte enables " << int{byte_enables} << ", value " << value << "); seed "
              << seed;
        }
      }
    }
    std::printf("%.*s: %d refused, %d FLRs\n", static_cast<int>(name.size()), name.data(), refused,
                flrs);
    EXPECT_GT(refused, 0);
  }
}

}  // namespace
}  // namespace dxpu::gpu::test
