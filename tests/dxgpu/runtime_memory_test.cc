// runtime_memory_test.cc - devices, device and pinned memory, copies in every direction at
// many sizes and alignments, pageable Memcpy through the staging buffers, statistics.
#include <cstring>
#include <vector>

#include "runtime_fixture.h"

namespace dxpu::dxgpu::test {
namespace {

TEST_P(RuntimeTest, DeviceProperties) {
  ASSERT_GE(rt().device_count(), 1u);
  for (size_t i = 0; i < rt().device_count(); ++i) {
    Expected<DeviceProperties> p = rt().GetDeviceProperties(i);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    const PortDeviceInfo& info = rt().port().device_info(i);
    EXPECT_EQ(p->index, i);
    EXPECT_EQ(p->profile, info.profile);
    EXPECT_EQ(p->location, info.location);
    EXPECT_FALSE(p->location.empty());
    EXPECT_EQ(p->vendor_id, info.vendor_id);
    EXPECT_EQ(p->device_id, info.device_id);
    EXPECT_EQ(p->memory_bytes, info.memory_bytes);
    EXPECT_GT(p->memory_bytes, 0u);
    EXPECT_EQ(p->version, 0x00010000u);
  }
  Expected<DeviceProperties> p0 = rt().GetDeviceProperties(0);
  ASSERT_TRUE(p0.ok());
  EXPECT_EQ(p0->profile, "dxgpu");
  EXPECT_TRUE(p0->has_roofline);
  EXPECT_EQ(p0->peak_fp32_flops, 10e12);
  EXPECT_EQ(p0->memory_bandwidth_bytes, 500e9);
  EXPECT_EQ(p0->launch_overhead_ns, 5000u);
  Expected<DeviceProperties> none = rt().GetDeviceProperties(rt().device_count());
  EXPECT_EQ(none.status().code(), ErrorCode::kNoDevice);
  EXPECT_NE(none.status().message().find("no device"), std::string::npos);
}

TEST_P(RuntimeTest, MallocAndFree) {
  Expected<MemoryInfo> before = rt().GetMemoryInfo(0);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->total_bytes, rt().GetDeviceProperties(0)->memory_bytes);
  EXPECT_EQ(before->free_bytes, before->total_bytes);
  std::vector<DevicePtr> ptrs;
  for (const uint64_t bytes : {1u, 255u, 256u, 257u, 100000u}) {
    Expected<DevicePtr> p = rt().Malloc(0, bytes);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(p->device, 0u);
    EXPECT_EQ(p->address % 256, 0u);
    for (const DevicePtr& q : ptrs) EXPECT_NE(q.address, p->address);
    ptrs.push_back(*p);
  }
  EXPECT_EQ(rt().GetMemoryInfo(0)->free_bytes,
            before->free_bytes - (256 + 256 + 256 + 512 + 100096));
  for (const DevicePtr& p : ptrs) EXPECT_TRUE(rt().Free(p).ok());
  EXPECT_EQ(rt().GetMemoryInfo(0)->free_bytes, before->free_bytes);
  EXPECT_EQ(rt().GetMemoryInfo(0)->largest_free_block, before->total_bytes);
  // The whole memory in one piece, and not a byte more.
  Expected<DevicePtr> all = rt().Malloc(0, before->total_bytes);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(rt().Malloc(0, 1).status().code(), ErrorCode::kOutOfMemory);
  EXPECT_TRUE(rt().Free(*all).ok());
}

TEST_P(RuntimeTest, PinnedHostMemory) {
  Expected<void*> a = rt().MallocHost(10000);
  Expected<void*> b = rt().MallocHost(1);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << b.status().ToString();
  ASSERT_NE(*a, nullptr);
  const auto* bytes = static_cast<const uint8_t*>(*a);
  for (size_t i = 0; i < 10000; ++i) ASSERT_EQ(bytes[i], 0) << i;
  std::memset(*a, 0x5a, 10000);
  std::memset(*b, 0xa5, 1);
  EXPECT_EQ(rt().FreeHost(static_cast<uint8_t*>(*a) + 1).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(rt().FreeHost(*a).ok());
  EXPECT_EQ(rt().FreeHost(*a).code(), ErrorCode::kInvalidArgument);  // double free
  int not_pinned = 0;
  EXPECT_EQ(rt().FreeHost(&not_pinned).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(rt().FreeHost(*b).ok());
}

// Host (pinned) -> device -> device -> host (pinned) through async copies on one stream, at
// sizes from 1 byte to 4 MiB and odd offsets on every side; bytes around the destination
// untouched.
TEST_P(RuntimeTest, RoundTripSizesAndOffsets) {
  const uint64_t max = uint64_t{4} << 20;
  const uint64_t slack = 8192;
  Expected<void*> src = rt().MallocHost(max + slack);
  Expected<void*> dst = rt().MallocHost(max + slack);
  Expected<DevicePtr> d1 = rt().Malloc(0, max + slack);
  Expected<DevicePtr> d2 = rt().Malloc(0, max + slack);
  Expected<Stream> s = rt().CreateStream(0);
  ASSERT_TRUE(src.ok() && dst.ok() && d1.ok() && d2.ok() && s.ok());
  auto* in = static_cast<uint8_t*>(*src);
  auto* out = static_cast<uint8_t*>(*dst);
  const std::vector<uint8_t> data = RandomBytes(max + slack, TestSeed());
  std::memcpy(in, data.data(), data.size());
  const uint64_t sizes[] = {1,   2,    3,    4,    5,     255,         256,
                            257, 4095, 4096, 4097, 65537, 1048576 + 3, max};
  const uint64_t offsets[] = {0, 1, 3, 4093};
  for (const uint64_t size : sizes) {
    for (const uint64_t off : offsets) {
      if (size == max && off != 0 && off != 3) continue;  // keep the run short
      SCOPED_TRACE("size " + std::to_string(size) + " offset " + std::to_string(off));
      std::memset(out, 0xee, max + slack);
      const uint64_t dev_off = (off * 7) % 4096;
      ASSERT_TRUE(rt().MemcpyHtoDAsync(*s, *d1 + off, in + off, size).ok());
      ASSERT_TRUE(rt().MemcpyDtoDAsync(*s, *d2 + dev_off, *d1 + off, size).ok());
      ASSERT_TRUE(rt().MemcpyDtoHAsync(*s, out + off + 1, *d2 + dev_off, size).ok());
      const Status sync = rt().SynchronizeStream(*s);
      ASSERT_TRUE(sync.ok()) << sync.ToString();
      ASSERT_EQ(std::memcmp(out + off + 1, in + off, size), 0);
      EXPECT_EQ(out[off], 0xee);
      EXPECT_EQ(out[off + 1 + size], 0xee);
    }
  }
  EXPECT_TRUE(rt().Free(*d1).ok());
  EXPECT_TRUE(rt().Free(*d2).ok());
  EXPECT_TRUE(rt().FreeHost(*src).ok());
  EXPECT_TRUE(rt().FreeHost(*dst).ok());
  EXPECT_TRUE(rt().DestroyStream(*s).ok());
}

// Synchronous Memcpy: pageable memory staged in chunks (several chunks, odd sizes), pinned
// memory directly, and device to device.
TEST_P(RuntimeTest, SynchronousMemcpyPageableAndPinned) {
  RuntimeOptions options = GetParam().options;
  options.staging_chunk_bytes = 4096;
  std::unique_ptr<Runtime> small = OpenRuntime(options);
  ASSERT_NE(small, nullptr);
  for (Runtime* r : {&rt(), small.get()}) {
    for (const size_t size :
         {size_t{1}, size_t{4095}, size_t{4097}, size_t{50001}, size_t{(3u << 20) + 5}}) {
      SCOPED_TRACE("size " + std::to_string(size));
      const std::vector<uint8_t> data = RandomBytes(size, TestSeed() + size);
      Expected<DevicePtr> d = r->Malloc(0, size + 3);
      Expected<DevicePtr> e = r->Malloc(0, size);
      ASSERT_TRUE(d.ok() && e.ok());
      Status st = r->MemcpyHtoD(*d + 3, data.data(), size);
      ASSERT_TRUE(st.ok()) << st.ToString();
      st = r->MemcpyDtoD(*e, *d + 3, size);
      ASSERT_TRUE(st.ok()) << st.ToString();
      std::vector<uint8_t> back(size + 2, 0x11);
      st = r->MemcpyDtoH(back.data() + 1, *e, size);
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(std::memcmp(back.data() + 1, data.data(), size), 0);
      EXPECT_EQ(back[0], 0x11);
      EXPECT_EQ(back[size + 1], 0x11);
      // Pinned: the same bytes back through a MallocHost buffer.
      Expected<void*> pinned = r->MallocHost(size);
      ASSERT_TRUE(pinned.ok());
      st = r->MemcpyDtoH(*pinned, *d + 3, size);
      ASSERT_TRUE(st.ok()) << st.ToString();
      EXPECT_EQ(std::memcmp(*pinned, data.data(), size), 0);
      std::memset(*pinned, 0x77, size);
      ASSERT_TRUE(r->MemcpyHtoD(*e, *pinned, size).ok());
      ASSERT_TRUE(r->MemcpyDtoH(back.data(), *e, size).ok());
      EXPECT_EQ(back[size - 1], 0x77);
      EXPECT_TRUE(r->FreeHost(*pinned).ok());
      EXPECT_TRUE(r->Free(*d).ok());
      EXPECT_TRUE(r->Free(*e).ok());
    }
  }
  const Stats stats = small->GetStats();
  EXPECT_GT(stats.staged_bytes, 0u);
  // Staging 3 MiB in 4 KiB chunks: a submission per chunk.
  EXPECT_GT(stats.submissions, 2 * ((3u << 20) / 4096));
}

TEST_P(RuntimeTest, StatsCountCallsBytesAndTime) {
  rt().ResetStats();
  EXPECT_EQ(rt().GetStats().h2d.calls, 0u);
  const std::vector<uint8_t> data = RandomBytes(100000, TestSeed());
  Expected<DevicePtr> d = rt().Malloc(0, data.size());
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(rt().MemcpyHtoD(*d, data.data(), data.size()).ok());
  std::vector<uint8_t> back(data.size());
  ASSERT_TRUE(rt().MemcpyDtoH(back.data(), *d, back.size()).ok());
  ASSERT_TRUE(rt().MemcpyDtoH(back.data(), *d, 10).ok());
  ASSERT_TRUE(rt().MemcpyDtoD(*d, *d + 4, 400).ok());
  Expected<Stream> s = rt().CreateStream(0);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(rt().LaunchMemset32(*s, *d, 1, 100).ok());
  ASSERT_TRUE(rt().LaunchMemset32(*s, *d, 2, 100).ok());
  ASSERT_TRUE(rt().SynchronizeStream(*s).ok());
  ASSERT_TRUE(rt().SynchronizeDevice(0).ok());
  const Stats st = rt().GetStats();
  EXPECT_EQ(st.h2d.calls, 1u);
  EXPECT_EQ(st.h2d.bytes, data.size());
  EXPECT_EQ(st.d2h.calls, 2u);
  EXPECT_EQ(st.d2h.bytes, data.size() + 10);
  EXPECT_EQ(st.d2d.calls, 1u);
  EXPECT_EQ(st.d2d.bytes, 400u);
  EXPECT_EQ(st.launch.calls, 2u);
  EXPECT_EQ(st.sync.calls, 2u);
  EXPECT_EQ(st.submissions, 6u);
  EXPECT_GT(st.h2d.ns, 0u);
  EXPECT_GT(st.d2h.ns, 0u);
  EXPECT_GE(st.elapsed_ns, st.h2d.ns + st.d2h.ns);
  EXPECT_NE(FormatStats(st).find("h2d 1 calls"), std::string::npos) << FormatStats(st);
  rt().ResetStats();
  EXPECT_EQ(rt().GetStats().d2h.calls, 0u);
  EXPECT_EQ(rt().GetStats().submissions, 0u);
}

}  // namespace
}  // namespace dxpu::dxgpu::test
