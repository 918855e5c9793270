// pool_world.cc - the DxPU world (pool_world.h).
#include "manager/simulate/pool_world.h"

#include <algorithm>
#include <array>
#include <tuple>

namespace dxpu::poolsim {
namespace {

constexpr std::array<std::pair<PoolPolicy, std::string_view>, 2> kPoolPolicyNames = {{
    {PoolPolicy::kNaive, "naive"},
    {PoolPolicy::kScarcity, "scarcity"},
}};

// What one allocation may take: the pool's own bound (dxpu pool allocate's count).
constexpr uint32_t kMaxCount = 64;

bool Allows(const TracePod& pod, const std::string& model) {
  return pod.gpu_spec.empty() ||
         std::find(pod.gpu_spec.begin(), pod.gpu_spec.end(), model) != pod.gpu_spec.end();
}

}  // namespace

std::string_view PoolPolicyName(PoolPolicy policy) {
  for (const auto& [p, name] : kPoolPolicyNames)
    if (p == policy) return name;
  return "?";
}

std::optional<PoolPolicy> ParsePoolPolicy(std::string_view name) {
  for (const auto& [p, n] : kPoolPolicyNames)
    if (n == name) return p;
  return std::nullopt;
}

PoolCluster::PoolCluster(const std::vector<TraceNode>& nodes, const PoolWorldOptions& options)
    : options_(options) {
  size_t index = 0;
  uint64_t cpu_total = 0;
  for (const TraceNode& t : nodes) {
    if (t.gpus == 0) continue;  // as the fixed world: the GPU nodes' CPUs, memory and GPUs
    const size_t row = options_.row_nodes == 0 ? 0 : index / options_.row_nodes;
    ++index;
    if (rows_.size() <= row) rows_.resize(row + 1);
    Row& r = rows_[row];
    Host h;
    h.node = index - 1;
    box_node_[t.name] = index - 1;
    box_names_.push_back(t.name);
    box_gpus_.push_back(t.gpus);
    h.cpu_free = t.cpu_milli;
    h.memory_free = t.memory_mib;
    r.hosts.push_back(hosts_.size());
    hosts_.push_back(std::move(h));
    for (uint32_t g = 0; g < t.gpus; ++g) r.free.Add(t.model, {t.name, static_cast<uint16_t>(g)});
    r.total[t.model] += t.gpus;
    model_totals_[t.model] += t.gpus;
    capacity_milli_ += uint64_t{t.gpus} * kMilliPerGpu;
    cpu_total += t.cpu_milli;
  }
  cpu_per_gpu_milli_ = capacity_milli_ == 0 ? 0 : cpu_total / capacity_milli_;
}

std::optional<size_t> PoolCluster::TightestHost(const Row& row, const TracePod& pod) const {
  // The scarcity policy sees that a pod starting a shared GPU leaves the rest of that GPU to
  // pods that fit beside it: it wants a host with room for them too (the rest's share of CPU
  // at the hall's CPU per GPU), the tightest such host, else the roomiest. Hosts with the most
  // room stay for the pods that ask for a lot.
  uint64_t wanted = pod.cpu_milli;
  if (options_.policy == PoolPolicy::kScarcity && pod.shares_a_gpu())
    wanted += (kMilliPerGpu - pod.gpu_milli) * cpu_per_gpu_milli_;
  // And it prefers a host whose own box still holds the pod's GPUs: the nearest GPUs.
  const bool local_first = options_.policy == PoolPolicy::kScarcity && pod.num_gpu > 0;
  const auto own_box_holds = [&](const Host& host) {
    return std::ranges::any_of(row.free.by_profile(), [&](const auto& profile) {
      if (!Allows(pod, profile.first)) return false;
      const auto box = profile.second.find(box_names_[host.node]);
      if (box == profile.second.end() || box->second.size() < pod.num_gpu) return false;
      // A whole free box stays whole for a pod that wants most of it.
      const size_t free = box->second.size();
      return free < box_gpus_[host.node] || 2 * size_t{pod.num_gpu} > free;
    });
  };
  std::optional<size_t> tightest;
  std::optional<size_t> tightest_local;
  std::optional<size_t> roomiest;
  const auto tighter = [&](size_t h, const std::optional<size_t>& than) {
    return !than || hosts_[h].cpu_free < hosts_[*than].cpu_free ||
           (hosts_[h].cpu_free == hosts_[*than].cpu_free &&
            hosts_[h].memory_free < hosts_[*than].memory_free);
  };
  for (size_t h : row.hosts) {
    const Host& host = hosts_[h];
    if (host.cpu_free < pod.cpu_milli || host.memory_free < pod.memory_mib) continue;
    if (!roomiest || host.cpu_free > hosts_[*roomiest].cpu_free) roomiest = h;
    if (host.cpu_free < wanted) continue;
    if (tighter(h, tightest)) tightest = h;
    if (local_first && tighter(h, tightest_local) && own_box_holds(host)) tightest_local = h;
  }
  if (tightest_local) return tightest_local;
  return tightest ? tightest : roomiest;
}

std::vector<std::string> PoolCluster::ModelsToTry(const Row& row, const TracePod& pod) const {
  struct Candidate {
    std::string model;
    size_t free = 0;
    double pressure = 0;  // constrained pods seen that allow it, per GPU of it
  };
  std::vector<Candidate> candidates;
  for (const auto& [model, by_box] : row.free.by_profile()) {
    if (!Allows(pod, model)) continue;
    Candidate c{model, row.free.Count(model), 0};
    if (options_.policy == PoolPolicy::kScarcity && pod.gpu_spec.empty()) {
      const auto seen = constrained_seen_.find(model);
      const auto total = model_totals_.find(model);
      if (seen != constrained_seen_.end() && total != model_totals_.end() && total->second > 0)
        c.pressure = static_cast<double>(seen->second) / static_cast<double>(total->second);
    }
    candidates.push_back(std::move(c));
  }
  // The least wanted by constrained pods first (scarcity; naive: all 0), then the most free.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.pressure != b.pressure) return a.pressure < b.pressure;
                     return a.free > b.free;
                   });
  std::vector<std::string> out;
  out.reserve(candidates.size());
  for (Candidate& c : candidates) out.push_back(std::move(c.model));
  return out;
}

size_t PoolCluster::Rack(size_t node) const {
  return options_.rack_nodes == 0 ? node : node / options_.rack_nodes;
}

void PoolCluster::Lend(Row& row, Host& host, const std::string& model,
                       const std::vector<manager::GpuRef>& gpus, const TracePod& pod) {
  const bool in_rack = std::all_of(gpus.begin(), gpus.end(), [&](const manager::GpuRef& g) {
    const auto box = box_node_.find(g.box);
    return box != box_node_.end() && Rack(box->second) == Rack(host.node);
  });
  ++(in_rack ? in_rack_ : across_racks_);
  for (const manager::GpuRef& g : gpus) {
    row.free.Remove(model, g);
    ++gpus_lent_;
    if (pod.shares_a_gpu()) host.gpus.push_back({g, model, kMilliPerGpu - pod.gpu_milli});
  }
}

bool PoolCluster::PlaceShared(const TracePod& pod) {
  // A GPU a host borrowed for shared pods, with room for this one: the fullest that holds it.
  Host* best_host = nullptr;
  Borrowed* best_gpu = nullptr;
  for (Host& host : hosts_) {
    if (host.cpu_free < pod.cpu_milli || host.memory_free < pod.memory_mib) continue;
    for (Borrowed& b : host.gpus) {
      if (b.free_milli < pod.gpu_milli || !Allows(pod, b.model)) continue;
      if (best_gpu == nullptr || b.free_milli < best_gpu->free_milli) {
        best_host = &host;
        best_gpu = &b;
      }
    }
  }
  if (best_gpu == nullptr) return false;
  best_gpu->free_milli -= pod.gpu_milli;
  const auto box = box_node_.find(best_gpu->gpu.box);
  ++(box != box_node_.end() && Rack(box->second) == Rack(best_host->node) ? in_rack_
                                                                          : across_racks_);
  best_host->cpu_free -= pod.cpu_milli;
  best_host->memory_free -= pod.memory_mib;
  allocated_milli_ += pod.gpu_milli;
  return true;
}

bool PoolCluster::PlaceWithNewGpus(const TracePod& pod) {
  // Rows with the most free GPUs first (one row: the hall).
  std::vector<size_t> order(rows_.size());
  std::vector<size_t> free(rows_.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    free[i] = rows_[i].free.Count("");
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return free[a] > free[b]; });
  for (size_t r : order) {
    Row& row = rows_[r];
    const std::optional<size_t> h = TightestHost(row, pod);
    if (!h) continue;
    for (const std::string& model : ModelsToTry(row, pod)) {
      manager::AllocationRequest request;
      request.host = "host";
      request.count = pod.num_gpu;
      request.policy = options_.gpu_policy;
      request.profile = model;
      // The scarcity policy asks the manager for the host's own node's box first (its
      // `prefer`): the nearest GPUs, one switch away.
      const std::string& own_box = box_names_[hosts_[*h].node];
      const bool prefer = options_.policy == PoolPolicy::kScarcity;
      if (prefer) {
        request.policy = manager::Policy::kPrefer;
        request.prefer_box = own_box;
      }
      const manager::PoolResult<std::vector<manager::GpuRef>> chosen =
          manager::ChooseGpus(row.free, request, prefer, row.total, kMaxCount);
      if (!chosen.ok()) continue;
      Host& host = hosts_[*h];
      Lend(row, host, model, chosen.value(), pod);
      host.cpu_free -= pod.cpu_milli;
      host.memory_free -= pod.memory_mib;
      allocated_milli_ += pod.total_gpu_milli();
      return true;
    }
  }
  return false;
}

bool PoolCluster::Place(const TracePod& pod) {
  if (pod.num_gpu > 0 && !pod.gpu_spec.empty()) {
    for (const std::string& model : pod.gpu_spec) ++constrained_seen_[model];
  }
  if (pod.num_gpu == 0) {
    std::optional<size_t> best;
    for (const Row& row : rows_) {
      const std::optional<size_t> h = TightestHost(row, pod);
      if (h && (!best || hosts_[*h].cpu_free < hosts_[*best].cpu_free)) best = h;
    }
    if (!best) return false;
    hosts_[*best].cpu_free -= pod.cpu_milli;
    hosts_[*best].memory_free -= pod.memory_mib;
    return true;
  }
  if (pod.num_gpu > kMaxCount) return false;
  if (pod.shares_a_gpu() && PlaceShared(pod)) return true;
  return PlaceWithNewGpus(pod);
}

std::pair<size_t, size_t> PoolCluster::IdleAndStranded(const Ask& ask) const {
  size_t idle = 0;
  size_t stranded = 0;
  for (const Row& row : rows_) {
    const size_t free = row.free.Count("");
    idle += free;
    const bool host_left = std::any_of(row.hosts.begin(), row.hosts.end(), [&](size_t h) {
      return hosts_[h].cpu_free >= ask.cpu_milli && hosts_[h].memory_free >= ask.memory_mib;
    });
    if (!host_left) stranded += free;
  }
  return {idle, stranded};
}

SimRun RunPool(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
               const PoolWorldOptions& options, const ArrivalOptions& arrivals) {
  SimRun run;
  run.seed = arrivals.seed;
  run.world = "dxpu";
  run.policy = PoolPolicyName(options.policy);
  PoolCluster cluster(nodes, options);
  RunRecorder record(run, cluster.gpu_capacity_milli());
  for (size_t i : FgdArrivals(pods, cluster.gpu_capacity_milli(), arrivals)) {
    const bool placed = cluster.Place(pods[i]);
    record.Arrived(pods[i], placed, cluster.gpu_allocated_milli());
  }
  record.Finish(cluster.gpu_allocated_milli());
  std::tie(run.idle_gpus, run.stranded_gpus) = cluster.IdleAndStranded(TypicalAsk(pods));
  run.gpu_pods_in_rack = cluster.gpu_pods_in_rack();
  run.gpu_pods_across_racks = cluster.gpu_pods_across_racks();
  return run;
}

}  // namespace dxpu::poolsim
