// fixed_world.cc - a fixed-server run (fixed_world.h).
#include "manager/simulate/fixed_world.h"

#include <tuple>

namespace dxpu::poolsim {
namespace {

// The cluster's draws (tie-break order, random-fit) apart from the arrivals' own.
constexpr uint64_t kClusterSeedSalt = 0x9e37'79b9'7f4a'7c15;

}  // namespace

SimRun RunFixed(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                FixedPolicy policy, const ArrivalOptions& arrivals) {
  SimRun run;
  run.seed = arrivals.seed;
  run.world = "fixed";
  run.policy = FixedPolicyName(policy);
  Rng rng(arrivals.seed ^ kClusterSeedSalt);
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
