// model_test.cc - the performance model's invariants (lib/perfmodel/model.h): the native
// re-timing reproduces the trace, zero DxPU latency is zero overhead, overhead grows with
// latency, posted-only work barely moves, queued launches hide their latency, dry ones and
// synchronisations cost exactly their deltas, the prefetch depth bounds a queue of tiny
// kernels, a new GPFIFO read waits for the fetched entries, launches wait behind copy data on
// its way to the GPU, the copy formulas, the breakdown adds up; the re-timed trace and the
// timeline written from it; and the sweep's outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "perfmodel/model.h"
#include "perfmodel/sweep.h"
#include "perfmodel/timeline.h"
#include "perfmodel/trace.h"

namespace dxpu::perfmodel {
namespace {

// Builds a trace on one host thread and one GPU stream, times in ns.
class TraceBuilder {
 public:
  // A launch call at `t` taking `call_ns`, and its GPU operation at `start` for `dur`.
  TraceBuilder& Op(GpuOpKind kind, int64_t t, int64_t call_ns, int64_t start, int64_t dur,
                   uint64_t bytes = 0, int64_t stream = 7) {
    const int64_t c = next_correlation_++;
    const CallKind call = kind == GpuOpKind::kKernel   ? CallKind::kLaunch
                          : kind == GpuOpKind::kMemset ? CallKind::kMemset
                                                       : CallKind::kCopy;
    trace_.calls.push_back({call, 1, t, call_ns, c});
    trace_.ops.push_back({kind, 0, stream, start, dur, bytes, c});
    return *this;
  }
  TraceBuilder& Sync(int64_t t, int64_t dur) {
    trace_.calls.push_back({CallKind::kSync, 1, t, dur, kNoCorrelation});
    return *this;
  }
  Trace Build() const {
    Trace t = trace_;
    std::stable_sort(
        t.calls.begin(), t.calls.end(),
        [](const RuntimeCall& a, const RuntimeCall& b) { return a.start_ns < b.start_ns; });
    std::stable_sort(t.ops.begin(), t.ops.end(),
                     [](const GpuOp& a, const GpuOp& b) { return a.start_ns < b.start_ns; });
    return t;
  }

 private:
  Trace trace_;
  int64_t next_correlation_ = 1;
};

int64_t Extent(const Trace& t) {
  int64_t end = 0;
  for (const RuntimeCall& c : t.calls) end = std::max(end, c.start_ns + c.dur_ns);
  for (const GpuOp& o : t.ops) end = std::max(end, o.start_ns + o.dur_ns);
  return end;
}

// A decode-like loop, natively timed with the model's own native path: each iteration launches
// a kernel on an idle GPU (the launch latency exposed), copies its result back and waits.
Trace DecodeLoop(const ModelParams& p, int iterations, int64_t kernel_ns = 20'000) {
  const PathCosts native = NativePath(p);
  TraceBuilder b;
  int64_t t = 0;
  for (int i = 0; i < iterations; ++i) {
    const int64_t call = 3'000;
    const auto start = static_cast<int64_t>(static_cast<double>(t + call) + native.launch_ns);
    b.Op(GpuOpKind::kKernel, t, call, start, kernel_ns);
    const auto copy = static_cast<int64_t>(D2hCopyNs(p, false, 4096));
    // The copy was launched long before (while the kernel ran): it follows the kernel.
    b.Op(GpuOpKind::kMemcpyDtoH, t + call, 2'000, start + kernel_ns, copy, 4096);
    const int64_t gpu_end = start + kernel_ns + copy;
    const auto sync_end =
        static_cast<int64_t>(static_cast<double>(gpu_end + 1'000) + native.notify_ns);
    b.Sync(t + call + 2'000, sync_end - (t + call + 2'000));
    t = sync_end + 5'000;  // the host's own work before the next token
  }
  return b.Build();
}

// A queue of work launched up front (a call every `call_every` ns), then one synchronisation.
Trace QueuedWork(const ModelParams& p, GpuOpKind kind, int ops, int64_t op_ns, uint64_t bytes,
                 int64_t call_every = 2'000) {
  TraceBuilder b;
  const PathCosts native = NativePath(p);
  auto gpu = static_cast<int64_t>(static_cast<double>(call_every) + native.launch_ns);
  for (int i = 0; i < ops; ++i) {
    b.Op(kind, call_every * i, call_every, gpu, op_ns, bytes);
    gpu += op_ns;
  }
  const int64_t sync = call_every * ops;
  b.Sync(sync, std::max<int64_t>(gpu + static_cast<int64_t>(native.notify_ns) - sync, 100));
  return b.Build();
}

// Irregular work as a real GPU's trace has it: two host threads, two streams, gaps between
// kernels the model does not explain, copies and syncs at odd times.
Trace Irregular() {
  Trace t;
  uint64_t x = 12345;
  const auto next = [&](int64_t max) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(max));
  };
  int64_t host[2] = {0, 500};
  int64_t gpu[2] = {3'000, 4'000};
  int64_t correlation = 1;
  for (int i = 0; i < 200; ++i) {
    const int th = i % 2;
    const int64_t call = 1'000 + next(4'000);
    const auto kind = static_cast<GpuOpKind>(next(4));
    const int64_t start = std::max(gpu[th] + next(3'000), host[th] + call + 200 + next(2'000));
    const int64_t dur = 500 + next(50'000);
    t.calls.push_back({kind == GpuOpKind::kKernel ? CallKind::kLaunch : CallKind::kCopy, th + 1,
                       host[th], call, correlation});
    t.ops.push_back(
        {kind, 0, 7 + th, start, dur, static_cast<uint64_t>(next(1 << 20)), correlation});
    correlation++;
    host[th] += call + next(5'000);
    gpu[th] = start + dur;
    if (next(8) == 0) {  // a synchronisation that waits for this stream
      const int64_t end = std::max(host[th] + 2'000, gpu[th] + 300 + next(2'000));
      t.calls.push_back({CallKind::kSync, th + 1, host[th], end - host[th], kNoCorrelation});
      host[th] = end + next(3'000);
    }
  }
  std::stable_sort(t.calls.begin(), t.calls.end(), [](const RuntimeCall& a, const RuntimeCall& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.start_ns < b.start_ns;
  });
  std::stable_sort(t.ops.begin(), t.ops.end(),
                   [](const GpuOp& a, const GpuOp& b) { return a.start_ns < b.start_ns; });
  return t;
}

TEST(PerfModel, NativeRetimingReproducesTheTrace) {
  const ModelParams p;
  for (const Trace& t :
       {DecodeLoop(p, 10), QueuedWork(p, GpuOpKind::kKernel, 50, 30'000, 0), Irregular()}) {
    const Prediction r = Predict(t, p);
    EXPECT_DOUBLE_EQ(r.native_ns, static_cast<double>(Extent(t)));
  }
}

// A watchdog thread polling cudaEventQuery (as NCCL's does) on after the last real
// synchronisation: its calls keep their native times, and the end of the workload is what the
// working thread waits for, not the watchdog's last poll (issue 35: the prediction read 0.00% at
// any latency).
TEST(PerfModel, AWatchdogThreadDoesNotHideTheOverhead) {
  ModelParams p;
  p.added_latency_ns = 5'000;
  const Trace work = DecodeLoop(p, 20);
  Trace watched = work;
  const int64_t until = Extent(work) + 500'000;
  for (int64_t t = 0; t < until; t += 10'000)
    watched.calls.push_back({CallKind::kOther, 2, t, 1'000, kNoCorrelation});
  std::stable_sort(watched.calls.begin(), watched.calls.end(),
                   [](const RuntimeCall& a, const RuntimeCall& b) {
                     return a.thread != b.thread ? a.thread < b.thread : a.start_ns < b.start_ns;
                   });
  const Prediction alone = Predict(work, p);
  const Prediction with_watchdog = Predict(watched, p);
  ASSERT_GT(alone.overhead_pct, 1.0);
  EXPECT_DOUBLE_EQ(with_watchdog.native_ns, alone.native_ns);
  EXPECT_DOUBLE_EQ(with_watchdog.overhead_pct, alone.overhead_pct);
}

TEST(PerfModel, ZeroDxpuLatencyAndAmpleBandwidthIsZeroOverhead) {
  ModelParams p;
  p.added_latency_ns = 0;
  p.box_pcie_latency_ns = 0;
  p.fabric_bandwidth_gbps = p.pcie_bandwidth_gbps;
  for (const Trace& t : {DecodeLoop(p, 10),
                         QueuedWork(p, GpuOpKind::kMemcpyHtoD, 20, 50'000, 1 << 20), Irregular()}) {
    const Prediction r = Predict(t, p);
    EXPECT_DOUBLE_EQ(r.dxpu_ns, r.native_ns);
    EXPECT_DOUBLE_EQ(r.overhead_pct, 0);
  }
}

TEST(PerfModel, OverheadGrowsWithLatency) {
  ModelParams p;
  const Trace loop = DecodeLoop(p, 20);
  const Trace copies = QueuedWork(p, GpuOpKind::kMemcpyHtoD, 10, 100'000, 2 << 20);
  const Trace irregular = Irregular();
  for (const Trace* t : {&loop, &copies, &irregular}) {
    double last = -1;
    for (const double us : {0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0}) {
      p.added_latency_ns = us * 1e3;
      const double overhead = Predict(*t, p).overhead_pct;
      EXPECT_GT(overhead, last) << "at " << us << " us";
      last = overhead;
    }
  }
}

TEST(PerfModel, DryLaunchesAndSyncsCostExactlyTheirDeltas) {
  ModelParams p;
  p.added_latency_ns = 2'000;
  constexpr int kTokens = 30;
  const Trace t = DecodeLoop(p, kTokens);
  const Prediction r = Predict(t, p);
  EXPECT_EQ(r.counts.dry_launches, uint64_t{kTokens});
  EXPECT_EQ(r.counts.launches, uint64_t{2} * kTokens);
  EXPECT_EQ(r.counts.syncs, uint64_t{kTokens});
  const PathCosts native = NativePath(p), dxpu = DxpuPath(p);
  const double per_token = (dxpu.launch_ns - native.launch_ns) +
                           (dxpu.notify_ns - native.notify_ns) +
                           (D2hCopyNs(p, true, 4096) - D2hCopyNs(p, false, 4096));
  EXPECT_NEAR(r.dxpu_ns - r.native_ns, kTokens * per_token, 1e-6 * r.native_ns);
  EXPECT_NEAR(r.breakdown.launch_ns, kTokens * (dxpu.launch_ns - native.launch_ns), 1);
  EXPECT_NEAR(r.breakdown.sync_ns, kTokens * (dxpu.notify_ns - native.notify_ns), 1);
  EXPECT_EQ(r.breakdown.h2d_ns, 0);
}

TEST(PerfModel, QueuedLaunchesHideTheirLatency) {
  ModelParams p;
  p.added_latency_ns = 5'000;
  // Kernels much longer than a fetch round trip, queued up front: only the first launch and the
  // last synchronisation show.
  const Trace t = QueuedWork(p, GpuOpKind::kKernel, 100, 200'000, 0);
  const Prediction r = Predict(t, p);
  EXPECT_EQ(r.counts.dry_launches, 1u);
  const PathCosts native = NativePath(p), dxpu = DxpuPath(p);
  EXPECT_NEAR(r.dxpu_ns - r.native_ns,
              (dxpu.launch_ns - native.launch_ns) + (dxpu.notify_ns - native.notify_ns), 1);
}

TEST(PerfModel, ThePrefetchDepthBoundsAQueueOfTinyKernels) {
  ModelParams p;
  p.added_latency_ns = 10'000;
  constexpr int kKernels = 400;
  const Trace t = QueuedWork(p, GpuOpKind::kKernel, kKernels, 1'000, 0, 100);
  const Prediction r = Predict(t, p);
  // At most `prefetch` pushbuffers are fetched per round trip.
  const double fetch = DxpuPath(p).fetch_ns;
  EXPECT_GE(r.dxpu_ns, (static_cast<double>(kKernels) / p.prefetch - 1) * fetch);
  p.prefetch = 16;
  EXPECT_LT(Predict(t, p).dxpu_ns, r.dxpu_ns);
}

// With prefetch 0 the GPU reads the next GPFIFO entries only once every fetched one is done:
// a kernel rung while the one before runs is read, and its pushbuffer fetched, after it ends.
TEST(PerfModel, ANewGpfifoReadWaitsForTheFetchedEntriesToRun) {
  ModelParams p;
  p.prefetch = 0;
  p.added_latency_ns = 5'000;
  const PathCosts native = NativePath(p), dxpu = DxpuPath(p);
  constexpr int64_t kCall = 1'000, kKernel = 200'000;
  const auto first = static_cast<int64_t>(kCall + native.launch_ns);
  const int64_t first_end = first + kKernel;
  const auto second =
      static_cast<int64_t>(static_cast<double>(first_end) + native.gpfifo_ns + native.fetch_ns);
  TraceBuilder b;
  b.Op(GpuOpKind::kKernel, 0, kCall, first, kKernel);
  b.Op(GpuOpKind::kKernel, 50'000, kCall, second, kKernel);
  const Trace t = b.Build();
  const Prediction r = Predict(t, p);
  EXPECT_DOUBLE_EQ(r.native_ns, static_cast<double>(second + kKernel));
  const double want =
      static_cast<double>(kCall + 2 * kKernel) + dxpu.launch_ns + dxpu.gpfifo_ns + dxpu.fetch_ns;
  EXPECT_NEAR(r.dxpu_ns, want, 3);  // the native times in whole ns
  EXPECT_NEAR(r.breakdown.launch_ns, r.dxpu_ns - r.native_ns, 1);
}

// The host-to-GPU direction is one FIFO: a kernel rung on another stream while a host-to-device
// copy's data is on its way waits behind it, natively and more so through DxPU (the data takes
// longer on the slower fabric); a device-to-host copy's does not (its data goes the other way).
TEST(PerfModel, ALaunchWaitsBehindCopyDataOnItsWayToTheGpu) {
  ModelParams p;
  p.added_latency_ns = 5'000;
  const PathCosts native = NativePath(p), dxpu = DxpuPath(p);
  constexpr uint64_t kBytes = 8 << 20;
  // Rung once the copy's data has begun to leave the host, both ways.
  constexpr int64_t kCall = 1'000, kRing = 50'000, kKernel = 2'000'000;
  const double wire_bytes = static_cast<double>(kBytes) * (256.0 + 24) / 256;
  // When the doorbell rung at kRing + kCall leaves the host, on a path of `one_way` ns and
  // `gbps`, behind the data of a copy launched at 0 (which reaches the host's end one way after
  // the copy starts). Nothing is queued for a device-to-host copy.
  const auto DoorbellLeaves = [&](const PathCosts& path, double gbps, bool h2d) {
    const double copy_data = kCall + path.launch_ns + path.one_way_ns;
    return h2d ? std::max<double>(kRing + kCall, copy_data + wire_bytes / (gbps / 8))
               : kRing + kCall;
  };
  for (const bool h2d : {true, false}) {
    const GpuOpKind copy = h2d ? GpuOpKind::kMemcpyHtoD : GpuOpKind::kMemcpyDtoH;
    const auto copy_ns =
        static_cast<int64_t>(h2d ? H2dCopyNs(p, false, kBytes) : D2hCopyNs(p, false, kBytes));
    const auto kernel =
        static_cast<int64_t>(DoorbellLeaves(native, 200, h2d) + native.launch_ns) + 1;
    TraceBuilder b;
    b.Op(copy, 0, kCall, static_cast<int64_t>(kCall + native.launch_ns), copy_ns, kBytes, 7);
    b.Op(GpuOpKind::kKernel, kRing, kCall, kernel, kKernel, 0, 8);
    const Prediction r = Predict(b.Build(), p);
    EXPECT_DOUBLE_EQ(r.native_ns, static_cast<double>(kernel + kKernel)) << h2d;
    EXPECT_NEAR(r.dxpu_ns, DoorbellLeaves(dxpu, 100, h2d) + dxpu.launch_ns + 1 + kKernel, 2) << h2d;
  }
}

// A kernel rung just after a big host-to-device copy starts waits natively behind the copy's
// data; through DxPU the copy starts later and its data reaches the host after the doorbell has
// gone. The model still never has it start earlier than the trace shows.
TEST(PerfModel, NothingStartsEarlierThanNatively) {
  ModelParams p;
  p.added_latency_ns = 5'000;
  const PathCosts native = NativePath(p);
  constexpr uint64_t kBytes = 8 << 20;
  constexpr int64_t kCall = 1'000, kRing = 5'000;
  const auto copy_start = static_cast<int64_t>(kCall + native.launch_ns);
  const double data_gone = static_cast<double>(copy_start) + native.one_way_ns +
                           static_cast<double>(kBytes) * (256.0 + 24) / 256 / (200 / 8.0);
  TraceBuilder b;
  b.Op(GpuOpKind::kMemcpyHtoD, 0, kCall, copy_start,
       static_cast<int64_t>(H2dCopyNs(p, false, kBytes)), kBytes, 7);
  b.Op(GpuOpKind::kKernel, kRing, kCall, static_cast<int64_t>(data_gone + native.launch_ns) + 1,
       10'000, 0, 8);
  const Trace t = b.Build();
  const Trace r = Retime(t, p);
  for (size_t i = 0; i < t.ops.size(); ++i) EXPECT_GE(r.ops[i].start_ns, t.ops[i].start_ns) << i;
  const Prediction pr = Predict(t, p);
  EXPECT_GE(pr.dxpu_ns, pr.native_ns);
  EXPECT_GE(pr.breakdown.launch_ns, 0);
}

TEST(PerfModel, PostedOnlyWorkBarelyMovesWhileReadsDo) {
  ModelParams p;
  p.added_latency_ns = 10'000;
  p.fabric_bandwidth_gbps = p.pcie_bandwidth_gbps;  // latency alone
  const uint64_t bytes = 4 << 20;
  const auto copy_ns = static_cast<int64_t>(D2hCopyNs(p, false, bytes));
  const Prediction writes = Predict(QueuedWork(p, GpuOpKind::kMemcpyDtoH, 100, copy_ns, bytes), p);
  const Prediction reads = Predict(QueuedWork(p, GpuOpKind::kMemcpyHtoD, 100, copy_ns, bytes), p);
  EXPECT_LT(writes.overhead_pct, 1.0);
  EXPECT_EQ(writes.breakdown.d2h_ns, 0);
  EXPECT_GT(reads.overhead_pct, 10 * writes.overhead_pct);
  EXPECT_GT(reads.breakdown.h2d_ns, 0);
}

// Copies that ran natively at 4 GB/s (pageable memory), slower than the fabric's 12.5 GB/s:
// DxPU adds their reads' round trip, not the fabric's rate against PCIe's (issue 35: charged the
// difference, copy-heavy traces read up to ~20x the overhead). At the native path's own speed
// they still get the paths' whole difference.
TEST(PerfModel, CopiesSlowerThanTheFabricKeepTheirOwnPace) {
  ModelParams p;  // PCIe 25 GB/s, fabric 12.5 GB/s, 1 us added one way
  const uint64_t bytes = 64 << 20;
  const int64_t slow_ns = static_cast<int64_t>(bytes / 4);  // 4 bytes a ns: 4 GB/s
  const auto fast_ns = static_cast<int64_t>(H2dCopyNs(p, false, bytes));
  const Prediction slow = Predict(QueuedWork(p, GpuOpKind::kMemcpyHtoD, 10, slow_ns, bytes), p);
  const Prediction fast = Predict(QueuedWork(p, GpuOpKind::kMemcpyHtoD, 10, fast_ns, bytes), p);
  const double added_rtt = 2 * (DxpuPath(p).one_way_ns - NativePath(p).one_way_ns);
  EXPECT_NEAR(slow.breakdown.h2d_ns, 10 * added_rtt, 1.0);
  EXPECT_LT(slow.overhead_pct, 0.1);
  EXPECT_NEAR(fast.breakdown.h2d_ns, 10 * (H2dCopyNs(p, true, bytes) - H2dCopyNs(p, false, bytes)),
              10.0);
  EXPECT_GT(fast.overhead_pct, 40.0);
  // The same for device-to-host copies: a slow one keeps its pace.
  const int64_t slow_d2h = static_cast<int64_t>(bytes / 4);
  EXPECT_DOUBLE_EQ(D2hRetimedNs(p, static_cast<double>(slow_d2h), bytes),
                   static_cast<double>(slow_d2h));
  const double at_pcie = D2hCopyNs(p, false, bytes);
  EXPECT_DOUBLE_EQ(D2hRetimedNs(p, at_pcie, bytes), D2hCopyNs(p, true, bytes));
}

TEST(PerfModel, CopyFormulas) {
  ModelParams p;
  p.read_tags = 1;
  p.mrrs = 4096;
  p.added_latency_ns = 10'000;
  const double rtt = 2 * DxpuPath(p).one_way_ns;
  const uint64_t bytes = 64 << 20;
  // One tag: one MRRS per round trip.
  EXPECT_NEAR(H2dCopyNs(p, true, bytes), rtt + static_cast<double>(bytes) / (4096 / rtt), 1);
  // Enough tags: the path's rate, less the TLP overhead.
  p.read_tags = 1024;
  const double wire = static_cast<double>(bytes) * (256.0 + 24) / 256;
  EXPECT_NEAR(H2dCopyNs(p, true, bytes), rtt + wire / (100 / 8.0), 1);
  EXPECT_NEAR(D2hCopyNs(p, true, bytes), wire / (100 / 8.0), 1);
  EXPECT_NEAR(D2hCopyNs(p, false, bytes), wire / (200 / 8.0), 1);
  EXPECT_EQ(H2dCopyNs(p, true, 0), 0);
}

TEST(PerfModel, TheBreakdownAddsUpToTheTotal) {
  ModelParams p;
  p.added_latency_ns = 3'000;
  TraceBuilder b;
  b.Op(GpuOpKind::kMemcpyHtoD, 0, 2'000, 4'000, 80'000, 1 << 20)
      .Op(GpuOpKind::kKernel, 2'000, 2'000, 84'000, 30'000)
      .Op(GpuOpKind::kMemcpyDtoH, 4'000, 2'000, 114'000, 20'000, 1 << 18)
      .Sync(6'000, 130'000)
      .Op(GpuOpKind::kKernel, 140'000, 3'000, 145'000, 10'000)
      .Sync(143'000, 13'000);
  const Prediction r = Predict(b.Build(), p);
  const Breakdown& d = r.breakdown;
  for (const double part : {d.sync_ns, d.launch_ns, d.h2d_ns, d.d2h_ns, d.other_ns})
    EXPECT_GE(part, 0);
  EXPECT_NEAR(d.sync_ns + d.launch_ns + d.h2d_ns + d.d2h_ns + d.other_ns, r.dxpu_ns - r.native_ns,
              1e-6);
  EXPECT_GT(d.sync_ns, 0);
  EXPECT_GT(d.launch_ns, 0);
  EXPECT_GT(d.h2d_ns, 0);
}

TEST(PerfModel, SummaryCountsAddEveryCost) {
  ModelParams p;
  p.added_latency_ns = 1'000;
  WorkloadSummary s;
  s.native_ns = 1e6;
  EXPECT_EQ(Predict(s, p).overhead_pct, 0);
  s.syncs = 10;
  s.dry_launches = 5;
  s.h2d_copies = 4;
  s.h2d_bytes = 4 << 20;
  const PathCosts native = NativePath(p), dxpu = DxpuPath(p);
  const double expect = 10 * (dxpu.notify_ns - native.notify_ns) +
                        5 * (dxpu.launch_ns - native.launch_ns) +
                        4 * (H2dCopyNs(p, true, 1 << 20) - H2dCopyNs(p, false, 1 << 20));
  const Prediction r = Predict(s, p);
  EXPECT_NEAR(r.dxpu_ns - r.native_ns, expect, 1e-6);
  EXPECT_NEAR(r.overhead_pct, expect / 1e6 * 100, 1e-9);
}

TEST(PerfModel, CheckParamsRefusesWhatCannotBe) {
  EXPECT_EQ(CheckParams(ModelParams{}), "");
  ModelParams p;
  p.mps = 300;
  EXPECT_NE(CheckParams(p).find("MPS"), std::string::npos);
  p = {};
  p.read_tags = 0;
  EXPECT_NE(CheckParams(p).find("tags"), std::string::npos);
  p = {};
  p.fabric_bandwidth_gbps = 0;
  EXPECT_NE(CheckParams(p).find("fabric bandwidth"), std::string::npos);
  p = {};
  p.added_latency_ns = -1;
  EXPECT_NE(CheckParams(p).find("added latency"), std::string::npos);
}

// The re-timed trace is the prediction event by event: the same events, none earlier than
// natively, operations of one stream in order, and its latest end the predicted time; with
// nothing added it is the trace itself.
TEST(PerfModel, RetimedTraceIsThePredictionEventByEvent) {
  ModelParams p;
  p.added_latency_ns = 5'000;
  for (const Trace& t : {DecodeLoop(p, 10), Irregular()}) {
    const Trace r = Retime(t, p);
    ASSERT_EQ(r.calls.size(), t.calls.size());
    ASSERT_EQ(r.ops.size(), t.ops.size());
    int64_t end = 0;
    for (size_t i = 0; i < t.calls.size(); ++i) {
      EXPECT_EQ(r.calls[i].kind, t.calls[i].kind);
      EXPECT_EQ(r.calls[i].correlation, t.calls[i].correlation);
      EXPECT_GE(r.calls[i].start_ns, t.calls[i].start_ns) << "call " << i;
      end = std::max(end, r.calls[i].start_ns + r.calls[i].dur_ns);
    }
    for (size_t i = 0; i < t.ops.size(); ++i) {
      EXPECT_EQ(r.ops[i].correlation, t.ops[i].correlation);
      EXPECT_EQ(r.ops[i].bytes, t.ops[i].bytes);
      EXPECT_GE(r.ops[i].start_ns, t.ops[i].start_ns) << "op " << i;
      end = std::max(end, r.ops[i].start_ns + r.ops[i].dur_ns);
      for (size_t j = 0; j < i; ++j) {
        if (t.ops[j].stream == t.ops[i].stream && t.ops[j].start_ns < t.ops[i].start_ns) {
          EXPECT_GE(r.ops[i].start_ns, r.ops[j].start_ns + r.ops[j].dur_ns - 1)
              << "op " << i << " after op " << j << " of its stream";
        }
      }
    }
    EXPECT_NEAR(static_cast<double>(end), Predict(t, p).dxpu_ns, 1);
  }
  p.added_latency_ns = 0;
  p.box_pcie_latency_ns = 0;
  p.fabric_bandwidth_gbps = p.pcie_bandwidth_gbps;
  const Trace t = Irregular();
  const Trace same = Retime(t, p);
  for (size_t i = 0; i < t.ops.size(); ++i) {
    EXPECT_EQ(same.ops[i].start_ns, t.ops[i].start_ns);
    EXPECT_EQ(same.ops[i].dur_ns, t.ops[i].dur_ns);
  }
  for (size_t i = 0; i < t.calls.size(); ++i) {
    EXPECT_EQ(same.calls[i].start_ns, t.calls[i].start_ns);
    EXPECT_EQ(same.calls[i].dur_ns, t.calls[i].dur_ns);
  }
}

// The timeline: both sides' events, each on its side's host or GPU process, the DxPU ones
// saying how much later they start.
TEST(PerfModel, TimelineHasBothSidesEventForEvent) {
  ModelParams p;
  p.added_latency_ns = 2'000;
  const Trace t = Irregular();
  const Trace r = Retime(t, p);
  std::ostringstream out;
  WriteTimeline(out, t, r);
  const nlohmann::json doc = nlohmann::json::parse(out.str());
  size_t native_calls = 0, native_ops = 0, dxpu_calls = 0, dxpu_ops = 0, later = 0;
  std::vector<std::string> processes;
  for (const nlohmann::json& e : doc["traceEvents"]) {
    if (e["ph"] == "M") {
      if (e["name"] == "process_name") processes.push_back(e["args"]["name"]);
      continue;
    }
    ASSERT_EQ(e["ph"], "X");
    const int64_t pid = e["pid"];
    const bool host = pid == 1 || pid == 2;
    const bool dxpu = pid == 2 || pid >= 2000;
    (dxpu ? (host ? dxpu_calls : dxpu_ops) : (host ? native_calls : native_ops))++;
    if (!dxpu) {
      EXPECT_FALSE(e["args"].contains("later_us"));
      continue;
    }
    // The side's events come in the traces' order: calls, then operations.
    const double ts_ns = e["ts"].get<double>() * 1e3;
    const double later_ns = e["args"]["later_us"].get<double>() * 1e3;
    const int64_t now = host ? r.calls[dxpu_calls - 1].start_ns : r.ops[dxpu_ops - 1].start_ns;
    const int64_t before = host ? t.calls[dxpu_calls - 1].start_ns : t.ops[dxpu_ops - 1].start_ns;
    EXPECT_NEAR(ts_ns, static_cast<double>(now), 0.5);
    EXPECT_NEAR(later_ns, static_cast<double>(now - before), 0.5);
    if (later_ns > 0) later++;
  }
  EXPECT_EQ(native_calls, t.calls.size());
  EXPECT_EQ(dxpu_calls, t.calls.size());
  EXPECT_EQ(native_ops, t.ops.size());
  EXPECT_EQ(dxpu_ops, t.ops.size());
  EXPECT_GT(later, t.ops.size() / 2) << "2 us added: most events move";
  EXPECT_NE(std::find(processes.begin(), processes.end(), "native: host"), processes.end());
  EXPECT_NE(std::find(processes.begin(), processes.end(), "DxPU: GPU 0"), processes.end());
}

TEST(PerfModel, SweepWritesEveryPointAsCsvJsonAndSvg) {
  const ModelParams p;
  const Trace t = DecodeLoop(p, 5);
  const std::vector<double> latencies = {0, 1'000, 5'000};
  const std::vector<double> bandwidths = {25, 100};
  size_t calls = 0;
  const std::vector<SweepPoint> points =
      Sweep([&](const ModelParams& q) { return Predict(t, q); }, p, latencies, bandwidths,
            [&](size_t done, size_t total) {
              EXPECT_EQ(total, 6u);
              EXPECT_EQ(done, ++calls);
            });
  ASSERT_EQ(points.size(), 6u);
  EXPECT_EQ(points[3].added_latency_ns, 1'000);
  EXPECT_EQ(points[3].fabric_bandwidth_gbps, 100);
  const std::string csv = SweepToCsv(points);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 7);
  EXPECT_EQ(csv.rfind("added_latency_us,fabric_bandwidth_gbps,", 0), 0u);
  const nlohmann::json j = SweepToJson(points);
  ASSERT_EQ(j.size(), 6u);
  EXPECT_DOUBLE_EQ(j[5]["overhead_pct"].get<double>(), points[5].prediction.overhead_pct);
  const std::string svg = SweepToSvg(points, "a <b> & \"c\"");
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1))
    lines++;
  EXPECT_EQ(lines, 2u);
  EXPECT_NE(svg.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
}

// --- GPUs placed over boxes (issue 35 item 2) ---

// `copies` peer copies of `bytes` at once, GPU 2k to GPU 2k+1 (k = 0, 1, ...: each copy from its
// own GPU on its own stream), each enqueued by its own call, then one synchronisation: as the
// trace shows them natively at the native path's speed.
Trace PeerCopies(const ModelParams& p, int copies, uint64_t bytes, bool into_one_gpu = false) {
  Trace t;
  const auto native_ns = static_cast<int64_t>(
      std::llround(static_cast<double>(bytes) * 8 / p.pcie_bandwidth_gbps + 4 * p.pcie_latency_ns));
  for (int k = 0; k < copies; ++k) {
    t.calls.push_back({CallKind::kCopy, 1, 100 + k, 1, k + 1});
    GpuOp op{GpuOpKind::kMemcpyPeer, 2 * k, 7, 200, native_ns, bytes, k + 1};
    op.peer_device = into_one_gpu ? 1 : 2 * k + 1;
    t.ops.push_back(op);
  }
  // The destinations run nothing: they come after the sources in placement order.
  t.calls.push_back({CallKind::kSync, 1, 150, 200 + native_ns + 100, kNoCorrelation});
  return t;
}

TEST(Placement, APeerCopyBetweenBoxesCostsTheFabricTwiceAndOneInsideABoxNothing) {
  ModelParams p;
  const Trace t = PeerCopies(p, 1, 1 << 20);
  ASSERT_EQ(CheckPlacement(t, p), "");
  const Prediction one_box = Predict(t, p);
  EXPECT_EQ(one_box.breakdown.peer_ns, 0);
  EXPECT_EQ(one_box.counts.peer_copies_between_boxes, 0u);
  p.gpus_per_box = {2};
  EXPECT_DOUBLE_EQ(Predict(t, p).dxpu_ns, one_box.dxpu_ns);  // the same as no placement
  p.gpus_per_box = {1, 1};
  const Prediction two_boxes = Predict(t, p);
  EXPECT_EQ(two_boxes.counts.peer_copies_between_boxes, 1u);
  EXPECT_EQ(two_boxes.counts.peer_bytes_between_boxes, 1u << 20);
  // 1 MiB at the fabric's 100 Gb/s instead of PCIe's 200, four one-way trips of the DxPU path
  // (box to host, host to box, the flush read's request and reply) instead of PCIe's, and one
  // frame the host has whole before it sends it on (the root complex natively does not wait).
  const double wire = (1 << 20) * (1 + p.tlp_overhead_bytes / p.mps);
  const double want = wire * 8 / p.fabric_bandwidth_gbps - wire * 8 / p.pcie_bandwidth_gbps +
                      4 * (DxpuPath(p).one_way_ns - NativePath(p).one_way_ns) +
                      p.fabric_frame_bytes * 8 / p.fabric_bandwidth_gbps;
  EXPECT_NEAR(two_boxes.breakdown.peer_ns, want, 0.01 * want);
  EXPECT_NEAR(two_boxes.dxpu_ns - one_box.dxpu_ns, two_boxes.breakdown.peer_ns, 1);
  // More latency, more time.
  p.added_latency_ns *= 4;
  EXPECT_GT(Predict(t, p).breakdown.peer_ns, two_boxes.breakdown.peer_ns);
}

TEST(Placement, CopiesSharingABoxsFabricLinkShareIt) {
  ModelParams p;
  // Two copies from two GPUs of box 0 at once, into box 1: box 0's link carries both.
  const Trace t = PeerCopies(p, 2, 4 << 20);
  p.gpus_per_box = {2, 2};  // sources 0, 2 then destinations 1, 3: {0, 2} and {1, 3}
  const Prediction shared = Predict(t, p);
  p.gpus_per_box = {1, 1, 1, 1};  // each source its own box: the links are not shared
  const Prediction apart = Predict(t, p);
  const double wire_ns =
      (4 << 20) * (1 + p.tlp_overhead_bytes / p.mps) * 8 / p.fabric_bandwidth_gbps;
  EXPECT_GT(shared.dxpu_ns - apart.dxpu_ns, 0.9 * wire_ns);
  // Two copies into one GPU's box from two boxes: its link from the host carries both. Natively
  // they shared that GPU's own PCIe link too, at twice the rate: the difference is what is added.
  const Trace into_one = PeerCopies(p, 2, 4 << 20, true);
  p.gpus_per_box = {1, 1, 1};  // GPUs 0, 2, 1
  const double pcie_wire_ns = wire_ns * p.fabric_bandwidth_gbps / p.pcie_bandwidth_gbps;
  EXPECT_GT(Predict(into_one, p).dxpu_ns - apart.dxpu_ns, 0.9 * (wire_ns - pcie_wire_ns));
}

// GPUs 0, 1 and 2 each copy into GPU 3 at once: natively the three shared GPU 3's PCIe link, each
// at a third of it, as the trace shows.
Trace ThreeCopiesIntoOneGpu(const ModelParams& p, uint64_t bytes) {
  Trace t;
  const double wire_ns =
      static_cast<double>(bytes) * (1 + p.tlp_overhead_bytes / p.mps) * 8 / p.pcie_bandwidth_gbps;
  const auto native_ns = static_cast<int64_t>(std::llround((3 * wire_ns) + 4 * p.pcie_latency_ns));
  for (int k = 0; k < 3; ++k) {
    t.calls.push_back({CallKind::kCopy, 1, 100 + k, 1, k + 1});
    GpuOp op{GpuOpKind::kMemcpyPeer, k, 7 + k, 200, native_ns, bytes, k + 1};
    op.peer_device = 3;
    t.ops.push_back(op);
  }
  t.calls.push_back({CallKind::kSync, 1, 150, 200 + native_ns + 100, kNoCorrelation});
  return t;
}

TEST(Placement, ACopyInsideABoxNoLongerSharesWithCopiesNowBetweenBoxes) {
  ModelParams p;
  const uint64_t bytes = 4 << 20;
  const Trace t = ThreeCopiesIntoOneGpu(p, bytes);
  const double pcie_wire_ns =
      static_cast<double>(bytes) * (1 + p.tlp_overhead_bytes / p.mps) * 8 / p.pcie_bandwidth_gbps;
  // All in one box: the box's switch shares GPU 3's link as the root complex did.
  p.gpus_per_box = {4};
  const Trace one_box = Retime(t, p);
  for (const GpuOp& op : one_box.ops)
    EXPECT_NEAR(static_cast<double>(op.dur_ns), static_cast<double>(t.ops[0].dur_ns),
                0.02 * pcie_wire_ns);
  // GPUs 2 and 3 in one box, 0 and 1 each in their own: 2 -> 3 has GPU 3's link to itself
  // (the others come down box 2's fabric link), so it runs at the link's full rate.
  p.gpus_per_box = {1, 1, 2};
  const Trace apart = Retime(t, p);
  ASSERT_EQ(apart.ops.size(), 3u);
  EXPECT_NEAR(static_cast<double>(apart.ops[2].dur_ns), pcie_wire_ns, 0.05 * pcie_wire_ns);
  // 0 -> 3 and 1 -> 3 share box 2's fabric link, at half PCIe's rate: each takes four times
  // its PCIe wire time (and the frame and trips besides).
  for (size_t k = 0; k < 2; ++k)
    EXPECT_NEAR(static_cast<double>(apart.ops[k].dur_ns), 4 * pcie_wire_ns, 0.05 * pcie_wire_ns);
}

TEST(Placement, APlacementThatDoesNotFitTheTraceIsRefusedAndSaysWhy) {
  ModelParams p;
  const Trace t = PeerCopies(p, 2, 4096);  // 4 GPUs
  p.gpus_per_box = {2, 1};
  EXPECT_EQ(CheckPlacement(t, p), "the placement 2+1 holds 3 GPUs; the trace has 4");
  p.gpus_per_box = {2, 0, 2};
  EXPECT_NE(CheckParams(p), "");
  p.gpus_per_box = {4};
  EXPECT_EQ(CheckPlacement(t, p), "");
  EXPECT_EQ(CheckParams(p), "");
}

// One rank's trace of a collective job: a launch, its NCCL kernel of `dur` ns described as the
// profiler describes it, a synchronisation.
Trace OneCollective(CollectiveKind kind, uint64_t bytes, uint32_t ranks, int64_t dur,
                    CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing) {
  Trace t;
  t.calls.push_back({CallKind::kLaunch, 1, 100, 5, 1});
  GpuOp op{GpuOpKind::kKernel, 0, 7, 200, dur, 0, 1};
  op.collective = 0;
  t.ops.push_back(op);
  t.collectives.push_back({kind, algorithm, bytes, ranks});
  t.calls.push_back({CallKind::kSync, 1, 150, 200 + dur, kNoCorrelation});
  return t;
}

TEST(Collectives, ARingAllReduceAcrossBoxesPaysTheFabricItsStepsCross) {
  ModelParams p;
  const uint64_t bytes = 64 << 20;
  const Trace t = OneCollective(CollectiveKind::kAllReduce, bytes, 8, 20'000'000);
  EXPECT_NE(CheckPlacement(t,
                           [&] {
                             ModelParams q = p;
                             q.gpus_per_box = {1};  // the trace shows one GPU; the group has 8
                             return q;
                           }()),
            "");
  // One box of eight: what the ring moves stays behind the box's switch.
  p.gpus_per_box = {8};
  ASSERT_EQ(CheckPlacement(t, p), "");
  const Prediction one_box = Predict(t, p);
  EXPECT_EQ(one_box.counts.collectives, 1u);
  EXPECT_EQ(one_box.breakdown.peer_ns, 0);
  // Two boxes of four: two of the ring's eight edges cross the fabric, one each way per box
  // link. The ring's 14 steps each wait for the slowest edge: a chunk of 8 MiB at the fabric's
  // rate and two DxPU one-way trips, where natively PCIe's rate and two PCIe trips.
  p.gpus_per_box = {4, 4};
  const Prediction two_boxes = Predict(t, p);
  const double chunk = bytes / 8.0 * (1 + p.tlp_overhead_bytes / p.mps);
  const double step_dxpu = chunk * 8 / p.fabric_bandwidth_gbps + 2 * DxpuPath(p).one_way_ns;
  const double step_native = chunk * 8 / p.pcie_bandwidth_gbps + 2 * 2 * p.pcie_latency_ns;
  EXPECT_NEAR(two_boxes.breakdown.peer_ns, 14 * (step_dxpu - step_native),
              0.01 * 14 * (step_dxpu - step_native));
  // Eight boxes of one: every edge crosses, each box link carries one edge each way: the same
  // steps. An all-gather is half the ring's steps.
  p.gpus_per_box = {1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_NEAR(Predict(t, p).breakdown.peer_ns, two_boxes.breakdown.peer_ns, 1);
  p.gpus_per_box = {4, 4};
  const Trace gather = OneCollective(CollectiveKind::kAllGather, bytes, 8, 20'000'000);
  EXPECT_NEAR(Predict(gather, p).breakdown.peer_ns, two_boxes.breakdown.peer_ns / 2, 1);
}

TEST(Collectives, ASmallTreeAllReducePaysFewerTripsThanARing) {
  ModelParams p;
  p.gpus_per_box = {1, 1, 1, 1, 1, 1, 1, 1};
  const Trace ring = OneCollective(CollectiveKind::kAllReduce, 4096, 8, 50'000);
  const Trace tree =
      OneCollective(CollectiveKind::kAllReduce, 4096, 8, 50'000, CollectiveAlgorithm::kTree);
  const double ring_ns = Predict(ring, p).breakdown.peer_ns;
  const double tree_ns = Predict(tree, p).breakdown.peer_ns;
  EXPECT_GT(tree_ns, 0);
  EXPECT_LT(tree_ns, ring_ns / 2);  // 2 x 3 levels against 14 steps
  // More latency: both grow.
  p.added_latency_ns *= 5;
  EXPECT_GT(Predict(tree, p).breakdown.peer_ns, tree_ns);
  EXPECT_GT(Predict(ring, p).breakdown.peer_ns, ring_ns);
}

// A pageable read-back staged in chunks, as the model GPU records it: each device-to-host chunk
// done when its writes are queued (0 ns), the host's gap after it the data landing and the
// host's copy out. Through DxPU each chunk's added write time carries over to the next.
TEST(Retime, AStagedCopysChunksCarryTheirAddedTimeToTheNext) {
  ModelParams p;
  const uint64_t chunk = 1 << 20;
  const int64_t gap = 45'000;
  Trace t;
  const int chunks = 5;
  t.calls.push_back({CallKind::kSyncCopy, 1, 0, 1'000 + chunks * gap, 1});
  for (int k = 0; k < chunks; ++k)
    t.ops.push_back({GpuOpKind::kMemcpyDtoH, 0, 7, 500 + k * gap, 0, chunk, 1});
  const Prediction r = Predict(t, p);
  const double per_chunk = D2hCopyNs(p, true, chunk) - D2hCopyNs(p, false, chunk);
  EXPECT_GT(r.breakdown.d2h_ns, 0.9 * chunks * per_chunk);
  EXPECT_LT(r.breakdown.d2h_ns, 1.1 * chunks * per_chunk);
}

}  // namespace
}  // namespace dxpu::perfmodel
