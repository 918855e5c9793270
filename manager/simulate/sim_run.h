// sim_run.h - what one run of `dxpu pool simulate` reports, whichever world it ran in: the
// share of the GPU capacity allocated as the arrived GPU requests grow, when pods start to be
// refused, and the counts (docs/pool-simulate.md). RunRecorder fills it arrival by arrival.
#ifndef DXPU_MANAGER_SIMULATE_SIM_RUN_H_
#define DXPU_MANAGER_SIMULATE_SIM_RUN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "manager/simulate/openb_trace.h"

namespace dxpu::poolsim {

struct CurvePoint {
  int arrived_percent = 0;       // GPU milli arrived so far over capacity, rounded
  double allocated_percent = 0;  // GPU milli allocated over capacity: the mean over the
                                 // arrivals of this point (the FGD paper's figures)
};

struct FirstFailure {
  size_t arrival = 0;            // its index in the arrival order
  double arrived_percent = 0;    // as it arrived (itself included)
  double allocated_percent = 0;  // the allocation then
};

struct SimRun {
  uint64_t seed = 0;
  std::string world;   // "fixed", "dxpu"
  std::string policy;  // "best-fit", "naive", ...
  size_t arrivals = 0;
  size_t placed = 0;
  size_t refused = 0;
  size_t gpu_pods_refused = 0;      // of those, pods that asked for GPUs
  size_t constrained_arrivals = 0;  // pods with a GPU model constraint
  size_t constrained_placed = 0;    // ... placed (on a model they allow: placement checks it)
  uint64_t capacity_milli = 0;
  uint64_t arrived_milli = 0;
  uint64_t allocated_milli = 0;
  std::vector<CurvePoint> curve;  // by arrived_percent, ascending
  std::optional<FirstFailure> first_failure;
  // At the end: whole GPUs idle, and of those the stranded ones: no host that may use them
  // (fixed servers: their own node; the pool: any host in their scope) has the CPU and
  // memory of the typical GPU pod (TypicalAsk) left.
  size_t idle_gpus = 0;
  size_t stranded_gpus = 0;
  // GPU pods placed (the DxPU world) with every GPU in a box of the host's own rack, and with
  // some GPU farther (across the spine): what the fabric latency of each placement is.
  size_t gpu_pods_in_rack = 0;
  size_t gpu_pods_across_racks = 0;

  // The curve's point at `percent` arrived, else the last one before it; 0 when none is.
  double AllocatedAt(int percent) const;
};

// The CPU and memory a typical GPU pod of the trace asks for: the medians over its pods that
// ask for GPUs (0 and 0 when none does).
struct Ask {
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
};
Ask TypicalAsk(const std::vector<TracePod>& pods);

class RunRecorder {
 public:
  RunRecorder(SimRun& run, uint64_t capacity_milli);
  // One arrival, placed or not, and the allocation after it.
  void Arrived(const TracePod& pod, bool placed, uint64_t allocated_milli);
  // After the last arrival.
  void Finish(uint64_t allocated_milli);

 private:
  SimRun& run_;
  double bucket_sum_ = 0;
  size_t bucket_count_ = 0;
  int bucket_ = -1;
};

}  // namespace dxpu::poolsim

#endif  // DXPU_MANAGER_SIMULATE_SIM_RUN_H_
