// The compute engine: each kernel against a reference computed here from seeded random
// inputs, the work-size, alignment and range checks, and the roofline timing (the PTIMER a
// semaphore writes after known kernels equals the sum of their modelled times).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gpu/activity.h"
#include "gpu/gpu_registers.h"
#include "gpu/kernels.h"
#include "gpu_host.h"

namespace dxpu::gpu::test {
namespace {

constexpr uint64_t kA = 1 << 20;  // operand areas in device memory
constexpr uint64_t kB = 64 << 20;
constexpr uint64_t kC = 128 << 20;

class GpuKernel : public ::testing::Test {
 protected:
  void SetUp() override { rig_.Start(); }
  // Submits, runs, and expects the channel to be idle without error.
  void RunOk(const PushbufferBuilder& pb) {
    rig_.Submit(pb);
    ASSERT_TRUE(rig_.Run());
    ASSERT_EQ(rig_.Reg(regs::kErrorCode), 0u);
    ASSERT_EQ(rig_.Reg(regs::kStatus), regs::kStatusIdle);
  }
  void ExpectError(const PushbufferBuilder& pb, ChannelError error) {
    const uint32_t index = rig_.Submit(pb);
    rig_.Run();
    EXPECT_EQ(rig_.Reg(regs::kErrorCode), static_cast<uint32_t>(error)) << ToString(error);
    EXPECT_EQ(rig_.Reg(regs::kErrorInfo), index);
    EXPECT_EQ(rig_.Reg(regs::kStatus), regs::kStatusError);
    EXPECT_NE(rig_.Reg(regs::kIntrStatus) & regs::kIntrError, 0u);
    rig_.SetReg(regs::kIntrStatus, regs::kIntrError);
    rig_.SetReg(regs::kControl, regs::kControlEnable | regs::kControlRestart);
  }
  std::vector<float> Floats(uint64_t offset, size_t n) {
    return BytesToFloats(rig_.DeviceRead(offset, n * 4));
  }

  uint64_t seed_ = Seed();
  std::mt19937_64 rng_{seed_};
  GpuRig rig_;
};

TEST_F(GpuKernel, Memset32) {
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed_);
  for (int round = 0; round < 5; ++round) {
    const uint32_t count = 1 + static_cast<uint32_t>(rng_() % 100000);
    const uint32_t value = static_cast<uint32_t>(rng_());
    const uint64_t dst = kA + 4 * (rng_() % 1000);
    const std::vector<uint8_t> before = RandomBytes(rng_, count * 4 + 64);
    rig_.DeviceWrite(dst - 32, before);
    RunOk(PushbufferBuilder().Memset32({.dst = dst, .count = count, .value = value}));
    const std::vector<uint8_t> after = rig_.DeviceRead(dst - 32, count * 4 + 64);
    for (uint32_t i = 0; i < 32; ++i) {
      ASSERT_EQ(after[i], before[i]) << "below";
      ASSERT_EQ(after[32 + count * 4 + i], before[32 + count * 4 + i]) << "above";
    }
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t v = 0;
      std::memcpy(&v, &after[32 + i * 4], 4);
      ASSERT_EQ(v, value) << "element " << i;
    }
  }
  EXPECT_EQ(rig_.device().counters().kernels, 5u);
}

TEST_F(GpuKernel, Axpy) {
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed_);
  for (int round = 0; round < 4; ++round) {
    const uint32_t n = 1 + static_cast<uint32_t>(rng_() % 200000);
    const float a = std::uniform_real_distribution<float>(-4, 4)(rng_);
    const std::vector<float> x = RandomFloats(rng_, n, -100, 100);
    const std::vector<float> y = RandomFloats(rng_, n, -100, 100);
    rig_.DeviceWrite(kA, FloatBytes(x));
    rig_.DeviceWrite(kB, FloatBytes(y));
    RunOk(PushbufferBuilder().Axpy({.n = n, .a = a, .x = kA, .y = kB}));
    const std::vector<float> out = Floats(kB, n);
    EXPECT_EQ(Floats(kA, n), x) << "x unchanged";
    for (uint32_t i = 0; i < n; ++i) {
      const double ref = double{a} * x[i] + y[i];
      const double tolerance = 1e-6 * (std::abs(double{a} * x[i]) + std::abs(y[i])) + 1e-30;
      ASSERT_NEAR(out[i], ref, tolerance) << "element " << i;
    }
  }
}

TEST_F(GpuKernel, Gemm) {
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed_);
  struct Shape {
    uint32_t m, n, k;
  };
  for (const Shape s : {Shape{1, 1, 1}, Shape{17, 23, 31}, Shape{64, 64, 64}, Shape{3, 200, 5},
                        Shape{5, 7, 0}, Shape{40, 1, 300}}) {
    SCOPED_TRACE(testing::Message() << s.m << "x" << s.n << "x" << s.k);
    const float alpha = std::uniform_real_distribution<float>(-2, 2)(rng_);
    const float beta = std::uniform_real_distribution<float>(-2, 2)(rng_);
    const std::vector<float> a = RandomFloats(rng_, size_t{s.m} * s.k);
    const std::vector<float> b = RandomFloats(rng_, size_t{s.k} * s.n);
    const std::vector<float> c = RandomFloats(rng_, size_t{s.m} * s.n);
    rig_.DeviceWrite(kA, FloatBytes(a));
    rig_.DeviceWrite(kB, FloatBytes(b));
    rig_.DeviceWrite(kC, FloatBytes(c));
    RunOk(PushbufferBuilder().Gemm(
        {.m = s.m, .n = s.n, .k = s.k, .alpha = alpha, .beta = beta, .a = kA, .b = kB, .c = kC}));
    const std::vector<float> out = Floats(kC, size_t{s.m} * s.n);
    for (uint32_t i = 0; i < s.m; ++i) {
      for (uint32_t j = 0; j < s.n; ++j) {
        double dot = 0;
        double magnitude = 0;
        for (uint32_t p = 0; p < s.k; ++p) {
          dot += double{a[i * s.k + p]} * b[p * s.n + j];
          magnitude += std::abs(double{a[i * s.k + p]} * b[p * s.n + j]);
        }
        const double ref = alpha * dot + double{beta} * c[i * s.n + j];
        const double tolerance =
            1e-6 * (s.k + 2) * (std::abs(alpha) * magnitude + std::abs(beta * c[i * s.n + j])) +
            1e-7;
        ASSERT_NEAR(out[i * s.n + j], ref, tolerance) << "C[" << i << "][" << j << "]";
      }
    }
  }
}

// op(A), op(B) transposed: A stored k x m, B n x k; against a double reference read through
// the same index maps. Reserved flag bits are BAD_FLAGS.
TEST_F(GpuKernel, GemmWithTransposedOperands) {
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed_);
  const uint32_t m = 13;
  const uint32_t n = 29;
  const uint32_t k = 7;
  for (const uint32_t flags : {0u, kGemmTransposeA, kGemmTransposeB, kGemmFlagsMask}) {
    SCOPED_TRACE(testing::Message() << "flags " << flags);
    const bool ta = (flags & kGemmTransposeA) != 0;
    const bool tb = (flags & kGemmTransposeB) != 0;
    const std::vector<float> a = RandomFloats(rng_, size_t{m} * k);
    const std::vector<float> b = RandomFloats(rng_, size_t{k} * n);
    rig_.DeviceWrite(kA, FloatBytes(a));
    rig_.DeviceWrite(kB, FloatBytes(b));
    RunOk(PushbufferBuilder().Gemm({.m = m,
                                    .n = n,
                                    .k = k,
                                    .alpha = 1,
                                    .beta = 0,
                                    .a = kA,
                                    .b = kB,
                                    .c = kC,
                                    .flags = flags}));
    const std::vector<float> out = Floats(kC, size_t{m} * n);
    for (uint32_t i = 0; i < m; ++i) {
      for (uint32_t j = 0; j < n; ++j) {
        double dot = 0;
        double magnitude = 0;
        for (uint32_t p = 0; p < k; ++p) {
          const double x = ta ? a[p * m + i] : a[i * k + p];
          const double y = tb ? b[j * k + p] : b[p * n + j];
          dot += x * y;
          magnitude += std::abs(x * y);
        }
        ASSERT_NEAR(out[i * n + j], dot, 1e-6 * (k + 2) * magnitude + 1e-7)
            << "C[" << i << "][" << j << "]";
      }
    }
  }
  ExpectError(
      PushbufferBuilder().Gemm(
          {.m = 1, .n = 1, .k = 1, .alpha = 1, .beta = 0, .a = kA, .b = kB, .c = kC, .flags = 4}),
      ChannelError::kBadFlags);
}

TEST_F(GpuKernel, GemmWithBetaZeroDoesNotReadC) {
  const std::vector<float> a = {1, 2, 3, 4};  // 2x2
  const std::vector<float> b = {5, 6, 7, 8};
  const std::vector<float> c(4, std::numeric_limits<float>::quiet_NaN());
  rig_.DeviceWrite(kA, FloatBytes(a));
  rig_.DeviceWrite(kB, FloatBytes(b));
  rig_.DeviceWrite(kC, FloatBytes(c));
  RunOk(PushbufferBuilder().Gemm(
      {.m = 2, .n = 2, .k = 2, .alpha = 2, .beta = 0, .a = kA, .b = kB, .c = kC}));
  // 2 * [[1*5+2*7, 1*6+2*8], [3*5+4*7, 3*6+4*8]]
  EXPECT_EQ(Floats(kC, 4), (std::vector<float>{38, 44, 86, 100}));
}

TEST_F(GpuKernel, ReduceSum) {
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed_);
  for (const uint32_t n : {0u, 1u, 1000u, 1u << 20, static_cast<uint32_t>(rng_() % 300000)}) {
    const std::vector<float> x = RandomFloats(rng_, n, -1000, 1000);
    rig_.DeviceWrite(kA, FloatBytes(x));
    RunOk(PushbufferBuilder().ReduceSum({.n = n, .x = kA, .out = kC + 4}));
    // The definition: accumulate in double in index order, then round to float.
    double sum = 0;
    for (uint32_t i = 0; i < n; ++i) sum += x[i];
    EXPECT_EQ(Floats(kC + 4, 1)[0], static_cast<float>(sum)) << "n " << n;
  }
}

TEST_F(GpuKernel, TooBig) {
  const uint32_t too_many = (1u << 26) + 1;
  ExpectError(PushbufferBuilder().Memset32({.dst = 0, .count = too_many, .value = 1}),
              ChannelError::kKernelTooBig);
  ExpectError(PushbufferBuilder().Axpy({.n = too_many, .a = 1, .x = 0, .y = 0}),
              ChannelError::kKernelTooBig);
  ExpectError(PushbufferBuilder().ReduceSum({.n = too_many, .x = 0, .out = 0}),
              ChannelError::kKernelTooBig);
  ExpectError(PushbufferBuilder().Timed(kMaxTimedNs + 1), ChannelError::kKernelTooBig);
  ExpectError(PushbufferBuilder().Timed(UINT64_MAX), ChannelError::kKernelTooBig);
  // m * n * k = 1024 * 1024 * 129 > 2^27.
  ExpectError(PushbufferBuilder().Gemm(
                  {.m = 1024, .n = 1024, .k = 129, .alpha = 1, .beta = 0, .a = 0, .b = 0, .c = 0}),
              ChannelError::kKernelTooBig);
  // A is 2^14 x 2^13 = 2^27 elements, though n = 0 leaves no work.
  ExpectError(
      PushbufferBuilder().Gemm(
          {.m = 1u << 14, .n = 0, .k = 1u << 13, .alpha = 1, .beta = 0, .a = 0, .b = 0, .c = 0}),
      ChannelError::kKernelTooBig);
  EXPECT_EQ(rig_.device().counters().kernels, 0u);
  // At the limit: accepted (a memset of 256 MiB to zero allocates nothing).
  RunOk(PushbufferBuilder().Memset32({.dst = 0, .count = 1u << 26, .value = 0}));
  EXPECT_EQ(rig_.device().counters().kernels, 1u);
  // TIMED at its limit (60 s): accepted, and the channel is busy that long.
  const uint64_t t0 = rig_.host().now();
  rig_.Submit(PushbufferBuilder().Timed(kMaxTimedNs));
  ASSERT_TRUE(rig_.Run());
  EXPECT_EQ(rig_.Reg(regs::kErrorCode), 0u);
  EXPECT_GE(rig_.host().now(), t0 + kMaxTimedNs);
  EXPECT_EQ(rig_.device().counters().kernels, 2u);
}

TEST_F(GpuKernel, AlignmentAndRange) {
  ExpectError(PushbufferBuilder().Memset32({.dst = 2, .count = 1, .value = 1}),
              ChannelError::kBadAlignment);
  ExpectError(PushbufferBuilder().Axpy({.n = 4, .a = 1, .x = 6, .y = 0}),
              ChannelError::kBadAlignment);
  ExpectError(PushbufferBuilder().Gemm(
                  {.m = 1, .n = 1, .k = 1, .alpha = 1, .beta = 0, .a = 0, .b = 0, .c = 1}),
              ChannelError::kBadAlignment);
  ExpectError(PushbufferBuilder().ReduceSum({.n = 1, .x = 0, .out = 2}),
              ChannelError::kBadAlignment);
  const uint64_t end = uint64_t{1} << 30;
  ExpectError(PushbufferBuilder().Memset32({.dst = end - 8, .count = 3, .value = 1}),
              ChannelError::kBadAddress);
  ExpectError(PushbufferBuilder().Axpy({.n = 2, .a = 1, .x = 0, .y = end - 4}),
              ChannelError::kBadAddress);
  ExpectError(PushbufferBuilder().ReduceSum({.n = 1, .x = 0, .out = end}),
              ChannelError::kBadAddress);
  ExpectError(
      PushbufferBuilder().Gemm(
          {.m = 2, .n = 2, .k = 2, .alpha = 1, .beta = 0, .a = UINT64_MAX - 3, .b = 0, .c = 0}),
      ChannelError::kBadAddress);
  // Alignment is checked before range.
  ExpectError(PushbufferBuilder().Memset32({.dst = end + 2, .count = 1, .value = 1}),
              ChannelError::kBadAlignment);
  // Nothing was written: memory is still all zero where a memset would have gone.
  EXPECT_EQ(rig_.DeviceRead(end - 8, 8), std::vector<uint8_t>(8, 0));
  EXPECT_EQ(rig_.device().counters().kernels, 0u);
}

// dxgpu: 10 TFLOP/s, 500 GB/s, 5 us launch overhead.
//   GEMM 256^3: 2 * 256^3 = 33554432 flop -> 3355.44 ns; 4 * 4 * 65536 = 1 MiB -> 2097.15 ns:
//     compute-bound, 5000 + 3356 = 8356 ns.
//   AXPY 2^20: 2^21 flop -> 209.7 ns; 12 MiB -> 25165.82 ns: memory-bound, 5000 + 25166.
//   Device-to-device COPY of 1 MiB: 2 MiB of traffic -> 4194.3 ns: 4195 ns, no launch.
//   MEMSET32 of 1000 elements: 4000 bytes -> 8 ns: 5008.
TEST_F(GpuKernel, RooflineTimesTheSemaphore) {
  const uint64_t t0 = 1'000'000'000;
  rig_.host().set_now(t0);
  std::vector<uint64_t> write_times;
  rig_.host().on_device_tlp = [&](const dxpu_tlp& t) {
    rig_.checker().OnDeviceTlp(t);
    if (t.kind == DXPU_TLP_MWR && t.addr == kSemaphoreArea)
      write_times.push_back(rig_.host().now());
  };
  RunOk(PushbufferBuilder()
            .Gemm({.m = 256, .n = 256, .k = 256, .alpha = 1, .beta = 0, .a = kA, .b = kB, .c = kC})
            .Axpy({.n = 1u << 20, .a = 2, .x = kA, .y = kB})
            .Copy({.flags = 0, .size = 1u << 20, .src = kA, .dst = kC})
            .Memset32({.dst = kC, .count = 1000, .value = 3})
            .Semaphore({.address = kSemaphoreArea,
                        .payload = 0x1122334455667788,
                        .flags = kSemaphoreTimestamp}));
  const uint64_t expected = t0 + 8356 + 30166 + 4195 + 5008;
  EXPECT_EQ(rig_.HostRead64(kSemaphoreArea), 0x1122334455667788u);
  EXPECT_EQ(rig_.HostRead64(kSemaphoreArea + 8), expected);
  ASSERT_EQ(write_times.size(), 1u);
  EXPECT_EQ(write_times[0], expected) << "the release goes out when the last kernel ends";
}

// TIMED keeps the compute engine busy for exactly its ns of the channel's time: no roofline,
// no launch overhead. A timestamped semaphore records t0 alone, t1 + 123456 after one TIMED,
// and TIMED 0 adds nothing; it touches no memory, and counts as a kernel.
TEST_F(GpuKernel, TimedTimesTheSemaphore) {
  constexpr uint64_t kNs = 123456;
  std::vector<uint64_t> write_times;
  rig_.host().on_device_tlp = [&](const dxpu_tlp& t) {
    rig_.checker().OnDeviceTlp(t);
    if (t.kind == DXPU_TLP_MWR && t.addr == kSemaphoreArea)
      write_times.push_back(rig_.host().now());
  };
  const auto stamp = [&](const PushbufferBuilder& pb) {
    RunOk(PushbufferBuilder(pb).Semaphore(
        {.address = kSemaphoreArea, .payload = 1, .flags = kSemaphoreTimestamp}));
    return rig_.HostRead64(kSemaphoreArea + 8);
  };
  const uint64_t t0 = 1'000'000'000;
  rig_.host().set_now(t0);
  EXPECT_EQ(stamp(PushbufferBuilder()), t0) << "without TIMED";
  const uint64_t t1 = 2'000'000'000;
  rig_.host().set_now(t1);
  const uint64_t resident = rig_.device().resident_memory_bytes();
  const GpuCounters before = rig_.device().counters();
  EXPECT_EQ(stamp(PushbufferBuilder().Timed(kNs)), t1 + kNs);
  ASSERT_EQ(write_times.size(), 2u);
  EXPECT_EQ(write_times[1], t1 + kNs) << "the release goes out when TIMED ends";
  EXPECT_EQ(rig_.device().counters().kernels, before.kernels + 1);
  EXPECT_EQ(rig_.device().counters().commands, before.commands + 2);
  EXPECT_EQ(rig_.device().resident_memory_bytes(), resident) << "no device memory touched";
  // TIMED 0 takes no time; TIMED adds exactly to a roofline kernel (MEMSET32 of 1000: 5008).
  const uint64_t t2 = 3'000'000'000;
  rig_.host().set_now(t2);
  EXPECT_EQ(stamp(PushbufferBuilder().Timed(0)), t2);
  const uint64_t t3 = 4'000'000'000;
  rig_.host().set_now(t3);
  EXPECT_EQ(stamp(PushbufferBuilder()
                      .Timed(kNs)
                      .Memset32({.dst = kC, .count = 1000, .value = 3})
                      .Timed(kNs)),
            t3 + kNs + 5008 + kNs);
  EXPECT_EQ(rig_.device().counters().kernels, before.kernels + 5);
}

// The same on the real-GPU profiles, their figures taken from the profile.
TEST(GpuKernelRoofline, FollowsTheProfile) {
  for (const char* name : {"a100-40g", "h100-80g"}) {
    RigOptions o;
    o.profile = name;
    GpuRig rig(o);
    rig.Start();
    const Roofline r = FindProfile(name)->roofline;
    const auto ns = [&](double flops, double bytes) {
      const double t =
          std::max(flops * 1e9 / r.peak_fp32_flops, bytes * 1e9 / r.memory_bandwidth_bytes);
      return r.launch_overhead_ns + static_cast<uint64_t>(std::ceil(t));
    };
    const uint64_t t0 = 5000;
    rig.host().set_now(t0);
    rig.Submit(
        PushbufferBuilder()
            .Gemm({.m = 512, .n = 256, .k = 128, .alpha = 1, .beta = 1, .a = kA, .b = kB, .c = kC})
            .ReduceSum({.n = 1u << 22, .x = kA, .out = kC})
            .Semaphore({.address = kSemaphoreArea, .payload = 1, .flags = kSemaphoreTimestamp}));
    ASSERT_TRUE(rig.Run());
    const double m = 512, n = 256, k = 128;
    const uint64_t expected =
        t0 + ns(2 * m * n * k, 4 * (m * k + k * n + 2 * m * n)) + ns(1 << 22, 4.0 * (1 << 22));
    EXPECT_EQ(rig.HostRead64(kSemaphoreArea + 8), expected) << name;
  }
}

// The activity log (GpuOptions::activity): off by default. On, each kernel and COPY with its
// GPFIFO entry's ordinal, kind, bytes and times on the channel's clock: TIMED exactly its ns,
// a roofline kernel its roofline time, the commands of an entry back to back, a timestamped
// semaphore after them at the last one's end; copies by direction (flush: peer).
TEST(GpuActivity, LogsKernelsAndCopiesOnTheChannelsClock) {
  EXPECT_FALSE(GpuOptions{}.activity) << "off by default";
  std::vector<CommandActivity> log;
  RigOptions options;
  options.gpu.activity = [&log](const CommandActivity& a) { log.push_back(a); };
  GpuRig rig(options);
  rig.Start();
  constexpr uint64_t kNs = 50'000;
  rig.host().set_now(1'000'000'000);
  rig.Submit(
      PushbufferBuilder()
          .Timed(kNs)
          .Memset32({.dst = kC, .count = 1000, .value = 3})
          .Semaphore({.address = kSemaphoreArea, .payload = 1, .flags = kSemaphoreTimestamp}));
  rig.Submit(PushbufferBuilder()
                 .Copy({.flags = kCopySrcHost, .size = 4096, .src = kHostData, .dst = kA})
                 .Copy({.flags = kCopyDstHost, .size = 100, .src = kA, .dst = kHostData})
                 .Copy({.flags = 0, .size = 4096, .src = kA, .dst = kB})
                 .Copy({.flags = kCopyDstHost | kCopyFlush, .size = 8, .src = kA, .dst = kHostData})
                 .Copy({.flags = kCopySrcHost | kCopyDstHost,
                        .size = 16,
                        .src = kHostData,
                        .dst = kHostData + 4096}));
  rig.Submit(PushbufferBuilder().Nop());  // no kernel, no copy: nothing logged
  ASSERT_TRUE(rig.Run());
  ASSERT_EQ(rig.Reg(regs::kErrorCode), 0u);
  ASSERT_EQ(log.size(), 7u);
  const Roofline& roofline = rig.device().config().profile().roofline;
  EXPECT_EQ(log[0].entry, 1u);
  EXPECT_EQ(log[0].kind, ActivityKind::kTimed);
  EXPECT_EQ(log[0].end_ns - log[0].start_ns, kNs) << "TIMED: exactly its ns";
  EXPECT_GE(log[0].start_ns, 1'000'000'000u);
  EXPECT_EQ(log[1].kind, ActivityKind::kMemset32);
  EXPECT_EQ(log[1].bytes, 4000u);
  EXPECT_EQ(log[1].end_ns - log[1].start_ns,
            KernelNs(roofline, CostOf(Memset32Command{.dst = kC, .count = 1000, .value = 3})));
  EXPECT_EQ(rig.HostRead64(kSemaphoreArea + 8), log[1].end_ns) << "the semaphore's timestamp";
  const ActivityKind copies[] = {ActivityKind::kCopyHostToDevice, ActivityKind::kCopyDeviceToHost,
                                 ActivityKind::kCopyDeviceToDevice, ActivityKind::kCopyPeer,
                                 ActivityKind::kCopyHostToHost};
  const uint64_t bytes[] = {4096, 100, 4096, 8, 16};
  for (size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE(ToString(copies[i]));
    EXPECT_EQ(log[2 + i].entry, 2u);
    EXPECT_EQ(log[2 + i].kind, copies[i]);
    EXPECT_TRUE(IsCopy(log[2 + i].kind));
    EXPECT_EQ(log[2 + i].bytes, bytes[i]);
    EXPECT_LE(log[2 + i].start_ns, log[2 + i].end_ns);
  }
  EXPECT_EQ(log[4].end_ns - log[4].start_ns, DeviceCopyNs(roofline, 4096));
  for (size_t i = 1; i < 7; ++i) {
    if (log[i].entry == log[i - 1].entry) {
      EXPECT_EQ(log[i].start_ns, log[i - 1].end_ns) << i << ": back to back in one entry";
    } else {
      EXPECT_GE(log[i].start_ns, log[i - 1].end_ns) << i;
    }
  }
}

// The entry ordinal counts ring positions from the ring's setup: it goes on across the ring's
// wrap, and an entry that an error consumed without running keeps its number (as libdxgpu's
// sequence numbers do); programming the ring again starts again at 1.
TEST(GpuActivity, EntryOrdinalsFollowTheRing) {
  std::vector<uint64_t> entries;
  RigOptions options;
  options.ring_entries = 8;
  options.gpu.activity = [&entries](const CommandActivity& a) { entries.push_back(a.entry); };
  GpuRig rig(options);
  rig.Start();
  std::vector<uint64_t> expected;
  for (uint64_t ordinal = 1; ordinal <= 20; ++ordinal) {
    if (ordinal == 11) {
      rig.Submit(PushbufferBuilder().Raw(0xff000000u));  // BAD_OPCODE: consumed, never run
      ASSERT_TRUE(rig.Run());
      ASSERT_EQ(rig.Reg(regs::kErrorCode), static_cast<uint32_t>(ChannelError::kBadOpcode));
      rig.SetReg(regs::kControl, regs::kControlEnable | regs::kControlRestart);
      continue;
    }
    rig.Submit(PushbufferBuilder().Timed(10));
    expected.push_back(ordinal);
    if (ordinal % 3 == 0) {
      ASSERT_TRUE(rig.Run());
    }
  }
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(entries, expected);
  // A new ring (GP_GET = GP_PUT = 0). The rig's next slot is 20 % 8 = 4: the channel runs
  // slots 0..4, the last ring's TIMED entries in 0..3 and the new one, as entries 1..5.
  rig.SetReg(regs::kGpfifoEntries, 8);
  entries.clear();
  rig.Submit(PushbufferBuilder().Timed(10));
  ASSERT_TRUE(rig.Run());
  EXPECT_EQ(entries, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace dxpu::gpu::test
