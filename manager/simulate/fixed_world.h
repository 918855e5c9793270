// fixed_world.h - one run of the fixed-server world: a trace's pods arriving (arrivals.h) at a
// cluster of its nodes (fixed_cluster.h) under one policy, reported as sim_run.h says.
#ifndef DXPU_MANAGER_SIMULATE_FIXED_WORLD_H_
#define DXPU_MANAGER_SIMULATE_FIXED_WORLD_H_

#include <vector>

#include "manager/simulate/arrivals.h"
#include "manager/simulate/fixed_cluster.h"
#include "manager/simulate/openb_trace.h"
#include "manager/simulate/sim_run.h"

namespace dxpu::poolsim {

SimRun RunFixed(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                FixedPolicy policy, const ArrivalOptions& arrivals);

}  // namespace dxpu::poolsim

#endif  // DXPU_MANAGER_SIMULATE_FIXED_WORLD_H_
