// trace_recorder.h - synthetic traces from the model GPU's own runs: records a libdxgpu program
// as the PyTorch profiler (Kineto on CUPTI) records one on a real GPU - the runtime's calls
// (RuntimeOptions::call_record, docs/dxgpu-runtime.md "Call records") and the GPUs' kernels and
// copies (the activity log, docs/dxgpu.md "The activity log", e.g. through
// SimPortOptions::gpu_activity) - links each GPU operation to the call that submitted it, and
// writes the run as a Kineto Chrome trace that ParseKinetoTrace reads (WriteKineto), or as the
// Trace it reads into (ToTrace).
//
//   TraceRecorder recorder;
//   host::SimPortOptions po;  po.gpu_activity = recorder.GpuActivitySink();
//   dxgpu::RuntimeOptions ro; ro.call_record = recorder.CallSink();
//   ... open the port and the runtime, run the program, close the runtime ...
//   recorder.WriteKineto(file);
//
// Correlation: each recorded call gets a correlation ID, 1, 2, ... in the order the calls
// return, unique in the trace; a GPU operation gets that of the call whose submissions include
// its (device, GPFIFO entry ordinal) - the entry ordinal is the runtime's submission sequence
// number - or none (args.correlation left out) when no recorded call made it. One recorder
// records one Runtime: the ordinals start again at 1 when a runtime sets the ring up again.
//
// Thread-safe: the sinks may be called from several threads at once. The sinks point at the
// recorder, which must outlive their use.
#ifndef DXPU_LIB_PERFMODEL_RECORD_TRACE_RECORDER_H_
#define DXPU_LIB_PERFMODEL_RECORD_TRACE_RECORDER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dxgpu/runtime.h"
#include "gpu/activity.h"
#include "perfmodel/trace.h"

namespace dxpu::perfmodel {

class TraceRecorder {
 public:
  // The process id of the host's calls in the Kineto trace (GPU operations have the device
  // index as theirs, as Kineto writes them); host threads are tid 1, 2, ... in order of their
  // first recorded call.
  static constexpr int64_t kHostPid = 1000;

  TraceRecorder() = default;
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // For SimPortOptions::gpu_activity (or each GpuOptions::activity with its index).
  std::function<void(size_t device, const gpu::CommandActivity&)> GpuActivitySink();
  // For RuntimeOptions::call_record.
  std::function<void(const dxgpu::CallRecord&)> CallSink();

  void OnGpuActivity(size_t device, const gpu::CommandActivity& activity);
  // Records the call for the thread that makes it (call it on that thread).
  void OnCall(const dxgpu::CallRecord& call);

  size_t call_count() const;
  size_t activity_count() const;

  // The trace as ParseKinetoTrace(WriteKineto's output, source) reads it: the same calls and
  // operations, times from the earliest of them, sorted as it sorts them, events_read and
  // events_skipped as it counts them. Host-to-host copies (libdxgpu makes none) have no name
  // in Kineto's trace: they are left out of both.
  Trace ToTrace(const std::string& source = "dxpu trace recorder") const;
  // {"schemaVersion": 1, "traceEvents": [...]}: process_name / thread_name metadata ("ph":
  // "M"), then complete events ("ph": "X") of the calls (cat cuda_runtime) and of the GPU
  // operations (kernel, gpu_memcpy, gpu_memset); ts and dur in microseconds on the port's
  // clock, to the nanosecond.
  void WriteKineto(std::ostream& out) const;
  // The same run as PyTorch on ROCm records it (roctracer through Kineto): HIP's names for the
  // calls (hipLaunchKernel, hipMemcpyAsync, hipStreamSynchronize, ...), a copy's size on its
  // host call (args.size) and none on the GPU's copy. ParseKinetoTrace reads both into the same
  // Trace.
  void WriteKinetoHip(std::ostream& out) const;

 private:
  struct RecordedCall {
    dxgpu::CallRecord record;
    int64_t tid = 0;
    int64_t correlation = kNoCorrelation;
  };
  struct RecordedActivity {
    size_t device = 0;
    gpu::CommandActivity activity;
  };
  // A GPU operation as written: the activity with its call's stream and correlation.
  struct Op {
    RecordedActivity recorded;
    int64_t stream = 0;
    int64_t correlation = kNoCorrelation;
    int32_t peer_device = kNoDevice;  // a peer copy's destination
  };

  void Write(std::ostream& out, bool hip) const;
  // Under mu_: the activities written (host-to-host copies left out), in the order recorded.
  std::vector<Op> Ops() const;
  static std::vector<size_t> Devices(const std::vector<Op>& ops);
  int64_t ThreadCount() const { return static_cast<int64_t>(threads_.size()); }

  mutable std::mutex mu_;
  std::vector<RecordedCall> calls_;
  std::vector<RecordedActivity> activities_;
  std::map<std::pair<size_t, uint64_t>, size_t> submitted_by_;  // (device, seq) -> calls_ index
  std::map<std::thread::id, int64_t> threads_;
};

}  // namespace dxpu::perfmodel

#endif  // DXPU_LIB_PERFMODEL_RECORD_TRACE_RECORDER_H_
