// The GPU model's BAR0 registers (RO, RW, RW1C, self-clearing, unmapped offsets, byte
// enables, multi-DW reads), the MSI-X table and PBA in BAR0, the memory window BAR, and
// requests that no BAR claims.
#include <gtest/gtest.h>

#include <cstring>

#include "gpu/gpu_registers.h"
#include "gpu/pci_regs.h"
#include "gpu_host.h"

namespace dxpu::gpu::test {
namespace {

TEST(GpuMmio, IdentityRegistersAreReadOnly) {
  GpuRig rig;
  rig.Start();
  EXPECT_EQ(rig.Reg(regs::kId), 0x44584750u);
  EXPECT_EQ(rig.Reg(regs::kVersion), 0x00010000u);
  EXPECT_EQ(rig.Reg(regs::kMemSizeLo), uint32_t{1} << 30);  // dxgpu: 1 GiB
  EXPECT_EQ(rig.Reg(regs::kMemSizeHi), 0u);
  for (uint32_t reg :
       {regs::kId, regs::kVersion, regs::kMemSizeLo, regs::kMemSizeHi, regs::kGpGet, regs::kStatus,
        regs::kErrorCode, regs::kErrorInfo, regs::kCounterKernels, regs::kPtimerLo}) {
    const uint32_t before = rig.Reg(reg);
    rig.SetReg(reg, ~before);
    EXPECT_EQ(rig.Reg(reg), before) << std::hex << reg;
  }
  EXPECT_EQ(rig.device().counters().unmapped_mmio, 0u);
}

TEST(GpuMmio, MemorySizeFollowsTheOption) {
  RigOptions o;
  o.gpu.memory_bytes = (uint64_t{5} << 32) + 4096;
  GpuRig rig(o);
  rig.Start();
  EXPECT_EQ(rig.Reg(regs::kMemSizeLo), 4096u);
  EXPECT_EQ(rig.Reg(regs::kMemSizeHi), 5u);
  EXPECT_EQ(rig.device().memory_bytes(), (uint64_t{5} << 32) + 4096);
}

TEST(GpuMmio, ReadWriteRegisters) {
  GpuRig rig;
  rig.host().Enumerate();
  rig.SetReg(regs::kGpfifoBaseLo, 0x12345678);
  EXPECT_EQ(rig.Reg(regs::kGpfifoBaseLo), 0x12345670u) << "bits 3:0 read 0 (16-byte aligned)";
  rig.SetReg(regs::kGpfifoBaseHi, 0x9abcdef0);
  EXPECT_EQ(rig.Reg(regs::kGpfifoBaseHi), 0x9abcdef0u);
  rig.SetReg(regs::kGpfifoEntries, 256);
  EXPECT_EQ(rig.Reg(regs::kGpfifoEntries), 256u);
  rig.SetReg(regs::kIntrEnable, 0xffffffff);
  EXPECT_EQ(rig.Reg(regs::kIntrEnable), 3u) << "only the two defined bits";
  rig.SetReg(regs::kIntrEnable, 0);
  EXPECT_EQ(rig.Reg(regs::kIntrEnable), 0u);
}

TEST(GpuMmio, DoorbellWithTheChannelDisabledLeavesGpGet) {
  GpuRig rig;
  rig.host().Enumerate();
  rig.SetReg(regs::kGpfifoEntries, 16);
  rig.SetReg(regs::kGpPut, 5);
  EXPECT_EQ(rig.Reg(regs::kGpPut), 5u);
  rig.SetReg(regs::kGpGet, 3);  // read-only
  EXPECT_EQ(rig.Reg(regs::kGpGet), 0u);
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusBusy) << "entries pending, not fetched";
  EXPECT_EQ(rig.device().counters().doorbells, 1u);
  EXPECT_EQ(rig.device().counters().dma_read_requests, 0u);
  // Writing GPFIFO_ENTRIES defines a new ring: GP_GET and GP_PUT back to 0.
  rig.SetReg(regs::kGpfifoEntries, 16);
  EXPECT_EQ(rig.Reg(regs::kGpPut), 0u);
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
}

TEST(GpuMmio, StatusControlAndGpGetAcrossASubmission) {
  GpuRig rig;
  rig.Start();
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
  EXPECT_EQ(rig.Reg(regs::kControl), regs::kControlEnable);
  rig.SetReg(regs::kControl, regs::kControlEnable | regs::kControlRestart);
  EXPECT_EQ(rig.Reg(regs::kControl), regs::kControlEnable) << "restart bit self-clears";
  for (int i = 0; i < 3; ++i) {
    rig.Submit(PushbufferBuilder().Nop(2));
    rig.Run();
  }
  EXPECT_EQ(rig.Reg(regs::kGpGet), 3u);
  EXPECT_EQ(rig.Reg(regs::kGpPut), 3u);
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
  EXPECT_EQ(rig.Reg(regs::kErrorCode), 0u);
  EXPECT_EQ(rig.device().counters().gpfifo_entries, 3u);
  EXPECT_EQ(rig.device().counters().commands, 3u);
}

TEST(GpuMmio, IntrStatusIsWriteOneToClear) {
  GpuRig rig;
  rig.Start();
  rig.Submit(PushbufferBuilder().Semaphore(
      {.address = kSemaphoreArea, .payload = 1, .flags = kSemaphoreInterrupt}));
  rig.Run();
  ASSERT_EQ(rig.Reg(regs::kIntrStatus), regs::kIntrSemaphore);
  rig.SetReg(regs::kIntrStatus, 0);
  EXPECT_EQ(rig.Reg(regs::kIntrStatus), regs::kIntrSemaphore) << "writing 0 clears nothing";
  rig.SetReg(regs::kIntrStatus, regs::kIntrError);
  EXPECT_EQ(rig.Reg(regs::kIntrStatus), regs::kIntrSemaphore) << "only the bits written 1";
  rig.SetReg(regs::kIntrStatus, regs::kIntrSemaphore);
  EXPECT_EQ(rig.Reg(regs::kIntrStatus), 0u);
}

TEST(GpuMmio, UnmappedOffsetsReadZeroIgnoreWritesAndAreCounted) {
  GpuRig rig;
  rig.Start();
  const uint64_t before = rig.device().counters().unmapped_mmio;
  for (uint32_t off : {0x0024u, 0x0028u, 0x003cu, 0x0048u, 0x0054u, 0x0088u, 0x0108u, 0x1000u,
                       0x800000u, 0xfefffcu, 0xff0100u, 0xff1008u, 0xfffffcu}) {
    rig.SetReg(off, 0xdeadbeef);
    EXPECT_EQ(rig.Reg(off), 0u) << std::hex << off;
  }
  EXPECT_EQ(rig.device().counters().unmapped_mmio, before + 26) << "a read and a write each";
}

TEST(GpuMmio, PtimerIsTheTimeOfTheAccess) {
  GpuRig rig;
  rig.Start();
  const uint64_t t = (uint64_t{0x12} << 32) + 0x345678;
  rig.host().set_now(t);
  EXPECT_EQ(rig.Reg(regs::kPtimerLo), 0x345678u);
  EXPECT_EQ(rig.Reg(regs::kPtimerHi), 0x12u);
  // Both halves in one 8-byte read.
  const HostRead r = rig.host().MemRead(rig.host().bar_address(0) + regs::kPtimerLo, 8);
  ASSERT_EQ(r.status, DXPU_TLP_CPL_SC);
  uint64_t v = 0;
  std::memcpy(&v, r.data.data(), 8);
  EXPECT_EQ(v, t);
}

TEST(GpuMmio, MultiDwAndByteEnabledAccesses) {
  GpuRig rig;
  rig.Start();
  rig.SetReg(regs::kGpfifoBaseHi, 0x11223344);
  // A 64-byte read from 0x0000: ID, VERSION, MEM_SIZE, GPFIFO_*, ...
  const HostRead r = rig.host().MemRead(rig.host().bar_address(0), 64);
  ASSERT_EQ(r.status, DXPU_TLP_CPL_SC);
  ASSERT_EQ(r.data.size(), 64u);
  uint32_t dw[16];
  std::memcpy(dw, r.data.data(), 64);
  EXPECT_EQ(dw[0], regs::kIdValue);
  EXPECT_EQ(dw[1], regs::kVersionValue);
  EXPECT_EQ(dw[2], uint32_t{1} << 30);
  EXPECT_EQ(dw[5], 0x11223344u);
  EXPECT_EQ(dw[6], 64u) << "GPFIFO_ENTRIES";
  // A 1-byte write to byte 2 of GPFIFO_BASE_HI changes only that byte.
  const uint8_t byte = 0xaa;
  rig.host().MemWrite(rig.host().bar_address(0) + regs::kGpfifoBaseHi + 2, {&byte, 1});
  EXPECT_EQ(rig.Reg(regs::kGpfifoBaseHi), 0x11aa3344u);
  // A 2-byte read in the middle of ID.
  const HostRead mid = rig.host().MemRead(rig.host().bar_address(0) + 1, 2);
  ASSERT_EQ(mid.status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(mid.data, (std::vector<uint8_t>{0x47, 0x58}));
}

TEST(GpuMmio, MsixTableAndPbaInBar0) {
  GpuRig rig;
  rig.host().Enumerate();  // programs every vector: address, data = vector, unmasked
  EXPECT_EQ(rig.Reg(kMsixTable + 16 * 5 + 0), 0xfee00000u);
  EXPECT_EQ(rig.Reg(kMsixTable + 16 * 5 + 8), 5u);
  EXPECT_EQ(rig.Reg(kMsixTable + 16 * 5 + 12), 0u);
  rig.SetReg(kMsixTable + 16 * 3 + 0, 0xfee01237);
  EXPECT_EQ(rig.Reg(kMsixTable + 16 * 3 + 0), 0xfee01234u) << "address bits 1:0 read 0";
  rig.SetReg(kMsixTable + 16 * 3 + 12, 0xffffffff);
  EXPECT_EQ(rig.Reg(kMsixTable + 16 * 3 + 12), 1u) << "only the mask bit";
  rig.SetReg(kMsixPba, 0xffffffff);
  EXPECT_EQ(rig.Reg(kMsixPba), 0u) << "the PBA is read-only";
  // Power-on (a fresh device): every vector masked.
  GpuRig fresh;
  fresh.host().ConfigWrite(pci::kBar0, 4, 0xd0000000);
  fresh.host().ConfigWrite(pci::kCommand, 2, pci::kCommandMemory);
  for (uint32_t v = 0; v < 16; ++v) {
    EXPECT_EQ(fresh.host().MemRead(0xd0000000 + kMsixTable + 16 * v + 12, 4).data,
              (std::vector<uint8_t>{1, 0, 0, 0}));
  }
}

TEST(GpuMmio, MemoryWindowReadsAndWritesDeviceMemory) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  GpuRig rig;
  rig.Start();
  ASSERT_EQ(rig.device().memory_bar(), std::optional<uint8_t>(2));
  const uint64_t window = rig.host().bar_address(2);
  ASSERT_NE(window, 0u);
  std::vector<uint8_t> shadow(size_t{64} << 10, 0);
  for (int i = 0; i < 300; ++i) {
    const uint64_t offset = rng() % (shadow.size() - 600);
    const uint32_t room = 4096 - static_cast<uint32_t>(offset % 4096);
    const uint32_t length = 1 + static_cast<uint32_t>(rng() % std::min<uint32_t>(room, 512));
    if (rng() % 2 == 0) {
      const std::vector<uint8_t> bytes = RandomBytes(rng, length);
      rig.host().MemWrite(window + offset, bytes);
      std::copy(bytes.begin(), bytes.end(), shadow.begin() + static_cast<ptrdiff_t>(offset));
    } else {
      const HostRead r = rig.host().MemRead(window + offset, length);
      ASSERT_EQ(r.status, DXPU_TLP_CPL_SC);
      ASSERT_EQ(r.data,
                std::vector<uint8_t>(shadow.begin() + static_cast<ptrdiff_t>(offset),
                                     shadow.begin() + static_cast<ptrdiff_t>(offset + length)))
          << "offset " << offset << " length " << length;
    }
  }
  EXPECT_EQ(rig.DeviceRead(0, shadow.size()), shadow);
  EXPECT_TRUE(rig.checker().violations().empty()) << rig.checker().violations()[0];
}

TEST(GpuMmio, MemoryWindowPastDeviceMemory) {
  RigOptions o;
  const uint64_t end = (128 << 20) + 2048;  // the window (BAR2) is 256 MiB
  o.gpu.memory_bytes = end;
  GpuRig rig(o);
  rig.Start();
  const uint64_t window = rig.host().bar_address(2);
  const uint8_t bytes[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  rig.host().MemWrite(window + end - 8, bytes);
  EXPECT_EQ(rig.DeviceRead(end - 8, 8), std::vector<uint8_t>(bytes, bytes + 8));
  const uint64_t ur = rig.device().counters().ur_sent;
  const uint64_t dropped = rig.device().counters().dropped_writes;
  EXPECT_EQ(rig.host().MemRead(window + end, 4).status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(rig.host().MemRead(window + end - 4, 8).status, DXPU_TLP_CPL_UR) << "partly past";
  rig.host().MemWrite(window + end - 4, bytes);
  rig.host().MemWrite(window + (200 << 20), bytes);
  EXPECT_EQ(rig.device().counters().ur_sent, ur + 2);
  EXPECT_EQ(rig.device().counters().dropped_writes, dropped + 2);
  EXPECT_EQ(rig.DeviceRead(end - 8, 8), std::vector<uint8_t>(bytes, bytes + 8))
      << "the dropped write changed nothing";
}

TEST(GpuMmio, CompletionsSplitAtRcbAndMps) {
  GpuRig rig;
  rig.Start();
  std::vector<uint8_t> data(4096);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
  rig.DeviceWrite(8192, data);
  std::vector<dxpu_tlp> cpls;
  rig.host().on_device_tlp = [&](const dxpu_tlp& t) {
    rig.checker().OnDeviceTlp(t);
    if (dxpu_tlp_kind_is_cpl(t.kind)) cpls.push_back(t);
  };
  const HostRead r = rig.host().MemRead(rig.host().bar_address(2) + 8192 + 12, 4096 - 12 - 8);
  ASSERT_EQ(r.status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(r.data, std::vector<uint8_t>(data.begin() + 12, data.end() - 8));
  // MPS 256, RCB 64: the first completion ends at the 256-byte boundary, then 256 each.
  ASSERT_EQ(cpls.size(), 16u);
  EXPECT_EQ(cpls[0].length_dw, (256 - 12) / 4);
  EXPECT_EQ(cpls[0].lower_addr, 12);
  EXPECT_EQ(cpls[0].byte_count, 4096 - 20);
  for (size_t i = 1; i < cpls.size(); ++i) {
    EXPECT_EQ(cpls[i].lower_addr, 0) << i;
    EXPECT_LE(cpls[i].length_dw * 4u, 256u) << i;
  }
  EXPECT_TRUE(rig.checker().violations().empty());
}

TEST(GpuMmio, NoBarOrMemorySpaceDisabled) {
  GpuRig rig;
  rig.Start();
  const uint64_t bar0 = rig.host().bar_address(0);
  const auto& c = rig.device().counters();
  // Outside every BAR.
  EXPECT_EQ(rig.host().MemRead(0x1000, 4).status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(rig.host().MemRead(bar0 + (16 << 20), 4).status, DXPU_TLP_CPL_UR);
  const uint8_t b[4] = {1, 2, 3, 4};
  rig.host().MemWrite(0x1000, b);
  EXPECT_EQ(c.ur_sent, 2u);
  EXPECT_EQ(c.dropped_writes, 1u);
  // Memory Space off: nothing decodes.
  rig.host().ConfigWrite(pci::kCommand, 2, pci::kCommandMaster);
  EXPECT_EQ(rig.host().MemRead(bar0 + regs::kId, 4).status, DXPU_TLP_CPL_UR);
  rig.host().MemWrite(bar0 + regs::kGpfifoEntries, b);
  EXPECT_EQ(c.ur_sent, 3u);
  EXPECT_EQ(c.dropped_writes, 2u);
  rig.host().ConfigWrite(pci::kCommand, 2, pci::kCommandMaster | pci::kCommandMemory);
  EXPECT_EQ(rig.Reg(regs::kId), regs::kIdValue);
  EXPECT_EQ(rig.Reg(regs::kGpfifoEntries), 64u) << "the dropped write changed nothing";
}

TEST(GpuMmio, RealGpuProfilesUseTheirLargestPrefetchableBar) {
  for (const auto& [name, bar] : {std::pair{"a100-40g", 1}, std::pair{"h100-80g", 2}}) {
    RigOptions o;
    o.profile = name;
    GpuRig rig(o);
    rig.Start();
    EXPECT_EQ(rig.device().memory_bar(), std::optional<uint8_t>(bar)) << name;
    EXPECT_EQ(rig.Reg(regs::kId), regs::kIdValue) << name;
    const uint8_t bytes[4] = {9, 8, 7, 6};
    const uint64_t far = uint64_t{30} << 30;  // 30 GiB into device memory
    rig.host().MemWrite(rig.host().bar_address(static_cast<uint8_t>(bar)) + far, bytes);
    EXPECT_EQ(rig.DeviceRead(far, 4), std::vector<uint8_t>(bytes, bytes + 4)) << name;
    EXPECT_LE(rig.device().resident_memory_bytes(), uint64_t{1} << 20) << "stored sparsely";
    // The other prefetchable BARs have nothing behind them: zeros, counted.
    const uint8_t other = bar == 1 ? 3 : 4;
    const HostRead r = rig.host().MemRead(rig.host().bar_address(other), 8);
    EXPECT_EQ(r.status, DXPU_TLP_CPL_SC) << name;
    EXPECT_EQ(r.data, std::vector<uint8_t>(8, 0)) << name;
  }
}

TEST(GpuMmio, CounterRegisters) {
  GpuRig rig;
  rig.Start();
  rig.Submit(PushbufferBuilder()
                 .Memset32({.dst = 0, .count = 16, .value = 1})
                 .Copy({.flags = kCopyDstHost, .size = 64, .src = 0, .dst = kHostData})
                 .Semaphore({.address = kSemaphoreArea, .payload = 1, .flags = 0}));
  rig.Run();
  EXPECT_EQ(rig.Reg(regs::kCounterKernels), 1u);
  EXPECT_EQ(rig.Reg(regs::kCounterCopies), 1u);
  EXPECT_EQ(rig.Reg(regs::kCounterSemaphores), 1u);
  EXPECT_EQ(rig.Reg(regs::kCounterBytesWritten), 64u + 4u);
  // The GPFIFO entry (16 bytes) and the pushbuffer were read.
  const uint32_t pushbuffer_bytes = 4 * (5 + 8 + 6);
  EXPECT_EQ(rig.Reg(regs::kCounterBytesRead), 16u + pushbuffer_bytes);
  EXPECT_EQ(rig.Reg(regs::kCounterKernels + 4), 0u);
}

}  // namespace
}  // namespace dxpu::gpu::test
