// Function Level Reset resets the engines (channel registers, MSI-X table, work in flight,
// whose late completions become unexpected) but not device memory; ScrubMemory zeroes device
// memory and resets the engines.
#include <gtest/gtest.h>

#include "gpu/gpu_registers.h"
#include "gpu/pci_regs.h"
#include "gpu_host.h"

namespace dxpu::gpu::test {
namespace {

void InitiateFlr(GpuRig& rig) {
  const uint16_t devctl = static_cast<uint16_t>(
      *rig.device().config().capability_offset(CapabilityId::kPciExpress) + pci::kExpDevCtl);
  const uint32_t current = rig.host().ConfigRead32(devctl) & 0xffffu;
  rig.host().ConfigWrite(devctl, 2, current | pci::kExpDevCtlBcrFlr);
}

TEST(GpuReset, FlrResetsTheEnginesButNotMemory) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  GpuRig rig;
  rig.Start();
  const std::vector<uint8_t> kept = RandomBytes(rng, 100000);
  rig.DeviceWrite(12345, kept);
  rig.SetReg(regs::kIntrEnable, 3);
  rig.Submit(PushbufferBuilder().Memset32({.dst = 0, .count = 4, .value = 1}));
  rig.Run();
  ASSERT_EQ(rig.Reg(regs::kCounterKernels), 1u);
  // Work in flight: a copy whose reads the host holds.
  rig.host().read_policy = [](const dxpu_tlp& t) {
    return t.addr >= kHostData ? ReadAnswer::kHold : ReadAnswer::kComplete;
  };
  rig.Submit(PushbufferBuilder()
                 .Copy({.flags = kCopySrcHost, .size = 4096, .src = kHostData, .dst = 1 << 20})
                 .Semaphore({.address = kSemaphoreArea, .payload = 1, .flags = 0}));
  rig.host().Pump();
  ASSERT_EQ(rig.host().held_reads(), 8u);
  ASSERT_EQ(rig.Reg(regs::kStatus), regs::kStatusBusy);

  InitiateFlr(rig);

  // The configuration space is back at power-on: the host must enumerate again.
  EXPECT_FALSE(rig.device().config().memory_enabled());
  EXPECT_EQ(rig.device().config().bar(0)->address, 0u);
  EXPECT_EQ(rig.device().NextDeadline(), UINT64_MAX) << "no read in flight any more";
  rig.host().Enumerate();
  for (uint32_t reg : {regs::kGpfifoBaseLo, regs::kGpfifoBaseHi, regs::kGpfifoEntries, regs::kGpGet,
                       regs::kGpPut, regs::kErrorCode, regs::kIntrStatus, regs::kIntrEnable,
                       regs::kControl, regs::kCounterKernels, regs::kCounterBytesRead}) {
    EXPECT_EQ(rig.Reg(reg), 0u) << std::hex << reg;
  }
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
  EXPECT_EQ(rig.device().counters().kernels, 1u) << "the model's own counters keep counting";
  // Memory is kept.
  EXPECT_EQ(rig.DeviceRead(12345, kept.size()), kept);
  // The late completions of the held reads are unexpected, and change nothing.
  const uint64_t unexpected = rig.device().counters().unexpected_completions;
  rig.host().read_policy = nullptr;
  rig.host().ReleaseHeld();
  rig.host().Pump();
  EXPECT_EQ(rig.device().counters().unexpected_completions, unexpected + 16);
  EXPECT_EQ(rig.DeviceRead(1 << 20, 4096), std::vector<uint8_t>(4096, 0));
  EXPECT_EQ(rig.HostRead64(kSemaphoreArea), 0u) << "the semaphore never ran";
  rig.checker().ForgetReads();

  // The channel works again once set up.
  rig.Start();
  rig.Submit(PushbufferBuilder().Semaphore({.address = kSemaphoreArea, .payload = 2, .flags = 0}));
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(rig.HostRead32(kSemaphoreArea), 2u);
}

TEST(GpuReset, FlrResetsTheMsixTable) {
  GpuRig rig;
  rig.Start();
  rig.SetReg(kMsixTable + 16 * 2 + 12, 1);
  rig.Submit(PushbufferBuilder().Interrupt(2));
  ASSERT_TRUE(rig.Run());
  ASSERT_EQ(rig.Reg(0xff1000), 1u << 2);
  InitiateFlr(rig);
  rig.host().ConfigWrite(pci::kBar0, 4, 0xd0000000);
  rig.host().ConfigWrite(pci::kCommand, 2, pci::kCommandMemory);
  for (uint32_t v = 0; v < 16; ++v) {
    EXPECT_EQ(rig.Reg(kMsixTable + 16 * v + 0), 0u);
    EXPECT_EQ(rig.Reg(kMsixTable + 16 * v + 8), 0u);
    EXPECT_EQ(rig.Reg(kMsixTable + 16 * v + 12), 1u) << "masked";
  }
  EXPECT_EQ(rig.Reg(0xff1000), 0u) << "nothing pending";
}

TEST(GpuReset, ScrubZeroesMemoryAndResetsTheChannel) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  GpuRig rig;
  rig.Start();
  std::vector<uint64_t> offsets;
  for (int i = 0; i < 50; ++i) {
    const uint64_t offset = rng() % ((uint64_t{1} << 30) - 5000);
    rig.DeviceWrite(offset, RandomBytes(rng, 1 + rng() % 4999));
    offsets.push_back(offset);
  }
  rig.Submit(PushbufferBuilder().Memset32({.dst = 1 << 24, .count = 1 << 20, .value = 7}));
  ASSERT_TRUE(rig.Run());
  ASSERT_GT(rig.device().resident_memory_bytes(), 4u << 20);
  EXPECT_EQ(rig.device().ScrubMemory(), uint64_t{1} << 30);
  EXPECT_EQ(rig.device().resident_memory_bytes(), 0u);
  for (const uint64_t offset : offsets) {
    EXPECT_EQ(rig.DeviceRead(offset, 5000), std::vector<uint8_t>(5000, 0));
  }
  EXPECT_EQ(rig.DeviceRead(1 << 24, 4 << 20), std::vector<uint8_t>(4 << 20, 0));
  EXPECT_EQ(rig.Reg(regs::kGpfifoEntries), 0u) << "the channel was reset";
  EXPECT_EQ(rig.Reg(regs::kControl), 0u);
  // Reads through the window see zeros too.
  const HostRead r = rig.host().MemRead(rig.host().bar_address(2) + (1 << 24), 64);
  EXPECT_EQ(r.status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(r.data, std::vector<uint8_t>(64, 0));
}

}  // namespace
}  // namespace dxpu::gpu::test
