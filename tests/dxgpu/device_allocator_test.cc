// device_allocator_test.cc - DeviceAllocator: alignment, first fit, fragmentation and
// coalescing, exhaustion, bad frees, range checks; and the Status texts.
#include "dxgpu/device_allocator.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "dxgpu/status.h"

namespace dxpu::dxgpu {
namespace {

TEST(DeviceAllocator, AlignsAndRoundsUp) {
  DeviceAllocator a(0, 1 << 20);
  EXPECT_EQ(a.capacity(), 1u << 20);
  Expected<uint64_t> p = a.Allocate(1);
  Expected<uint64_t> q = a.Allocate(257);
  Expected<uint64_t> r = a.Allocate(256);
  ASSERT_TRUE(p.ok() && q.ok() && r.ok());
  EXPECT_EQ(*p, 0u);
  EXPECT_EQ(*q, 256u);
  EXPECT_EQ(*r, 768u);
  EXPECT_EQ(a.bytes_in_use(), 256u + 512 + 256);
  EXPECT_EQ(a.allocation_count(), 3u);
}

TEST(DeviceAllocator, UnalignedBaseIsRoundedIn) {
  DeviceAllocator a(100, 1000);  // [256, 1024) usable: 768 bytes
  EXPECT_EQ(a.capacity(), 768u);
  Expected<uint64_t> p = a.Allocate(768);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, 256u);
  EXPECT_EQ(a.Allocate(1).status().code(), ErrorCode::kOutOfMemory);
}

TEST(DeviceAllocator, ZeroBytesIsInvalid) {
  DeviceAllocator a(0, 4096);
  EXPECT_EQ(a.Allocate(0).status().code(), ErrorCode::kInvalidArgument);
}

TEST(DeviceAllocator, ExhaustionAndReuse) {
  DeviceAllocator a(0, 4096);
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 16; ++i) {
    Expected<uint64_t> p = a.Allocate(256);
    ASSERT_TRUE(p.ok()) << i;
    blocks.push_back(*p);
  }
  Expected<uint64_t> none = a.Allocate(1);
  EXPECT_EQ(none.status().code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(none.status().message().find("0 bytes free"), std::string::npos)
      << none.status().message();
  EXPECT_EQ(a.Allocate(uint64_t{1} << 40).status().code(), ErrorCode::kOutOfMemory);
  EXPECT_EQ(a.Allocate(UINT64_MAX).status().code(), ErrorCode::kOutOfMemory);
  ASSERT_TRUE(a.Free(blocks[5]).ok());
  Expected<uint64_t> again = a.Allocate(200);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, blocks[5]);
}

TEST(DeviceAllocator, FragmentationThenCoalescing) {
  DeviceAllocator a(0, uint64_t{8} * 256);
  std::vector<uint64_t> b(8);
  for (uint64_t& block : b) block = *a.Allocate(256);
  // Free every other block: 1 KiB free, but no two adjacent.
  for (int i = 0; i < 8; i += 2) ASSERT_TRUE(a.Free(b[i]).ok());
  EXPECT_EQ(a.free_bytes(), 4u * 256);
  EXPECT_EQ(a.free_block_count(), 4u);
  EXPECT_EQ(a.largest_free_block(), 256u);
  Expected<uint64_t> big = a.Allocate(512);
  EXPECT_EQ(big.status().code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(big.status().message().find("the largest 256"), std::string::npos)
      << big.status().message();
  // Freeing the blocks between merges neighbours on both sides.
  ASSERT_TRUE(a.Free(b[1]).ok());  // 0,1,2 -> one block of 768
  EXPECT_EQ(a.free_block_count(), 3u);
  EXPECT_EQ(a.largest_free_block(), 768u);
  ASSERT_TRUE(a.Free(b[5]).ok());  // 4,5,6
  ASSERT_TRUE(a.Free(b[3]).ok());  // 0..6
  ASSERT_TRUE(a.Free(b[7]).ok());  // all
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_EQ(a.largest_free_block(), 8u * 256);
  EXPECT_EQ(a.bytes_in_use(), 0u);
  Expected<uint64_t> all = a.Allocate(uint64_t{8} * 256);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, 0u);
}

TEST(DeviceAllocator, BadFrees) {
  DeviceAllocator a(0, 4096);
  const uint64_t p = *a.Allocate(512);
  Status inside = a.Free(p + 256);
  EXPECT_EQ(inside.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(inside.message().find("no allocation starts"), std::string::npos) << inside.message();
  EXPECT_EQ(a.Free(1 << 20).code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(a.Free(p).ok());
  Status twice = a.Free(p);
  EXPECT_EQ(twice.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(twice.message().find("double free"), std::string::npos) << twice.message();
  EXPECT_EQ(a.bytes_in_use(), 0u);
  EXPECT_EQ(a.free_block_count(), 1u);
}

TEST(DeviceAllocator, CheckRangeUsesTheBytesAskedFor) {
  DeviceAllocator a(0, 4096);
  const uint64_t p = *a.Allocate(100);
  EXPECT_TRUE(a.CheckRange(p, 100).ok());
  EXPECT_TRUE(a.CheckRange(p + 99, 1).ok());
  EXPECT_EQ(a.CheckRange(p + 50, 51).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.CheckRange(p, 0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.CheckRange(p + 100, 1).code(), ErrorCode::kInvalidArgument);  // rounding slack
  EXPECT_EQ(a.CheckRange(2048, 4).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.CheckRange(p + 1, UINT64_MAX).code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(a.Free(p).ok());
  EXPECT_EQ(a.CheckRange(p, 4).code(), ErrorCode::kInvalidArgument);
}

// Random allocations and frees against a shadow of live ranges: never overlapping, always
// aligned, and everything free again at the end is one block.
TEST(DeviceAllocator, RandomAgainstShadow) {
  const uint64_t size = 1 << 20;
  DeviceAllocator a(0, size);
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  std::vector<std::pair<uint64_t, uint64_t>> live;
  for (int step = 0; step < 5000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const uint64_t bytes = 1 + rng() % 20000;
      Expected<uint64_t> p = a.Allocate(bytes);
      if (!p.ok()) {
        EXPECT_EQ(p.status().code(), ErrorCode::kOutOfMemory);
        continue;
      }
      EXPECT_EQ(*p % 256, 0u);
      EXPECT_LE(*p + bytes, size);
      for (const auto& [start, len] : live) {
        EXPECT_TRUE(*p + bytes <= start || start + len <= *p) << "overlap at step " << step;
      }
      live.emplace_back(*p, bytes);
    } else {
      const size_t i = rng() % live.size();
      ASSERT_TRUE(a.Free(live[i].first).ok());
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  for (const auto& [start, len] : live) ASSERT_TRUE(a.Free(start).ok());
  EXPECT_EQ(a.free_block_count(), 1u);
  EXPECT_EQ(a.free_bytes(), size);
}

TEST(Status, NamesAndText) {
  EXPECT_EQ(ErrorCodeName(ErrorCode::kOk), "ok");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kDeviceLost), "device-lost");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kOutOfMemory), "out-of-memory");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kInvalidArgument), "invalid-argument");
  EXPECT_EQ(ErrorCodeName(ErrorCode::kDeviceError), "device-error");
  EXPECT_EQ(Status(ErrorCode::kTimeout, "no progress for 1 s").ToString(),
            "timeout: no progress for 1 s");
  EXPECT_EQ(Status().ToString(), "ok");
  EXPECT_TRUE(Status::Ok().ok());
  const Expected<int> e = Status(ErrorCode::kNoDevice, "x");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), ErrorCode::kNoDevice);
}

}  // namespace
}  // namespace dxpu::dxgpu
