// trace_recorder.cc - records libdxgpu's calls and the GPU model's activity, and writes them as a
// Kineto Chrome trace or a Trace (trace_recorder.h).
#include "perfmodel/record/trace_recorder.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "perfmodel/chrome_events.h"

namespace dxpu::perfmodel {
namespace {

using Json = nlohmann::ordered_json;

// How Kineto writes a GPU operation of a kind, and what ParseKinetoTrace makes of it.
struct OpStyle {
  const char* category;
  const char* name;
  GpuOpKind kind;
};

std::optional<OpStyle> StyleOf(gpu::ActivityKind kind) {
  switch (kind) {
    case gpu::ActivityKind::kMemset32:
      return OpStyle{"gpu_memset", "Memset (Device)", GpuOpKind::kMemset};
    case gpu::ActivityKind::kAxpy:
      return OpStyle{"kernel", "dxgpu_axpy", GpuOpKind::kKernel};
    case gpu::ActivityKind::kGemm:
      return OpStyle{"kernel", "dxgpu_gemm", GpuOpKind::kKernel};
    case gpu::ActivityKind::kReduceSum:
      return OpStyle{"kernel", "dxgpu_reduce_sum", GpuOpKind::kKernel};
    case gpu::ActivityKind::kTimed:
      return OpStyle{"kernel", "dxgpu_timed", GpuOpKind::kKernel};
    case gpu::ActivityKind::kCopyHostToDevice:
      return OpStyle{"gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", GpuOpKind::kMemcpyHtoD};
    case gpu::ActivityKind::kCopyDeviceToHost:
      return OpStyle{"gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", GpuOpKind::kMemcpyDtoH};
    case gpu::ActivityKind::kCopyDeviceToDevice:
      return OpStyle{"gpu_memcpy", "Memcpy DtoD (Device -> Device)", GpuOpKind::kMemcpyDtoD};
    case gpu::ActivityKind::kCopyPeer:
      return OpStyle{"gpu_memcpy", "Memcpy PtoP (Device -> Device)", GpuOpKind::kMemcpyPeer};
    case gpu::ActivityKind::kCopyHostToHost:
      break;  // Kineto has no name for it
  }
  return std::nullopt;
}

// What ParseKinetoTrace makes of the names CallRecord uses.
CallKind CallKindOf(std::string_view name) {
  if (name == "cudaLaunchKernel") return CallKind::kLaunch;
  if (name == "cudaMemsetAsync") return CallKind::kMemset;
  if (name == "cudaMemcpy") return CallKind::kSyncCopy;
  if (name.starts_with("cudaMemcpy")) return CallKind::kCopy;  // ...Async, ...PeerAsync
  if (name.ends_with("Synchronize")) return CallKind::kSync;
  return CallKind::kOther;
}

int64_t HostThread(int64_t tid) { return (TraceRecorder::kHostPid << 32) | tid; }

// A complete event from the recorder's start and end times.
Json Complete(const char* category, const char* name, int64_t pid, int64_t tid, uint64_t start_ns,
              uint64_t end_ns) {
  return ChromeComplete(category, name, pid, tid, static_cast<int64_t>(start_ns),
                        static_cast<int64_t>(end_ns - start_ns));
}

// A stream synchronisation: Kineto writes its GPU side as a cuda_sync "Stream Sync" event that
// names the stream.
bool IsStreamSync(const dxgpu::CallRecord& r) {
  return std::string_view(r.name) == "cudaStreamSynchronize";
}

void SortLikeTheParser(Trace& trace) {
  std::ranges::stable_sort(trace.calls, [](const RuntimeCall& a, const RuntimeCall& b) {
    return std::pair(a.thread, a.start_ns) < std::pair(b.thread, b.start_ns);
  });
  std::ranges::stable_sort(trace.ops, {}, &GpuOp::start_ns);
}

// Times from the earliest call or operation, as the parser counts them.
void StartFromEarliest(Trace& trace) {
  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (const RuntimeCall& call : trace.calls) earliest = std::min(earliest, call.start_ns);
  for (const GpuOp& op : trace.ops) earliest = std::min(earliest, op.start_ns);
  for (RuntimeCall& call : trace.calls) call.start_ns -= earliest;
  for (GpuOp& op : trace.ops) op.start_ns -= earliest;
}

}  // namespace

// --- Recording ---

std::function<void(size_t, const gpu::CommandActivity&)> TraceRecorder::GpuActivitySink() {
  return [this](size_t device, const gpu::CommandActivity& activity) {
    OnGpuActivity(device, activity);
  };
}

std::function<void(const dxgpu::CallRecord&)> TraceRecorder::CallSink() {
  return [this](const dxgpu::CallRecord& call) { OnCall(call); };
}

void TraceRecorder::OnGpuActivity(size_t device, const gpu::CommandActivity& activity) {
  const std::lock_guard lock(mu_);
  activities_.push_back({device, activity});
}

void TraceRecorder::OnCall(const dxgpu::CallRecord& call) {
  const std::lock_guard lock(mu_);
  const int64_t tid =
      threads_.try_emplace(std::this_thread::get_id(), ThreadCount() + 1).first->second;
  const size_t index = calls_.size();
  calls_.push_back({call, tid, static_cast<int64_t>(index) + 1});
  for (const uint64_t seq : call.submissions) submitted_by_[{call.device, seq}] = index;
}

size_t TraceRecorder::call_count() const {
  const std::lock_guard lock(mu_);
  return calls_.size();
}

size_t TraceRecorder::activity_count() const {
  const std::lock_guard lock(mu_);
  return activities_.size();
}

// --- Output ---

std::vector<TraceRecorder::Op> TraceRecorder::Ops() const {
  std::vector<Op> ops;
  ops.reserve(activities_.size());
  for (const RecordedActivity& recorded : activities_) {
    if (!StyleOf(recorded.activity.kind)) continue;
    Op op{recorded, 0, kNoCorrelation, kNoDevice};
    const auto it = submitted_by_.find({recorded.device, recorded.activity.entry});
    if (it != submitted_by_.end()) {
      const RecordedCall& call = calls_[it->second];
      op.stream = static_cast<int64_t>(call.record.stream);
      op.correlation = call.correlation;
      if (recorded.activity.kind == gpu::ActivityKind::kCopyPeer &&
          call.record.peer_device != SIZE_MAX)
        op.peer_device = static_cast<int32_t>(call.record.peer_device);
    }
    ops.push_back(op);
  }
  return ops;
}

std::vector<size_t> TraceRecorder::Devices(const std::vector<Op>& ops) {
  std::vector<size_t> devices;
  devices.reserve(ops.size());
  for (const Op& op : ops) devices.push_back(op.recorded.device);
  std::ranges::sort(devices);
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  return devices;
}

Trace TraceRecorder::ToTrace(const std::string& source) const {
  const std::lock_guard lock(mu_);
  const std::vector<Op> ops = Ops();
  Trace trace;
  trace.calls.reserve(calls_.size());
  trace.ops.reserve(ops.size());
  size_t stream_syncs = 0;
  for (const RecordedCall& c : calls_) {
    const bool stream_sync = IsStreamSync(c.record);
    stream_syncs += stream_sync ? 1 : 0;
    trace.calls.push_back(
        {.kind = CallKindOf(c.record.name),
         .thread = HostThread(c.tid),
         .start_ns = static_cast<int64_t>(c.record.start_ns),
         .dur_ns = static_cast<int64_t>(c.record.end_ns - c.record.start_ns),
         .correlation = c.correlation,
         .sync_device = stream_sync ? static_cast<int32_t>(c.record.device) : 0,
         .sync_stream = stream_sync ? static_cast<int64_t>(c.record.stream) : kAnyStream});
  }
  for (const Op& op : ops) {
    const gpu::CommandActivity& a = op.recorded.activity;
    const GpuOpKind kind = StyleOf(a.kind)->kind;
    trace.ops.push_back({.kind = kind,
                         .device = static_cast<int32_t>(op.recorded.device),
                         .stream = op.stream,
                         .start_ns = static_cast<int64_t>(a.start_ns),
                         .dur_ns = static_cast<int64_t>(a.end_ns - a.start_ns),
                         .bytes = kind == GpuOpKind::kKernel ? 0 : a.bytes,
                         .correlation = op.correlation,
                         .peer_device = op.peer_device});
  }
  StartFromEarliest(trace);
  SortLikeTheParser(trace);
  trace.source = source;
  trace.events_read = calls_.size() + ops.size() + stream_syncs;
  // The metadata: the host's process_name and thread_names, each device's process_name.
  trace.events_skipped = 1 + threads_.size() + Devices(ops).size();
  return trace;
}

void TraceRecorder::WriteKineto(std::ostream& out) const { Write(out, false); }
void TraceRecorder::WriteKinetoHip(std::ostream& out) const { Write(out, true); }

void TraceRecorder::Write(std::ostream& out, bool hip) const {
  const std::lock_guard lock(mu_);
  const std::vector<Op> ops = Ops();
  // HIP: each copy call's size on the call (the sum of its copies: a pageable one is several).
  std::map<int64_t, uint64_t> copied;
  std::map<int64_t, int> copies;  // GPU copies per call
  for (const Op& op : ops) {
    if (hip && op.correlation != kNoCorrelation && StyleOf(op.recorded.activity.kind) &&
        std::string_view(StyleOf(op.recorded.activity.kind)->category) == "gpu_memcpy") {
      copied[op.correlation] += op.recorded.activity.bytes;
      ++copies[op.correlation];
    }
  }
  Json events = Json::array();
  events.push_back(ChromeMetadata("process_name", kHostPid, 0, "dxgpu host"));
  for (int64_t tid = 1; tid <= ThreadCount(); ++tid) {
    events.push_back(ChromeMetadata("thread_name", kHostPid, tid, "thread " + std::to_string(tid)));
  }
  for (const size_t device : Devices(ops)) {
    events.push_back(ChromeMetadata("process_name", static_cast<int64_t>(device), 0,
                                    "GPU " + std::to_string(device)));
  }
  for (const RecordedCall& c : calls_) {
    const std::string_view cuda_name = c.record.name;
    const std::string name = hip && cuda_name.starts_with("cuda")
                                 ? "hip" + std::string(cuda_name.substr(4))
                                 : std::string(cuda_name);
    Json event =
        Complete("cuda_runtime", name.c_str(), kHostPid, c.tid, c.record.start_ns, c.record.end_ns);
    event["args"] = Json{
        {"correlation", c.correlation}, {"device", c.record.device}, {"stream", c.record.stream}};
    if (const auto size = copied.find(c.correlation); size != copied.end())
      event["args"]["size"] = size->second;
    events.push_back(std::move(event));
    if (IsStreamSync(c.record)) {
      Json sync =
          Complete("cuda_sync", "Stream Sync", static_cast<int64_t>(c.record.device),
                   static_cast<int64_t>(c.record.stream), c.record.start_ns, c.record.end_ns);
      sync["args"] = Json{
          {"correlation", c.correlation}, {"device", c.record.device}, {"stream", c.record.stream}};
      events.push_back(std::move(sync));
    }
  }
  for (const Op& op : ops) {
    const gpu::CommandActivity& a = op.recorded.activity;
    const OpStyle style = *StyleOf(a.kind);
    Json event = Complete(style.category, style.name, static_cast<int64_t>(op.recorded.device),
                          op.stream, a.start_ns, a.end_ns);
    Json args{{"device", op.recorded.device}, {"stream", op.stream}};
    if (op.correlation != kNoCorrelation) args["correlation"] = op.correlation;
    // roctracer's copies carry no size (their call's args.size has it); a staged copy's chunks
    // keep theirs, which the call's whole size would not give back.
    const bool size_on_call = hip && copies.contains(op.correlation) && copies[op.correlation] == 1;
    if (!size_on_call) args["bytes"] = a.bytes;
    if (op.peer_device != kNoDevice) args["dst device"] = op.peer_device;
    event["args"] = std::move(args);
    events.push_back(std::move(event));
  }
  const Json trace{{"schemaVersion", 1}, {"traceEvents", std::move(events)}};
  out << trace.dump(1) << '\n';
}

}  // namespace dxpu::perfmodel
