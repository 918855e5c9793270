// fixed_cluster.cc - the fixed-server baselines (fixed_cluster.h).
#include "manager/simulate/fixed_cluster.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace dxpu::poolsim {
namespace {

// The best-fit score's scales: the simulator's largest node (128 cores, 8 GPUs).
constexpr double kCpuScale = 128000.0;
constexpr double kGpuScale = 8000.0;

constexpr std::array<std::pair<FixedPolicy, std::string_view>, 4> kFixedPolicyNames = {{
    {FixedPolicy::kBestFit, "best-fit"},
    {FixedPolicy::kRandomFit, "random-fit"},
    {FixedPolicy::kFirstFit, "first-fit"},
    {FixedPolicy::kKubernetes, "k8s-default"},
}};

constexpr int64_t kMaxNodeScore = 100;

}  // namespace

std::string_view FixedPolicyName(FixedPolicy policy) {
  for (const auto& [p, name] : kFixedPolicyNames)
    if (p == policy) return name;
  return "?";
}

std::optional<FixedPolicy> ParseFixedPolicy(std::string_view name) {
  for (const auto& [p, n] : kFixedPolicyNames)
    if (n == name) return p;
  return std::nullopt;
}

FixedCluster::FixedCluster(const std::vector<TraceNode>& nodes, Rng& rng) : rng_(rng) {
  for (const TraceNode& t : nodes) {
    if (t.gpus == 0) continue;
    Node n;
    n.cpu_free = t.cpu_milli;
    n.memory_free = t.memory_mib;
    n.cpu_total = t.cpu_milli;
    n.memory_total = t.memory_mib;
    n.gpu_free.assign(t.gpus, kMilliPerGpu);
    n.gpu_free_total = uint64_t{t.gpus} * kMilliPerGpu;
    n.model = t.model;
    capacity_milli_ += n.gpu_free_total;
    nodes_.push_back(std::move(n));
  }
  std::vector<uint32_t> ranks(nodes_.size());
  for (size_t i = 0; i < ranks.size(); ++i) ranks[i] = static_cast<uint32_t>(i);
  Shuffle(rng_, ranks);
  for (size_t i = 0; i < nodes_.size(); ++i) nodes_[i].rank = ranks[i];
}

bool FixedCluster::Fits(const Node& n, const TracePod& pod) {
  if (n.cpu_free < pod.cpu_milli || n.memory_free < pod.memory_mib) return false;
  if (pod.num_gpu == 0) return true;
  if (!pod.gpu_spec.empty() &&
      std::find(pod.gpu_spec.begin(), pod.gpu_spec.end(), n.model) == pod.gpu_spec.end())
    return false;
  const auto holding = static_cast<uint32_t>(std::count_if(
      n.gpu_free.begin(), n.gpu_free.end(), [&](uint32_t f) { return f >= pod.gpu_milli; }));
  return holding >= pod.num_gpu;
}

int64_t FixedCluster::BestFitScore(const Node& n, const TracePod& pod) {
  const double cpu_left = static_cast<double>(n.cpu_free - pod.cpu_milli) / kCpuScale;
  const double gpu_left = static_cast<double>(n.gpu_free_total - pod.total_gpu_milli()) / kGpuScale;
  // Truncated toward zero, as the simulator's int64() of the float.
  return static_cast<int64_t>((1.0 - (0.5 * cpu_left + 0.5 * gpu_left)) * 100.0);
}

int64_t FixedCluster::KubernetesScore(const Node& n, const TracePod& pod) {
  // Fits() held: the pod's asks are within what is free.
  const uint64_t cpu_requested = n.cpu_total - n.cpu_free + pod.cpu_milli;
  const uint64_t memory_requested = n.memory_total - n.memory_free + pod.memory_mib;
  const auto least = [](uint64_t capacity, uint64_t requested) -> int64_t {
    if (capacity == 0) return 0;
    return static_cast<int64_t>((capacity - requested) * kMaxNodeScore / capacity);
  };
  const int64_t least_allocated =
      (least(n.cpu_total, cpu_requested) + least(n.memory_total, memory_requested)) / 2;
  const auto fraction = [](uint64_t capacity, uint64_t requested) {
    return capacity == 0 ? 1.0 : static_cast<double>(requested) / static_cast<double>(capacity);
  };
  const double diff =
      std::abs(fraction(n.cpu_total, cpu_requested) - fraction(n.memory_total, memory_requested));
  const auto balanced = static_cast<int64_t>((1.0 - diff) * static_cast<double>(kMaxNodeScore));
  return least_allocated + balanced;
}

void FixedCluster::Take(Node& n, const TracePod& pod, bool random_gpu) {
  n.cpu_free -= pod.cpu_milli;
  n.memory_free -= pod.memory_mib;
  if (pod.num_gpu == 0) return;
  if (pod.shares_a_gpu()) {
    std::vector<size_t> holding;
    for (size_t g = 0; g < n.gpu_free.size(); ++g)
      if (n.gpu_free[g] >= pod.gpu_milli) holding.push_back(g);
    size_t g = holding.front();
    if (random_gpu) {
      g = holding[rng_.Uniform(holding.size())];
    } else {
      for (size_t h : holding)
        if (n.gpu_free[h] < n.gpu_free[g]) g = h;  // the fullest; the lowest-numbered of equals
    }
    n.gpu_free[g] -= pod.gpu_milli;
  } else {
    uint32_t left = pod.num_gpu;
    for (size_t g = 0; g < n.gpu_free.size() && left > 0; ++g) {
      if (n.gpu_free[g] < pod.gpu_milli) continue;
      n.gpu_free[g] -= pod.gpu_milli;
      --left;
    }
  }
  n.gpu_free_total -= pod.total_gpu_milli();
  allocated_milli_ += pod.total_gpu_milli();
}

std::pair<size_t, size_t> FixedCluster::IdleAndStranded(const Ask& ask) const {
  size_t idle = 0;
  size_t stranded = 0;
  for (const Node& n : nodes_) {
    const auto whole =
        static_cast<size_t>(std::count(n.gpu_free.begin(), n.gpu_free.end(), kMilliPerGpu));
    idle += whole;
    if (n.cpu_free < ask.cpu_milli || n.memory_free < ask.memory_mib) stranded += whole;
  }
  return {idle, stranded};
}

std::optional<size_t> FixedCluster::Place(const TracePod& pod, FixedPolicy policy) {
  std::optional<size_t> chosen;
  switch (policy) {
    case FixedPolicy::kBestFit:
    case FixedPolicy::kKubernetes: {
      int64_t best_score = 0;
      for (size_t i = 0; i < nodes_.size(); ++i) {
        const Node& n = nodes_[i];
        if (!Fits(n, pod)) continue;
        const int64_t score =
            policy == FixedPolicy::kBestFit ? BestFitScore(n, pod) : KubernetesScore(n, pod);
        if (!chosen || score > best_score ||
            (score == best_score && n.rank < nodes_[*chosen].rank)) {
          chosen = i;
          best_score = score;
        }
      }
      break;
    }
    case FixedPolicy::kRandomFit: {
      std::vector<size_t> fit;
      for (size_t i = 0; i < nodes_.size(); ++i)
        if (Fits(nodes_[i], pod)) fit.push_back(i);
      if (!fit.empty()) chosen = fit[rng_.Uniform(fit.size())];
      break;
    }
    case FixedPolicy::kFirstFit: {
      for (size_t i = 0; i < nodes_.size(); ++i) {
        if (Fits(nodes_[i], pod) && (!chosen || nodes_[i].rank < nodes_[*chosen].rank)) chosen = i;
      }
      break;
    }
  }
  if (chosen) Take(nodes_[*chosen], pod, policy == FixedPolicy::kRandomFit);
  return chosen;
}

}  // namespace dxpu::poolsim
