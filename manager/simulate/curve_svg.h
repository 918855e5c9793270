// curve_svg.h - `dxpu pool simulate --svg`: the allocation over time of each policy as one
// chart, an SVG file of its own (no dependency): the GPU capacity allocated (y, 0-100%) as the
// arrived GPU requests grow (x, 0% to the ratio), a line per policy, the first refusal marked
// on each, a legend.
#ifndef DXPU_MANAGER_SIMULATE_CURVE_SVG_H_
#define DXPU_MANAGER_SIMULATE_CURVE_SVG_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dxpu::poolsim {

struct NamedCurve {
  std::string name;                                        // the legend's text
  std::vector<std::pair<double, double>> xy;               // (arrived %, allocated %), x ascending
  std::optional<std::pair<double, double>> first_refusal;  // marked with a dot
};

std::string CurveSvg(const std::vector<NamedCurve>& curves, double x_max_percent,
                     const std::string& title);

}  // namespace dxpu::poolsim

#endif  // DXPU_MANAGER_SIMULATE_CURVE_SVG_H_
