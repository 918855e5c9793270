// Synthetic traces from the model GPUs' own runs (lib/perfmodel/record/trace_recorder.h): a
// libdxgpu program run in the simulator, natively and through DxPU, recorded as the PyTorch
// profiler records a real GPU - the calls, the GPU operations linked to them by correlation,
// their kinds, bytes and times on the simulator's clock - and read back from its Kineto JSON by
// ParseKinetoTrace as the same Trace.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dxgpu/runtime.h"
#include "gpu/gpu_device.h"
#include "perfmodel/kineto_trace.h"
#include "perfmodel/record/trace_recorder.h"
#include "sim-world/sim_port.h"

namespace dxpu::perfmodel {
namespace {

constexpr uint64_t kTimedNs = 50'000;
constexpr uint64_t kDim = 64;  // GEMM m = n = k
constexpr uint64_t kBytes = kDim * kDim * 4;

int64_t End(const RuntimeCall& c) { return c.start_ns + c.dur_ns; }
int64_t End(const GpuOp& op) { return op.start_ns + op.dur_ns; }

// A port and a runtime in the simulator whose calls and GPU activity a recorder records.
class Recorded {
 public:
  explicit Recorded(bool through_dxpu, std::vector<std::string> profiles = {"dxgpu"},
                    dxgpu::RuntimeOptions options = {}) {
    host::SimPortOptions po;
    po.through_dxpu = through_dxpu;
    po.profiles = std::move(profiles);
    po.gpu_activity = recorder_.GpuActivitySink();
    auto port = host::OpenSimulatedPort(po);
    if (!port.ok()) throw std::runtime_error(port.status().ToString());
    port_ = std::move(port).value();
    options.call_record = recorder_.CallSink();
    auto runtime = dxgpu::Runtime::Open(*port_, options);
    if (!runtime.ok()) throw std::runtime_error(runtime.status().ToString());
    runtime_ = std::move(runtime).value();
  }

  dxgpu::Runtime& rt() { return *runtime_; }
  TraceRecorder& recorder() { return recorder_; }
  std::string Kineto() const {
    std::ostringstream out;
    recorder_.WriteKineto(out);
    return out.str();
  }
  std::string KinetoHip() const {
    std::ostringstream out;
    recorder_.WriteKinetoHip(out);
    return out.str();
  }

 private:
  TraceRecorder recorder_;  // outlives the port and the runtime that call it
  std::unique_ptr<dxgpu::Port> port_;
  std::unique_ptr<dxgpu::Runtime> runtime_;
};

// H2D copy, TIMED 50 us, GEMM, MEMSET32, D2H copy, SynchronizeStream: the stream's id.
uint64_t RunProgram(dxgpu::Runtime& rt) {
  auto s = rt.CreateStream(0);
  auto a = rt.Malloc(0, kBytes);
  auto b = rt.Malloc(0, kBytes);
  auto c = rt.Malloc(0, kBytes);
  auto host = rt.MallocHost(kBytes);
  EXPECT_TRUE(s.ok() && a.ok() && b.ok() && c.ok() && host.ok());
  EXPECT_TRUE(rt.MemcpyHtoDAsync(*s, *a, *host, kBytes).ok());
  EXPECT_TRUE(rt.LaunchTimed(*s, kTimedNs).ok());
  EXPECT_TRUE(rt.LaunchGemm(*s, kDim, kDim, kDim, 1.0f, *a, *b, 0.0f, *c).ok());
  EXPECT_TRUE(rt.LaunchMemset32(*s, *c, 7, kDim * kDim).ok());
  EXPECT_TRUE(rt.MemcpyDtoHAsync(*s, *host, *c, kBytes).ok());
  EXPECT_TRUE(rt.SynchronizeStream(*s).ok());
  return s->id;
}

void ExpectSameTrace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.calls.size(), b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    SCOPED_TRACE("call " + std::to_string(i));
    EXPECT_EQ(a.calls[i].kind, b.calls[i].kind);
    EXPECT_EQ(a.calls[i].thread, b.calls[i].thread);
    EXPECT_EQ(a.calls[i].start_ns, b.calls[i].start_ns);
    EXPECT_EQ(a.calls[i].dur_ns, b.calls[i].dur_ns);
    EXPECT_EQ(a.calls[i].correlation, b.calls[i].correlation);
    EXPECT_EQ(a.calls[i].sync_device, b.calls[i].sync_device);
    EXPECT_EQ(a.calls[i].sync_stream, b.calls[i].sync_stream);
  }
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    SCOPED_TRACE("op " + std::to_string(i));
    EXPECT_EQ(a.ops[i].kind, b.ops[i].kind);
    EXPECT_EQ(a.ops[i].device, b.ops[i].device);
    EXPECT_EQ(a.ops[i].stream, b.ops[i].stream);
    EXPECT_EQ(a.ops[i].start_ns, b.ops[i].start_ns);
    EXPECT_EQ(a.ops[i].dur_ns, b.ops[i].dur_ns);
    EXPECT_EQ(a.ops[i].bytes, b.ops[i].bytes);
    EXPECT_EQ(a.ops[i].correlation, b.ops[i].correlation);
  }
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.events_read, b.events_read);
  EXPECT_EQ(a.events_skipped, b.events_skipped);
}

Trace ParseBack(const std::string& json) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(json.data());
  ParseResult<Trace> parsed = ParseKinetoTrace({bytes, json.size()}, "recorded");
  if (!parsed.ok()) throw std::runtime_error(parsed.error().message);
  return std::move(parsed).value();
}

TEST(TraceRecorder, OffByDefault) {
  EXPECT_FALSE(dxgpu::RuntimeOptions{}.call_record);
  EXPECT_FALSE(host::SimPortOptions{}.gpu_activity);
  EXPECT_FALSE(gpu::GpuOptions{}.activity);
}

// The program's trace, natively and through DxPU: six calls, five operations of the right
// kinds and sizes, each linked to its call; the operations of the device in submission order
// without overlap, after the calls that enqueued them and before the sync returns; TIMED exactly
// 50 us; the Kineto JSON reads back as the same Trace. Through DxPU the same program takes
// longer.
TEST(TraceRecorder, RecordsAProgramNativelyAndThroughDxpu) {
  int64_t lengths[2] = {0, 0};
  for (const bool dxpu : {false, true}) {
    SCOPED_TRACE(dxpu ? "dxpu" : "native");
    Recorded run(dxpu);
    const uint64_t stream = RunProgram(run.rt());
    const Trace trace = run.recorder().ToTrace("recorded");

    const CallKind call_kinds[] = {CallKind::kCopy,   CallKind::kLaunch, CallKind::kLaunch,
                                   CallKind::kMemset, CallKind::kCopy,   CallKind::kSync};
    ASSERT_EQ(trace.calls.size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(trace.calls[i].kind, call_kinds[i]) << i;
      EXPECT_EQ(trace.calls[i].correlation, static_cast<int64_t>(i) + 1) << "in call order";
      EXPECT_EQ(trace.calls[i].thread, (TraceRecorder::kHostPid << 32) | 1);
    }
    const GpuOpKind op_kinds[] = {GpuOpKind::kMemcpyHtoD, GpuOpKind::kKernel, GpuOpKind::kKernel,
                                  GpuOpKind::kMemset, GpuOpKind::kMemcpyDtoH};
    const uint64_t op_bytes[] = {kBytes, 0, 0, kBytes, kBytes};
    ASSERT_EQ(trace.ops.size(), 5u);
    const RuntimeCall& sync = trace.calls[5];
    for (size_t i = 0; i < 5; ++i) {
      SCOPED_TRACE("op " + std::to_string(i));
      const GpuOp& op = trace.ops[i];
      EXPECT_EQ(op.kind, op_kinds[i]);
      EXPECT_EQ(op.bytes, op_bytes[i]);
      EXPECT_EQ(op.device, 0);
      EXPECT_EQ(op.stream, static_cast<int64_t>(stream));
      EXPECT_EQ(op.correlation, trace.calls[i].correlation);
      EXPECT_GE(op.start_ns, End(trace.calls[i])) << "after the call that enqueued it";
      EXPECT_LE(End(op), End(sync));
      if (i > 0) {
        EXPECT_GE(op.start_ns, End(trace.ops[i - 1])) << "in order, no overlap";
      }
    }
    EXPECT_EQ(trace.ops[1].dur_ns, static_cast<int64_t>(kTimedNs)) << "TIMED, exactly";
    EXPECT_GT(End(sync), End(trace.ops[4])) << "the sync sees the progress word after the copy";
    EXPECT_EQ(sync.sync_device, 0) << "a stream synchronisation knows its stream";
    EXPECT_EQ(sync.sync_stream, static_cast<int64_t>(stream));
    lengths[dxpu ? 1 : 0] = End(sync);

    const std::string json = run.Kineto();
    ExpectSameTrace(ParseBack(json), trace);
  }
  EXPECT_GT(lengths[1], lengths[0]) << "through DxPU the same program takes longer";
}

// The Kineto JSON: the names and categories the profiler writes, and their args.
TEST(TraceRecorder, WritesKinetoNamesAndArgs) {
  Recorded run(false);
  const uint64_t stream = RunProgram(run.rt());
  const nlohmann::json trace = nlohmann::json::parse(run.Kineto());
  EXPECT_EQ(trace["schemaVersion"], 1);
  std::vector<std::string> calls;
  std::vector<std::string> ops;
  size_t metadata = 0;
  std::vector<std::string> syncs;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    if (event["ph"] == "M") {
      ++metadata;
      continue;
    }
    const std::string name = event["name"];
    if (event["cat"] == "cuda_runtime") {
      EXPECT_EQ(event["pid"], TraceRecorder::kHostPid);
      calls.push_back(name);
      continue;
    }
    if (event["cat"] == "cuda_sync") {  // the stream synchronisation's GPU side names its stream
      syncs.push_back(name);
      EXPECT_EQ(event["args"]["stream"], stream);
      EXPECT_EQ(event["args"]["device"], 0);
      EXPECT_TRUE(event["args"].contains("correlation"));
      continue;
    }
    ops.push_back(event["cat"].get<std::string>() + ": " + name);
    EXPECT_EQ(event["pid"], 0);
    EXPECT_EQ(event["tid"], stream);
    EXPECT_EQ(event["args"]["stream"], stream);
    EXPECT_EQ(event["args"]["device"], 0);
    EXPECT_TRUE(event["args"].contains("correlation"));
    EXPECT_TRUE(event["args"].contains("bytes"));
  }
  EXPECT_EQ(metadata, 3u) << "host process and thread, GPU 0";
  EXPECT_EQ(syncs, std::vector<std::string>{"Stream Sync"});
  EXPECT_EQ(calls, (std::vector<std::string>{"cudaMemcpyAsync", "cudaLaunchKernel",
                                             "cudaLaunchKernel", "cudaMemsetAsync",
                                             "cudaMemcpyAsync", "cudaStreamSynchronize"}));
  EXPECT_EQ(ops, (std::vector<std::string>{"gpu_memcpy: Memcpy HtoD (Pinned -> Device)",
                                           "kernel: dxgpu_timed", "kernel: dxgpu_gemm",
                                           "gpu_memset: Memset (Device)",
                                           "gpu_memcpy: Memcpy DtoH (Device -> Pinned)"}));
}

// A synchronous Memcpy of pageable memory is staged in chunks: one call, one copy per chunk,
// all with its correlation, all before it returns. Events, device syncs and peer copies too.
// The same run written as PyTorch on ROCm records it (HIP's names, copy sizes on the calls)
// reads into the same Trace as the CUDA one (issue 35 item 3).
TEST(TraceRecorder, AHipTraceReadsAsTheSameWorkload) {
  dxgpu::RuntimeOptions options;
  options.staging_chunk_bytes = 4096;
  Recorded run(false, {"dxgpu", "dxgpu"}, options);
  dxgpu::Runtime& rt = run.rt();
  RunProgram(rt);
  auto d0 = rt.Malloc(0, 10'000);
  ASSERT_TRUE(d0.ok());
  const std::vector<uint8_t> pageable(10'000, 0x5a);
  ASSERT_TRUE(rt.MemcpyHtoD(*d0, pageable.data(), pageable.size()).ok());  // three chunks
  const std::string hip = run.KinetoHip();
  EXPECT_NE(hip.find("\"hipMemcpyAsync\""), std::string::npos);
  EXPECT_NE(hip.find("\"hipStreamSynchronize\""), std::string::npos);
  EXPECT_EQ(hip.find("\"cudaLaunchKernel\""), std::string::npos);
  EXPECT_NE(hip.find("\"size\": 10000"), std::string::npos) << "the staged copy's size";
  ExpectSameTrace(ParseBack(hip), ParseBack(run.Kineto()));
}

TEST(TraceRecorder, StagedCopiesEventsAndPeerCopies) {
  dxgpu::RuntimeOptions options;
  options.staging_chunk_bytes = 4096;
  Recorded run(false, {"dxgpu", "dxgpu"}, options);
  dxgpu::Runtime& rt = run.rt();
  auto d0 = rt.Malloc(0, 10'000);
  auto d1 = rt.Malloc(1, 10'000);
  auto s = rt.CreateStream(0);
  auto e = rt.CreateEvent();
  ASSERT_TRUE(d0.ok() && d1.ok() && s.ok() && e.ok());
  const std::vector<uint8_t> pageable(10'000, 0x5a);
  ASSERT_TRUE(rt.MemcpyHtoD(*d0, pageable.data(), pageable.size()).ok());
  ASSERT_TRUE(rt.MemcpyPeerAsync(*s, *d1, *d0, 10'000).ok());
  ASSERT_TRUE(rt.RecordEvent(*e, *s).ok());
  ASSERT_TRUE(rt.SynchronizeEvent(*e).ok());
  ASSERT_TRUE(rt.SynchronizeDevice(0).ok());
  const Trace trace = run.recorder().ToTrace("recorded");

  ASSERT_EQ(trace.calls.size(), 5u);
  const CallKind kinds[] = {CallKind::kSyncCopy, CallKind::kCopy, CallKind::kOther, CallKind::kSync,
                            CallKind::kSync};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(trace.calls[i].kind, kinds[i]) << i;
  ASSERT_EQ(trace.ops.size(), 4u) << "three chunks and the peer copy";
  const uint64_t bytes[] = {4096, 4096, 1808, 10'000};
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE("op " + std::to_string(i));
    EXPECT_EQ(trace.ops[i].kind, i < 3 ? GpuOpKind::kMemcpyHtoD : GpuOpKind::kMemcpyPeer);
    EXPECT_EQ(trace.ops[i].bytes, bytes[i]);
    EXPECT_EQ(trace.ops[i].correlation, trace.calls[i < 3 ? 0 : 1].correlation);
    EXPECT_EQ(trace.ops[i].stream, i < 3 ? 0 : static_cast<int64_t>(s->id));
  }
  EXPECT_LE(End(trace.ops[2]), End(trace.calls[0])) << "the synchronous copy waited for it";
  EXPECT_GE(trace.ops[0].start_ns, trace.calls[0].start_ns);
  ExpectSameTrace(ParseBack(run.Kineto()), trace);
}

}  // namespace
}  // namespace dxpu::perfmodel
