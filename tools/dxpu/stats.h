// stats.h - small statistics over measured samples, for the bench commands.
#ifndef DXPU_TOOLS_DXPU_STATS_H_
#define DXPU_TOOLS_DXPU_STATS_H_

#include <algorithm>
#include <cmath>
#include <vector>

namespace dxpu::cli {

// The median of v (the mean of the two middle values when there is an even number); 0 when v is
// empty.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

// The q-quantile (q in 0..1) of `sorted`, ascending: the value at the nearest rank
// round(q * (n - 1)), so p50 <= p99 <= max; 0 when it is empty.
inline double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::lround(q * static_cast<double>(sorted.size() - 1)));
  return sorted[std::min(rank, sorted.size() - 1)];
}

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_STATS_H_
