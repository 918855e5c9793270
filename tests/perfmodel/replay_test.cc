// replay_test.cc - a trace replayed on the model GPUs in the simulator (sim-world/replay):
// kernels take the trace's time, copies and syncs happen as the trace has them, the host's own
// work is kept; through DxPU it takes longer, and the model's prediction is beside it; a peer
// copy lands on the GPU the trace names, in whichever box the placement puts it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dxgpu/runtime.h"
#include "host/host_port.h"
#include "perfmodel/model.h"
#include "perfmodel/trace.h"
#include "sim-world/replay/replay.h"
#include "sim-world/sim_host.h"
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

constexpr uint64_t kPeerBytes = 1 << 20;

// Four GPUs (trace devices 10 to 13, the runtime's 0 to 3) each run a kernel, then GPU 10 copies
// 1 MiB to the peer `peer` names (kNoDevice: the trace does not say), asynchronously or as
// cudaMemcpyPeer does; then a sync.
Trace PeerCopyTrace(int32_t peer, bool synchronous = false) {
  Trace t;
  int64_t now = 0, correlation = 1;
  const auto enqueue = [&](CallKind call, int32_t device, GpuOpKind kind, uint64_t bytes) {
    t.calls.push_back({call, 1, now, 2'000, correlation});
    GpuOp op{kind, device, 7, now + 5'000, 10'000, bytes, correlation};
    if (kind == GpuOpKind::kMemcpyPeer) op.peer_device = peer;
    t.ops.push_back(op);
    correlation++;
    now += 2'000;
  };
  for (int32_t d = 10; d < 14; ++d) enqueue(CallKind::kLaunch, d, GpuOpKind::kKernel, 0);
  enqueue(synchronous ? CallKind::kSyncCopy : CallKind::kCopy, 10, GpuOpKind::kMemcpyPeer,
          kPeerBytes);
  t.calls.push_back({CallKind::kSync, 1, now, 1'000, kNoCorrelation});
  return t;
}

// What each box carried: TLPs from the host (what another box sent its GPUs comes this way) and
// between its own GPUs; and what the host proxy routed between boxes.
struct Carried {
  std::vector<uint64_t> from_host;
  std::vector<uint64_t> in_box;
  uint64_t proxy_routed = 0;
};

Carried CarriedBy(dxgpu::Runtime& rt) {
  auto& sim = dynamic_cast<host::SimHost&>(dynamic_cast<host::HostPort&>(rt.port()).driver());
  Carried c;
  sim.Run([&](host::HostProxy& proxy, uint64_t) { c.proxy_routed = proxy.peer_tlps(); });
  for (size_t k = 0; k < sim.box_count(); ++k) {
    c.from_host.push_back(sim.box(k)->counters().tlps_from_hosts);
    c.in_box.push_back(sim.box(k)->counters().tlps_peer);
  }
  return c;
}

// The trace replayed through DxPU with GPUs 0-1 in box 0, 2 in box 1 and 3 in box 2; what the
// boxes carried.
Carried ReplayPlaced(const Trace& t) {
  host::SimPortOptions o;
  o.through_dxpu = true;
  o.profiles.assign(4, "dxgpu");
  o.gpus_per_box = {2, 1, 1};
  auto port = host::OpenSimulatedPort(o);
  EXPECT_TRUE(port.ok()) << port.status().ToString();
  if (!port.ok()) return {};
  auto rt = dxgpu::Runtime::Open(std::move(port).value());
  EXPECT_TRUE(rt.ok());
  if (!rt.ok()) return {};
  const ReplayResult<ReplayStats> r = ReplayTrace(t, **rt);
  EXPECT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.ok() ? r.value().copies : 0, 1U);
  return CarriedBy(**rt);
}

TEST(Replay, APeerCopyLandsOnTheDeviceTheTraceNames) {
  // At least one write per 4 KiB of the copy.
  constexpr uint64_t kWrites = kPeerBytes / 4096;
  // Not named: the next GPU, in the same box; nothing reaches the host proxy.
  const Carried next = ReplayPlaced(PeerCopyTrace(kNoDevice));
  ASSERT_EQ(next.from_host.size(), 3U);
  EXPECT_EQ(next.proxy_routed, 0U);
  EXPECT_GE(next.in_box[0], kWrites);
  // Trace device 12 (the runtime's 2, alone in box 1) and 13 (box 2): through the host proxy
  // into that box, asynchronously and as cudaMemcpyPeer.
  for (const bool synchronous : {false, true}) {
    SCOPED_TRACE(synchronous ? "cudaMemcpyPeer" : "cudaMemcpyPeerAsync");
    const Carried to12 = ReplayPlaced(PeerCopyTrace(12, synchronous));
    const Carried to13 = ReplayPlaced(PeerCopyTrace(13, synchronous));
    ASSERT_EQ(to12.from_host.size(), 3U);
    ASSERT_EQ(to13.from_host.size(), 3U);
    EXPECT_GE(to12.proxy_routed, kWrites);
    EXPECT_EQ(to12.in_box[0], 0U);
    EXPECT_GE(to12.from_host[1], to12.from_host[2] + kWrites);
    EXPECT_GE(to13.proxy_routed, kWrites);
    EXPECT_GE(to13.from_host[2], to13.from_host[1] + kWrites);
  }
}

// A GPU the trace names only as a peer copy's destination is one of the replay's GPUs too.
TEST(Replay, ADeviceNamedOnlyAsADestinationIsReplayed) {
  Trace t = PeerCopyTrace(12);
  std::erase_if(t.ops, [](const GpuOp& op) { return op.device != 10; });
  EXPECT_EQ(DevicesOf(t), 2U);
  host::SimPortOptions o;
  o.through_dxpu = true;
  o.profiles.assign(2, "dxgpu");
  o.gpus_per_box = {1, 1};
  auto port = host::OpenSimulatedPort(o);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  auto rt = dxgpu::Runtime::Open(std::move(port).value());
  ASSERT_TRUE(rt.ok());
  const ReplayResult<ReplayStats> r = ReplayTrace(t, **rt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GE(CarriedBy(**rt).proxy_routed, kPeerBytes / 4096);
}

// CompareWithSimulation places the DxPU side's GPUs as asked: a copy between boxes crosses the
// fabric twice, so it takes longer than inside one box; the native side is the same.
TEST(Replay, TheComparisonTakesThePlacement) {
  const Trace t = PeerCopyTrace(12);
  ModelParams p;
  const ReplayResult<ReplayComparison> one = CompareWithSimulation(t, p);
  p.gpus_per_box = {2, 2};
  const ReplayResult<ReplayComparison> two = CompareWithSimulation(t, p);
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two.value().native.elapsed_ns, one.value().native.elapsed_ns);
  EXPECT_GT(two.value().dxpu.elapsed_ns, one.value().dxpu.elapsed_ns);
  // Crossing the fabric twice costs at least one more pass of the copy over it (100 Gb/s).
  const double fabric_ns = kPeerBytes * 8e9 / (p.fabric_bandwidth_gbps * 1e9);
  EXPECT_GE(static_cast<double>(two.value().dxpu.elapsed_ns - one.value().dxpu.elapsed_ns),
            0.5 * fabric_ns);
  // The model takes the same placement: the copies between boxes cost it time too.
  EXPECT_GT(two.value().predicted.breakdown.peer_ns, 0);
  EXPECT_EQ(one.value().predicted.breakdown.peer_ns, 0);
  p.gpus_per_box = {3};
  const ReplayResult<ReplayComparison> bad = CompareWithSimulation(t, p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("the trace uses 4 GPUs"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("gpus_per_box [3] places 3 GPUs"), std::string::npos)
      << bad.error().message;
}

// A pageable cudaMemcpy is several copies in the trace under its one call (the runtime stages
// it in 1 MiB chunks): the replay copies all of it, not its first chunk, so through DxPU the
// whole size pays the fabric (found at the demo's scale: 4 of 21 MiB were replayed).
TEST(Replay, AStagedCopyIsReplayedWhole) {
  const auto staged = [](uint64_t chunk, int chunks) {
    Trace t;
    const int64_t native_ns = static_cast<int64_t>(chunk) * chunks / 25;  // at 25 GB/s
    t.calls.push_back({CallKind::kSyncCopy, 1, 0, native_ns + 2'000, 1});
    for (int k = 0; k < chunks; ++k) {
      t.ops.push_back({GpuOpKind::kMemcpyHtoD, 0, 7, 1'000 + k * native_ns / chunks,
                       native_ns / chunks, chunk, 1});
    }
    t.calls.push_back({CallKind::kSync, 1, native_ns + 3'000, 1'000, kNoCorrelation});
    return t;
  };
  const Trace one = staged(uint64_t{1} << 20, 1);
  const Trace five = staged(uint64_t{1} << 20, 5);
  ModelParams p;
  const ReplayResult<ReplayComparison> a = CompareWithSimulation(one, p);
  const ReplayResult<ReplayComparison> b = CompareWithSimulation(five, p);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b.value().dxpu.copies, 5u);
  // What DxPU adds grows with the five chunks: at least 4 MiB more at the fabric's 12.5 GB/s
  // against PCIe's 25 (a replay of the first chunk alone added the same as one chunk).
  const auto added = [](const ReplayComparison& c) {
    return static_cast<double>(c.dxpu.elapsed_ns) - static_cast<double>(c.native.elapsed_ns);
  };
  const double four_mib_ns = (4 << 20) * (8 / p.fabric_bandwidth_gbps - 8 / p.pcie_bandwidth_gbps);
  EXPECT_GT(added(b.value()) - added(a.value()), 0.8 * four_mib_ns);
}

}  // namespace
}  // namespace dxpu::perfmodel
