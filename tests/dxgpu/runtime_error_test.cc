// runtime_error_test.cc - errors as values: bad pointers and handles, zero sizes, devices out
// of range, a channel error on the device (reported once, naming the error, and the runtime
// going on), timeouts, closing with work in flight.
#include <cstring>
#include <vector>

#include "gpu/gpu_registers.h"
#include "runtime_fixture.h"

namespace dxpu::dxgpu::test {
namespace {

::testing::AssertionResult IsError(const Status& status, ErrorCode code,
                                   const std::string& text = "") {
  if (status.code() != code) {
    return ::testing::AssertionFailure()
           << "want " << ErrorCodeName(code) << ", got " << status.ToString();
  }
  if (!text.empty() && status.message().find(text) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message lacks \"" << text << "\": " << status.ToString();
  }
  return ::testing::AssertionSuccess();
}

TEST_P(RuntimeTest, BadPointers) {
  Expected<DevicePtr> d = rt().Malloc(0, 1000);
  Expected<DevicePtr> freed = rt().Malloc(0, 1000);
  Expected<void*> pinned = rt().MallocHost(1000);
  Expected<Stream> s = rt().CreateStream(0);
  ASSERT_TRUE(d.ok() && freed.ok() && pinned.ok() && s.ok());
  ASSERT_TRUE(rt().Free(*freed).ok());
  std::vector<uint8_t> pageable(2000);
  // Device side: unallocated, freed, past the end, another device index.
  EXPECT_TRUE(IsError(rt().MemcpyHtoDAsync(*s, *freed, *pinned, 10), ErrorCode::kInvalidArgument,
                      "not in an allocation"));
  EXPECT_TRUE(IsError(rt().MemcpyHtoDAsync(*s, *d + 999, *pinned, 2), ErrorCode::kInvalidArgument,
                      "run past the end"));
  EXPECT_TRUE(IsError(rt().MemcpyHtoD(*d + 1, pageable.data(), 1000), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().MemcpyDtoH(pageable.data(), DevicePtr{0, 1u << 29}, 4),
                      ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().MemcpyDtoD(*d, DevicePtr{99, d->address}, 4),
                      ErrorCode::kInvalidArgument, "no device 99"));
  EXPECT_TRUE(IsError(rt().MemcpyDtoDAsync(*s, *d, *d + 996, 8), ErrorCode::kInvalidArgument));
  // Host side of an async copy: pageable, or running past its pinned buffer.
  EXPECT_TRUE(IsError(rt().MemcpyHtoDAsync(*s, *d, pageable.data(), 10),
                      ErrorCode::kInvalidArgument, "not in pinned memory"));
  EXPECT_TRUE(IsError(rt().MemcpyDtoHAsync(*s, static_cast<uint8_t*>(*pinned) + 10, *d, 991),
                      ErrorCode::kInvalidArgument, "past the end of its pinned buffer"));
  EXPECT_TRUE(IsError(rt().MemcpyHtoD(*d, nullptr, 4), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().MemcpyDtoH(nullptr, *d, 4), ErrorCode::kInvalidArgument));
  // Kernels: misaligned, out of the allocation.
  EXPECT_TRUE(IsError(rt().LaunchMemset32(*s, *d + 2, 0, 4), ErrorCode::kInvalidArgument,
                      "4-byte aligned"));
  EXPECT_TRUE(IsError(rt().LaunchMemset32(*s, *d, 0, 251), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().LaunchAxpy(*s, 250, 1.0f, *d, *freed), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().LaunchGemm(*s, 16, 16, 1, 1.0f, *d, *d, 0.0f, *d),
                      ErrorCode::kInvalidArgument));  // C: 1024 bytes > 1000
  EXPECT_TRUE(IsError(rt().LaunchReduceSum(*s, 10, *d, *freed), ErrorCode::kInvalidArgument));
  // Frees.
  EXPECT_TRUE(IsError(rt().Free(*freed), ErrorCode::kInvalidArgument, "double free"));
  EXPECT_TRUE(IsError(rt().Free(*d + 256), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().Free(DevicePtr{99, 0}), ErrorCode::kInvalidArgument));
  // Nothing bad was submitted: the stream is clean.
  EXPECT_TRUE(rt().SynchronizeStream(*s).ok());
  EXPECT_EQ(rt().GetStats().submissions, 0u);
}

TEST_P(RuntimeTest, ZeroSizes) {
  Expected<DevicePtr> d = rt().Malloc(0, 64);
  Expected<void*> pinned = rt().MallocHost(64);
  Expected<Stream> s = rt().CreateStream(0);
  ASSERT_TRUE(d.ok() && pinned.ok() && s.ok());
  EXPECT_TRUE(IsError(rt().Malloc(0, 0).status(), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().MallocHost(0).status(), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().MemcpyHtoD(*d, *pinned, 0), ErrorCode::kInvalidArgument, "0 bytes"));
  EXPECT_TRUE(IsError(rt().MemcpyDtoH(*pinned, *d, 0), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().MemcpyDtoD(*d, *d, 0), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().MemcpyHtoDAsync(*s, *d, *pinned, 0), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().MemcpyDtoHAsync(*s, *pinned, *d, 0), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().MemcpyDtoDAsync(*s, *d, *d, 0), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().LaunchMemset32(*s, *d, 0, 0), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().LaunchAxpy(*s, 0, 1.0f, *d, *d), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(
      IsError(rt().LaunchGemm(*s, 0, 1, 1, 1.0f, *d, *d, 0.0f, *d), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().LaunchReduceSum(*s, 0, *d, *d), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(
      IsError(rt().LaunchMemset32(*s, *d, 0, uint64_t{1} << 33), ErrorCode::kInvalidArgument));
}

TEST_P(RuntimeTest, DeviceIndexOutOfRange) {
  const size_t n = rt().device_count();
  EXPECT_TRUE(IsError(rt().Malloc(n, 256).status(), ErrorCode::kNoDevice, "no device"));
  EXPECT_TRUE(IsError(rt().CreateStream(n).status(), ErrorCode::kNoDevice));
  EXPECT_TRUE(IsError(rt().GetDeviceProperties(n).status(), ErrorCode::kNoDevice));
  EXPECT_TRUE(IsError(rt().GetMemoryInfo(n + 100).status(), ErrorCode::kNoDevice));
  EXPECT_TRUE(IsError(rt().SynchronizeDevice(SIZE_MAX), ErrorCode::kNoDevice));
  EXPECT_TRUE(IsError(rt().SynchronizeStream(Stream{}), ErrorCode::kInvalidArgument));
  EXPECT_TRUE(IsError(rt().LaunchMemset32(Stream{777777}, DevicePtr{}, 0, 1),
                      ErrorCode::kInvalidArgument, "does not exist"));
}

// A GEMM the model refuses (m * n * k = 2^28 > 2^27): KERNEL_TOO_BIG, reported by the sync of
// its stream (once), not by another stream's; the work behind it still runs, and the
// runtime goes on.
TEST_P(RuntimeTest, ChannelErrorIsReportedOnceAndTheRuntimeGoesOn) {
  const uint64_t m = 512;
  const uint64_t n = 512;
  const uint64_t k = 1024;
  Expected<DevicePtr> a = rt().Malloc(0, m * k * 4);
  Expected<DevicePtr> b = rt().Malloc(0, k * n * 4);
  Expected<DevicePtr> c = rt().Malloc(0, m * n * 4);
  Expected<DevicePtr> v = rt().Malloc(0, 4096);
  Expected<void*> host = rt().MallocHost(8192);
  Expected<Stream> bad = rt().CreateStream(0);
  Expected<Stream> good = rt().CreateStream(0);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && v.ok() && host.ok() && bad.ok() && good.ok());
  auto* words = static_cast<uint32_t*>(*host);

  ASSERT_TRUE(rt().LaunchGemm(*bad, m, n, k, 1.0f, *a, *b, 0.0f, *c).ok());  // accepted
  ASSERT_TRUE(rt().LaunchMemset32(*bad, *v, 0x1234, 1024).ok());
  ASSERT_TRUE(rt().MemcpyDtoHAsync(*bad, *host, *v, 4096).ok());
  ASSERT_TRUE(rt().LaunchMemset32(*good, *v + 0, 0x1234, 1).ok());
  EXPECT_TRUE(rt().SynchronizeStream(*good).ok());  // not its error
  const Status status = rt().SynchronizeStream(*bad);
  EXPECT_TRUE(IsError(status, ErrorCode::kDeviceError, "KERNEL_TOO_BIG")) << status.ToString();
  EXPECT_NE(status.message().find("gemm"), std::string::npos) << status.ToString();
  // The work behind the failed GEMM ran after the channel restarted.
  EXPECT_EQ(words[1023], 0x1234u);
  // Reported once.
  EXPECT_TRUE(rt().SynchronizeStream(*bad).ok());
  EXPECT_TRUE(rt().SynchronizeDevice(0).ok());

  // The failed GEMM as the last submission, seen by a device sync.
  ASSERT_TRUE(rt().LaunchGemm(*good, m, n, k, 1.0f, *a, *b, 0.0f, *c).ok());
  EXPECT_TRUE(IsError(rt().SynchronizeDevice(0), ErrorCode::kDeviceError, "KERNEL_TOO_BIG"));
  EXPECT_TRUE(rt().SynchronizeStream(*good).ok());  // taken by the device sync

  // Two failures in a row, then good work; an event behind them.
  Expected<Event> ev = rt().CreateEvent();
  ASSERT_TRUE(ev.ok());
  ASSERT_TRUE(rt().LaunchGemm(*bad, m, n, k, 1.0f, *a, *b, 0.0f, *c).ok());
  ASSERT_TRUE(rt().LaunchGemm(*bad, m, n, k, 1.0f, *a, *b, 0.0f, *c).ok());
  ASSERT_TRUE(rt().LaunchMemset32(*bad, *v, 0x5678, 1024).ok());
  ASSERT_TRUE(rt().MemcpyDtoHAsync(*bad, *host, *v, 4096).ok());
  ASSERT_TRUE(rt().RecordEvent(*ev, *bad).ok());
  const Status twice = rt().SynchronizeEvent(*ev);
  EXPECT_TRUE(IsError(twice, ErrorCode::kDeviceError, "and 1 more")) << twice.ToString();
  EXPECT_EQ(words[0], 0x5678u);
  EXPECT_TRUE(*rt().QueryEvent(*ev));

  // Synchronous calls still work afterwards.
  std::vector<uint8_t> data = RandomBytes(5000, TestSeed());
  std::vector<uint8_t> back(5000);
  ASSERT_TRUE(rt().MemcpyHtoD(*a, data.data(), data.size()).ok());
  ASSERT_TRUE(rt().MemcpyDtoH(back.data(), *a, back.size()).ok());
  EXPECT_EQ(back, data);
}

// A channel that makes no progress (disabled behind the runtime's back): the wait times out
// after sync_timeout_ns saying where the channel is, and completes once the channel runs again.
TEST_P(RuntimeTest, SyncTimeoutIsReportedAndRecoverable) {
  RuntimeOptions options = GetParam().options;
  options.sync_timeout_ns = 200'000'000;
  options.wait_slice_ns = 20'000'000;
  std::unique_ptr<Runtime> r = OpenRuntime(options);
  ASSERT_NE(r, nullptr);
  Expected<DevicePtr> d = r->Malloc(0, 4096);
  Expected<void*> host = r->MallocHost(4096);
  Expected<Stream> s = r->CreateStream(0);
  ASSERT_TRUE(d.ok() && host.ok() && s.ok());
  ASSERT_TRUE(r->port().WriteRegister(0, gpu::regs::kControl, 0).ok());
  ASSERT_TRUE(r->LaunchMemset32(*s, *d, 0xabcd, 1024).ok());
  ASSERT_TRUE(r->MemcpyDtoHAsync(*s, *host, *d, 4096).ok());
  const uint64_t start = r->port().Now();
  const Status status = r->SynchronizeStream(*s);
  EXPECT_GE(r->port().Now() - start, options.sync_timeout_ns);
  EXPECT_TRUE(IsError(status, ErrorCode::kTimeout, "not complete after 200 ms"))
      << status.ToString();
  EXPECT_NE(status.message().find("GP_GET"), std::string::npos) << status.ToString();
  EXPECT_FALSE(*r->QueryStream(*s));
  // Enable the channel again and ring the doorbell (GP_PUT reads back).
  Expected<uint32_t> put = r->port().ReadRegister(0, gpu::regs::kGpPut);
  ASSERT_TRUE(put.ok());
  ASSERT_TRUE(r->port().WriteRegister(0, gpu::regs::kControl, gpu::regs::kControlEnable).ok());
  ASSERT_TRUE(r->port().WriteRegister(0, gpu::regs::kGpPut, *put).ok());
  const Status later = r->SynchronizeStream(*s);
  EXPECT_TRUE(later.ok()) << later.ToString();
  EXPECT_EQ(static_cast<const uint32_t*>(*host)[1023], 0xabcdu);
}

// Closing a runtime with work in flight waits for it, then returns the memory.
TEST_P(RuntimeTest, CloseWithWorkInFlight) {
  std::unique_ptr<Runtime> r = OpenRuntime(GetParam().options);
  ASSERT_NE(r, nullptr);
  Expected<DevicePtr> d = r->Malloc(0, 1 << 20);
  Expected<void*> host = r->MallocHost(1 << 20);
  Expected<Stream> s = r->CreateStream(0);
  Expected<Event> e = r->CreateEvent();
  ASSERT_TRUE(d.ok() && host.ok() && s.ok() && e.ok());
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(r->MemcpyHtoDAsync(*s, *d, *host, 1 << 20).ok());
    ASSERT_TRUE(r->LaunchMemset32(*s, *d, i, 1 << 18).ok());
  }
  ASSERT_TRUE(r->RecordEvent(*e, *s).ok());
  r.reset();  // MallocHost buffer and event not freed: the runtime does it
  SUCCEED();
}

}  // namespace
}  // namespace dxpu::dxgpu::test
