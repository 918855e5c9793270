// COPY in all four directions at sizes from 1 byte to 64 MiB, aligned and not, with the TLP
// stream checked: every MRd at most MRRS and inside a 4 KiB page, every MWr at most MPS and
// inside a page, never more reads in flight than max_outstanding_reads; bytes around the
// destination untouched; the host's back-pressure respected.
#include <gtest/gtest.h>

#include <cstring>
#include <tuple>

#include "gpu/gpu_registers.h"
#include "gpu_host.h"

namespace dxpu::gpu::test {
namespace {

enum class Direction { kHostToDevice, kDeviceToHost, kDeviceToDevice, kHostToHost };

const char* Name(Direction d) {
  switch (d) {
    case Direction::kHostToDevice:
      return "HostToDevice";
    case Direction::kDeviceToHost:
      return "DeviceToHost";
    case Direction::kDeviceToDevice:
      return "DeviceToDevice";
    case Direction::kHostToHost:
      return "HostToHost";
  }
  return "?";
}

bool SrcIsHost(Direction d) { return d == Direction::kHostToDevice || d == Direction::kHostToHost; }
bool DstIsHost(Direction d) { return d == Direction::kDeviceToHost || d == Direction::kHostToHost; }

constexpr uint64_t kGuard = 64;  // bytes checked untouched on each side of the destination

struct CopyCase {
  Direction direction;
  uint64_t size;
  uint32_t src_skew;  // bytes past a 4 KiB boundary
  uint32_t dst_skew;
};

// Runs one COPY and a semaphore; checks the data, the guards and the TLP stream.
void RunCopy(GpuRig& rig, const CopyCase& c, std::mt19937_64& rng) {
  const bool src_host = SrcIsHost(c.direction);
  const bool dst_host = DstIsHost(c.direction);
  // Sources and destinations: host memory far apart; device memory the same, below 1 GiB.
  const uint64_t src = (src_host ? kHostData : uint64_t{16} << 20) + c.src_skew;
  const uint64_t dst =
      (dst_host ? kHostData + (uint64_t{1} << 30) : uint64_t{512} << 20) + c.dst_skew;
  const std::vector<uint8_t> data = RandomBytes(rng, c.size);
  const std::vector<uint8_t> guard = RandomBytes(rng, c.size + 2 * kGuard);
  if (src_host) {
    rig.HostWrite(src, data);
  } else {
    rig.DeviceWrite(src, data);
  }
  if (dst_host) {
    rig.HostWrite(dst - kGuard, guard);
  } else {
    rig.DeviceWrite(dst - kGuard, guard);
  }
  const uint32_t flags = (src_host ? kCopySrcHost : 0u) | (dst_host ? kCopyDstHost : 0u);
  rig.Submit(PushbufferBuilder()
                 .Copy({.flags = flags, .size = c.size, .src = src, .dst = dst})
                 .Semaphore({.address = kSemaphoreArea, .payload = c.size, .flags = kSemaphore64}));
  ASSERT_TRUE(rig.Run());
  ASSERT_EQ(rig.Reg(regs::kErrorCode), 0u);
  ASSERT_EQ(rig.HostRead64(kSemaphoreArea), c.size);

  const std::vector<uint8_t> out = dst_host ? rig.HostRead(dst - kGuard, c.size + 2 * kGuard)
                                            : rig.DeviceRead(dst - kGuard, c.size + 2 * kGuard);
  std::vector<uint8_t> expected = guard;
  std::copy(data.begin(), data.end(), expected.begin() + kGuard);
  ASSERT_TRUE(out == expected) << "destination (or the bytes around it) differ";
  EXPECT_TRUE(rig.checker().violations().empty()) << rig.checker().violations()[0];
  EXPECT_LE(rig.checker().max_reads_in_flight(), rig.device().options().max_outstanding_reads);
}

class CopyDirections : public ::testing::TestWithParam<Direction> {};

TEST_P(CopyDirections, SizesAndAlignments) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  GpuRig rig;
  rig.Start();
  const std::vector<uint64_t> sizes = {1,
                                       2,
                                       3,
                                       4,
                                       5,
                                       63,
                                       64,
                                       65,
                                       255,
                                       256,
                                       257,
                                       511,
                                       512,
                                       513,
                                       4095,
                                       4096,
                                       4097,
                                       8191,
                                       65537,
                                       (1u << 20) + 5,
                                       (3u << 20) + 123};
  for (const uint64_t size : sizes) {
    for (const auto& [src_skew, dst_skew] :
         {std::pair{0u, 0u}, std::pair{1u, 3u}, std::pair{4093u, 2u}, std::pair{2u, 4094u}}) {
      SCOPED_TRACE(testing::Message() << Name(GetParam()) << " size " << size << " src skew "
                                      << src_skew << " dst skew " << dst_skew);
      RunCopy(rig, {GetParam(), size, src_skew, dst_skew}, rng);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_EQ(rig.device().counters().copies, sizes.size() * 4);
}

INSTANTIATE_TEST_SUITE_P(GpuCopy, CopyDirections,
                         ::testing::Values(Direction::kHostToDevice, Direction::kDeviceToHost,
                                           Direction::kDeviceToDevice, Direction::kHostToHost),
                         [](const auto& param_info) {
                           return std::string(Name(param_info.param));
                         });

// MPS and MRRS as the host programs them, and the tag limit.
class CopySettings : public ::testing::TestWithParam<std::tuple<uint32_t, uint32_t, uint16_t>> {};

TEST_P(CopySettings, RequestsFollowMpsMrrsAndTags) {
  const auto [mps, mrrs, tags] = GetParam();
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed << " MPS " << mps << " MRRS " << mrrs
                                  << " tags " << tags);
  std::mt19937_64 rng(seed);
  RigOptions o;
  o.host.max_payload = mps;
  o.host.max_read_request = mrrs;
  o.gpu.max_outstanding_reads = tags;
  GpuRig rig(o);
  rig.Start();
  ASSERT_EQ(rig.device().config().max_payload_size(), mps);
  ASSERT_EQ(rig.device().config().max_read_request_size(), mrrs);

  // Aligned: exactly size / MRRS reads and size / MPS writes for the data.
  const uint64_t size = 1 << 20;
  const size_t reads_before = rig.checker().reads();
  RunCopy(rig, {Direction::kHostToDevice, size, 0, 0}, rng);
  // The data reads, plus one for the GPFIFO entry and one for the (small) pushbuffer.
  EXPECT_EQ(rig.checker().reads() - reads_before, size / mrrs + 2);
  EXPECT_EQ(rig.checker().max_reads_in_flight(), tags) << "the tags are used, all of them";
  const size_t writes_before = rig.checker().writes();
  RunCopy(rig, {Direction::kDeviceToHost, size, 0, 0}, rng);
  EXPECT_EQ(rig.checker().writes() - writes_before, size / mps + 1);  // + the semaphore
  for (const Direction d :
       {Direction::kHostToDevice, Direction::kDeviceToHost, Direction::kHostToHost}) {
    RunCopy(rig,
            {d, 100000 + rng() % 5000, static_cast<uint32_t>(rng() % 4096),
             static_cast<uint32_t>(rng() % 4096)},
            rng);
  }
}

INSTANTIATE_TEST_SUITE_P(GpuCopy, CopySettings,
                         ::testing::Values(std::tuple{128u, 128u, uint16_t{1}},
                                           std::tuple{256u, 512u, uint16_t{64}},
                                           std::tuple{128u, 4096u, uint16_t{4}},
                                           std::tuple{256u, 1024u, uint16_t{256}}),
                         [](const auto& param_info) {
                           return "mps" + std::to_string(std::get<0>(param_info.param)) + "_mrrs" +
                                  std::to_string(std::get<1>(param_info.param)) + "_tags" +
                                  std::to_string(std::get<2>(param_info.param));
                         });

TEST(GpuCopy, SixtyFourMebibytesHostToDeviceAndBack) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  RigOptions o;
  o.host.max_read_request = 4096;
  GpuRig rig(o);
  rig.Start();
  const uint64_t size = uint64_t{64} << 20;
  const std::vector<uint8_t> data = RandomBytes(rng, size);
  rig.HostWrite(kHostData, data);
  rig.Submit(PushbufferBuilder()
                 .Copy({.flags = kCopySrcHost, .size = size, .src = kHostData, .dst = 4096})
                 .Copy({.flags = kCopyDstHost,
                        .size = size,
                        .src = 4096,
                        .dst = kHostData + (uint64_t{1} << 30) + 1})
                 .Semaphore({.address = kSemaphoreArea, .payload = 7, .flags = 0}));
  ASSERT_TRUE(rig.Run());
  ASSERT_EQ(rig.Reg(regs::kErrorCode), 0u);
  ASSERT_EQ(rig.HostRead32(kSemaphoreArea), 7u);
  // Compared a mebibyte at a time (keeps the test's memory small).
  const uint64_t chunk = 1 << 20;
  for (uint64_t at = 0; at < size; at += chunk) {
    const std::vector<uint8_t> expected(data.begin() + static_cast<ptrdiff_t>(at),
                                        data.begin() + static_cast<ptrdiff_t>(at + chunk));
    ASSERT_TRUE(rig.DeviceRead(4096 + at, chunk) == expected) << "device, offset " << at;
    ASSERT_TRUE(rig.HostRead(kHostData + (uint64_t{1} << 30) + 1 + at, chunk) == expected)
        << "host, offset " << at;
  }
  EXPECT_TRUE(rig.checker().violations().empty()) << rig.checker().violations()[0];
  EXPECT_EQ(rig.device().counters().copies, 2u);
}

TEST(GpuCopy, BackPressureFromTheHost) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  GpuRig rig;
  rig.Start();
  rig.host().take_limit = 1;  // one TLP per Poll
  for (const Direction d : {Direction::kHostToDevice, Direction::kDeviceToHost,
                            Direction::kHostToHost, Direction::kDeviceToDevice}) {
    SCOPED_TRACE(Name(d));
    RunCopy(rig, {d, 70001, 5, 9}, rng);
  }
}

TEST(GpuCopy, DeviceToDeviceOverlappingCopiesLikeMemmove) {
  const uint64_t seed = Seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::mt19937_64 rng(seed);
  GpuRig rig;
  rig.Start();
  for (const int64_t shift : {-100001, -3, 1, 4096, 70000}) {
    const uint64_t size = 200000;
    const uint64_t src = 1 << 20;
    const uint64_t dst = src + shift;
    std::vector<uint8_t> memory = RandomBytes(rng, 600000);
    const uint64_t base = src - 200000;
    rig.DeviceWrite(base, memory);
    rig.Submit(PushbufferBuilder().Copy({.flags = 0, .size = size, .src = src, .dst = dst}));
    ASSERT_TRUE(rig.Run());
    std::memmove(&memory[dst - base], &memory[src - base], size);
    EXPECT_TRUE(rig.DeviceRead(base, memory.size()) == memory) << "shift " << shift;
  }
}

// kCopyFlush: behind the copy's last write, a 1-DW read of the last DW written; the copy (and
// so the semaphore after it) ends only when that read is answered.
TEST(GpuCopy, FlushReadsTheLastDwBackBeforeTheCopyEnds) {
  GpuRig rig;
  rig.Start();
  std::vector<dxpu_tlp> out;
  rig.host().on_device_tlp = [&](const dxpu_tlp& t) {
    if (t.kind == DXPU_TLP_MRD || t.kind == DXPU_TLP_MWR) out.push_back(t);
  };
  const uint64_t dst = kHostData + 4093;  // the last byte at +1000 lies in DW +1000 & ~3
  const std::vector<uint8_t> data(1001, 0x5a);
  rig.DeviceWrite(4096, data);
  rig.Run();
  out.clear();
  rig.host().read_policy = [](const dxpu_tlp& t) {
    return t.length_dw == 1 ? ReadAnswer::kHold : ReadAnswer::kComplete;
  };
  rig.Submit(PushbufferBuilder()
                 .Copy({.flags = kCopyDstHost | kCopyFlush, .size = 1001, .src = 4096, .dst = dst})
                 .Semaphore({.address = kSemaphoreArea, .payload = 77, .flags = kSemaphore64}));
  rig.Run(rig.host().now() + 1'000'000);  // well inside the read's completion timeout
  ASSERT_EQ(rig.host().held_reads(), 1u);
  EXPECT_NE(rig.HostRead64(kSemaphoreArea), 77u) << "the copy ended before its flush read";
  // Every write, then the read of the last DW (the fetches of the pushbuffer come first).
  ASSERT_GE(out.size(), 2u);
  const dxpu_tlp& flush = out.back();
  EXPECT_EQ(flush.kind, DXPU_TLP_MRD);
  EXPECT_EQ(flush.addr, (dst + 1000) & ~uint64_t{3});
  EXPECT_EQ(flush.length_dw, 1u);
  size_t writes = 0;
  for (size_t i = 0; i + 1 < out.size(); ++i) writes += out[i].kind == DXPU_TLP_MWR ? 1 : 0;
  EXPECT_GE(writes, 4u);  // 1001 bytes from 4093: at least 4 writes (MPS, 4 KiB pages)
  rig.host().ReleaseHeld();
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(rig.Reg(regs::kErrorCode), 0u);
  EXPECT_EQ(rig.HostRead64(kSemaphoreArea), 77u);
  EXPECT_TRUE(rig.HostRead(dst, data.size()) == data);
}

TEST(GpuCopy, SizeAndRangeLimits) {
  GpuRig rig;
  rig.Start();
  const auto expect_error = [&](const CopyCommand& c, ChannelError e) {
    const uint32_t index = rig.Submit(PushbufferBuilder().Copy(c));
    rig.Run();
    EXPECT_EQ(rig.Reg(regs::kErrorCode), static_cast<uint32_t>(e));
    EXPECT_EQ(rig.Reg(regs::kErrorInfo), index);
    rig.SetReg(regs::kControl, regs::kControlEnable | regs::kControlRestart);
    EXPECT_EQ(rig.Reg(regs::kErrorCode), 0u);
  };
  expect_error({.flags = kCopySrcHost, .size = 0, .src = kHostData, .dst = 0},
               ChannelError::kBadLength);
  expect_error({.flags = kCopySrcHost, .size = (uint64_t{4} << 30) + 1, .src = kHostData, .dst = 0},
               ChannelError::kBadLength);
  expect_error({.flags = kCopySrcHost, .size = 8, .src = kHostData, .dst = (1u << 30) - 4},
               ChannelError::kBadAddress);
  expect_error({.flags = kCopyDstHost, .size = 8, .src = UINT64_MAX - 3, .dst = kHostData},
               ChannelError::kBadAddress);
  expect_error(
      {.flags = kCopySrcHost | kCopyDstHost, .size = 8, .src = UINT64_MAX - 3, .dst = kHostData},
      ChannelError::kBadAddress);
  // Reserved flag bits; a flush on a copy that does not write from device memory.
  expect_error({.flags = kCopyDstHost | 8, .size = 8, .src = 0, .dst = kHostData},
               ChannelError::kBadFlags);
  expect_error({.flags = kCopyFlush, .size = 8, .src = 0, .dst = 64}, ChannelError::kBadFlags);
  expect_error({.flags = kCopySrcHost | kCopyDstHost | kCopyFlush,
                .size = 8,
                .src = kHostData,
                .dst = kHostData + 64},
               ChannelError::kBadFlags);
  // A copy of all of device memory (1 GiB) onto itself is in range.
  rig.Submit(PushbufferBuilder().Copy({.flags = 0, .size = 1u << 30, .src = 0, .dst = 0}));
  rig.Run();
  EXPECT_EQ(rig.Reg(regs::kErrorCode), 0u);
  EXPECT_EQ(rig.device().counters().copies, 1u);
}

}  // namespace
}  // namespace dxpu::gpu::test
