// fault_schedule.h - puts a FaultPlan's partition, cut and crash windows on a Network's
// scheduler: partitions cut every path between the named nodes, cuts one direction,
// crashes take a node's port down and bring it back, and hooks let the test harness crash
// and restart the endpoint itself.
#ifndef DXPU_LIB_SIM_FAULT_SCHEDULE_H_
#define DXPU_LIB_SIM_FAULT_SCHEDULE_H_

#include <functional>
#include <span>
#include <string>

#include "sim/fault_plan.h"
#include "sim/network.h"

namespace dxpu::sim {

// A node of the simulation: the name a fault spec uses for it and its port.
struct FaultNode {
  std::string name;
  PortId port = 0;
};

// Called when a node's crash or restart happens, after its port went down or came up (so
// a restarted endpoint may send at once). Either may be empty.
struct FaultHooks {
  std::function<void(const FaultNode&)> on_crash;
  std::function<void(const FaultNode&)> on_restart;
};

// Schedules the plan's windows on network.scheduler(): a partition cuts both directions
// of every pair of `nodes`, a cut one direction, a crash takes one node's port down.
// Overlapping windows nest: a direction (or a port) stays down until the last window
// covering it ends. Returns "" or, scheduling nothing, an error naming a node of a cut or
// crash that is not in `nodes`.
std::string ScheduleFaults(const FaultPlan& plan, Network& network,
                           std::span<const FaultNode> nodes, FaultHooks hooks = {});

}  // namespace dxpu::sim

#endif  // DXPU_LIB_SIM_FAULT_SCHEDULE_H_
