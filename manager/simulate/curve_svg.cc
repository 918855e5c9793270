// curve_svg.cc - the chart (curve_svg.h).
#include "manager/simulate/curve_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "lib/util/xml_escape.h"

namespace dxpu::poolsim {
namespace {

constexpr double kWidth = 720;
constexpr double kHeight = 440;
constexpr double kLeft = 60;
constexpr double kRight = 180;  // the legend
constexpr double kTop = 40;
constexpr double kBottom = 50;
constexpr std::array<const char*, 8> kColours = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                                 "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

}  // namespace

std::string CurveSvg(const std::vector<NamedCurve>& curves, double x_max_percent,
                     const std::string& title) {
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  const double x_max = std::max(x_max_percent, 1.0);
  const auto px = [&](double x) { return kLeft + std::clamp(x / x_max, 0.0, 1.0) * plot_w; };
  const auto py = [&](double y) { return kTop + (1.0 - std::clamp(y / 100.0, 0.0, 1.0)) * plot_h; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"14\">{3}</text>\n",
      kWidth, kHeight, kLeft, util::XmlEscape(title));
  // Axes, grid and ticks every 10% (x: every 10% of arrivals up to the ratio).
  for (int t = 0; t <= 100; t += 10) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}%</text>\n",
        kLeft, py(t), kLeft + plot_w, kLeft - 6, py(t) + 4, t);
  }
  for (int t = 0; t <= static_cast<int>(x_max); t += 10) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#eee\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}%</text>\n",
        px(t), kTop, kTop + plot_h, kTop + plot_h + 16, t);
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">GPU requests arrived (% of the GPUs)"
      "</text>\n<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">GPUs "
      "allocated (%)</text>\n",
      kLeft, kTop, plot_w, plot_h, kLeft + plot_w / 2, kHeight - 12, kTop + plot_h / 2);
  for (size_t i = 0; i < curves.size(); ++i) {
    const NamedCurve& c = curves[i];
    const char* colour = kColours[i % kColours.size()];
    std::string points;
    for (const auto& [x, y] : c.xy) points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                       colour, points);
    if (c.first_refusal) {
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"/>\n",
                         px(c.first_refusal->first), py(c.first_refusal->second), colour);
    }
    const double ly = kTop + 14 + 20 * static_cast<double>(i);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"/><text x=\"{4}\" y=\"{5:.1f}\">{6}</text>\n",
        kLeft + plot_w + 12, ly, kLeft + plot_w + 36, colour, kLeft + plot_w + 42, ly + 4,
        util::XmlEscape(c.name));
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#555\">dot: the first refusal</text>\n",
                     kLeft + plot_w + 12, kTop + 14 + 20 * static_cast<double>(curves.size()));
  svg += "</svg>\n";
  return svg;
}

}  // namespace dxpu::poolsim
