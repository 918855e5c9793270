// runtime_sync_test.cc - events (ordering, device-time elapsed against the roofline),
// stream and device synchronisation, and several host threads on their own streams.
#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "runtime_fixture.h"

namespace dxpu::dxgpu::test {
namespace {

// The model's time for a GEMM (docs/dxgpu.md, "Kernels and the roofline").
uint64_t GemmRooflineNs(const DeviceProperties& p, uint64_t m, uint64_t n, uint64_t k) {
  const double flops = 2.0 * static_cast<double>(m * n * k);
  const double bytes = 4.0 * static_cast<double>(m * k + k * n + 2 * m * n);
  return p.launch_overhead_ns +
         static_cast<uint64_t>(std::ceil(
             std::max(flops * 1e9 / p.peak_fp32_flops, bytes * 1e9 / p.memory_bandwidth_bytes)));
}

TEST_P(RuntimeTest, EventsOrderAndElapsedDeviceTime) {
  const Expected<DeviceProperties> props = rt().GetDeviceProperties(0);
  ASSERT_TRUE(props.ok());
  const uint64_t big = 256;
  const uint64_t small = 4;
  const DevicePtr a = Upload(rt(), 0, RandomFloats(big * big, TestSeed()));
  const DevicePtr b = Upload(rt(), 0, RandomFloats(big * big, TestSeed() + 1));
  Expected<DevicePtr> c = rt().Malloc(0, big * big * 4);
  Expected<Stream> s = rt().CreateStream(0);
  ASSERT_TRUE(c.ok() && s.ok());
  std::vector<Event> e;
  for (int i = 0; i < 3; ++i) {
    Expected<Event> ev = rt().CreateEvent();
    ASSERT_TRUE(ev.ok());
    EXPECT_TRUE(*rt().QueryEvent(*ev));  // never recorded: reached
    e.push_back(*ev);
  }
  ASSERT_TRUE(rt().RecordEvent(e[0], *s).ok());
  ASSERT_TRUE(rt().LaunchGemm(*s, small, small, small, 1.0f, a, b, 0.0f, *c).ok());
  ASSERT_TRUE(rt().RecordEvent(e[1], *s).ok());
  ASSERT_TRUE(rt().LaunchGemm(*s, big, big, big, 1.0f, a, b, 0.0f, *c).ok());
  ASSERT_TRUE(rt().RecordEvent(e[2], *s).ok());
  const Status sync = rt().SynchronizeEvent(e[2]);
  ASSERT_TRUE(sync.ok()) << sync.ToString();
  for (const Event& ev : e) EXPECT_TRUE(*rt().QueryEvent(ev));
  EXPECT_TRUE(*rt().QueryStream(*s));
  Expected<uint64_t> t01 = rt().EventElapsedNs(e[0], e[1]);
  Expected<uint64_t> t12 = rt().EventElapsedNs(e[1], e[2]);
  Expected<uint64_t> t02 = rt().EventElapsedNs(e[0], e[2]);
  ASSERT_TRUE(t01.ok() && t12.ok() && t02.ok()) << t01.status().ToString();
  EXPECT_EQ(*t01 + *t12, *t02);
  // At least the roofline time of the kernel between. The device's time also holds whatever
  // came between: fetches, semaphores, and idle time while the next submission was on its way
  // (through DxPU on a loaded machine that can be milliseconds), so the two intervals are not
  // ordered by their kernels alone.
  EXPECT_GE(*t01, GemmRooflineNs(*props, small, small, small));
  EXPECT_GE(*t12, GemmRooflineNs(*props, big, big, big));
  EXPECT_EQ(rt().EventElapsedNs(e[0], e[0]).value(), 0u);
  // The end before the start.
  Expected<uint64_t> reversed = rt().EventElapsedNs(e[2], e[0]);
  EXPECT_EQ(reversed.status().code(), ErrorCode::kInvalidArgument);
  // Re-recording moves the event on.
  ASSERT_TRUE(rt().RecordEvent(e[0], *s).ok());
  ASSERT_TRUE(rt().SynchronizeEvent(e[0]).ok());
  Expected<uint64_t> t20 = rt().EventElapsedNs(e[2], e[0]);
  ASSERT_TRUE(t20.ok()) << t20.status().ToString();
  for (const Event& ev : e) EXPECT_TRUE(rt().DestroyEvent(ev).ok());
  EXPECT_EQ(rt().QueryEvent(e[0]).status().code(), ErrorCode::kInvalidArgument);
}

TEST_P(RuntimeTest, EventErrors) {
  Expected<Event> a = rt().CreateEvent();
  Expected<Event> b = rt().CreateEvent();
  ASSERT_TRUE(a.ok() && b.ok());
  Expected<Stream> s = rt().CreateStream(0);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(rt().RecordEvent(*a, *s).ok());
  ASSERT_TRUE(rt().SynchronizeEvent(*a).ok());
  Expected<uint64_t> never = rt().EventElapsedNs(*a, *b);
  EXPECT_EQ(never.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(never.status().message().find("never recorded"), std::string::npos);
  EXPECT_TRUE(rt().SynchronizeEvent(*b).ok());  // never recorded: nothing to wait for
  EXPECT_EQ(rt().RecordEvent(Event{424242}, *s).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt().RecordEvent(*a, Stream{424242}).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt().DestroyEvent(Event{424242}).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(rt().DestroyEvent(*a).ok());
  EXPECT_EQ(rt().DestroyEvent(*a).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt().SynchronizeEvent(*a).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(rt().DestroyEvent(*b).ok());
}

TEST_P(RuntimeTest, StreamAndDeviceSynchronize) {
  const uint64_t n = 1 << 16;
  Expected<DevicePtr> d = rt().Malloc(0, n * 4);
  Expected<void*> host = rt().MallocHost(n * 4);
  Expected<Stream> s1 = rt().CreateStream(0);
  Expected<Stream> s2 = rt().CreateStream(0);
  ASSERT_TRUE(d.ok() && host.ok() && s1.ok() && s2.ok());
  EXPECT_TRUE(*rt().QueryStream(*s1));  // nothing submitted
  EXPECT_TRUE(rt().SynchronizeStream(*s1).ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(rt().LaunchMemset32(*s1, *d, i, n).ok());
  ASSERT_TRUE(rt().MemcpyDtoHAsync(*s2, *host, *d, n * 4).ok());
  ASSERT_TRUE(rt().SynchronizeStream(*s2).ok());
  // One channel, in order: s2's copy ran after s1's memsets.
  EXPECT_TRUE(*rt().QueryStream(*s1));
  EXPECT_EQ(static_cast<const uint32_t*>(*host)[n - 1], 19u);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(rt().LaunchMemset32(*s1, *d, 100 + i, n).ok());
  ASSERT_TRUE(rt().MemcpyDtoHAsync(*s1, *host, *d, n * 4).ok());
  ASSERT_TRUE(rt().SynchronizeDevice(0).ok());
  EXPECT_TRUE(*rt().QueryStream(*s1));
  EXPECT_TRUE(*rt().QueryStream(*s2));
  EXPECT_EQ(static_cast<const uint32_t*>(*host)[0], 119u);
  EXPECT_TRUE(rt().DestroyStream(*s1).ok());
  EXPECT_EQ(rt().DestroyStream(*s1).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt().SynchronizeStream(*s1).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt().QueryStream(*s1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt().SynchronizeDevice(rt().device_count()).code(), ErrorCode::kNoDevice);
}

// Four threads, each with its own stream on device 0: copy in, kernels, copy out, check -
// many times over, all at once; plus a fifth doing synchronous pageable copies.
TEST_P(RuntimeTest, ThreadsOnTheirOwnStreams) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 25;
  constexpr uint64_t kN = 4099;
  rt().ResetStats();
  std::atomic<int> failures{0};
  std::atomic<int> checked{0};
  const auto worker = [&](int t) {
    const auto fail = [&](const std::string& what) {
      ADD_FAILURE() << "thread " << t << ": " << what;
      failures.fetch_add(1);
    };
    Expected<Stream> s = rt().CreateStream(0);
    Expected<DevicePtr> x = rt().Malloc(0, kN * 4);
    Expected<DevicePtr> y = rt().Malloc(0, kN * 4);
    Expected<DevicePtr> sum = rt().Malloc(0, 4);
    Expected<void*> in = rt().MallocHost(kN * 4);
    Expected<void*> out = rt().MallocHost(kN * 4 + 4);
    if (!s.ok() || !x.ok() || !y.ok() || !sum.ok() || !in.ok() || !out.ok()) {
      return fail("setup");
    }
    auto* xin = static_cast<float*>(*in);
    auto* yout = static_cast<float*>(*out);
    for (int it = 0; it < kIterations; ++it) {
      const std::vector<float> xs = RandomFloats(kN, TestSeed() + t * 1000 + it);
      std::memcpy(xin, xs.data(), kN * 4);
      const float fill = static_cast<float>(t + it);
      uint32_t fill_bits = 0;
      std::memcpy(&fill_bits, &fill, 4);
      Status st = rt().MemcpyHtoDAsync(*s, *x, xin, kN * 4);
      if (st.ok()) st = rt().LaunchMemset32(*s, *y, fill_bits, kN);
      if (st.ok()) st = rt().LaunchAxpy(*s, kN, 2.0f, *x, *y);
      if (st.ok()) st = rt().LaunchReduceSum(*s, kN, *y, *sum);
      if (st.ok()) st = rt().MemcpyDtoHAsync(*s, yout, *y, kN * 4);
      if (st.ok()) st = rt().MemcpyDtoHAsync(*s, yout + kN, *sum, 4);
      if (st.ok()) st = rt().SynchronizeStream(*s);
      if (!st.ok()) return fail(st.ToString());
      std::vector<float> want(kN);
      for (uint64_t i = 0; i < kN; ++i) want[i] = 2.0f * xs[i] + fill;
      const std::vector<float> got(yout, yout + kN);
      if (!NearlyEqual(got, want, 1e-6f))
        return fail("axpy result, iteration " + std::to_string(it));
      if (yout[kN] != ReferenceReduceSum(got)) return fail("reduce result");
      checked.fetch_add(1);
    }
    (void)rt().FreeHost(*in);
    (void)rt().FreeHost(*out);
    for (const DevicePtr p : {*x, *y, *sum}) (void)rt().Free(p);
    (void)rt().DestroyStream(*s);
  };
  const auto pageable = [&] {
    Expected<DevicePtr> d = rt().Malloc(0, 300000);
    if (!d.ok()) return (void)failures.fetch_add(1);
    for (int it = 0; it < 10; ++it) {
      const std::vector<uint8_t> data = RandomBytes(300000 - it, TestSeed() + it);
      std::vector<uint8_t> back(data.size());
      if (!rt().MemcpyHtoD(*d, data.data(), data.size()).ok() ||
          !rt().MemcpyDtoH(back.data(), *d, back.size()).ok() || back != data) {
        ADD_FAILURE() << "pageable copy " << it;
        failures.fetch_add(1);
        return;
      }
      checked.fetch_add(1);
    }
    (void)rt().Free(*d);
  };
  std::vector<std::thread> threads;
  threads.reserve(kThreads + 1);
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  threads.emplace_back(pageable);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(checked.load(), kThreads * kIterations + 10);
  const Stats stats = rt().GetStats();
  EXPECT_EQ(stats.launch.calls, uint64_t{kThreads} * kIterations * 3);
  EXPECT_EQ(stats.copy_async.calls, uint64_t{kThreads} * kIterations * 3);
  EXPECT_EQ(stats.sync.calls, uint64_t{kThreads} * kIterations);
  EXPECT_EQ(stats.h2d.calls, 10u);
  EXPECT_EQ(stats.d2h.calls, 10u);
  EXPECT_TRUE(rt().SynchronizeDevice(0).ok());
}

}  // namespace
}  // namespace dxpu::dxgpu::test
