// The command channel: GPFIFO fetch (batched, wrapping), channel enable and Bus Master
// Enable, semaphore ordering, and every error path (bad opcode, bad length, bad address, bad
// alignment, bad ring, bad vector, DMA UR/CA, DMA timeout with late completions counted
// unexpected) setting ERROR_CODE, ERROR_INFO and INTR_STATUS, and the restart.
#include <gtest/gtest.h>

#include "gpu/gpu_registers.h"
#include "gpu/pci_regs.h"
#include "gpu_host.h"

namespace dxpu::gpu::test {
namespace {

SemaphoreCommand Release(uint64_t slot, uint64_t value) {
  return {.address = kSemaphoreArea + 8 * slot, .payload = value, .flags = kSemaphore64};
}

TEST(GpuChannel, EntriesAreFetchedInBatchesAndTheRingWraps) {
  RigOptions o;
  o.ring_entries = 8;
  GpuRig rig(o);
  rig.Start();
  // The driver queues 5 entries, then rings once: one read fetches all five.
  size_t ring_reads = 0;
  rig.host().on_device_tlp = [&](const dxpu_tlp& t) {
    rig.checker().OnDeviceTlp(t);
    if (t.kind == DXPU_TLP_MRD && t.addr >= kRingAddress &&
        t.addr < kRingAddress + uint64_t{8} * kGpfifoEntryBytes) {
      ++ring_reads;
    }
  };
  uint32_t value = 0;
  const auto write_entry = [&](uint32_t index) {
    const std::vector<uint8_t> pb =
        PushbufferBuilder().Semaphore(Release(index % 8, ++value)).bytes();
    const uint64_t address = kPushbufferArea + uint64_t{value} * 256;
    rig.HostWrite(address, pb);
    rig.HostWrite(
        kRingAddress + uint64_t{index % 8} * 16,
        EncodeGpfifoEntry(
            {.pushbuffer = address, .length = static_cast<uint32_t>(pb.size()), .flags = 0}));
  };
  for (uint32_t i = 0; i < 5; ++i) write_entry(i);
  rig.SetReg(regs::kGpPut, 5);
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(ring_reads, 1u);
  EXPECT_EQ(rig.Reg(regs::kGpGet), 5u);
  for (uint32_t i = 0; i < 5; ++i)
    EXPECT_EQ(rig.HostRead64(kSemaphoreArea + uint64_t{8} * i), i + 1);
  // Five more: entries 5, 6, 7 then 0, 1 - two reads, split at the end of the ring.
  for (uint32_t i = 5; i < 10; ++i) write_entry(i);
  rig.SetReg(regs::kGpPut, 2);
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(ring_reads, 3u);
  EXPECT_EQ(rig.Reg(regs::kGpGet), 2u);
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
  for (uint32_t i = 5; i < 10; ++i)
    EXPECT_EQ(rig.HostRead64(kSemaphoreArea + uint64_t{8} * (i % 8)), i + 1);
  // Many times around a small ring, one entry per doorbell.
  for (uint32_t i = 10; i < 40; ++i) {
    write_entry(i);
    rig.SetReg(regs::kGpPut, (i + 1) % 8);
    ASSERT_TRUE(rig.Run());
    ASSERT_EQ(rig.HostRead64(kSemaphoreArea + uint64_t{8} * (i % 8)), i + 1);
  }
  EXPECT_EQ(rig.device().counters().gpfifo_entries, 40u);
  EXPECT_EQ(rig.device().counters().semaphores, 40u);
  EXPECT_TRUE(rig.checker().violations().empty());
}

TEST(GpuChannel, NothingIsFetchedWhileTheChannelIsDisabled) {
  GpuRig rig;
  rig.Start();
  rig.SetReg(regs::kControl, 0);
  rig.Submit(PushbufferBuilder().Semaphore(Release(0, 42)));
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(rig.Reg(regs::kGpGet), 0u);
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusBusy);
  EXPECT_EQ(rig.HostRead64(kSemaphoreArea), 0u);
  rig.SetReg(regs::kControl, regs::kControlEnable);
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(rig.HostRead64(kSemaphoreArea), 42u);
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
}

TEST(GpuChannel, WaitsForBusMasterEnable) {
  GpuRig rig;
  rig.Start();
  rig.host().ConfigWrite(pci::kCommand, 2, pci::kCommandMemory);  // Bus Master off
  const uint64_t out_before = rig.device().counters().tlps_out;
  rig.Submit(PushbufferBuilder().Semaphore(Release(0, 9)));
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(rig.device().counters().dma_read_requests, 0u);
  EXPECT_EQ(rig.device().counters().tlps_out, out_before) << "no DMA without Bus Master";
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusBusy);
  rig.host().ConfigWrite(pci::kCommand, 2, pci::kCommandMemory | pci::kCommandMaster);
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(rig.HostRead64(kSemaphoreArea), 9u);
}

TEST(GpuChannel, SemaphoreAfterAllDeviceToHostDataAndAfterHostToDeviceData) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  GpuRig rig;
  rig.Start();
  const uint64_t size = 300001;
  const std::vector<uint8_t> data = RandomBytes(rng, size);
  rig.DeviceWrite(4096, data);
  rig.HostWrite(kHostData + 3, data);
  const uint64_t d2h = kHostData + (uint64_t{1} << 30);
  size_t data_writes = 0;
  bool data_complete_at_release = false;
  bool h2d_complete_at_release = false;
  size_t writes_after_release = 0;
  int releases = 0;
  rig.host().on_device_tlp = [&](const dxpu_tlp& t) {
    rig.checker().OnDeviceTlp(t);
    if (t.kind != DXPU_TLP_MWR) return;
    if (t.addr >= d2h && t.addr < d2h + size) {
      ++data_writes;
      if (releases > 0) ++writes_after_release;
    }
    if (t.addr == kSemaphoreArea) {
      ++releases;
      // What the host (its memory) and the device (its memory) hold when the release lands.
      data_complete_at_release = rig.HostRead(d2h, size) == data;
      h2d_complete_at_release = rig.DeviceRead(1 << 24, size) == data;
    }
  };
  rig.Submit(PushbufferBuilder()
                 .Copy({.flags = kCopyDstHost, .size = size, .src = 4096, .dst = d2h})
                 .Copy({.flags = kCopySrcHost, .size = size, .src = kHostData + 3, .dst = 1 << 24})
                 .Semaphore(Release(0, 1)));
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(releases, 1);
  EXPECT_GT(data_writes, size / 256);
  EXPECT_EQ(writes_after_release, 0u);
  EXPECT_TRUE(data_complete_at_release) << "every D2H write came before the release";
  EXPECT_TRUE(h2d_complete_at_release) << "every H2D byte had arrived before the release";
}

TEST(GpuChannel, SemaphoreForms) {
  GpuRig rig;
  rig.Start();
  rig.HostWrite(kSemaphoreArea, std::vector<uint8_t>(32, 0xee));
  rig.host().set_now(777);
  rig.Submit(PushbufferBuilder()
                 .Semaphore({.address = kSemaphoreArea, .payload = 0xaabbccdd11223344, .flags = 0})
                 .Semaphore({.address = kSemaphoreArea + 16,
                             .payload = 0x0102030405060708,
                             .flags = kSemaphoreTimestamp}));
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(rig.HostRead32(kSemaphoreArea), 0x11223344u) << "32-bit form";
  EXPECT_EQ(rig.HostRead32(kSemaphoreArea + 4), 0xeeeeeeeeu) << "nothing past 4 bytes";
  EXPECT_EQ(rig.HostRead64(kSemaphoreArea + 16), 0x0102030405060708u);
  EXPECT_EQ(rig.HostRead64(kSemaphoreArea + 24), 777u);
}

class GpuChannelErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    rig_.Start();
    rig_.SetReg(regs::kIntrEnable, regs::kIntrError);
  }
  // The channel stopped on entry `index` with `error`, and told the host.
  void ExpectStopped(uint32_t index, ChannelError error) {
    EXPECT_EQ(rig_.Reg(regs::kErrorCode), static_cast<uint32_t>(error)) << ToString(error);
    EXPECT_EQ(rig_.Reg(regs::kErrorInfo), index);
    EXPECT_EQ(rig_.Reg(regs::kStatus), regs::kStatusError);
    EXPECT_EQ(rig_.Reg(regs::kIntrStatus) & regs::kIntrError, regs::kIntrError);
    EXPECT_EQ(rig_.device().channel_error(), error);
    ASSERT_FALSE(rig_.host().msix_messages().empty());
    EXPECT_EQ(rig_.host().msix_messages().back().data, 1u) << "errors use vector 1";
  }
  // Clears the error (and its interrupt) and lets the channel go on.
  void Restart() {
    rig_.SetReg(regs::kIntrStatus, regs::kIntrError);
    rig_.SetReg(regs::kControl, regs::kControlEnable | regs::kControlRestart);
    EXPECT_EQ(rig_.Reg(regs::kErrorCode), 0u);
    EXPECT_EQ(rig_.Reg(regs::kErrorInfo), 0u);
  }
  // After the restart, a good entry runs.
  void ExpectRecovers() {
    rig_.Submit(PushbufferBuilder().Semaphore(Release(1, ++marker_)));
    ASSERT_TRUE(rig_.Run());
    EXPECT_EQ(rig_.HostRead64(kSemaphoreArea + 8), marker_);
    EXPECT_EQ(rig_.Reg(regs::kStatus), regs::kStatusIdle);
  }

  GpuRig rig_;
  uint64_t marker_ = 0;
};

TEST_F(GpuChannelErrors, BadOpcodeSkipsTheRestOfThePushbuffer) {
  rig_.Submit(PushbufferBuilder().Nop());
  const uint32_t index = rig_.Submit(
      PushbufferBuilder().Semaphore(Release(0, 5)).Raw(0x7f000000).Semaphore(Release(0, 6)));
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(index, ChannelError::kBadOpcode);
  EXPECT_EQ(rig_.HostRead64(kSemaphoreArea), 5u) << "commands before it ran, after it not";
  EXPECT_EQ(rig_.Reg(regs::kGpGet), index + 1) << "the failing entry is consumed";
  // Stopped: a new entry waits for the restart.
  rig_.Submit(PushbufferBuilder().Semaphore(Release(1, 77)));
  ASSERT_TRUE(rig_.Run());
  EXPECT_EQ(rig_.Reg(regs::kStatus), regs::kStatusError);
  EXPECT_EQ(rig_.HostRead64(kSemaphoreArea + 8), 0u);
  EXPECT_EQ(rig_.Reg(regs::kGpGet), index + 1);
  Restart();
  ASSERT_TRUE(rig_.Run());
  EXPECT_EQ(rig_.HostRead64(kSemaphoreArea + 8), 77u);
  EXPECT_EQ(rig_.Reg(regs::kStatus), regs::kStatusIdle);
  EXPECT_EQ(rig_.HostRead64(kSemaphoreArea), 5u);
}

TEST_F(GpuChannelErrors, EntriesFetchedAfterTheFailingOneRunAfterTheRestart) {
  // Three entries in one doorbell: the middle one fails; the third runs after the restart.
  const std::vector<std::vector<uint8_t>> pbs = {
      PushbufferBuilder().Semaphore(Release(0, 1)).bytes(),
      PushbufferBuilder().Raw(0x01000003).bytes(),  // COPY with 3 arguments
      PushbufferBuilder().Semaphore(Release(2, 3)).bytes()};
  for (uint32_t i = 0; i < 3; ++i) {
    const uint64_t address = kPushbufferArea + uint64_t{256} * i;
    rig_.HostWrite(address, pbs[i]);
    rig_.HostWrite(
        kRingAddress + uint64_t{16} * i,
        EncodeGpfifoEntry(
            {.pushbuffer = address, .length = static_cast<uint32_t>(pbs[i].size()), .flags = 0}));
  }
  rig_.SetReg(regs::kGpPut, 3);
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(1, ChannelError::kBadLength);
  EXPECT_EQ(rig_.Reg(regs::kGpGet), 2u);
  EXPECT_EQ(rig_.HostRead64(kSemaphoreArea + 16), 0u);
  Restart();
  ASSERT_TRUE(rig_.Run());
  EXPECT_EQ(rig_.HostRead64(kSemaphoreArea + 16), 3u);
  EXPECT_EQ(rig_.Reg(regs::kGpGet), 3u);
}

TEST_F(GpuChannelErrors, BadLengths) {
  // Argument count wrong for the opcode.
  uint32_t index =
      rig_.Submit(PushbufferBuilder().Raw(CommandHeader(Opcode::kInterrupt, 2)).Raw(0).Raw(0));
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(index, ChannelError::kBadLength);
  Restart();
  // Arguments past the end of the pushbuffer (NOP takes any count).
  index = rig_.Submit(PushbufferBuilder().Raw(CommandHeader(Opcode::kNop, 5)).Raw(0));
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(index, ChannelError::kBadLength);
  Restart();
  // GPFIFO entry lengths: 0, not a multiple of 4, above 1 MiB.
  for (const uint32_t length : {0u, 6u, (1u << 20) + 4}) {
    index = rig_.SubmitEntry({.pushbuffer = kPushbufferArea, .length = length, .flags = 0});
    ASSERT_TRUE(rig_.Run());
    ExpectStopped(index, ChannelError::kBadLength);
    Restart();
  }
  ExpectRecovers();
}

TEST_F(GpuChannelErrors, BadAlignment) {
  uint32_t index = rig_.SubmitEntry({.pushbuffer = kPushbufferArea + 2, .length = 4, .flags = 0});
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(index, ChannelError::kBadAlignment);
  Restart();
  index = rig_.Submit(PushbufferBuilder().Semaphore(
      {.address = kSemaphoreArea + 4, .payload = 1, .flags = kSemaphore64}));
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(index, ChannelError::kBadAlignment);
  Restart();
  index = rig_.Submit(PushbufferBuilder().Semaphore(
      {.address = kSemaphoreArea + 8, .payload = 1, .flags = kSemaphoreTimestamp}));
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(index, ChannelError::kBadAlignment);
  Restart();
  ExpectRecovers();
}

TEST_F(GpuChannelErrors, BadAddress) {
  const uint32_t index = rig_.Submit(PushbufferBuilder().Copy(
      {.flags = kCopySrcHost, .size = 16, .src = kHostData, .dst = (uint64_t{1} << 30) - 8}));
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(index, ChannelError::kBadAddress);
  Restart();
  ExpectRecovers();
}

TEST_F(GpuChannelErrors, BadVector) {
  const uint32_t index = rig_.Submit(PushbufferBuilder().Interrupt(16));  // dxgpu: 16 vectors
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(index, ChannelError::kBadVector);
  Restart();
  ExpectRecovers();
}

TEST_F(GpuChannelErrors, BadRing) {
  const uint64_t reads = rig_.device().counters().dma_read_requests;
  const auto expect_bad_ring = [&](uint32_t entries, uint32_t put) {
    rig_.SetReg(regs::kGpfifoEntries, entries);
    rig_.SetReg(regs::kGpPut, put);
    ASSERT_TRUE(rig_.Run());
    ExpectStopped(0, ChannelError::kBadRing);
    rig_.SetReg(regs::kGpfifoEntries, 64);  // a good ring again (GP_GET = GP_PUT = 0)
    Restart();
  };
  expect_bad_ring(3, 1);         // not a power of two
  expect_bad_ring(4, 4);         // GP_PUT past the ring
  expect_bad_ring(1u << 17, 1);  // above 65536
  expect_bad_ring(0, 1);
  EXPECT_EQ(rig_.device().counters().dma_read_requests, reads) << "nothing fetched";
  ExpectRecovers();
}

TEST_F(GpuChannelErrors, DmaUnsupportedRequestAndCompleterAbort) {
  for (const ReadAnswer answer : {ReadAnswer::kUnsupported, ReadAnswer::kCompleterAbort}) {
    // The copy's source reads fail; the GPFIFO and pushbuffer reads do not.
    rig_.host().read_policy = [&](const dxpu_tlp& t) {
      return t.addr >= kHostData ? answer : ReadAnswer::kComplete;
    };
    const uint32_t index =
        rig_.Submit(PushbufferBuilder()
                        .Copy({.flags = kCopySrcHost, .size = 100000, .src = kHostData, .dst = 0})
                        .Semaphore(Release(0, 1)));
    ASSERT_TRUE(rig_.Run());
    ExpectStopped(index, ChannelError::kDmaUr);
    EXPECT_EQ(rig_.HostRead64(kSemaphoreArea), 0u);
    EXPECT_EQ(rig_.device().counters().unexpected_completions, 0u)
        << "the other reads in flight were still expected";
    rig_.host().read_policy = nullptr;
    Restart();
  }
  ExpectRecovers();
}

TEST_F(GpuChannelErrors, DmaUrWhileFetchingTheRingConsumesNothing) {
  rig_.host().read_policy = [](const dxpu_tlp& t) {
    return t.addr < kPushbufferArea ? ReadAnswer::kUnsupported : ReadAnswer::kComplete;
  };
  rig_.Submit(PushbufferBuilder().Semaphore(Release(0, 8)));
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(0, ChannelError::kDmaUr);
  EXPECT_EQ(rig_.Reg(regs::kGpGet), 0u) << "the entry is fetched again on restart";
  rig_.host().read_policy = nullptr;
  Restart();
  ASSERT_TRUE(rig_.Run());
  EXPECT_EQ(rig_.HostRead64(kSemaphoreArea), 8u);
}

TEST_F(GpuChannelErrors, DmaTimeoutThenLateCompletionsAreUnexpected) {
  const uint64_t t0 = 1000;
  rig_.host().set_now(t0);
  rig_.host().read_policy = [](const dxpu_tlp& t) {
    return t.addr >= kHostData ? ReadAnswer::kHold : ReadAnswer::kComplete;
  };
  const uint32_t index = rig_.Submit(
      PushbufferBuilder().Copy({.flags = kCopySrcHost, .size = 8192, .src = kHostData, .dst = 0}));
  ASSERT_TRUE(rig_.Run());
  ExpectStopped(index, ChannelError::kDmaTimeout);
  const size_t held = rig_.host().held_reads();
  EXPECT_EQ(held, 8192u / 512) << "all 16 reads went out and were held";
  EXPECT_EQ(rig_.host().now(), t0 + 50'000'000) << "the default 50 ms completion timeout";
  EXPECT_EQ(rig_.device().counters().completion_timeouts, held);
  EXPECT_EQ(rig_.host().msix_messages().back().time, t0 + 50'000'000);
  // The late completions: each one is unexpected (two CplDs per 512-byte read at MPS 256).
  rig_.host().ReleaseHeld();
  rig_.host().Pump();
  EXPECT_EQ(rig_.device().counters().unexpected_completions, 2 * held);
  EXPECT_EQ(rig_.DeviceRead(0, 8192), std::vector<uint8_t>(8192, 0)) << "late data not written";
  rig_.checker().ForgetReads();
  rig_.host().read_policy = nullptr;
  Restart();
  ExpectRecovers();
}

TEST(GpuChannelTimeout, FollowsTheOption) {
  RigOptions o;
  o.gpu.completion_timeout_ns = 12345;
  GpuRig rig(o);
  rig.Start();
  rig.host().read_policy = [](const dxpu_tlp&) { return ReadAnswer::kIgnore; };
  rig.host().set_now(100);
  rig.Submit(PushbufferBuilder().Nop());
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(rig.Reg(regs::kErrorCode), static_cast<uint32_t>(ChannelError::kDmaTimeout));
  EXPECT_EQ(rig.host().now(), 100u + 12345u);
  EXPECT_EQ(rig.device().NextDeadline(), UINT64_MAX);
}

}  // namespace
}  // namespace dxpu::gpu::test
