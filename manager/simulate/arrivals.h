// arrivals.h - the order in which a trace's pods arrive at the pool, as the FGD paper's
// simulator makes it (github hkust-adsl/kubernetes-scheduler-simulator, "workload tuning";
// docs/pool-simulate.md): the trace's pods in a seeded random order, then pods drawn from the
// trace at random, with replacement, until the GPUs asked for would pass `ratio` x the
// cluster's GPU capacity (or, for a trace that asks for more, pods taken out at random until
// it does not). Creation and deletion times are not used: nothing leaves.
#ifndef DXPU_MANAGER_SIMULATE_ARRIVALS_H_
#define DXPU_MANAGER_SIMULATE_ARRIVALS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "manager/simulate/openb_trace.h"
#include "sim/rng.h"

namespace dxpu::poolsim {

// The simulator's seeded generator (lib/sim/rng.h): the same draws on every machine.
using Rng = sim::Rng;

// The elements in a uniformly random order (Fisher-Yates, rng's draws).
template <typename T>
void Shuffle(Rng& rng, std::vector<T>& v) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.Uniform(i)]);
}

struct ArrivalOptions {
  double ratio = 1.3;  // GPU milli asked for, over the cluster's GPU milli
  uint64_t seed = 42;
};

// The most arrivals made (a trace of tiny GPU shares on a huge cluster stops there).
inline constexpr size_t kMaxArrivals = 50'000'000;

// Indices into `pods`, in arrival order; empty when pods is.
std::vector<size_t> FgdArrivals(const std::vector<TracePod>& pods, uint64_t capacity_milli,
                                const ArrivalOptions& options);

}  // namespace dxpu::poolsim

#endif  // DXPU_MANAGER_SIMULATE_ARRIVALS_H_
