// fixed_world.cc - a fixed-server run (fixed_world.h).
#include "manager/simulate/fixed_world.h"

#include <tuple>

namespace dxpu::poolsim {
SimRun RunFixed(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                FixedPolicy policy, const ArrivalOptions& arrivals) {
  SimRun run;
  run.seed = arrivals.seed;
  run.world = "fixed";
  run.policy = FixedPolicyName(policy);
  // The cluster's draws (tie-break order, random-fit) a stream apart from the arrivals' own.
  Rng rng = Rng(arrivals.seed).Fork(1);
  FixedCluster cluster(nodes, rng);
  RunRecorder record(run, cluster.gpu_capacity_milli());
  for (size_t i : FgdArrivals(pods, cluster.gpu_capacity_milli(), arrivals)) {
    const bool placed = cluster.Place(pods[i], policy).has_value();
    record.Arrived(pods[i], placed, cluster.gpu_allocated_milli());
  }
  record.Finish(cluster.gpu_allocated_milli());
  std::tie(run.idle_gpus, run.stranded_gpus) = cluster.IdleAndStranded(TypicalAsk(pods));
  return run;
}

}  // namespace dxpu::poolsim
