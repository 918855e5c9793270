// fixed_world.cc - a fixed-server run and its curve (fixed_world.h).
#include "manager/simulate/fixed_world.h"

#include <cmath>

namespace dxpu::poolsim {
namespace {

double Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// The cluster's draws (tie-break order, random-fit) apart from the arrivals' own.
constexpr uint64_t kClusterSeedSalt = 0x9e37'79b9'7f4a'7c15;

}  // namespace

double FixedRun::AllocatedAt(int percent) const {
  double at = 0;
  for (const CurvePoint& p : curve) {
    if (p.arrived_percent > percent) break;
    at = p.allocated_percent;
  }
  return at;
}

FixedRun RunFixed(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                  FixedPolicy policy, const ArrivalOptions& arrivals) {
  FixedRun run;
  run.seed = arrivals.seed;
  run.policy = policy;
  Rng rng(arrivals.seed ^ kClusterSeedSalt);
  FixedCluster cluster(nodes, rng);
  run.capacity_milli = cluster.gpu_capacity_milli();
  const std::vector<size_t> order = FgdArrivals(pods, run.capacity_milli, arrivals);
  run.arrivals = order.size();
  double bucket_sum = 0;
  size_t bucket_count = 0;
  int bucket = -1;
  for (size_t a = 0; a < order.size(); ++a) {
    const TracePod& pod = pods[order[a]];
    run.arrived_milli += pod.total_gpu_milli();
    const bool constrained = pod.num_gpu > 0 && !pod.gpu_spec.empty();
    run.constrained_arrivals += constrained ? 1 : 0;
    if (cluster.Place(pod, policy)) {
      ++run.placed;
      run.constrained_placed += constrained ? 1 : 0;
    } else {
      ++run.refused;
      run.gpu_pods_refused += pod.num_gpu > 0 ? 1 : 0;
      if (!run.first_failure) {
        run.first_failure =
            FirstFailure{a, Percent(run.arrived_milli, run.capacity_milli),
                         Percent(cluster.gpu_allocated_milli(), run.capacity_milli)};
      }
    }
    const auto point =
        static_cast<int>(std::lround(Percent(run.arrived_milli, run.capacity_milli)));
    if (point != bucket && bucket_count > 0) {
      run.curve.push_back({bucket, bucket_sum / static_cast<double>(bucket_count)});
      bucket_sum = 0;
      bucket_count = 0;
    }
    bucket = point;
    bucket_sum += Percent(cluster.gpu_allocated_milli(), run.capacity_milli);
    ++bucket_count;
  }
  if (bucket_count > 0)
    run.curve.push_back({bucket, bucket_sum / static_cast<double>(bucket_count)});
  run.allocated_milli = cluster.gpu_allocated_milli();
  return run;
}

}  // namespace dxpu::poolsim
