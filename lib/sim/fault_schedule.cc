// fault_schedule.cc - partition and crash windows as scheduler events.
#include "sim/fault_schedule.h"

#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dxpu::sim {
namespace {

using DirectedPair = std::pair<PortId, PortId>;

// How many windows cover each fault now, shared by the scheduled events.
struct Depths {
  std::map<DirectedPair, int> cut;
  std::map<PortId, int> down;
};

Nanos End(Nanos at, Nanos duration) {
  return duration > kNever - 1 - at ? kNever - 1 : at + duration;
}

const FaultNode* Find(std::span<const FaultNode> nodes, const std::string& name) {
  for (const FaultNode& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

// The directed pairs a window cuts, or an error naming an unknown node.
std::string PairsOf(const PartitionWindow& w, std::span<const FaultNode> nodes,
                    std::vector<DirectedPair>* pairs) {
  if (w.from.empty()) {
    for (const FaultNode& a : nodes) {
      for (const FaultNode& b : nodes) {
        if (a.port != b.port) pairs->emplace_back(a.port, b.port);
      }
    }
    return {};
  }
  const FaultNode* from = Find(nodes, w.from);
  const FaultNode* to = Find(nodes, w.to);
  if (from == nullptr) return "cut: no node named '" + w.from + "'";
  if (to == nullptr) return "cut: no node named '" + w.to + "'";
  pairs->emplace_back(from->port, to->port);
  return {};
}

}  // namespace

std::string ScheduleFaults(const FaultPlan& plan, Network& network,
                           std::span<const FaultNode> nodes, FaultHooks hooks) {
  // Resolve every name first, so that an error schedules nothing.
  std::vector<std::vector<DirectedPair>> cuts(plan.partitions.size());
  for (size_t i = 0; i < plan.partitions.size(); ++i) {
    if (std::string err = PairsOf(plan.partitions[i], nodes, &cuts[i]); !err.empty()) {
      return err;
    }
  }
  std::vector<FaultNode> crashed;
  for (const CrashWindow& c : plan.crashes) {
    const FaultNode* n = Find(nodes, c.node);
    if (n == nullptr) return "crash: no node named '" + c.node + "'";
    crashed.push_back(*n);
  }

  Scheduler& s = network.scheduler();
  auto depths = std::make_shared<Depths>();
  auto shared_hooks = std::make_shared<const FaultHooks>(std::move(hooks));
  Network* net = &network;

  for (size_t i = 0; i < plan.partitions.size(); ++i) {
    const PartitionWindow& w = plan.partitions[i];
    auto pairs = std::make_shared<const std::vector<DirectedPair>>(std::move(cuts[i]));
    s.ScheduleAt(w.at, [net, depths, pairs] {
      for (const auto& [from, to] : *pairs) {
        if (depths->cut[{from, to}]++ == 0) net->SetPartitioned(from, to, true);
      }
    });
    if (w.duration == kNever) continue;
    s.ScheduleAt(End(w.at, w.duration), [net, depths, pairs] {
      for (const auto& [from, to] : *pairs) {
        if (--depths->cut[{from, to}] == 0) net->SetPartitioned(from, to, false);
      }
    });
  }
  for (size_t i = 0; i < plan.crashes.size(); ++i) {
    const CrashWindow& c = plan.crashes[i];
    const FaultNode& node = crashed[i];
    s.ScheduleAt(c.at, [net, depths, shared_hooks, node] {
      if (depths->down[node.port]++ != 0) return;
      net->SetPortDown(node.port, true);
      if (shared_hooks->on_crash) shared_hooks->on_crash(node);
    });
    if (c.duration == kNever) continue;
    s.ScheduleAt(End(c.at, c.duration), [net, depths, shared_hooks, node] {
      if (--depths->down[node.port] != 0) return;
      net->SetPortDown(node.port, false);
      if (shared_hooks->on_restart) shared_hooks->on_restart(node);
    });
  }
  return {};
}

}  // namespace dxpu::sim
