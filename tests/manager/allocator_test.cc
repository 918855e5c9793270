// allocator_test.cc - the pool's choice of devices (manager/allocator.h) where a box lends
// devices that are not GPUs: a virtio disk or display goes only to an allocation that names its
// profile (issue 33).
#include "manager/allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace dxpu::manager {
namespace {

constexpr uint32_t kMaxCount = 64;

AllocationRequest Request(uint32_t count, const std::string& profile = "") {
  AllocationRequest r;
  r.host = "host-1";
  r.count = count;
  r.profile = profile;
  return r;
}

// One box with 2 GPUs (dxgpu) and 3 virtio disks: the disks are the profile with the most free.
FreeGpus MixedBox(std::map<std::string, size_t>* totals) {
  FreeGpus free;
  free.Add("dxgpu", {"box-a", 0});
  free.Add("dxgpu", {"box-a", 1});
  for (uint16_t d = 2; d < 5; ++d) free.Add("virtio-blk", {"box-a", d});
  *totals = {{"dxgpu", 2}, {"virtio-blk", 3}};
  return free;
}

TEST(AllocatorDeviceKinds, AnAllocationWithoutAProfileGetsGpusOnly) {
  std::map<std::string, size_t> totals;
  const FreeGpus free = MixedBox(&totals);
  auto chosen = ChooseGpus(free, Request(2), false, totals, kMaxCount);
  ASSERT_TRUE(chosen.ok());
  for (const GpuRef& g : chosen.value()) EXPECT_LT(g.device, 2) << "a disk lent as a GPU";
  // Three devices without a profile: only two GPUs exist, the disks do not count.
  EXPECT_FALSE(ChooseGpus(free, Request(3), false, totals, kMaxCount).ok());
}

TEST(AllocatorDeviceKinds, ADiskIsLentByItsProfile) {
  std::map<std::string, size_t> totals;
  const FreeGpus free = MixedBox(&totals);
  auto chosen = ChooseGpus(free, Request(3, "virtio-blk"), false, totals, kMaxCount);
  ASSERT_TRUE(chosen.ok());
  ASSERT_EQ(chosen.value().size(), 3u);
  for (const GpuRef& g : chosen.value()) EXPECT_GE(g.device, 2);
  EXPECT_TRUE(IsNonGpuProfile("virtio-gpu"));
  EXPECT_FALSE(IsNonGpuProfile("a100-40g"));
}

}  // namespace
}  // namespace dxpu::manager
