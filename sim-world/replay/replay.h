// replay.h - a trace replayed on the model GPUs through libdxgpu (docs/perf-model.md,
// "Replay"): every kernel and memset as a timed kernel of the trace's duration, every copy with
// its size and direction, every synchronisation; the host's own work between calls kept as
// waits on the port's clock. In the simulator, natively and through DxPU with the same fabric,
// the measurement the model's prediction is checked against.
#ifndef DXPU_SIM_WORLD_REPLAY_REPLAY_H_
#define DXPU_SIM_WORLD_REPLAY_REPLAY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dxgpu/runtime.h"
#include "perfmodel/model.h"
#include "perfmodel/trace.h"
#include "util/expected.h"

namespace dxpu::perfmodel {

struct ReplayError {
  std::string message;
};
template <typename T>
using ReplayResult = util::Expected<T, ReplayError>;

struct ReplayStats {
  uint64_t elapsed_ns = 0;  // port time from the first call to the end of all GPU work
  uint64_t kernels = 0;     // timed kernels (kernels and memsets)
  uint64_t copies = 0;
  uint64_t syncs = 0;
};

// The number of GPUs a trace uses: the devices its operations run on, and those its peer copies
// name as their destination.
size_t DevicesOf(const Trace& trace);

// Replays `trace` on `rt`, whose devices [0, DevicesOf(trace)) stand for the trace's devices
// in order of first use (then those only named as a peer copy's destination). A peer copy
// lands on the device the trace names (GpuOp::peer_device), else on the next one. The host calls of
// every thread run on this one thread in the trace's order: a blocking call holds up the other
// threads' calls after it. `progress(done, total)` every few hundred calls, if given.
ReplayResult<ReplayStats> ReplayTrace(const Trace& trace, dxgpu::Runtime& rt,
                                      const std::function<void(size_t, size_t)>& progress = {});

// What the simulator's links charge a TLP besides its payload: its header alone (12 bytes for a
// completion; no data-link or physical-layer bytes), where the model's default is a real link's.
inline constexpr double kSimulatedTlpOverheadBytes = 12;

// `params` as the simulator runs them: streams serialised (the model GPU has one channel) and
// the simulator's TLP overhead.
ModelParams AsSimulated(const ModelParams& params);

// The trace replayed in the simulator natively and through DxPU with `params`' fabric, beside
// the model's prediction for it with AsSimulated(params). Through DxPU the GPUs sit in bridge
// boxes as params.gpus_per_box places them (host::SimPortOptions::gpus_per_box; empty: all in
// one), and the prediction takes the same placement; natively each has its own PCIe link.
struct ReplayComparison {
  ReplayStats native;
  ReplayStats dxpu;
  double simulated_overhead_pct = 0;
  Prediction predicted;
};
ReplayResult<ReplayComparison> CompareWithSimulation(
    const Trace& trace, const ModelParams& params,
    const std::function<void(size_t, size_t)>& progress = {});

}  // namespace dxpu::perfmodel

#endif  // DXPU_SIM_WORLD_REPLAY_REPLAY_H_
