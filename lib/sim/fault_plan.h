// fault_plan.h - a mix of network faults as written on a command line
// ("loss=0.01,reorder=0.05,latency=10us,bw=100g,partition=5ms+2ms,crash=b@8ms+1ms"):
// parsing with errors that name the problem, printing back in the same syntax (a failing
// seed's replay command), and drawing a per-seed mix below given maxima. The syntax is
// documented in docs/simulator.md.
#ifndef DXPU_LIB_SIM_FAULT_PLAN_H_
#define DXPU_LIB_SIM_FAULT_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/clock.h"
#include "sim/network.h"
#include "sim/rng.h"

namespace dxpu::sim {

// From `at` for `duration` (kNever: for good), the one direction from -> to is cut; or,
// when from and to are empty, every path between the nodes in both directions.
struct PartitionWindow {
  Nanos at = 0;
  Nanos duration = kNever;
  std::string from;
  std::string to;

  bool operator==(const PartitionWindow&) const = default;
};

// Node `node` crashes at `at` and restarts `duration` later (kNever: never).
struct CrashWindow {
  std::string node;
  Nanos at = 0;
  Nanos duration = kNever;

  bool operator==(const CrashWindow&) const = default;
};

// The per-frame faults apply to every path alike (see PathConfig); the windows are in
// absolute virtual time. Defaults are a perfect, instant network.
struct FaultPlan {
  double loss = 0;                          // key loss
  double duplicate = 0;                     // key dup
  double reorder = 0;                       // key reorder
  Nanos reorder_delay = 10 * kMicrosecond;  // key reorder_delay
  double corrupt = 0;                       // key corrupt
  Nanos latency = 0;                        // key latency
  Nanos jitter = 0;                         // key jitter
  uint64_t bandwidth_bps = 0;               // key bw; 0: infinite
  uint64_t queue_limit_bytes = 0;           // key queue; 0: no limit
  std::vector<PartitionWindow> partitions;  // key partition, repeatable; key cut (one way)
  std::vector<CrashWindow> crashes;         // key crash, repeatable

  bool operator==(const FaultPlan&) const = default;
};

// What ParseFaultSpec returns: the plan, or an error naming the item and the problem.
struct FaultPlanResult {
  std::optional<FaultPlan> plan;
  std::string error;

  bool ok() const { return plan.has_value(); }
};

// Parses a comma-separated key=value list; the empty string is the default plan.
FaultPlanResult ParseFaultSpec(std::string_view spec);

// The plan in ParseFaultSpec's syntax, listing only values that differ from the defaults;
// ParseFaultSpec(ToString(p)) == p for every plan ParseFaultSpec can return.
std::string ToString(const FaultPlan& plan);

// A copy of `max` whose four probabilities are each drawn uniformly from [0, max's]. The
// rest (latency, bandwidth, windows...) is copied. Draws exactly four numbers from rng.
FaultPlan RandomizeFaultPlan(Rng& rng, const FaultPlan& max);

// The per-frame part of the plan as a path config (not partitioned).
PathConfig ToPathConfig(const FaultPlan& plan);

}  // namespace dxpu::sim

#endif  // DXPU_LIB_SIM_FAULT_PLAN_H_
