// workload_traces.cc - traces from the model GPU's own runs (workload_traces.h).
#include "sim-world/replay/workload_traces.h"

#include <algorithm>
#include <utility>

#include "sim-world/replay/synthetic_workloads.h"
#include "sim-world/sim_port.h"
#include "workloads/workload.h"

namespace dxpu::perfmodel {
namespace {

int DefaultIterations(const std::string& name) { return name == "llm-decode" ? 32 : 3; }

bool IsSynthetic(const std::string& name) {
  return std::ranges::any_of(ListSyntheticWorkloads(),
                             [&](const SyntheticWorkload& w) { return w.name == name; });
}

}  // namespace

std::vector<std::pair<std::string, std::string>> RecordableWorkloads() {
  std::vector<std::pair<std::string, std::string>> all;
  for (const workloads::WorkloadInfo& w : workloads::ListWorkloads())
    all.emplace_back(w.name, w.description);
  for (const SyntheticWorkload& w : ListSyntheticWorkloads())
    all.emplace_back(w.name, w.description);
  return all;
}

ReplayResult<std::unique_ptr<TraceRecorder>> RecordWorkload(const RecordOptions& options) {
  const bool synthetic = IsSynthetic(options.workload);
  bool known = synthetic;
  for (const auto& [name, description] : RecordableWorkloads()) known |= name == options.workload;
  if (!known) return ReplayError{"no workload named " + options.workload};
  if (options.devices < 1 || options.devices > 8 || (synthetic && options.devices != 1))
    return ReplayError{"devices: 1 to 8 for the demo's workloads, 1 for the synthetic ones"};
  auto recorder = std::make_unique<TraceRecorder>();
  host::SimPortOptions o;
  o.profiles.assign(options.devices, "dxgpu");
  o.gpu_activity = recorder->GpuActivitySink();
  o.through_dxpu = options.through_dxpu;
  o.fabric.added_latency_ns = options.added_latency_ns;
  if (!options.gpus_per_box.empty() && !options.through_dxpu)
    return ReplayError{"a placement over boxes is for a run through DxPU (--through-dxpu)"};
  o.gpus_per_box = options.gpus_per_box;
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port = host::OpenSimulatedPort(o);
  if (!port.ok()) return ReplayError{"simulator: " + port.status().ToString()};
  dxgpu::RuntimeOptions ro;
  ro.call_record = recorder->CallSink();
  ro.sync_timeout_ns = 600'000'000'000;
  {
    dxgpu::Expected<std::unique_ptr<dxgpu::Runtime>> rt =
        dxgpu::Runtime::Open(std::move(port).value(), ro);
    if (!rt.ok()) return ReplayError{"runtime: " + rt.status().ToString()};
    if (synthetic) {
      const int n =
          options.iterations > 0 ? options.iterations : DefaultIterations(options.workload);
      const dxgpu::Status s = RunSyntheticWorkload(options.workload, *rt.value(), n);
      if (!s.ok()) return ReplayError{options.workload + ": " + s.ToString()};
    } else {
      const workloads::WorkloadResult r = workloads::RunWorkload(
          options.workload, *rt.value(), options.devices,
          options.demo_scale ? workloads::Scale::kDemo : workloads::Scale::kTest, options.seed);
      if (!r.ok) return ReplayError{options.workload + ": " + r.error};
    }
  }
  return recorder;
}

}  // namespace dxpu::perfmodel
