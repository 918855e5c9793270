// workload_traces.h - traces made from the model GPU's own runs (docs/perf-model.md,
// "Traces"): a workload run on the simulator's native model GPUs with the trace recorder on,
// giving the trace a profiler would have taken. The workloads are the demo's (lib/workloads:
// mlp-train, decode-loop, data-loading) and the synthetic ones (synthetic_workloads.h:
// resnet-train, bert-infer, llm-decode).
#ifndef DXPU_SIM_WORLD_REPLAY_WORKLOAD_TRACES_H_
#define DXPU_SIM_WORLD_REPLAY_WORKLOAD_TRACES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "perfmodel/record/trace_recorder.h"
#include "sim-world/replay/replay.h"

namespace dxpu::perfmodel {

struct RecordOptions {
  std::string workload;
  size_t devices = 1;       // the demo's workloads: 1 or 2; the synthetic ones: 1
  int iterations = 0;       // the synthetic ones: steps, batches or tokens (0: their default)
  bool demo_scale = false;  // the demo's workloads: kDemo instead of kTest
  uint64_t seed = 7;
  // Through DxPU instead of natively, with this added one-way latency (what the simulator's
  // DxPU run of the workload looks like to a profiler).
  bool through_dxpu = false;
  uint64_t added_latency_ns = 1000;
  // Through DxPU: the GPUs per bridge box (host::SimPortOptions::gpus_per_box; empty: one box).
  std::vector<size_t> gpus_per_box;
};

// Every workload RecordWorkload knows, with what it is.
std::vector<std::pair<std::string, std::string>> RecordableWorkloads();

// Runs the workload natively in the simulator with the recorder on; the recorder then holds
// the trace (ToTrace, WriteKineto).
ReplayResult<std::unique_ptr<TraceRecorder>> RecordWorkload(const RecordOptions& options);

}  // namespace dxpu::perfmodel

#endif  // DXPU_SIM_WORLD_REPLAY_WORKLOAD_TRACES_H_
