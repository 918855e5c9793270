// bad_input_test.cc - issue 33's "Bad input": a driver that programs nonsense gets the status
// the virtio spec requires or a device that marks itself DEVICE_NEEDS_RESET; the function
// never reads or writes memory the descriptors and rings do not name, and never loops.
#include <gtest/gtest.h>

#include "blk_rig.h"
#include "virtio/virtio_blk_regs.h"
#include "virtio/virtio_pci_regs.h"

namespace dxpu::virtio::bad_input_test {
namespace {

using test::BlkRig;
using test::Buffer;
using test::Pattern;

// Records every address range the device reads or writes (other than MSI-X).
struct AccessLog {
  std::vector<std::pair<uint64_t, uint64_t>> reads, writes;
  void Attach(gpu::TestHost& host) {
    host.on_device_tlp = [this](const dxpu_tlp& t) {
      if (t.kind == DXPU_TLP_MRD) reads.emplace_back(t.addr, uint64_t{t.length_dw} * 4);
      if (t.kind == DXPU_TLP_MWR && t.addr != 0xfee0'0000) {
        writes.emplace_back(t.addr, uint64_t{t.length_dw} * 4);
      }
    };
  }
  bool Touched(uint64_t begin, uint64_t end) const {
    for (const auto* list : {&reads, &writes}) {
      for (const auto& [a, n] : *list) {
        if (a < end && begin < a + n) return true;
      }
    }
    return false;
  }
};

void ExpectNeedsReset(BlkRig& rig, std::string_view why) {
  EXPECT_NE(rig.function->device_status() & kStatusNeedsReset, 0) << why;
  EXPECT_NE(rig.function->needs_reset_reason().find(why), std::string::npos)
      << rig.function->needs_reset_reason();
  EXPECT_EQ(rig.function->counters().needs_reset, 1u);
}

TEST(VirtioBadInput, QueueSizeNotAPowerOfTwo) {
  BlkRig rig;
  ASSERT_TRUE(rig.driver->Probe());
  ASSERT_NE(rig.driver->Negotiate(~uint64_t{0}) & kStatusFeaturesOk, 0);
  rig.driver->SetupQueue(0, 48, BlkRig::kQueueBase, 1);
  ExpectNeedsReset(rig, "not a power of two");
  EXPECT_EQ(rig.function->queue(0), nullptr);
  // Above the maximum, after a reset: also refused.
  rig.driver->Negotiate(~uint64_t{0});
  rig.driver->SetupQueue(0, 512, BlkRig::kQueueBase, 1);
  EXPECT_NE(rig.function->device_status() & kStatusNeedsReset, 0);
  EXPECT_NE(rig.function->needs_reset_reason().find("maximum"), std::string::npos);
}

TEST(VirtioBadInput, DescriptorOutsideMappedMemoryGetsUrAndNeedsReset) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  // The host maps only the rings and the rig's buffers; 0x7000'0000.. is not mapped: the host
  // (dxpu.ko's IOMMU) answers UR.
  constexpr uint64_t kUnmapped = 0x7000'0000;
  rig.host->read_policy = [](const dxpu_tlp& t) {
    return t.addr >= kUnmapped && t.addr < kUnmapped + 0x100'0000 ? gpu::ReadAnswer::kUnsupported
                                                                  : gpu::ReadAnswer::kComplete;
  };
  std::vector<Buffer> chain = rig.Chain(blk::kTypeOut, 0, Pattern(512, 1), 0);
  chain[1].address = kUnmapped;  // the data
  rig.driver->Submit(0, chain);
  rig.host->RunUntilIdle();
  ExpectNeedsReset(rig, "reading a buffer failed");
  EXPECT_EQ(rig.driver->used_idx(0), 0) << "nothing used";
  EXPECT_EQ(rig.FileAllocatedBytes(), 0u) << "nothing written";
  EXPECT_GE(rig.function->queue(0)->counters().dma_errors, 1u);
  // Further kicks do nothing until a reset; then the device works again.
  rig.driver->Kick(0);
  EXPECT_GT(rig.function->counters().bad_notifies, 0u);
  rig.used_seen.assign(64, 0);
  ASSERT_TRUE(rig.Start());
  EXPECT_EQ(rig.Request(0, blk::kTypeOut, 0, Pattern(512, 2), 0).status, blk::kStatusOk);
}

TEST(VirtioBadInput, ReadTimeoutNeedsResetWithoutRetry) {
  VirtioPciOptions pci;
  pci.completion_timeout_ns = 1'000'000;
  BlkRig rig({}, pci);
  ASSERT_TRUE(rig.Start());
  uint64_t reads = 0;
  rig.host->read_policy = [&](const dxpu_tlp& t) {
    ++reads;
    return t.addr >= BlkRig::kBufferBase ? gpu::ReadAnswer::kIgnore : gpu::ReadAnswer::kComplete;
  };
  rig.driver->Submit(0, rig.Chain(blk::kTypeFlush, 0, {}, 0));
  rig.host->RunUntilIdle(1'000'000'000);
  ExpectNeedsReset(rig, "failed");
  EXPECT_EQ(rig.function->counters().completion_timeouts, 1u);
  const uint64_t after = reads;
  rig.host->RunUntilIdle(2'000'000'000);
  EXPECT_EQ(reads, after) << "no retry";
}

TEST(VirtioBadInput, LoopingChain) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  AccessLog log;
  log.Attach(*rig.host);
  test::VirtioDriver& d = *rig.driver;
  const uint64_t buf = rig.Allocate(512);
  d.WriteDescriptor(d.queue(0).desc, 0, {buf, 16, false}, kDescFlagNext, 1);
  d.WriteDescriptor(d.queue(0).desc, 1, {buf, 16, false}, kDescFlagNext, 2);
  d.WriteDescriptor(d.queue(0).desc, 2, {buf, 16, false}, kDescFlagNext, 0);  // back to 0
  d.MakeAvailable(0, 0);
  d.Kick(0);
  rig.host->RunUntilIdle();
  ExpectNeedsReset(rig, "loop");
  EXPECT_FALSE(log.Touched(buf, buf + 512)) << "no buffer of a bad chain is read";
}

TEST(VirtioBadInput, LoopingIndirectTableAndNesting) {
  for (int variant = 0; variant < 2; ++variant) {
    BlkRig rig;
    ASSERT_TRUE(rig.Start());
    test::VirtioDriver& d = *rig.driver;
    const uint64_t table = rig.Allocate(64);
    const uint64_t buf = rig.Allocate(512);
    if (variant == 0) {
      d.WriteDescriptor(table, 0, {buf, 16, false}, kDescFlagNext, 1);
      d.WriteDescriptor(table, 1, {buf, 16, false}, kDescFlagNext, 0);
    } else {
      d.WriteDescriptor(table, 0, {table, 32, false}, kDescFlagIndirect, 0);
    }
    d.WriteDescriptor(d.queue(0).desc, 0, {table, 32, false}, kDescFlagIndirect, 0);
    d.MakeAvailable(0, 0);
    d.Kick(0);
    rig.host->RunUntilIdle();
    ExpectNeedsReset(rig, variant == 0 ? "loop" : "indirect descriptor inside");
  }
}

TEST(VirtioBadInput, OutOfRangeIndices) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start(1, 64));
  test::VirtioDriver& d = *rig.driver;
  d.MakeAvailable(0, 64);  // head past the table
  d.Kick(0);
  rig.host->RunUntilIdle();
  ExpectNeedsReset(rig, "out of range");

  BlkRig rig2;
  ASSERT_TRUE(rig2.Start(1, 64));
  test::VirtioDriver& d2 = *rig2.driver;
  d2.WriteDescriptor(d2.queue(0).desc, 0, {rig2.Allocate(16), 16, false}, kDescFlagNext, 999);
  d2.MakeAvailable(0, 0);
  d2.Kick(0);
  rig2.host->RunUntilIdle();
  ExpectNeedsReset(rig2, "next index 999");

  BlkRig rig3;
  ASSERT_TRUE(rig3.Start(1, 64));
  // avail->idx far ahead of what was used.
  rig3.driver->Write(rig3.driver->queue(0).avail + 2, std::vector<uint8_t>{0x00, 0x10});
  rig3.driver->Kick(0);
  rig3.host->RunUntilIdle();
  ExpectNeedsReset(rig3, "more than the queue size");
}

TEST(VirtioBadInput, OutOfRangeSectorsGetIoErr) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  const uint64_t capacity = (8u << 20) / 512;
  EXPECT_EQ(rig.Request(0, blk::kTypeIn, capacity + 5, {}, 4096).status, blk::kStatusIoErr);
  EXPECT_EQ(rig.Request(0, blk::kTypeOut, capacity - 4, Pattern(4096, 1), 0).status,
            blk::kStatusIoErr);
  EXPECT_EQ(rig.function->device_status() & kStatusNeedsReset, 0);
  EXPECT_EQ(rig.FileAllocatedBytes(), 0u);
}

TEST(VirtioBadInput, OversizeTransfer) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  AccessLog log;
  log.Attach(*rig.host);
  // 5 MiB of data in two descriptors: past the transport's 4 MiB per request.
  const uint64_t a = rig.Allocate(4u << 20);
  const uint64_t b = rig.Allocate(1u << 20);
  std::vector<Buffer> chain = rig.Chain(blk::kTypeOut, 0, {}, 0);
  chain.insert(chain.begin() + 1, {{a, 4u << 20, false}, {b, 1u << 20, false}});
  rig.driver->Submit(0, chain);
  rig.host->RunUntilIdle();
  ExpectNeedsReset(rig, "larger than");
  EXPECT_FALSE(log.Touched(a, b + (1u << 20))) << "the oversize buffers are never read";
  // A length that wraps the address space.
  BlkRig rig2;
  ASSERT_TRUE(rig2.Start());
  std::vector<Buffer> c2 = rig2.Chain(blk::kTypeOut, 0, Pattern(512, 3), 0);
  c2[1].address = ~uint64_t{0} - 100;
  rig2.driver->Submit(0, c2);
  rig2.host->RunUntilIdle();
  ExpectNeedsReset(rig2, "wraps");
}

TEST(VirtioBadInput, ReadableAfterWritable) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  std::vector<Buffer> chain = rig.Chain(blk::kTypeIn, 0, {}, 512);
  std::swap(chain[0], chain[1]);  // a writable buffer first
  rig.driver->Submit(0, chain);
  rig.host->RunUntilIdle();
  ExpectNeedsReset(rig, "readable buffer after");
}

TEST(VirtioBadInput, ResetMidIo) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  // Hold the buffer reads, reset while they are in flight, then answer them late.
  rig.host->read_policy = [](const dxpu_tlp& t) {
    return t.addr >= BlkRig::kBufferBase ? gpu::ReadAnswer::kHold : gpu::ReadAnswer::kComplete;
  };
  rig.driver->Submit(0, rig.Chain(blk::kTypeOut, 0, Pattern(8192, 4), 0));
  rig.host->RunUntilIdle();
  ASSERT_GT(rig.host->held_reads(), 0u);
  rig.driver->WriteCommon(kDeviceStatus, 1, 0);
  EXPECT_EQ(rig.function->device_status(), 0);
  rig.host->read_policy = nullptr;
  rig.host->ReleaseHeld();
  rig.host->RunUntilIdle();
  EXPECT_GT(rig.function->counters().unexpected_completions, 0u);
  EXPECT_EQ(rig.FileAllocatedBytes(), 0u) << "the reset request was never executed";
  EXPECT_EQ(rig.driver->used_idx(0), 0);
  // A new driver's setup works.
  rig.used_seen.assign(64, 0);
  ASSERT_TRUE(rig.Start());
  EXPECT_EQ(rig.Request(0, blk::kTypeOut, 0, Pattern(512, 6), 0).status, blk::kStatusOk);
  EXPECT_EQ(rig.FileBytes(0, 512), Pattern(512, 6));
}

TEST(VirtioBadInput, MalformedTlpsAndStrayNotifies) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  dxpu_tlp bad{};
  bad.kind = DXPU_TLP_MWR;
  bad.length_dw = 0;  // invalid
  rig.host->Send(bad);
  EXPECT_EQ(rig.function->counters().malformed, 1u);
  // A notify to a queue that does not exist, and one to a disabled queue.
  rig.driver->Kick(40);
  rig.driver->Kick(1);
  EXPECT_EQ(rig.function->counters().bad_notifies, 2u);
  EXPECT_EQ(rig.function->device_status() & kStatusNeedsReset, 0);
}

}  // namespace
}  // namespace dxpu::virtio::bad_input_test
