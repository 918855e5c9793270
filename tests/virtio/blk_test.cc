// blk_test.cc - virtio-blk through the transport: every command, with the backing file's
// bytes checked; multiqueue, indirect descriptors, interrupts, the release policy, the file
// checks at creation.
#include <gtest/gtest.h>

#include "blk_rig.h"
#include "virtio/little_endian.h"
#include "virtio/virtio_blk_regs.h"
#include "virtio/virtio_pci_regs.h"

namespace dxpu::virtio::blk_test {
namespace {

using test::BlkRig;
using test::Pattern;

std::vector<uint8_t> Segment(uint64_t sector, uint32_t count, uint32_t flags) {
  std::vector<uint8_t> s;
  AppendLe(s, sector, 8);
  AppendLe(s, count, 4);
  AppendLe(s, flags, 4);
  return s;
}

TEST(VirtioBlk, WriteThenReadBackAndInTheFile) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start()) << rig.error;
  const std::vector<uint8_t> data = Pattern(64 << 10, 1);  // 64 KiB: many TLPs each way
  const test::BlkResult w = rig.Request(0, blk::kTypeOut, 100, data, 0);
  ASSERT_TRUE(w.done);
  EXPECT_EQ(w.status, blk::kStatusOk);
  EXPECT_EQ(w.used.len, 1u);  // the status byte
  EXPECT_EQ(rig.FileBytes(100 * 512, data.size()), data);
  const test::BlkResult r = rig.Request(0, blk::kTypeIn, 100, {}, data.size());
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.status, blk::kStatusOk);
  EXPECT_EQ(r.data, data);
  EXPECT_EQ(r.used.len, data.size() + 1);
  // A sector written on the box's side reads back through the device.
  const std::vector<uint8_t> outside = Pattern(512, 9);
  rig.WriteFile(7 * 512, outside);
  EXPECT_EQ(rig.Request(0, blk::kTypeIn, 7, {}, 512).data, outside);
}

TEST(VirtioBlk, FlushAndGetId) {
  VirtioBlkOptions options;
  options.serial = "disk-7";
  BlkRig r2(options);
  ASSERT_TRUE(r2.Start()) << r2.error;
  EXPECT_EQ(r2.Request(0, blk::kTypeFlush, 0, {}, 0).status, blk::kStatusOk);
  const test::BlkResult id = r2.Request(0, blk::kTypeGetId, 0, {}, 20);
  EXPECT_EQ(id.status, blk::kStatusOk);
  std::vector<uint8_t> want(20, 0);
  std::copy_n("disk-7", 6, want.begin());
  EXPECT_EQ(id.data, want);
}

TEST(VirtioBlk, DiscardAndWriteZeroes) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  const std::vector<uint8_t> data = Pattern(64 << 10, 2);
  ASSERT_EQ(rig.Request(0, blk::kTypeOut, 0, data, 0).status, blk::kStatusOk);
  // Write zeroes over sectors 8..15 (kept allocated), with unmap over 16..23.
  std::vector<uint8_t> segs = Segment(8, 8, 0);
  const std::vector<uint8_t> s2 = Segment(16, 8, blk::kSegmentFlagUnmap);
  segs.insert(segs.end(), s2.begin(), s2.end());
  EXPECT_EQ(rig.Request(0, blk::kTypeWriteZeroes, 0, segs, 0).status, blk::kStatusOk);
  EXPECT_EQ(rig.FileBytes(8 * 512, 16 * 512), std::vector<uint8_t>(16 * 512, 0));
  EXPECT_EQ(rig.FileBytes(0, 8 * 512), std::vector<uint8_t>(data.begin(), data.begin() + 8 * 512));
  EXPECT_EQ(rig.FileBytes(24 * 512, 512),
            std::vector<uint8_t>(data.begin() + 24 * 512, data.begin() + 25 * 512));
  // Discard 64..127 (a 32 KiB hole, file-system block aligned): reads zeros here.
  EXPECT_EQ(rig.Request(0, blk::kTypeDiscard, 0, Segment(64, 64, 0), 0).status, blk::kStatusOk);
  EXPECT_EQ(rig.FileBytes(64 * 512, 64 * 512), std::vector<uint8_t>(64 * 512, 0));
  // Discard with the unmap flag: reserved, IOERR; nothing changes.
  EXPECT_EQ(rig.Request(0, blk::kTypeDiscard, 0, Segment(0, 1, 1), 0).status, blk::kStatusIoErr);
  EXPECT_EQ(rig.FileBytes(0, 512), std::vector<uint8_t>(data.begin(), data.begin() + 512));
}

TEST(VirtioBlk, ErrorsAnsweredWithStatus) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  const uint64_t capacity = (8u << 20) / 512;
  const std::vector<uint8_t> sector = Pattern(512, 3);
  // Past the end, and straddling it.
  EXPECT_EQ(rig.Request(0, blk::kTypeIn, capacity, {}, 512).status, blk::kStatusIoErr);
  EXPECT_EQ(rig.Request(0, blk::kTypeOut, capacity - 1, Pattern(1024, 4), 0).status,
            blk::kStatusIoErr);
  EXPECT_EQ(rig.Request(0, blk::kTypeOut, ~uint64_t{0}, sector, 0).status, blk::kStatusIoErr);
  // Not whole sectors.
  EXPECT_EQ(rig.Request(0, blk::kTypeOut, 0, Pattern(100, 5), 0).status, blk::kStatusIoErr);
  // Unknown type.
  EXPECT_EQ(rig.Request(0, 77, 0, {}, 0).status, blk::kStatusUnsupp);
  // A discard range past the end changes nothing.
  EXPECT_EQ(rig.Request(0, blk::kTypeWriteZeroes, 0, Segment(capacity - 1, 2, 0), 0).status,
            blk::kStatusIoErr);
  EXPECT_EQ(rig.FileAllocatedBytes(), 0u) << "nothing written";
  // A short header: IOERR.
  const uint64_t h = rig.Allocate(8);
  const uint64_t st = rig.Allocate(1);
  rig.driver->Write(h, std::vector<uint8_t>(8, 0));
  const std::vector<test::Buffer> chain{{h, 8, false}, {st, 1, true}};
  rig.driver->Submit(0, chain);
  ASSERT_TRUE(rig.driver->WaitUsed(0, ++rig.used_seen[0]));
  EXPECT_EQ(rig.driver->Read(st, 1)[0], blk::kStatusIoErr);
  EXPECT_EQ(rig.function->device_status() & kStatusNeedsReset, 0);
}

TEST(VirtioBlk, MultipleQueuesWithTheirOwnVectors) {
  VirtioBlkOptions options;
  options.num_queues = 4;
  BlkRig rig(options);
  ASSERT_TRUE(rig.Start(4));
  for (uint16_t q = 0; q < 4; ++q) {
    const std::vector<uint8_t> data = Pattern(4096, 10 + q);
    const size_t before = rig.host->msix_messages().size();
    ASSERT_EQ(rig.Request(q, blk::kTypeOut, 1000u * q, data, 0).status, blk::kStatusOk);
    ASSERT_GT(rig.host->msix_messages().size(), before);
    EXPECT_EQ(rig.host->msix_messages().back().data, q + 1u) << "queue " << q << "'s vector";
    EXPECT_EQ(rig.FileBytes(1000u * q * 512, 4096), data);
  }
  for (uint16_t q = 0; q < 4; ++q) {
    EXPECT_EQ(rig.Request(3 - q, blk::kTypeIn, 1000u * q, {}, 4096).data, Pattern(4096, 10 + q));
  }
  EXPECT_EQ(rig.function->queue(2)->counters().requests, 2u);
}

TEST(VirtioBlk, ManyRequestsInFlightAtOnce) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start(1, 64));
  std::vector<uint64_t> status;
  for (uint32_t i = 0; i < 20; ++i) {
    const std::vector<test::Buffer> chain =
        rig.Chain(blk::kTypeOut, i * 8, Pattern(4096, 100 + i), 0);
    status.push_back(rig.last_status_address);
    rig.driver->Submit(0, chain, {}, /*notify=*/i == 19);  // one kick for all
  }
  ASSERT_TRUE(rig.driver->WaitUsed(0, 20));
  EXPECT_EQ(rig.driver->used_idx(0), 20);
  for (uint32_t i = 0; i < 20; ++i) {
    EXPECT_EQ(rig.driver->Read(status[i], 1)[0], blk::kStatusOk);
    EXPECT_EQ(rig.FileBytes(i * 8 * 512, 4096), Pattern(4096, 100 + i));
  }
}

TEST(VirtioBlk, IndirectDescriptors) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  const std::vector<uint8_t> data = Pattern(8192, 21);
  EXPECT_EQ(rig.Request(0, blk::kTypeOut, 40, data, 0, /*indirect=*/true).status, blk::kStatusOk);
  EXPECT_EQ(rig.FileBytes(40 * 512, data.size()), data);
  const test::BlkResult r = rig.Request(0, blk::kTypeIn, 40, {}, 8192, true);
  EXPECT_EQ(r.status, blk::kStatusOk);
  EXPECT_EQ(r.data, data);
}

TEST(VirtioBlk, NoInterruptFlagSuppressesTheMessage) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  test::VirtioDriver& d = *rig.driver;
  d.Write(d.queue(0).avail, std::vector<uint8_t>{kAvailFlagNoInterrupt, 0});
  const size_t before = rig.host->msix_messages().size();
  EXPECT_EQ(rig.Request(0, blk::kTypeFlush, 0, {}, 0).status, blk::kStatusOk);
  EXPECT_EQ(rig.host->msix_messages().size(), before);
  EXPECT_EQ(rig.function->queue(0)->counters().suppressed, 1u);
  d.Write(d.queue(0).avail, std::vector<uint8_t>{0, 0});
  EXPECT_EQ(rig.Request(0, blk::kTypeFlush, 0, {}, 0).status, blk::kStatusOk);
  EXPECT_EQ(rig.host->msix_messages().size(), before + 1);
}

TEST(VirtioBlk, ReleaseKeepsOrZeroes) {
  for (const ReleasePolicy policy : {ReleasePolicy::kKeep, ReleasePolicy::kZero}) {
    VirtioPciOptions pci;
    pci.release_policy = policy;
    BlkRig rig({}, pci);
    ASSERT_TRUE(rig.Start());
    const std::vector<uint8_t> data = Pattern(4096, 30);
    ASSERT_EQ(rig.Request(0, blk::kTypeOut, 16, data, 0).status, blk::kStatusOk);
    const uint64_t scrubbed = rig.function->Reset(pcie::ResetKind::kRelease);
    EXPECT_EQ(rig.function->device_status(), 0);
    if (policy == ReleasePolicy::kKeep) {
      EXPECT_EQ(scrubbed, 0u);
      EXPECT_EQ(rig.FileBytes(16 * 512, 4096), data);
    } else {
      EXPECT_EQ(scrubbed, 8u << 20);
      EXPECT_EQ(rig.FileBytes(16 * 512, 4096), std::vector<uint8_t>(4096, 0));
    }
  }
}

TEST(VirtioBlk, BackingFileChecks) {
  test::TempDir dir;
  std::string error;
  const std::string path = dir.path() + "/d.img";
  auto dev = VirtioBlkDevice::Create({.path = path, .size_bytes = 1u << 20}, &error);
  ASSERT_NE(dev, nullptr) << error;
  dev.reset();
  EXPECT_NE(VirtioBlkDevice::Create({.path = path, .size_bytes = 1u << 20}, &error), nullptr);
  EXPECT_EQ(VirtioBlkDevice::Create({.path = path, .size_bytes = 2u << 20}, &error), nullptr);
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  EXPECT_EQ(VirtioBlkDevice::Create({.path = path, .size_bytes = 1000}, &error), nullptr);
  EXPECT_EQ(VirtioBlkDevice::Create({.path = dir.path(), .size_bytes = 1u << 20}, &error), nullptr);
  EXPECT_EQ(
      VirtioBlkDevice::Create({.path = path, .size_bytes = 1u << 20, .queue_size = 100}, &error),
      nullptr);
}

}  // namespace
}  // namespace dxpu::virtio::blk_test
