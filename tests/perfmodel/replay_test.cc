// replay_test.cc - a trace replayed on the model GPUs in the simulator (sim-world/replay):
// kernels take the trace's time, copies and syncs happen as the trace has them, the host's own
// work is kept; through DxPU it takes longer, and the model's prediction is beside it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "dxgpu/runtime.h"
#include "perfmodel/model.h"
#include "perfmodel/trace.h"
#include "sim-world/replay/replay.h"
#include "sim-world/sim_port.h"

namespace dxpu::perfmodel {
namespace {

// One host thread: `tokens` iterations of (H2D of 64 KiB, `kernels` kernels of `kernel_ns`,
// D2H of 4 KiB, a sync), with `think_ns` of host work after each.
Trace DecodeLike(int tokens, int kernels, int64_t kernel_ns, int64_t think_ns) {
  Trace t;
  int64_t now = 0, correlation = 1;
  const auto enqueue = [&](CallKind call, GpuOpKind kind, int64_t dur, uint64_t bytes) {
    t.calls.push_back({call, 1, now, 2'000, correlation});
    // The GPU times are rough: the replay takes only durations and order from them.
    t.ops.push_back({kind, 0, 7, now + 5'000, dur, bytes, correlation});
    correlation++;
    now += 2'000;
  };
  for (int i = 0; i < tokens; ++i) {
    enqueue(CallKind::kCopy, GpuOpKind::kMemcpyHtoD, 10'000, 64 << 10);
    for (int k = 0; k < kernels; ++k) enqueue(CallKind::kLaunch, GpuOpKind::kKernel, kernel_ns, 0);
    enqueue(CallKind::kCopy, GpuOpKind::kMemcpyDtoH, 1'000, 4096);
    t.calls.push_back({CallKind::kSync, 1, now, 1'000, kNoCorrelation});
    now += 1'000 + think_ns;
  }
  std::stable_sort(t.ops.begin(), t.ops.end(),
                   [](const GpuOp& a, const GpuOp& b) { return a.start_ns < b.start_ns; });
  return t;
}

std::unique_ptr<dxgpu::Runtime> SimulatedRuntime(bool dxpu, uint64_t added_ns = 1'000) {
  host::SimPortOptions o;
  o.through_dxpu = dxpu;
  o.fabric.added_latency_ns = added_ns;
  auto port = host::OpenSimulatedPort(o);
  EXPECT_TRUE(port.ok());
  auto rt = dxgpu::Runtime::Open(std::move(port).value());
  EXPECT_TRUE(rt.ok());
  return std::move(rt).value();
}

TEST(Replay, KernelsTakeTheTracesTimeAndEveryCallHappens) {
  const Trace t = DecodeLike(4, 5, 100'000, 0);
  auto rt = SimulatedRuntime(false);
  const dxgpu::Stats before = rt->GetStats();
  const ReplayResult<ReplayStats> r = ReplayTrace(t, *rt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().kernels, 20u);
  EXPECT_EQ(r.value().copies, 8u);
  EXPECT_EQ(r.value().syncs, 4u);
  const dxgpu::Stats after = rt->GetStats();
  EXPECT_EQ(after.copy_async.calls - before.copy_async.calls, 8u);
  EXPECT_EQ(after.copy_async.bytes - before.copy_async.bytes, 4u * ((64 << 10) + 4096));
  // 20 kernels of 100 us, one after the other, plus copies, launches and syncs on a local link.
  EXPECT_GE(r.value().elapsed_ns, 2'000'000u);
  EXPECT_LT(r.value().elapsed_ns, 2'300'000u);
}

TEST(Replay, TheHostsOwnWorkIsKept) {
  auto quick = SimulatedRuntime(false);
  auto thinking = SimulatedRuntime(false);
  const ReplayResult<ReplayStats> a = ReplayTrace(DecodeLike(5, 2, 10'000, 0), *quick);
  const ReplayResult<ReplayStats> b = ReplayTrace(DecodeLike(5, 2, 10'000, 200'000), *thinking);
  ASSERT_TRUE(a.ok() && b.ok());
  // 200 us of host work after each sync but the last (nothing in the trace comes after it).
  EXPECT_NEAR(static_cast<double>(b.value().elapsed_ns - a.value().elapsed_ns), 800'000, 1'000);
}

TEST(Replay, ThroughDxpuItTakesLongerAndTheModelIsBesideIt) {
  const Trace t = DecodeLike(8, 6, 20'000, 30'000);
  ModelParams p;
  p.added_latency_ns = 2'000;
  const ReplayResult<ReplayComparison> c = CompareWithSimulation(t, p);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_GT(c.value().dxpu.elapsed_ns, c.value().native.elapsed_ns);
  EXPECT_GT(c.value().simulated_overhead_pct, 0);
  EXPECT_GT(c.value().predicted.overhead_pct, 0);
  EXPECT_EQ(c.value().native.kernels, c.value().dxpu.kernels);
  p.added_latency_ns = 10'000;
  const ReplayResult<ReplayComparison> far = CompareWithSimulation(t, p);
  ASSERT_TRUE(far.ok());
  EXPECT_GT(far.value().simulated_overhead_pct, c.value().simulated_overhead_pct);
}

TEST(Replay, WhatTheSimulatorCannotDoIsAnError) {
  const Trace t = DecodeLike(1, 1, 1'000, 0);
  ModelParams p;
  p.box_pcie_latency_ns = 100;
  ReplayResult<ReplayComparison> c = CompareWithSimulation(t, p);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("box PCIe latency"), std::string::npos);
  p = {};
  p.mrrs = 512;
  c = CompareWithSimulation(t, p);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("MRRS 4096"), std::string::npos);
  c = CompareWithSimulation(Trace{}, ModelParams{});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("no GPU operations"), std::string::npos);
}

}  // namespace
}  // namespace dxpu::perfmodel
