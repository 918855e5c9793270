// arrivals.cc - FGD's workload tuning (arrivals.h).
#include "manager/simulate/arrivals.h"

#include <cmath>

namespace dxpu::poolsim {

std::vector<size_t> FgdArrivals(const std::vector<TracePod>& pods, uint64_t capacity_milli,
                                const ArrivalOptions& options) {
  std::vector<size_t> order(pods.size());
  if (pods.empty()) return order;
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  Rng rng(options.seed);
  Shuffle(rng, order);
  const auto target =
      static_cast<uint64_t>(std::llround(options.ratio * static_cast<double>(capacity_milli)));
  uint64_t total = 0;
  for (const TracePod& p : pods) total += p.total_gpu_milli();
  if (total <= target) {
    // Up: until the next pod drawn would pass the target. A trace without GPU pods never
    // gets there: it arrives once.
    if (total == 0) return order;
    while (order.size() < kMaxArrivals) {
      const size_t i = rng.Uniform(pods.size());
      if (total + pods[i].total_gpu_milli() > target) break;
      total += pods[i].total_gpu_milli();
      order.push_back(i);
    }
    return order;
  }
  // Down: random pods out until the rest fits.
  while (total > target && !order.empty()) {
    const size_t at = rng.Uniform(order.size());
    total -= pods[order[at]].total_gpu_milli();
    order.erase(order.begin() + static_cast<std::ptrdiff_t>(at));
  }
  return order;
}

}  // namespace dxpu::poolsim
