// fabric_scenario.h - one seeded run of the DxFP fabric in the simulator: a host (the
// session initiator) and a bridge (the responder) joined by a simulated network with the
// faults of a FaultPlan, exchanging posted writes, non-posted reads and their split
// completions in both directions, reconnecting after link down, crash and restart. After
// the run it checks the invariants of docs/simulator.md:
//   - every TLP a session accepted is delivered at most once, in order, with its bytes
//     intact; all of them when the session stayed up;
//   - no posted TLP waited on non-posted or completion credit;
//   - a session that loses its path reports link down within the documented bound, with
//     exactly the reads that were left unanswered, and never without a fault to explain it;
//   - after the faults end, the workload completes (liveness);
//   - queues and replay buffers stay within their configured bounds.
#ifndef DXPU_LIB_SIM_FABRIC_SCENARIO_H_
#define DXPU_LIB_SIM_FABRIC_SCENARIO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/clock.h"
#include "sim/fault_plan.h"
#include "sim/network.h"

namespace dxpu::sim {

struct FabricScenarioOptions {
  uint64_t seed = 1;
  FaultPlan faults;                  // applied as given (the caller draws a per-seed mix)
  uint32_t host_tlps = 400;          // writes and reads the host submits
  uint32_t bridge_tlps = 200;        // DMA writes the bridge submits (completions come on top)
  uint32_t max_frame = 0;            // 0: drawn from the seed, 1500 or 9000
  Nanos spread = 50 * kMillisecond;  // a paced workload's submissions span about this
  Nanos time_limit = 2 * kSecond;
};

struct FabricScenarioResult {
  uint64_t seed = 0;
  std::vector<std::string> failures;  // empty: every invariant held
  bool passed() const { return failures.empty(); }

  bool completed = false;  // the whole workload was delivered before the time limit
  Nanos finished_at = 0;
  uint32_t max_frame = 0;
  uint64_t sessions = 0;    // sessions the host opened
  uint64_t link_downs = 0;  // link-down reports, both ends
  uint64_t tlps_delivered = 0;
  uint64_t tlps_retransmitted = 0;
  uint64_t reads_completed = 0;
  uint64_t reads_unanswered = 0;  // reported at link down
  uint64_t credit_refusals = 0;
  uint64_t frames_dropped = 0;  // by the sessions' checks (CRC, stale, ...)
  uint64_t max_queued = 0;      // most TLPs waiting in one endpoint's queue
  uint64_t max_in_flight = 0;   // most TLPs in one replay buffer
  PathCounters network;
};

FabricScenarioResult RunFabricScenario(const FabricScenarioOptions& options);

}  // namespace dxpu::sim

#endif  // DXPU_LIB_SIM_FABRIC_SCENARIO_H_
