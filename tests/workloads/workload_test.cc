// workload_test.cc - lib/workloads: every workload at Scale::kTest over the direct port (1 and 2
// devices) and the simulated native and dxpu ports, the stats each must leave, the ordering of
// simulated times, and the failure paths (an unknown workload, a wrong value).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dxgpu/runtime.h"
#include "host/direct_port.h"
#include "sim-world/sim_port.h"
#include "workloads/cpu_reference.h"
#include "workloads/workload.h"

namespace dxpu::workloads {
namespace {

constexpr uint64_t kSeed = 7;

std::unique_ptr<dxgpu::Runtime> OpenRuntime(dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port) {
  EXPECT_TRUE(port.ok()) << port.status().ToString();
  if (!port.ok()) return nullptr;
  auto rt = dxgpu::Runtime::Open(std::move(port).value());
  EXPECT_TRUE(rt.ok()) << rt.status().ToString();
  if (!rt.ok()) return nullptr;
  return std::move(rt).value();
}

std::unique_ptr<dxgpu::Runtime> OpenDirect(size_t devices) {
  return OpenRuntime(host::OpenDirectPort({std::vector<std::string>(devices, "dxgpu")}));
}

std::unique_ptr<dxgpu::Runtime> OpenSim(bool dxpu, size_t devices, uint64_t added_latency_ns) {
  host::SimPortOptions o;
  o.through_dxpu = dxpu;
  o.profiles = std::vector<std::string>(devices, "dxgpu");
  o.fabric.added_latency_ns = added_latency_ns;
  return OpenRuntime(host::OpenSimulatedPort(o));
}

// What each workload does at kTest (must agree with the shapes in lib/workloads/*.cc).
constexpr uint32_t kMlpSteps = 3;
constexpr uint32_t kDecodeTokens = 6;
constexpr uint32_t kLoadBatches = 6;
constexpr uint64_t kLoadBatchBytes = 64 << 10;

void ExpectStatsOf(const WorkloadResult& r, size_t devices) {
  const dxgpu::Stats& st = r.stats;
  EXPECT_GT(st.elapsed_ns, 0U);
  EXPECT_GT(st.submissions, 0U);
  EXPECT_GT(st.launch.calls, 0U);
  if (r.name == "mlp-train") {
    ASSERT_EQ(r.iterations, kMlpSteps);
    // Per step and device: 9 GEMMs and 1 AXPY, then n - 1 AXPYs summing the gradient sets and
    // the SGD AXPY; 1 sync; the shard in and n - 1 peer copies; device 0 keeps the step's loss.
    EXPECT_EQ(st.launch.calls, kMlpSteps * devices * (10 + devices));
    EXPECT_EQ(st.sync.calls, (kMlpSteps + 1) * devices);
    EXPECT_EQ(st.copy_async.calls, kMlpSteps * ((devices * devices) + 1));
    EXPECT_EQ(st.h2d.calls, 0U);
  } else if (r.name == "decode-loop") {
    ASSERT_EQ(r.iterations, kDecodeTokens);
    // One synchronisation per token and device (the pipeline hands x over through the host).
    EXPECT_EQ(st.sync.calls, kDecodeTokens * devices);
    EXPECT_EQ(st.copy_async.calls, kDecodeTokens * devices * 2);  // x in, results out
    // Per token: 2 layers x (8 GEMMs + 2 AXPYs + 1 reduce) + the logits GEMM.
    EXPECT_EQ(st.launch.calls, kDecodeTokens * (2 * 11 + 1));
  } else if (r.name == "data-loading") {
    ASSERT_EQ(r.iterations, kLoadBatches);
    EXPECT_EQ(st.sync.calls, kLoadBatches);
    EXPECT_EQ(st.launch.calls, kLoadBatches);
    EXPECT_EQ(st.copy_async.calls, 2 * kLoadBatches);
    EXPECT_EQ(st.copy_async.bytes, kLoadBatches * (kLoadBatchBytes + 4));
  } else {
    ADD_FAILURE() << "no expectations for " << r.name;
  }
}

std::vector<std::string> Names() {
  std::vector<std::string> names;
  for (const WorkloadInfo& w : ListWorkloads()) names.push_back(w.name);
  return names;
}

TEST(Workloads, ListsTheThreeWorkloads) {
  const std::vector<WorkloadInfo> list = ListWorkloads();
  ASSERT_EQ(list.size(), 3U);
  EXPECT_EQ(list[0].name, "mlp-train");
  EXPECT_EQ(list[1].name, "decode-loop");
  EXPECT_EQ(list[2].name, "data-loading");
  for (const WorkloadInfo& w : list) EXPECT_FALSE(w.description.empty()) << w.name;
  EXPECT_NE(list[0].description.find("nonlinearity"), std::string::npos);
}

class DirectWorkload : public ::testing::TestWithParam<size_t> {};

TEST_P(DirectWorkload, RunsVerifiedWithTheExpectedStats) {
  const size_t devices = GetParam();
  auto rt = OpenDirect(devices);
  ASSERT_NE(rt, nullptr);
  for (const std::string& name : Names()) {
    SCOPED_TRACE(name);
    std::vector<uint32_t> seen;
    const WorkloadResult r =
        RunWorkload(name, *rt, devices, Scale::kTest, kSeed,
                    [&](uint32_t done, uint32_t total) { seen.push_back(done * 1000 + total); });
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.name, name);
    EXPECT_TRUE(r.error.empty());
    EXPECT_GT(r.elapsed_ns, 0U);
    EXPECT_LE(r.max_abs_error, 1e-3);
    EXPECT_FALSE(r.summary.empty());
    ExpectStatsOf(r, devices);
    ASSERT_EQ(seen.size(), r.iterations);
    for (uint32_t i = 0; i < r.iterations; ++i) EXPECT_EQ(seen[i], (i + 1) * 1000 + r.iterations);
  }
  // Everything was given back: all device memory free again.
  for (size_t d = 0; d < devices; ++d) {
    auto info = rt->GetMemoryInfo(d);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->free_bytes, info->total_bytes) << "device " << d;
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, DirectWorkload, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<size_t>& p) {
                           return std::to_string(p.param) + "gpu";
                         });

// The same seed gives the same numbers whatever the port: a run is reproducible.
TEST(Workloads, SameSeedSameSummary) {
  auto a = OpenDirect(1);
  auto b = OpenSim(true, 1, 1000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  for (const std::string& name : {std::string("mlp-train"), std::string("decode-loop")}) {
    const WorkloadResult ra = RunWorkload(name, *a, 1, Scale::kTest, kSeed);
    const WorkloadResult rb = RunWorkload(name, *b, 1, Scale::kTest, kSeed);
    ASSERT_TRUE(ra.ok && rb.ok) << ra.error << rb.error;
    EXPECT_EQ(ra.summary, rb.summary);
  }
}

struct SimTimes {
  uint64_t native = 0;
  uint64_t dxpu = 0;
};

// The workload on the simulated native port and through DxPU with `latency_ns` added.
SimTimes RunSimulated(const std::string& name, size_t devices, uint64_t latency_ns) {
  SimTimes t;
  for (bool dxpu : {false, true}) {
    auto rt = OpenSim(dxpu, devices, latency_ns);
    EXPECT_NE(rt, nullptr);
    if (rt == nullptr) return t;
    const WorkloadResult r = RunWorkload(name, *rt, devices, Scale::kTest, kSeed);
    EXPECT_TRUE(r.ok) << name << (dxpu ? " dxpu: " : " native: ") << r.error;
    if (r.ok) ExpectStatsOf(r, devices);
    (dxpu ? t.dxpu : t.native) = r.elapsed_ns;
  }
  return t;
}

TEST(SimulatedWorkloads, RunVerifiedAndDxpuIsNeverFaster) {
  for (const std::string& name : Names()) {
    for (size_t devices : {1, 2}) {
      SCOPED_TRACE(name + " on " + std::to_string(devices) + " device(s)");
      const SimTimes t = RunSimulated(name, devices, 1000);
      EXPECT_GT(t.native, 0U);
      EXPECT_GE(t.dxpu, t.native);
      std::printf("%s x%zu: native %.1f us, dxpu(1us) %.1f us\n", name.c_str(), devices,
                  static_cast<double>(t.native) / 1e3, static_cast<double>(t.dxpu) / 1e3);
    }
  }
}

// The decode loop is latency-bound: more fabric latency, more overhead.
TEST(SimulatedWorkloads, DecodeOverheadGrowsWithLatency) {
  const SimTimes at1 = RunSimulated("decode-loop", 1, 1000);
  const SimTimes at5 = RunSimulated("decode-loop", 1, 5000);
  EXPECT_EQ(at1.native, at5.native);  // virtual time: the native run does not change
  ASSERT_GT(at1.dxpu, at1.native);
  const uint64_t overhead1 = at1.dxpu - at1.native;
  const uint64_t overhead5 = at5.dxpu - at5.native;
  EXPECT_GT(overhead5, overhead1);
  // Each token waits for at least one fabric round trip more than natively: 2 x 4 us more.
  EXPECT_GE(overhead5 - overhead1, kDecodeTokens * 8000);
}

// Not run by default (seconds): the demo-scale runs and their times, for lib/workloads/README.md.
//   workload_test --gtest_also_run_disabled_tests --gtest_filter='*DemoScale*'
TEST(Workloads, DISABLED_DemoScaleTimes) {
  for (const std::string& name : Names()) {
    for (size_t devices : {1, 2}) {
      auto rt = OpenDirect(devices);
      ASSERT_NE(rt, nullptr);
      const auto start = std::chrono::steady_clock::now();
      const WorkloadResult r = RunWorkload(name, *rt, devices, Scale::kDemo, kSeed);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_TRUE(r.ok) << r.error;
      std::printf(
          "%s x%zu direct: wall %.2f s (whole run), timed part %.1f ms, max error %.3g\n  %s\n  "
          "%s\n",
          name.c_str(), devices, wall, static_cast<double>(r.elapsed_ns) / 1e6, r.max_abs_error,
          r.summary.c_str(), dxgpu::FormatStats(r.stats).c_str());
    }
    for (size_t devices : {1, 2}) {
      uint64_t native = 0;
      for (const auto& [dxpu, latency] :
           {std::pair{false, 1000}, std::pair{true, 1000}, std::pair{true, 5000}}) {
        auto rt = OpenSim(dxpu, devices, latency);
        ASSERT_NE(rt, nullptr);
        const auto start = std::chrono::steady_clock::now();
        const WorkloadResult r = RunWorkload(name, *rt, devices, Scale::kDemo, kSeed);
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        EXPECT_TRUE(r.ok) << r.error;
        if (!dxpu) native = r.elapsed_ns;
        std::printf(
            "%s x%zu sim %s: %.3f ms simulated (%+.1f%%), wall %.2f s\n  %s\n", name.c_str(),
            devices, dxpu ? (latency == 1000 ? "dxpu(1us)" : "dxpu(5us)") : "native",
            static_cast<double>(r.elapsed_ns) / 1e6,
            native > 0
                ? 100.0 * (static_cast<double>(r.elapsed_ns) / static_cast<double>(native) - 1)
                : 0.0,
            wall, dxgpu::FormatStats(r.stats).c_str());
      }
    }
  }
}

TEST(Workloads, UnknownNameFailsClearly) {
  auto rt = OpenDirect(1);
  ASSERT_NE(rt, nullptr);
  const WorkloadResult r = RunWorkload("resnet", *rt, 1, Scale::kTest, kSeed);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.name, "resnet");
  EXPECT_NE(r.error.find("unknown workload 'resnet'"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("mlp-train"), std::string::npos) << r.error;
  EXPECT_EQ(r.iterations, 0U);
}

TEST(Workloads, TooManyDevicesFailsClearly) {
  auto rt = OpenDirect(1);
  ASSERT_NE(rt, nullptr);
  for (size_t devices : {0, 2}) {
    const WorkloadResult r = RunWorkload("data-loading", *rt, devices, Scale::kTest, kSeed);
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("the runtime has 1"), std::string::npos) << r.error;
  }
}

TEST(CompareFloats, EqualValuesPass) {
  const std::vector<float> a = {1.0f, -2.5f, 1e6f};
  const Comparison c = CompareFloats("x", a, a, 0.0);
  EXPECT_TRUE(c.ok);
  EXPECT_EQ(c.max_abs_error, 0.0);
  EXPECT_TRUE(c.error.empty());
}

TEST(CompareFloats, AWrongValueIsNamedWithItsIndexAndError) {
  const std::vector<float> want = {1.0f, 2.0f, 3.0f, 4.0f};
  const std::vector<float> got = {1.0f, 2.0f, 3.5f, 4.0f};
  const Comparison c = CompareFloats("token 3 logits", got, want, 1e-4);
  EXPECT_FALSE(c.ok);
  EXPECT_DOUBLE_EQ(c.max_abs_error, 0.5);
  EXPECT_NE(c.error.find("token 3 logits[2]"), std::string::npos) << c.error;
  EXPECT_NE(c.error.find("got 3.5"), std::string::npos) << c.error;
  EXPECT_NE(c.error.find("expected 3"), std::string::npos) << c.error;
}

TEST(CompareFloats, ToleranceIsRelativeAboveOne) {
  const std::vector<float> want = {1000.0f, 0.5f};
  EXPECT_TRUE(CompareFloats("x", std::vector<float>{1000.05f, 0.5f}, want, 1e-4).ok);
  EXPECT_FALSE(CompareFloats("x", std::vector<float>{1000.5f, 0.5f}, want, 1e-4).ok);
  EXPECT_FALSE(CompareFloats("x", std::vector<float>{1000.0f, 0.5002f}, want, 1e-4).ok);
}

TEST(CompareFloats, NanAndSizeMismatchFail) {
  const std::vector<float> want = {1.0f, 2.0f};
  const Comparison nan = CompareFloats(
      "x", std::vector<float>{1.0f, std::numeric_limits<float>::quiet_NaN()}, want, 1.0);
  EXPECT_FALSE(nan.ok);
  EXPECT_TRUE(std::isinf(nan.max_abs_error));
  const Comparison size = CompareFloats("x", std::vector<float>{1.0f}, want, 1.0);
  EXPECT_FALSE(size.ok);
  EXPECT_NE(size.error.find("1 values, expected 2"), std::string::npos) << size.error;
}

TEST(CpuReference, GemmMatchesTheDefinition) {
  // 2x3 . 3x2, alpha 2, beta 0.5 over C = 1.
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<float> b = {1, 0, 0, 1, 1, 1};
  std::vector<float> c = {1, 1, 1, 1};
  cpu::Gemm(2, 2, 3, 2.0f, a, b, 0.5f, c);
  EXPECT_EQ(c, (std::vector<float>{8.5f, 10.5f, 20.5f, 22.5f}));
  std::vector<float> t(6);
  cpu::Transpose(2, 3, a, t);
  EXPECT_EQ(t, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(cpu::ReduceSum(a), 21.0f);
  EXPECT_EQ(cpu::ArgMax(std::vector<float>{1, 3, 3, 2}), 1U);
}

}  // namespace
}  // namespace dxpu::workloads
