// fixed_cluster.h - GPUs fixed inside servers: each pod takes its CPU, memory and GPUs from one
// node, as in the trace, placed by a baseline policy as the FGD paper's simulator places them
// (docs/pool-simulate.md, "Fixed servers"):
//
//   best-fit    the node left with the least, by the simulator's score
//               int((1 - (0.5 (cpu_free - cpu) / 128000 + 0.5 (gpu_free - gpu) / 8000)) * 100)
//               (GPU milli summed over the node's GPUs), the highest score first
//   random-fit  a node drawn at random among those that fit
//   first-fit   the first node that fits (not one of the paper's baselines)
//   k8s-default what the Kubernetes scheduler's default scoring does with these pods (1.20,
//               as the paper's simulator vendors it): NodeResourcesLeastAllocated (the mean of
//               (capacity - requested) x 100 / capacity over CPU and memory, the pod included)
//               plus NodeResourcesBalancedAllocation (int((1 - |cpu fraction - memory
//               fraction|) x 100)), each an integer, summed; it does not see GPUs, so it
//               spreads pods over the nodes that fit
//
// Ties go to a seeded random order of the nodes (the simulator's random node-name prefixes). A
// node fits when its free CPU and memory hold the pod's, its GPU model is one the pod allows,
// and it has the GPUs: for a pod that shares a GPU, one GPU with that much free; otherwise
// num_gpu GPUs with gpu_milli free each. Inside the node, a shared pod goes to the fullest GPU
// that holds it (random-fit: one of them at random), other pods to the lowest-numbered ones.
#ifndef DXPU_MANAGER_SIMULATE_FIXED_CLUSTER_H_
#define DXPU_MANAGER_SIMULATE_FIXED_CLUSTER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "manager/simulate/arrivals.h"
#include "manager/simulate/openb_trace.h"
#include "manager/simulate/sim_run.h"

namespace dxpu::poolsim {

enum class FixedPolicy : uint8_t { kBestFit, kRandomFit, kFirstFit, kKubernetes };

std::string_view FixedPolicyName(FixedPolicy policy);  // "best-fit", ...
std::optional<FixedPolicy> ParseFixedPolicy(std::string_view name);

class FixedCluster {
 public:
  // Only the nodes with GPUs take part (a pod that asks for none still runs on them, as in
  // the simulator). `rng` draws the tie-break order now and random-fit's choices later.
  FixedCluster(const std::vector<TraceNode>& nodes, Rng& rng);

  // Places the pod: its node's index, or nullopt when no node fits.
  std::optional<size_t> Place(const TracePod& pod, FixedPolicy policy);

  uint64_t gpu_capacity_milli() const { return capacity_milli_; }
  uint64_t gpu_allocated_milli() const { return allocated_milli_; }
  size_t node_count() const { return nodes_.size(); }
  // Whole GPUs free, and of those the ones on nodes without `ask` left (sim_run.h).
  std::pair<size_t, size_t> IdleAndStranded(const Ask& ask) const;
  // Milli free on each GPU of node i.
  const std::vector<uint32_t>& gpu_free(size_t i) const { return nodes_.at(i).gpu_free; }

 private:
  struct Node {
    uint64_t cpu_free = 0;
    uint64_t memory_free = 0;
    uint64_t cpu_total = 0;
    uint64_t memory_total = 0;
    std::vector<uint32_t> gpu_free;  // milli, per GPU
    uint64_t gpu_free_total = 0;
    std::string model;
    uint32_t rank = 0;  // the tie-break order
  };
  static bool Fits(const Node& n, const TracePod& pod);
  static int64_t BestFitScore(const Node& n, const TracePod& pod);
  static int64_t KubernetesScore(const Node& n, const TracePod& pod);
  void Take(Node& n, const TracePod& pod, bool random_gpu);

  std::vector<Node> nodes_;
  Rng& rng_;
  uint64_t capacity_milli_ = 0;
  uint64_t allocated_milli_ = 0;
};

}  // namespace dxpu::poolsim

#endif  // DXPU_MANAGER_SIMULATE_FIXED_CLUSTER_H_
