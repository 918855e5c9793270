// replay.cc - a trace replayed on the model GPUs through libdxgpu, and in the simulator both
// ways beside the model's prediction (replay.h).
#include "sim-world/replay/replay.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "gpu/gpu_device.h"
#include "host/device_attach.h"
#include "sim-world/sim_port.h"

namespace dxpu::perfmodel {
namespace {

using dxgpu::DevicePtr;
using dxgpu::Runtime;
using dxgpu::Status;

constexpr size_t kMaxDevices = 8;
constexpr uint64_t kMinBuffer = 256;

class Replayer {
 public:
  Replayer(const Trace& trace, Runtime& rt) : t_(trace), rt_(rt) {}
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;
  ~Replayer() { Release(); }

  ReplayResult<ReplayStats> Run(const std::function<void(size_t, size_t)>& progress);

 private:
  struct DeviceBuffers {
    DevicePtr memory{};
    bool allocated = false;
    uint64_t bytes = kMinBuffer;
    bool busy = false;  // work enqueued since its last synchronisation
  };

  ReplayResult<bool> SetUp();
  void Release();
  ReplayError Failed(size_t call, const Status& s) const;
  Status Issue(const RuntimeCall& call, std::span<const size_t> ops);
  Status Enqueue(const GpuOp& op);
  Status CopyNow(const GpuOp& op);
  Status CopyStaged(std::span<const size_t> ops);
  Status Synchronize(const RuntimeCall& call);
  Status SynchronizeBusy();
  void WaitUntil(uint64_t t);
  Status StreamOf(const GpuOp& op, dxgpu::Stream* out);
  // The runtime device a peer copy lands on.
  size_t PeerOf(const GpuOp& op) const;

  const Trace& t_;
  Runtime& rt_;
  std::vector<int32_t> gpus_;                      // trace devices in placement order
  std::unordered_map<int32_t, size_t> device_of_;  // trace device -> runtime device (its index)
  std::vector<DeviceBuffers> devices_;
  std::map<std::pair<size_t, int64_t>, dxgpu::Stream> streams_;
  // Every operation of a call, in the trace's order: a synchronous copy from or to pageable
  // memory is several (the runtime stages it in chunks, each its own copy in the trace).
  std::unordered_map<int64_t, std::vector<size_t>> ops_of_correlation_;
  void* host_ = nullptr;  // pinned, owned by the runtime (MallocHost/FreeHost)
  uint64_t host_bytes_ = kMinBuffer;
  std::vector<uint8_t> pageable_;  // a staged copy's host side: not pinned, so the runtime stages
  ReplayStats stats_;
};

ReplayResult<bool> Replayer::SetUp() {
  gpus_ = GpusInPlacementOrder(t_);  // as the model counts a placement's GPUs
  for (const int32_t device : gpus_) device_of_.emplace(device, device_of_.size());
  devices_.resize(device_of_.size());
  for (size_t i = 0; i < t_.ops.size(); ++i) {
    const GpuOp& op = t_.ops[i];
    DeviceBuffers& d = devices_[device_of_.at(op.device)];
    d.bytes = std::max(d.bytes, op.bytes);
    if (op.kind == GpuOpKind::kMemcpyHtoD || op.kind == GpuOpKind::kMemcpyDtoH)
      host_bytes_ = std::max(host_bytes_, op.bytes);
    if (op.correlation != kNoCorrelation) ops_of_correlation_[op.correlation].push_back(i);
  }
  // A staged copy is replayed whole (CopyStaged): its device buffer and host side hold all of it.
  uint64_t pageable_bytes = 0;
  for (const auto& [correlation, ops] : ops_of_correlation_) {
    if (ops.size() < 2) continue;
    uint64_t total = 0;
    for (const size_t i : ops) total += t_.ops[i].bytes;
    DeviceBuffers& d = devices_[device_of_.at(t_.ops[ops.front()].device)];
    d.bytes = std::max(d.bytes, total);
    pageable_bytes = std::max(pageable_bytes, total);
  }
  pageable_.resize(pageable_bytes);
  if (devices_.size() > rt_.device_count())
    return ReplayError{fmt::format("the trace uses {} GPUs, the runtime has {}", devices_.size(),
                                   rt_.device_count())};
  // A peer copy lands in its peer's buffer: each buffer holds the largest of both.
  for (const GpuOp& op : t_.ops) {
    if (op.kind != GpuOpKind::kMemcpyPeer) continue;
    DeviceBuffers& peer = devices_[PeerOf(op)];
    peer.bytes = std::max(peer.bytes, op.bytes);
  }
  for (size_t d = 0; d < devices_.size(); ++d) {
    dxgpu::Expected<DevicePtr> m = rt_.Malloc(d, devices_[d].bytes);
    if (!m.ok()) return ReplayError{fmt::format("device {}: {}", d, m.status().ToString())};
    devices_[d].memory = m.value();
    devices_[d].allocated = true;
  }
  dxgpu::Expected<void*> h = rt_.MallocHost(host_bytes_);
  if (!h.ok()) return ReplayError{"pinned memory: " + h.status().ToString()};
  host_ = h.value();
  return true;
}

void Replayer::Release() {
  for (auto& [key, stream] : streams_) (void)rt_.DestroyStream(stream);
  streams_.clear();
  for (DeviceBuffers& d : devices_) {
    if (d.allocated) (void)rt_.Free(d.memory);
    d.allocated = false;
  }
  if (host_ != nullptr) (void)rt_.FreeHost(host_);
  host_ = nullptr;
}

ReplayError Replayer::Failed(size_t call, const Status& s) const {
  return ReplayError{
      fmt::format("call {} ({}): {}", call, ToString(t_.calls[call].kind), s.ToString())};
}

Status Replayer::StreamOf(const GpuOp& op, dxgpu::Stream* out) {
  const size_t device = device_of_.at(op.device);
  const auto key = std::make_pair(device, op.stream);
  auto it = streams_.find(key);
  if (it == streams_.end()) {
    dxgpu::Expected<dxgpu::Stream> s = rt_.CreateStream(device);
    if (!s.ok()) return s.status();
    it = streams_.emplace(key, s.value()).first;
  }
  *out = it->second;
  return {};
}

size_t Replayer::PeerOf(const GpuOp& op) const { return PeerDestination(op, gpus_); }

// An asynchronous operation on its stream: kernels and memsets as timed kernels of the trace's
// duration, copies with their size and direction.
Status Replayer::Enqueue(const GpuOp& op) {
  dxgpu::Stream stream{};
  if (Status s = StreamOf(op, &stream); !s.ok()) return s;
  DeviceBuffers& d = devices_[device_of_.at(op.device)];
  d.busy = true;
  switch (op.kind) {
    case GpuOpKind::kKernel:
    case GpuOpKind::kMemset:
      stats_.kernels++;
      return rt_.LaunchTimed(stream, static_cast<uint64_t>(std::max<int64_t>(op.dur_ns, 0)));
    case GpuOpKind::kMemcpyHtoD:
      stats_.copies++;
      return rt_.MemcpyHtoDAsync(stream, d.memory, host_, op.bytes);
    case GpuOpKind::kMemcpyDtoH:
      stats_.copies++;
      return rt_.MemcpyDtoHAsync(stream, host_, d.memory, op.bytes);
    case GpuOpKind::kMemcpyPeer:
      stats_.copies++;
      if (const size_t to = PeerOf(op); to != device_of_.at(op.device)) {
        DeviceBuffers& peer = devices_[to];
        peer.busy = true;
        return rt_.MemcpyPeerAsync(stream, peer.memory, d.memory, op.bytes);
      }
      // To itself (one GPU, or a trace that says so): a copy inside the device.
      return rt_.MemcpyDtoDAsync(stream, d.memory, d.memory, op.bytes);
    case GpuOpKind::kMemcpyDtoD:
      stats_.copies++;
      return rt_.MemcpyDtoDAsync(stream, d.memory, d.memory, op.bytes);
  }
  return {};
}

// A synchronous copy: returns when it is complete.
Status Replayer::CopyNow(const GpuOp& op) {
  if (op.kind == GpuOpKind::kMemcpyPeer) {
    // cudaMemcpyPeer: the runtime has no synchronous peer copy, so the asynchronous one on the
    // copy's stream, waited for. It crosses to its peer as the asynchronous one does.
    dxgpu::Stream stream{};
    if (Status s = Enqueue(op); !s.ok()) return s;
    if (Status s = StreamOf(op, &stream); !s.ok()) return s;
    return rt_.SynchronizeStream(stream);
  }
  const DevicePtr mem = devices_[device_of_.at(op.device)].memory;
  stats_.copies++;
  switch (op.kind) {
    case GpuOpKind::kMemcpyHtoD:
      return rt_.MemcpyHtoD(mem, host_, op.bytes);
    case GpuOpKind::kMemcpyDtoH:
      return rt_.MemcpyDtoH(host_, mem, op.bytes);
    default:
      return rt_.MemcpyDtoD(mem, mem, op.bytes);
  }
}

// A synchronous copy that the trace shows as several copies: the runtime staged it through its
// pinned buffers, chunk by chunk (a pageable cudaMemcpy). Copies of one direction to or from one
// GPU are replayed as one synchronous copy of their total size from or to pageable memory, which
// the replaying runtime stages the same way; anything else as its copies one after another.
Status Replayer::CopyStaged(std::span<const size_t> ops) {
  const GpuOp& first = t_.ops[ops.front()];
  uint64_t total = 0;
  bool one_copy = first.kind == GpuOpKind::kMemcpyHtoD || first.kind == GpuOpKind::kMemcpyDtoH;
  for (const size_t i : ops) {
    const GpuOp& op = t_.ops[i];
    one_copy = one_copy && op.kind == first.kind && op.device == first.device;
    total += op.bytes;
  }
  if (!one_copy || total == 0) {
    for (const size_t i : ops) {
      if (Status s = CopyNow(t_.ops[i]); !s.ok()) return s;
    }
    return {};
  }
  const DevicePtr mem = devices_[device_of_.at(first.device)].memory;
  stats_.copies += ops.size();
  return first.kind == GpuOpKind::kMemcpyHtoD ? rt_.MemcpyHtoD(mem, pageable_.data(), total)
                                              : rt_.MemcpyDtoH(pageable_.data(), mem, total);
}

// A stream synchronisation waits for its stream (if it had work), any other for the GPUs.
Status Replayer::Synchronize(const RuntimeCall& call) {
  if (call.sync_stream == kAnyStream) return SynchronizeBusy();
  const auto device = device_of_.find(call.sync_device);
  if (device == device_of_.end()) return {};
  const auto stream = streams_.find({device->second, call.sync_stream});
  if (stream == streams_.end()) return {};
  stats_.syncs++;
  return rt_.SynchronizeStream(stream->second);
}

Status Replayer::SynchronizeBusy() {
  stats_.syncs++;
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (!devices_[d].busy) continue;
    if (Status s = rt_.SynchronizeDevice(d); !s.ok()) return s;
    devices_[d].busy = false;
  }
  return {};
}

// The host's own work: the port's clock moves on to `t` (virtual time in the simulator).
void Replayer::WaitUntil(uint64_t t) {
  const uint64_t now = rt_.port().Now();
  if (t > now)
    (void)rt_.port().Wait(
        0, [] { return false; }, t - now);
}

Status Replayer::Issue(const RuntimeCall& call, std::span<const size_t> ops) {
  switch (call.kind) {
    case CallKind::kLaunch:
    case CallKind::kCopy:
    case CallKind::kMemset:
      for (const size_t i : ops) {
        if (Status s = Enqueue(t_.ops[i]); !s.ok()) return s;
      }
      return {};
    case CallKind::kSyncCopy: {
      const GpuOp* op = ops.empty() ? nullptr : &t_.ops[ops.front()];
      if (op == nullptr || op->kind == GpuOpKind::kKernel || op->kind == GpuOpKind::kMemset)
        return SynchronizeBusy();
      return ops.size() > 1 ? CopyStaged(ops) : CopyNow(*op);
    }
    case CallKind::kSync:
      return Synchronize(call);
    case CallKind::kOther:
      return {};
  }
  return {};
}

ReplayResult<ReplayStats> Replayer::Run(const std::function<void(size_t, size_t)>& progress) {
  if (t_.ops.empty()) return ReplayError{"the trace has no GPU operations"};
  if (ReplayResult<bool> ready = SetUp(); !ready.ok()) return ready.error();
  // Every thread's calls in the trace's order, on this one thread.
  std::vector<size_t> order(t_.calls.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return t_.calls[a].start_ns < t_.calls[b].start_ns; });
  const uint64_t base = rt_.port().Now();
  std::unordered_map<int64_t, uint64_t> shift;  // per thread: how late it runs now
  uint64_t host_end = base;
  for (size_t n = 0; n < order.size(); ++n) {
    const RuntimeCall& call = t_.calls[order[n]];
    std::span<const size_t> ops;
    if (const auto it = ops_of_correlation_.find(call.correlation);
        call.correlation != kNoCorrelation && it != ops_of_correlation_.end())
      ops = it->second;
    const bool blocking = call.kind == CallKind::kSync || call.kind == CallKind::kSyncCopy;
    uint64_t& late = shift[call.thread];
    const uint64_t start = base + static_cast<uint64_t>(std::max<int64_t>(call.start_ns, 0)) + late;
    // An asynchronous call hands its work over as it returns (the doorbell at its end).
    WaitUntil(blocking ? start : start + static_cast<uint64_t>(std::max<int64_t>(call.dur_ns, 0)));
    if (Status s = Issue(call, ops); !s.ok()) return Failed(order[n], s);
    const uint64_t native_end =
        base + static_cast<uint64_t>(std::max<int64_t>(call.start_ns + call.dur_ns, 0));
    const uint64_t now = rt_.port().Now();
    if (blocking && now > native_end + late) late = now - native_end;
    host_end = std::max(host_end, native_end + late);
    if (progress && (n % 256 == 255 || n + 1 == order.size())) progress(n + 1, order.size());
  }
  for (size_t d = 0; d < devices_.size(); ++d) {
    if (Status s = rt_.SynchronizeDevice(d); !s.ok())
      return ReplayError{
          fmt::format("the final synchronisation of device {}: {}", d, s.ToString())};
  }
  WaitUntil(host_end);
  stats_.elapsed_ns = rt_.port().Now() - base;
  return stats_;
}

std::string CheckSimulatable(const ModelParams& p) {
  if (p.box_pcie_latency_ns != p.pcie_latency_ns)
    return "the simulator's box link is a PCIe link like the host's: the box PCIe latency must "
           "equal the PCIe latency";
  // What the simulator's GPUs run with: the host's attach settings and the GPU model's options,
  // both their defaults (sim-world/sim_port.cc).
  const host::AttachOptions attach;
  const gpu::GpuOptions gpu;
  if (p.mps != attach.max_payload || p.mrrs != attach.max_read_request ||
      p.read_tags != gpu.max_outstanding_reads || p.prefetch != gpu.pushbuffer_prefetch)
    return fmt::format("the simulated GPUs have MPS {}, MRRS {}, {} read tags, prefetch {}",
                       attach.max_payload, attach.max_read_request, gpu.max_outstanding_reads,
                       gpu.pushbuffer_prefetch);
  return "";
}

ReplayResult<ReplayStats> ReplayOnce(const Trace& trace, const ModelParams& p, bool dxpu,
                                     const std::function<void(size_t, size_t)>& progress) {
  host::SimPortOptions o;
  o.through_dxpu = dxpu;
  if (dxpu) o.gpus_per_box = p.gpus_per_box;  // natively each GPU has a PCIe link of its own
  o.profiles.assign(DevicesOf(trace), "dxgpu");
  o.fabric.pcie_latency_ns = static_cast<uint64_t>(std::llround(p.pcie_latency_ns));
  o.fabric.pcie_bandwidth_bps = static_cast<uint64_t>(std::llround(p.pcie_bandwidth_gbps * 1e9));
  o.fabric.added_latency_ns = static_cast<uint64_t>(std::llround(p.added_latency_ns));
  o.fabric.fabric_bandwidth_bps =
      static_cast<uint64_t>(std::llround(p.fabric_bandwidth_gbps * 1e9));
  o.fabric.max_frame = p.fabric_frame_bytes;
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port = host::OpenSimulatedPort(o);
  if (!port.ok()) return ReplayError{"simulator: " + port.status().ToString()};
  dxgpu::RuntimeOptions ro;
  ro.sync_timeout_ns = 600'000'000'000;  // a trace's longest wait, in virtual time
  dxgpu::Expected<std::unique_ptr<Runtime>> rt = Runtime::Open(std::move(port).value(), ro);
  if (!rt.ok()) return ReplayError{"runtime: " + rt.status().ToString()};
  return ReplayTrace(trace, *rt.value(), progress);
}

}  // namespace

size_t DevicesOf(const Trace& trace) { return GpusInPlacementOrder(trace).size(); }

ModelParams AsSimulated(const ModelParams& params) {
  ModelParams p = params;
  p.serial_streams = true;  // one channel per model GPU
  p.tlp_overhead_bytes = kSimulatedTlpOverheadBytes;
  return p;
}

ReplayResult<ReplayStats> ReplayTrace(const Trace& trace, dxgpu::Runtime& rt,
                                      const std::function<void(size_t, size_t)>& progress) {
  Replayer replayer(trace, rt);
  return replayer.Run(progress);
}

ReplayResult<ReplayComparison> CompareWithSimulation(
    const Trace& trace, const ModelParams& params,
    const std::function<void(size_t, size_t)>& progress) {
  if (const std::string bad = CheckParams(params); !bad.empty()) return ReplayError{bad};
  if (const std::string bad = CheckSimulatable(params); !bad.empty()) return ReplayError{bad};
  const size_t devices = DevicesOf(trace);
  if (devices == 0) return ReplayError{"the trace has no GPU operations"};
  if (devices > kMaxDevices)
    return ReplayError{fmt::format("the trace uses {} GPUs; the replay simulates at most {}",
                                   devices, kMaxDevices)};
  if (const dxgpu::Status s = host::CheckPlacement(params.gpus_per_box, devices); !s.ok())
    return ReplayError{fmt::format("the trace uses {} GPUs: {}", devices, s.message())};
  const size_t total = 2 * trace.calls.size();
  ReplayComparison c;
  for (const bool dxpu : {false, true}) {
    const size_t before = dxpu ? trace.calls.size() : 0;
    ReplayResult<ReplayStats> run = ReplayOnce(trace, params, dxpu, [&](size_t done, size_t) {
      if (progress) progress(before + done, total);
    });
    if (!run.ok())
      return ReplayError{(dxpu ? "through DxPU: " : "natively: ") + run.error().message};
    (dxpu ? c.dxpu : c.native) = run.value();
  }
  c.simulated_overhead_pct =
      (static_cast<double>(c.dxpu.elapsed_ns) / static_cast<double>(c.native.elapsed_ns) - 1) * 100;
  c.predicted = Predict(trace, AsSimulated(params));
  return c;
}

}  // namespace dxpu::perfmodel
