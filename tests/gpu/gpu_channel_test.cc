// The command channel: GPFIFO fetch (batched, wrapping), channel enable and Bus Master
// Enable, semaphore ordering, and every error path (bad opcode, bad length, bad address, bad
// alignment, bad ring, bad vector, DMA UR/CA, DMA timeout with late completions counted
// unexpected) setting ERROR_CODE, ERROR_INFO and INTR_STATUS, and the restart. Fetching ahead
// (pushbuffer_prefetch) against a host whose reads take time: launch latency hidden, the ring
// wrap, errors in and after prefetched entries, CONTROL.enable, FLR, a copy sharing the tags.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

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

// --- Fetching ahead (pushbuffer_prefetch) against a host with read latency ---

constexpr uint64_t kLatency = 3000;   // ns, each DMA read of the device
constexpr uint64_t kKernelNs = 5008;  // MEMSET32 of 1000 elements on dxgpu: 5000 + 8

RigOptions LatencyRig(uint32_t prefetch, uint32_t ring_entries = 64) {
  RigOptions o;
  o.gpu.pushbuffer_prefetch = prefetch;
  o.host.read_latency_ns = kLatency;
  o.ring_entries = ring_entries;
  return o;
}

uint64_t PushbufferAddress(uint32_t n) { return kPushbufferArea + uint64_t{4096} * n; }

// Entry n's work: a small kernel, then a timestamped semaphore (payload n + 1) in slot n.
PushbufferBuilder KernelThenStamp(uint32_t n) {
  return PushbufferBuilder()
      .Memset32({.dst = uint64_t{4096} * n, .count = 1000, .value = n})
      .Semaphore({.address = kSemaphoreArea + uint64_t{16} * n,
                  .payload = n + 1,
                  .flags = kSemaphoreTimestamp});
}

// Writes pushbuffer `n` (at PushbufferAddress(n)) and its GPFIFO entry at ring index `index`,
// without ringing the doorbell.
void QueueEntry(GpuRig& rig, uint32_t index, uint32_t n, const PushbufferBuilder& pb) {
  const std::vector<uint8_t> bytes = pb.bytes();
  rig.HostWrite(PushbufferAddress(n), bytes);
  rig.HostWrite(kRingAddress + uint64_t{index} * kGpfifoEntryBytes,
                EncodeGpfifoEntry({.pushbuffer = PushbufferAddress(n),
                                   .length = static_cast<uint32_t>(bytes.size()),
                                   .flags = 0}));
}

uint64_t Stamp(GpuRig& rig, uint32_t n) {
  return rig.HostRead64(kSemaphoreArea + uint64_t{16} * n + 8);
}
uint64_t Payload(GpuRig& rig, uint32_t n) {
  return rig.HostRead64(kSemaphoreArea + uint64_t{16} * n);
}

// Counts the device's reads of each pushbuffer, and the most pushbuffer reads in flight.
struct PushbufferReads {
  explicit PushbufferReads(GpuRig& rig) {
    rig.host().on_device_tlp = [&rig, this](const dxpu_tlp& t) {
      rig.checker().OnDeviceTlp(t);
      if (t.kind == DXPU_TLP_MRD && t.addr >= kPushbufferArea && t.addr < kSemaphoreArea) {
        ++reads[static_cast<uint32_t>((t.addr - kPushbufferArea) / 4096)];
        in_flight[t.tag] = true;
        max_in_flight = std::max(max_in_flight, in_flight.size());
      }
    };
    rig.host().on_host_tlp = [&rig, this](const dxpu_tlp& t) {
      rig.checker().OnHostTlp(t);
      if (dxpu_tlp_kind_is_cpl(t.kind) && dxpu_tlp_cpl_is_final(&t)) in_flight.erase(t.tag);
    };
  }
  std::map<uint32_t, int> reads;  // by pushbuffer number
  std::map<uint16_t, bool> in_flight;
  size_t max_in_flight = 0;
};

TEST(GpuChannelPrefetch, HidesTheLaunchLatencyOfQueuedWork) {
  // 20 small kernels in 20 entries, one doorbell, every read answered 3 us late.
  for (const uint32_t prefetch : {4u, 0u}) {
    SCOPED_TRACE(testing::Message() << "pushbuffer_prefetch " << prefetch);
    GpuRig rig(LatencyRig(prefetch));
    rig.Start();
    PushbufferReads pb_reads(rig);
    const uint64_t t0 = 1'000'000;
    rig.host().set_now(t0);
    for (uint32_t n = 0; n < 20; ++n) QueueEntry(rig, n, n, KernelThenStamp(n));
    rig.SetReg(regs::kGpPut, 20);
    ASSERT_TRUE(rig.Run());
    for (uint32_t n = 0; n < 20; ++n) {
      ASSERT_EQ(Payload(rig, n), n + 1);
      // Prefetch: the first entry waits for the GPFIFO read and its pushbuffer's read; after
      // that each pushbuffer has arrived before the entry before it ends. Without: every
      // entry waits for its pushbuffer's read once the one before it has ended.
      const uint64_t expected = prefetch > 0 ? t0 + 2 * kLatency + (n + 1) * kKernelNs
                                             : t0 + kLatency + (n + 1) * (kLatency + kKernelNs);
      EXPECT_EQ(Stamp(rig, n), expected) << "entry " << n;
    }
    EXPECT_EQ(pb_reads.max_in_flight, size_t{prefetch} + 1) << "the running entry's + prefetch";
    EXPECT_EQ(pb_reads.reads.size(), 20u);
    EXPECT_EQ(rig.device().counters().kernels, 20u);
    EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
    EXPECT_TRUE(rig.checker().violations().empty());
  }
}

TEST(GpuChannelPrefetch, AcrossTheRingWrap) {
  GpuRig rig(LatencyRig(4, 8));
  rig.Start();
  for (uint32_t n = 0; n < 6; ++n) QueueEntry(rig, n, n, KernelThenStamp(n));
  rig.SetReg(regs::kGpPut, 6);
  ASSERT_TRUE(rig.Run());
  ASSERT_EQ(Payload(rig, 5), 6u);
  // Six more at ring indices 6, 7, 0, 1, 2, 3: two GPFIFO reads (split at the end of the ring),
  // the second one while the first entries run.
  const uint64_t t1 = rig.host().now() + 1'000'000;
  rig.host().set_now(t1);
  for (uint32_t n = 6; n < 12; ++n) QueueEntry(rig, n % 8, n, KernelThenStamp(n));
  rig.SetReg(regs::kGpPut, 4);
  ASSERT_TRUE(rig.Run());
  for (uint32_t n = 6; n < 12; ++n) {
    EXPECT_EQ(Payload(rig, n), n + 1);
    EXPECT_EQ(Stamp(rig, n), t1 + 2 * kLatency + (n - 5) * kKernelNs) << "entry " << n;
  }
  EXPECT_EQ(rig.Reg(regs::kGpGet), 4u);
  EXPECT_EQ(rig.device().counters().gpfifo_entries, 12u);
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
  EXPECT_TRUE(rig.checker().violations().empty());
}

TEST(GpuChannelPrefetch, EntriesFetchedAheadOfAFailingOneAreFetchedAgainAfterTheRestart) {
  GpuRig rig(LatencyRig(4));
  rig.Start();
  rig.SetReg(regs::kIntrEnable, regs::kIntrError);
  PushbufferReads pb_reads(rig);
  for (uint32_t n = 0; n < 6; ++n) {
    QueueEntry(rig, n, n,
               n == 2 ? PushbufferBuilder().Raw(0x7f000000) : KernelThenStamp(n));  // BAD_OPCODE
  }
  rig.SetReg(regs::kGpPut, 6);
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(rig.Reg(regs::kErrorCode), static_cast<uint32_t>(ChannelError::kBadOpcode));
  EXPECT_EQ(rig.Reg(regs::kErrorInfo), 2u);
  EXPECT_EQ(rig.Reg(regs::kGpGet), 3u) << "the failing entry is consumed, no more";
  EXPECT_EQ(Payload(rig, 0), 1u);
  EXPECT_EQ(Payload(rig, 1), 2u);
  for (uint32_t n = 3; n < 6; ++n) {
    EXPECT_EQ(Payload(rig, n), 0u) << "fetched ahead, not run";
    EXPECT_EQ(pb_reads.reads[n], 1) << "pushbuffer " << n << " was fetched ahead";
  }
  // The host changes pushbuffer 4 before the restart: the channel fetches it again.
  QueueEntry(rig, 4, 4,
             PushbufferBuilder().Semaphore(
                 {.address = kSemaphoreArea + 64, .payload = 99, .flags = kSemaphore64}));
  rig.SetReg(regs::kIntrStatus, regs::kIntrError);
  rig.SetReg(regs::kControl, regs::kControlEnable | regs::kControlRestart);
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(Payload(rig, 3), 4u);
  EXPECT_EQ(Payload(rig, 4), 99u);
  EXPECT_EQ(Payload(rig, 5), 6u);
  for (uint32_t n = 3; n < 6; ++n) EXPECT_EQ(pb_reads.reads[n], 2) << "pushbuffer " << n;
  EXPECT_EQ(rig.Reg(regs::kGpGet), 6u);
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
  EXPECT_TRUE(rig.checker().violations().empty());
}

TEST(GpuChannelPrefetch, ErrorsFoundFetchingAheadWaitForTheEarlierEntries) {
  // Entry 3 is bad (a GPFIFO length of 6; then a pushbuffer read answered UR): it is inside
  // the prefetch window while entries 0..2 run, which all complete before the error.
  for (const ChannelError expected : {ChannelError::kBadLength, ChannelError::kDmaUr}) {
    SCOPED_TRACE(ToString(expected));
    GpuRig rig(LatencyRig(4));
    rig.Start();
    rig.SetReg(regs::kIntrEnable, regs::kIntrError);
    const uint64_t t0 = 1'000'000;
    rig.host().set_now(t0);
    for (uint32_t n = 0; n < 5; ++n) QueueEntry(rig, n, n, KernelThenStamp(n));
    if (expected == ChannelError::kBadLength) {
      rig.HostWrite(
          kRingAddress + uint64_t{3} * kGpfifoEntryBytes,
          EncodeGpfifoEntry({.pushbuffer = PushbufferAddress(3), .length = 6, .flags = 0}));
    } else {
      rig.host().read_policy = [](const dxpu_tlp& t) {
        return t.addr == PushbufferAddress(3) ? ReadAnswer::kUnsupported : ReadAnswer::kComplete;
      };
    }
    rig.SetReg(regs::kGpPut, 5);
    ASSERT_TRUE(rig.Run());
    for (uint32_t n = 0; n < 3; ++n) {
      EXPECT_EQ(Payload(rig, n), n + 1);
      EXPECT_EQ(Stamp(rig, n), t0 + 2 * kLatency + (n + 1) * kKernelNs);
    }
    EXPECT_EQ(rig.Reg(regs::kErrorCode), static_cast<uint32_t>(expected));
    EXPECT_EQ(rig.Reg(regs::kErrorInfo), 3u);
    EXPECT_EQ(rig.Reg(regs::kGpGet), 4u);
    ASSERT_FALSE(rig.host().msix_messages().empty());
    EXPECT_EQ(rig.host().msix_messages().back().data, 1u);
    EXPECT_EQ(rig.host().msix_messages().back().time, Stamp(rig, 2)) << "raised when entry 2 ended";
    EXPECT_EQ(Payload(rig, 4), 0u);
    rig.host().read_policy = nullptr;
    rig.SetReg(regs::kControl, regs::kControlEnable | regs::kControlRestart);
    ASSERT_TRUE(rig.Run());
    EXPECT_EQ(Payload(rig, 4), 5u) << "the entry after it runs after the restart";
    EXPECT_EQ(Payload(rig, 3), 0u);
    EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
  }
}

TEST(GpuChannelPrefetch, DisablingTheChannelStopsGpfifoFetches) {
  RigOptions o = LatencyRig(4);
  o.host.max_read_request = 128;  // GPFIFO reads of 8 entries
  GpuRig rig(o);
  rig.Start();
  const uint64_t t0 = 1'000'000;
  rig.host().set_now(t0);
  for (uint32_t n = 0; n < 20; ++n) QueueEntry(rig, n, n, KernelThenStamp(n));
  rig.SetReg(regs::kGpPut, 20);
  // Entry 0 is running (entries 0..7 fetched, pushbuffers 0..4 too): disable the channel.
  rig.host().RunUntil([] { return false; }, t0 + 2 * kLatency + 100);
  ASSERT_EQ(rig.device().counters().gpfifo_entries, 8u);
  rig.SetReg(regs::kControl, 0);
  ASSERT_TRUE(rig.Run());
  for (uint32_t n = 0; n < 8; ++n) {
    EXPECT_EQ(Payload(rig, n), n + 1) << "entries already fetched still run";
  }
  EXPECT_EQ(Payload(rig, 8), 0u);
  EXPECT_EQ(rig.Reg(regs::kGpGet), 8u);
  EXPECT_EQ(rig.device().counters().gpfifo_entries, 8u);
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusBusy);
  rig.SetReg(regs::kControl, regs::kControlEnable);
  ASSERT_TRUE(rig.Run());
  for (uint32_t n = 8; n < 20; ++n) EXPECT_EQ(Payload(rig, n), n + 1);
  EXPECT_EQ(rig.Reg(regs::kGpGet), 20u);
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
  EXPECT_TRUE(rig.checker().violations().empty());
}

TEST(GpuChannelPrefetch, FlrDropsWorkFetchedAhead) {
  GpuRig rig(LatencyRig(4));
  rig.Start();
  const uint64_t t0 = 1'000'000;
  rig.host().set_now(t0);
  for (uint32_t n = 0; n < 10; ++n) QueueEntry(rig, n, n, KernelThenStamp(n));
  rig.SetReg(regs::kGpPut, 10);
  // Entry 1 runs; pushbuffer 5's read is in flight (its answer is due later).
  rig.host().RunUntil([] { return false; }, t0 + 2 * kLatency + kKernelNs + 100);
  ASSERT_EQ(Payload(rig, 0), 1u);
  ASSERT_EQ(Payload(rig, 1), 0u);
  const uint64_t unexpected = rig.device().counters().unexpected_completions;
  const uint16_t devctl = static_cast<uint16_t>(
      *rig.device().config().capability_offset(CapabilityId::kPciExpress) + pci::kExpDevCtl);
  rig.host().ConfigWrite(devctl, 2,
                         (rig.host().ConfigRead32(devctl) & 0xffffu) | pci::kExpDevCtlBcrFlr);
  EXPECT_EQ(rig.device().NextDeadline(), UINT64_MAX) << "nothing runs, no read in flight";
  rig.host().RunUntilIdle();  // the late answer arrives
  EXPECT_GT(rig.device().counters().unexpected_completions, unexpected);
  rig.checker().ForgetReads();
  EXPECT_EQ(rig.device().counters().kernels, 2u) << "entry 0 ran, entry 1's kernel was running";
  for (uint32_t n = 1; n < 10; ++n) EXPECT_EQ(Payload(rig, n), 0u);
  // Set up again: the channel starts from an empty ring and runs new work.
  rig.Start();
  EXPECT_EQ(rig.Reg(regs::kStatus), regs::kStatusIdle);
  QueueEntry(rig, 0, 10, KernelThenStamp(10));
  rig.SetReg(regs::kGpPut, 1);
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(Payload(rig, 10), 11u);
  EXPECT_EQ(rig.device().counters().kernels, 3u);
  EXPECT_TRUE(rig.checker().violations().empty());
}

TEST(GpuChannelPrefetch, ACopyAndFetchingAheadShareTheTags) {
  // Two tags, a 1 MiB host-to-device copy in entry 0: the pushbuffers of the entries after it
  // still get tags while it runs, and entry 1 starts the moment the copy ends.
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  RigOptions o = LatencyRig(4);
  o.gpu.max_outstanding_reads = 2;
  GpuRig rig(o);
  rig.Start();
  PushbufferReads pb_reads(rig);
  const uint64_t size = uint64_t{1} << 20;
  const std::vector<uint8_t> data = RandomBytes(rng, size);
  rig.HostWrite(kHostData, data);
  QueueEntry(
      rig, 0, 0,
      PushbufferBuilder()
          .Copy({.flags = kCopySrcHost, .size = size, .src = kHostData, .dst = 1 << 24})
          .Semaphore({.address = kSemaphoreArea, .payload = 1, .flags = kSemaphoreTimestamp}));
  for (uint32_t n = 1; n < 6; ++n) QueueEntry(rig, n, n, KernelThenStamp(n));
  rig.SetReg(regs::kGpPut, 6);
  // Run until the copy is half done: pushbuffers 1..4 have been fetched already.
  rig.host().RunUntil([&] { return rig.device().counters().dma_read_bytes > size / 2; });
  EXPECT_EQ(Payload(rig, 0), 0u);
  for (uint32_t n = 1; n < 5; ++n) EXPECT_EQ(pb_reads.reads[n], 1) << "pushbuffer " << n;
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(rig.DeviceRead(1 << 24, size), data);
  EXPECT_EQ(Payload(rig, 0), 1u);
  for (uint32_t n = 1; n < 6; ++n) {
    EXPECT_EQ(Payload(rig, n), n + 1);
    EXPECT_EQ(Stamp(rig, n), Stamp(rig, 0) + n * kKernelNs) << "no wait for a pushbuffer";
  }
  EXPECT_LE(rig.checker().max_reads_in_flight(), 2u);
  EXPECT_TRUE(rig.checker().violations().empty());
}

TEST(GpuChannelPrefetch, TheOptionIsChecked) {
  std::string error;
  GpuOptions o;
  o.pushbuffer_prefetch = 65;
  EXPECT_EQ(GpuDevice::Create(*FindProfile("dxgpu"), o, &error), nullptr);
  EXPECT_NE(error.find("pushbuffer_prefetch"), std::string::npos) << error;
  o.pushbuffer_prefetch = 64;
  EXPECT_NE(GpuDevice::Create(*FindProfile("dxgpu"), o, &error), nullptr);
}

}  // namespace
}  // namespace dxpu::gpu::test
