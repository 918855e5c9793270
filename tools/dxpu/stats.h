// stats.h - small statistics over measured samples, for the bench commands.
#ifndef DXPU_TOOLS_DXPU_STATS_H_
#define DXPU_TOOLS_DXPU_STATS_H_

#include <algorithm>
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

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_STATS_H_
