// runtime_kernel_test.cc - the model's kernels launched through the runtime, each against a
// CPU reference computed here from seeded inputs.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime_fixture.h"

namespace dxpu::dxgpu::test {
namespace {

TEST_P(RuntimeTest, Memset32) {
  const std::vector<float> init = RandomFloats(1000, TestSeed());
  const DevicePtr d = Upload(rt(), 0, init);
  Expected<Stream> s = rt().CreateStream(0);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(rt().LaunchMemset32(*s, d + 40, 0xdeadbeef, 17).ok());
  ASSERT_TRUE(rt().SynchronizeStream(*s).ok());
  std::vector<uint32_t> got(1000);
  ASSERT_TRUE(rt().MemcpyDtoH(got.data(), d, 4000).ok());
  for (size_t i = 0; i < 1000; ++i) {
    uint32_t want = 0;
    std::memcpy(&want, &init[i], 4);
    if (i >= 10 && i < 27) want = 0xdeadbeef;
    ASSERT_EQ(got[i], want) << i;
  }
}

TEST_P(RuntimeTest, Axpy) {
  for (const size_t n : {size_t{1}, size_t{1023}, size_t{65536}}) {
    const std::vector<float> x = RandomFloats(n, TestSeed() + 1);
    std::vector<float> y = RandomFloats(n, TestSeed() + 2);
    const DevicePtr dx = Upload(rt(), 0, x);
    const DevicePtr dy = Upload(rt(), 0, y);
    Expected<Stream> s = rt().CreateStream(0);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(rt().LaunchAxpy(*s, n, 2.5f, dx, dy).ok());
    ASSERT_TRUE(rt().LaunchAxpy(*s, n, -0.5f, dx, dy).ok());
    ASSERT_TRUE(rt().SynchronizeStream(*s).ok());
    for (size_t i = 0; i < n; ++i) {
      y[i] = 2.5f * x[i] + y[i];
      y[i] = -0.5f * x[i] + y[i];
    }
    EXPECT_TRUE(NearlyEqual(Download(rt(), dy, n), y)) << "n " << n;
    EXPECT_TRUE(rt().Free(dx).ok());
    EXPECT_TRUE(rt().Free(dy).ok());
  }
}

struct GemmCase {
  uint64_t m, n, k;
  float alpha, beta;
};

TEST_P(RuntimeTest, GemmOddSizesAlphaBeta) {
  const GemmCase cases[] = {{1, 1, 1, 1.0f, 0.0f},    {3, 5, 7, 1.0f, 0.0f},
                            {17, 13, 29, 0.5f, 2.0f}, {31, 1, 9, -1.5f, 0.25f},
                            {1, 33, 2, 2.0f, -1.0f},  {64, 64, 64, 1.0f, 1.0f}};
  Expected<Stream> s = rt().CreateStream(0);
  ASSERT_TRUE(s.ok());
  uint32_t seed = TestSeed();
  for (const GemmCase& g : cases) {
    SCOPED_TRACE(std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) +
                 " alpha " + std::to_string(g.alpha) + " beta " + std::to_string(g.beta));
    const std::vector<float> a = RandomFloats(g.m * g.k, ++seed);
    const std::vector<float> b = RandomFloats(g.k * g.n, ++seed);
    std::vector<float> c = RandomFloats(g.m * g.n, ++seed);
    const DevicePtr da = Upload(rt(), 0, a);
    const DevicePtr db = Upload(rt(), 0, b);
    const DevicePtr dc = Upload(rt(), 0, c);
    const Status st = rt().LaunchGemm(*s, g.m, g.n, g.k, g.alpha, da, db, g.beta, dc);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE(rt().SynchronizeStream(*s).ok());
    ReferenceGemm(g.m, g.n, g.k, g.alpha, a, b, g.beta, c);
    EXPECT_TRUE(NearlyEqual(Download(rt(), dc, c.size()), c, 1e-4f));
    for (const DevicePtr p : {da, db, dc}) EXPECT_TRUE(rt().Free(p).ok());
  }
}

// beta = 0: C is not read, so NaN there does not leak into the result (as BLAS).
TEST_P(RuntimeTest, GemmBetaZeroIgnoresNanInC) {
  const uint64_t m = 4;
  const uint64_t n = 6;
  const uint64_t k = 5;
  const std::vector<float> a = RandomFloats(m * k, TestSeed());
  const std::vector<float> b = RandomFloats(k * n, TestSeed() + 1);
  std::vector<float> c(m * n, std::numeric_limits<float>::quiet_NaN());
  const DevicePtr da = Upload(rt(), 0, a);
  const DevicePtr db = Upload(rt(), 0, b);
  const DevicePtr dc = Upload(rt(), 0, c);
  Expected<Stream> s = rt().CreateStream(0);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(rt().LaunchGemm(*s, m, n, k, 1.0f, da, db, 0.0f, dc).ok());
  ASSERT_TRUE(rt().SynchronizeStream(*s).ok());
  ReferenceGemm(m, n, k, 1.0f, a, b, 0.0f, c);
  const std::vector<float> got = Download(rt(), dc, c.size());
  for (const float v : got) EXPECT_FALSE(std::isnan(v));
  EXPECT_TRUE(NearlyEqual(got, c, 1e-5f));
}

TEST_P(RuntimeTest, ReduceSum) {
  for (const size_t n : {size_t{1}, size_t{12345}, size_t{1} << 18}) {
    const std::vector<float> x = RandomFloats(n, TestSeed() + static_cast<uint32_t>(n));
    const DevicePtr dx = Upload(rt(), 0, x);
    Expected<DevicePtr> out = rt().Malloc(0, 4);
    Expected<Stream> s = rt().CreateStream(0);
    ASSERT_TRUE(out.ok() && s.ok());
    ASSERT_TRUE(rt().LaunchReduceSum(*s, n, dx, *out).ok());
    ASSERT_TRUE(rt().SynchronizeStream(*s).ok());
    const std::vector<float> got = Download(rt(), *out, 1);
    // Accumulated in double in index order, then rounded: the reference is exact.
    EXPECT_EQ(got[0], ReferenceReduceSum(x)) << "n " << n;
    EXPECT_TRUE(rt().Free(dx).ok());
    EXPECT_TRUE(rt().Free(*out).ok());
  }
}

// A chain on one stream: memset, axpy, gemm, reduce; each kernel sees the one before.
TEST_P(RuntimeTest, KernelChainInStreamOrder) {
  const uint64_t n = 64;
  Expected<DevicePtr> x = rt().Malloc(0, n * n * 4);
  Expected<DevicePtr> y = rt().Malloc(0, n * n * 4);
  Expected<DevicePtr> c = rt().Malloc(0, n * n * 4);
  Expected<DevicePtr> out = rt().Malloc(0, 4);
  Expected<Stream> s = rt().CreateStream(0);
  ASSERT_TRUE(x.ok() && y.ok() && c.ok() && out.ok() && s.ok());
  float one = 1.0f;
  float half = 0.5f;
  uint32_t one_bits = 0;
  uint32_t half_bits = 0;
  std::memcpy(&one_bits, &one, 4);
  std::memcpy(&half_bits, &half, 4);
  ASSERT_TRUE(rt().LaunchMemset32(*s, *x, one_bits, n * n).ok());
  ASSERT_TRUE(rt().LaunchMemset32(*s, *y, half_bits, n * n).ok());
  ASSERT_TRUE(rt().LaunchAxpy(*s, n * n, 3.0f, *x, *y).ok());              // y = 3.5
  ASSERT_TRUE(rt().LaunchGemm(*s, n, n, n, 1.0f, *x, *y, 0.0f, *c).ok());  // c = 64 * 3.5
  ASSERT_TRUE(rt().LaunchReduceSum(*s, n * n, *c, *out).ok());
  ASSERT_TRUE(rt().SynchronizeStream(*s).ok());
  EXPECT_EQ(Download(rt(), *out, 1)[0], static_cast<float>(n * n) * 224.0f);
}

// TIMED (trace replay): computes nothing, runs for exactly its ns. On a port whose submissions
// take real time to arrive the events' device time also holds any fetch the kernel waited for,
// so here it is at least ns (exactly ns in the simulator: tests/host/host_test.cc,
// SimulatedPort.TimedKernelTakesExactlyItsTime). Counted as a launch; above 60 s, or on a
// stream that does not exist: kInvalidArgument, nothing submitted.
TEST_P(RuntimeTest, TimedKernel) {
  constexpr uint64_t kNs = 123456;
  Expected<Stream> s = rt().CreateStream(0);
  Expected<Event> e0 = rt().CreateEvent();
  Expected<Event> e1 = rt().CreateEvent();
  ASSERT_TRUE(s.ok() && e0.ok() && e1.ok());
  rt().ResetStats();
  ASSERT_TRUE(rt().RecordEvent(*e0, *s).ok());
  ASSERT_TRUE(rt().LaunchTimed(*s, kNs).ok());
  ASSERT_TRUE(rt().LaunchTimed(*s, 0).ok());
  ASSERT_TRUE(rt().RecordEvent(*e1, *s).ok());
  const Status sync = rt().SynchronizeStream(*s);
  ASSERT_TRUE(sync.ok()) << sync.ToString();
  Expected<uint64_t> elapsed = rt().EventElapsedNs(*e0, *e1);
  ASSERT_TRUE(elapsed.ok()) << elapsed.status().ToString();
  EXPECT_GE(*elapsed, kNs);
  const Stats st = rt().GetStats();
  EXPECT_EQ(st.launch.calls, 4u) << "2 records, 2 kernels";
  EXPECT_EQ(st.submissions, 4u);
  const Status too_big = rt().LaunchTimed(*s, 60'000'000'001);
  EXPECT_EQ(too_big.code(), ErrorCode::kInvalidArgument) << too_big.ToString();
  EXPECT_NE(too_big.message().find("60 s"), std::string::npos) << too_big.message();
  EXPECT_EQ(rt().LaunchTimed(*s, UINT64_MAX).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt().LaunchTimed(Stream{777777}, 1).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt().GetStats().submissions, 4u) << "nothing submitted";
  EXPECT_TRUE(rt().SynchronizeStream(*s).ok());
  EXPECT_TRUE(rt().DestroyEvent(*e0).ok());
  EXPECT_TRUE(rt().DestroyEvent(*e1).ok());
}

}  // namespace
}  // namespace dxpu::dxgpu::test
