// pool_world.h - the DxPU world of `dxpu pool simulate` (docs/pool-simulate.md, "The DxPU
// world"): the trace's GPUs in GPU boxes (each node's GPUs, one box, its model the profile) and
// its CPUs and memory in hosts (each node's, one host). A pod takes CPU and memory from one
// host and its GPUs from any boxes within its fabric scope (the whole hall, or the row of racks
// its host is in), chosen by the pool manager's own allocation code (manager/allocator.h:
// FreeGpus and ChooseGpus, what dxpu-manager runs). The manager lends whole GPUs; pods that
// share a GPU share one their host has borrowed, as the trace's scheduler shares a GPU among
// the pods of a node.
#ifndef DXPU_MANAGER_SIMULATE_POOL_WORLD_H_
#define DXPU_MANAGER_SIMULATE_POOL_WORLD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "manager/allocator.h"
#include "manager/simulate/arrivals.h"
#include "manager/simulate/openb_trace.h"
#include "manager/simulate/sim_run.h"

namespace dxpu::poolsim {

// How a pod's host and GPUs are chosen.
enum class PoolPolicy : uint8_t {
  kNaive,    // the host that fits tightest; GPUs of any allowed model, the most plentiful first
  kScarcity  // the same, but: the models constrained pods want least first; a host with room
             // for the rest of a shared GPU's pods; a host whose own box holds the pod's GPUs
             // first, and that box asked for first (docs/pool-simulate.md)
};

std::string_view PoolPolicyName(PoolPolicy policy);  // "naive", "scarcity"
std::optional<PoolPolicy> ParsePoolPolicy(std::string_view name);

struct PoolWorldOptions {
  PoolPolicy policy = PoolPolicy::kNaive;
  manager::Policy gpu_policy = manager::Policy::kPack;  // the manager's, for each allocation
  // Nodes (hosts and boxes, in the node list's order) per row of racks: a pod's GPUs come from
  // its host's row. 0: the whole hall is one fabric.
  size_t row_nodes = 0;
  // Nodes per rack, for the placements' reach (in the rack: one switch between host and box;
  // beyond it: the spine's three). 0: every node a rack of its own.
  size_t rack_nodes = 8;
};

class PoolCluster {
 public:
  explicit PoolCluster(const std::vector<TraceNode>& nodes, const PoolWorldOptions& options);

  // Places the pod: true when a host and GPUs were found (nothing is taken otherwise).
  bool Place(const TracePod& pod);

  uint64_t gpu_capacity_milli() const { return capacity_milli_; }
  uint64_t gpu_allocated_milli() const { return allocated_milli_; }
  size_t gpus_lent() const { return gpus_lent_; }
  // GPU pods placed with all their GPUs in the host's rack, and with some beyond it.
  size_t gpu_pods_in_rack() const { return in_rack_; }
  size_t gpu_pods_across_racks() const { return across_racks_; }
  size_t rows() const { return rows_.size(); }
  // GPUs free in the boxes, and of those the ones whose scope has no host with `ask` left.
  std::pair<size_t, size_t> IdleAndStranded(const Ask& ask) const;

 private:
  struct Borrowed {
    manager::GpuRef gpu;
    std::string model;
    uint32_t free_milli = 0;
  };
  struct Host {
    size_t node = 0;  // its place in the hall, as the node list's GPU nodes are numbered
    uint64_t cpu_free = 0;
    uint64_t memory_free = 0;
    std::vector<Borrowed> gpus;  // what its pods share
  };
  struct Row {
    manager::FreeGpus free;
    std::map<std::string, size_t> total;  // GPUs by model, free or not
    std::vector<size_t> hosts;
  };

  bool PlaceShared(const TracePod& pod);
  bool PlaceWithNewGpus(const TracePod& pod);
  // The host of `row` that fits the pod's CPU and memory tightest; nullopt when none does.
  std::optional<size_t> TightestHost(const Row& row, const TracePod& pod) const;
  // The models the pod may take in `row`, in the order to try them.
  std::vector<std::string> ModelsToTry(const Row& row, const TracePod& pod) const;
  void Lend(Row& row, Host& host, const std::string& model,
            const std::vector<manager::GpuRef>& gpus, const TracePod& pod);

  PoolWorldOptions options_;
  std::vector<Host> hosts_;
  std::vector<Row> rows_;
  std::map<std::string, size_t> model_totals_;      // the whole hall's, for scarcity
  std::map<std::string, size_t> constrained_seen_;  // constrained pods so far, by model allowed
  uint64_t capacity_milli_ = 0;
  uint64_t cpu_per_gpu_milli_ = 0;  // the hall's CPU milli per GPU milli (integer part)
  uint64_t allocated_milli_ = 0;
  size_t gpus_lent_ = 0;
  size_t in_rack_ = 0;
  size_t across_racks_ = 0;
  std::map<std::string, size_t> box_node_;  // a box's place in the hall, by its name
  std::vector<std::string> box_names_;      // ... and its name, by its place
  std::vector<uint32_t> box_gpus_;          // ... and its GPUs, by its place
  size_t Rack(size_t node) const;
};

// One run of the DxPU world: the same arrivals as the fixed world's run of the same seed.
SimRun RunPool(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
               const PoolWorldOptions& options, const ArrivalOptions& arrivals);

}  // namespace dxpu::poolsim

#endif  // DXPU_MANAGER_SIMULATE_POOL_WORLD_H_
