// fixed_world.h - one run of the fixed-server world: a trace's pods arriving (arrivals.h) at a
// cluster of its nodes (fixed_cluster.h) under one policy, and what the FGD paper reports of it:
// the share of the cluster's GPU capacity allocated as the arrived GPU requests grow to
// `ratio` of it, and when pods start to fail.
#ifndef DXPU_MANAGER_SIMULATE_FIXED_WORLD_H_
#define DXPU_MANAGER_SIMULATE_FIXED_WORLD_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "manager/simulate/arrivals.h"
#include "manager/simulate/fixed_cluster.h"
#include "manager/simulate/openb_trace.h"

namespace dxpu::poolsim {

struct CurvePoint {
  int arrived_percent = 0;       // GPU milli arrived so far over capacity, rounded
  double allocated_percent = 0;  // GPU milli allocated over capacity: the mean over the
                                 // arrivals of this point (the paper's figures)
};

struct FirstFailure {
  size_t arrival = 0;            // its index in the arrival order
  double arrived_percent = 0;    // as it arrived (itself included)
  double allocated_percent = 0;  // the allocation then
};

struct FixedRun {
  uint64_t seed = 0;
  FixedPolicy policy = FixedPolicy::kBestFit;
  size_t arrivals = 0;
  size_t placed = 0;
  size_t refused = 0;
  size_t gpu_pods_refused = 0;      // of those, pods that asked for GPUs
  size_t constrained_arrivals = 0;  // pods with a GPU model constraint
  size_t constrained_placed = 0;    // ... placed on a model they allow (always: checked)
  uint64_t capacity_milli = 0;
  uint64_t arrived_milli = 0;
  uint64_t allocated_milli = 0;
  std::vector<CurvePoint> curve;  // by arrived_percent, ascending
  std::optional<FirstFailure> first_failure;

  // The curve's point at `percent` arrived, else the last one before it; 0 when none is.
  double AllocatedAt(int percent) const;
};

FixedRun RunFixed(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                  FixedPolicy policy, const ArrivalOptions& arrivals);

}  // namespace dxpu::poolsim

#endif  // DXPU_MANAGER_SIMULATE_FIXED_WORLD_H_
