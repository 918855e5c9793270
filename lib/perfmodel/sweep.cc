// sweep.cc - the model over a grid of fabric parameters, written as CSV, JSON and SVG
// (sweep.h).
#include "perfmodel/sweep.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "util/xml_escape.h"

namespace dxpu::perfmodel {

std::vector<SweepPoint> Sweep(const std::function<Prediction(const ModelParams&)>& predict,
                              const ModelParams& base, std::span<const double> latencies_ns,
                              std::span<const double> bandwidths_gbps,
                              const std::function<void(size_t, size_t)>& progress) {
  std::vector<SweepPoint> points;
  const size_t total = latencies_ns.size() * bandwidths_gbps.size();
  points.reserve(total);
  for (const double latency : latencies_ns) {
    for (const double bandwidth : bandwidths_gbps) {
      ModelParams p = base;
      p.added_latency_ns = latency;
      p.fabric_bandwidth_gbps = bandwidth;
      points.push_back({latency, bandwidth, predict(p)});
      if (progress) progress(points.size(), total);
    }
  }
  return points;
}

nlohmann::json ToJson(const Prediction& p) {
  const Breakdown& b = p.breakdown;
  const WorkloadCounts& c = p.counts;
  return {{"native_us", p.native_ns / 1e3},
          {"dxpu_us", p.dxpu_ns / 1e3},
          {"overhead_pct", p.overhead_pct},
          {"breakdown_us",
           {{"sync", b.sync_ns / 1e3},
            {"launch", b.launch_ns / 1e3},
            {"h2d", b.h2d_ns / 1e3},
            {"d2h", b.d2h_ns / 1e3},
            {"other", b.other_ns / 1e3},
            {"peer", b.peer_ns / 1e3}}},
          {"counts",
           {{"launches", c.launches},
            {"dry_launches", c.dry_launches},
            {"syncs", c.syncs},
            {"kernels", c.kernels},
            {"h2d_copies", c.h2d_copies},
            {"h2d_bytes", c.h2d_bytes},
            {"d2h_copies", c.d2h_copies},
            {"d2h_bytes", c.d2h_bytes},
            {"other_ops", c.other_ops},
            {"peer_copies_between_boxes", c.peer_copies_between_boxes},
            {"peer_bytes_between_boxes", c.peer_bytes_between_boxes},
            {"collectives", c.collectives}}}};
}

nlohmann::json ToJson(const ModelParams& p) {
  return {{"pcie_latency_ns", p.pcie_latency_ns},
          {"pcie_bandwidth_gbps", p.pcie_bandwidth_gbps},
          {"box_pcie_latency_ns", p.box_pcie_latency_ns},
          {"added_latency_ns", p.added_latency_ns},
          {"fabric_bandwidth_gbps", p.fabric_bandwidth_gbps},
          {"mps", p.mps},
          {"mrrs", p.mrrs},
          {"read_tags", p.read_tags},
          {"tlp_overhead_bytes", p.tlp_overhead_bytes},
          {"prefetch", p.prefetch},
          {"pushbuffer_bytes", p.pushbuffer_bytes},
          {"serial_streams", p.serial_streams},
          {"fabric_frame_bytes", p.fabric_frame_bytes},
          {"gpus_per_box", p.gpus_per_box}};
}

nlohmann::json SweepToJson(const std::vector<SweepPoint>& points) {
  nlohmann::json out = nlohmann::json::array();
  for (const SweepPoint& s : points) {
    nlohmann::json j = ToJson(s.prediction);
    j["added_latency_us"] = s.added_latency_ns / 1e3;
    j["fabric_bandwidth_gbps"] = s.fabric_bandwidth_gbps;
    out.push_back(std::move(j));
  }
  return out;
}

std::string SweepToCsv(const std::vector<SweepPoint>& points) {
  std::string out =
      "added_latency_us,fabric_bandwidth_gbps,native_us,dxpu_us,overhead_pct,sync_us,launch_us,"
      "h2d_us,d2h_us,other_us,peer_us\n";
  for (const SweepPoint& s : points) {
    const Prediction& p = s.prediction;
    const Breakdown& b = p.breakdown;
    out += fmt::format("{},{},{:.3f},{:.3f},{:.4f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f}\n",
                       s.added_latency_ns / 1e3, s.fabric_bandwidth_gbps, p.native_ns / 1e3,
                       p.dxpu_ns / 1e3, p.overhead_pct, b.sync_ns / 1e3, b.launch_ns / 1e3,
                       b.h2d_ns / 1e3, b.d2h_ns / 1e3, b.other_ns / 1e3, b.peer_ns / 1e3);
  }
  return out;
}

namespace {

using util::XmlEscape;

// A round step for about `ticks` ticks up to `max`: 1, 2 or 5 times a power of ten.
double NiceStep(double max, int ticks) {
  if (!(max > 0) || !std::isfinite(max)) return 1;
  const double raw = max / ticks;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * magnitude) return m * magnitude;
  }
  return 10 * magnitude;
}

constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

}  // namespace

std::string SweepToSvg(const std::vector<SweepPoint>& points, const std::string& title) {
  constexpr double kWidth = 720, kHeight = 440;
  constexpr double kLeft = 70, kRight = 170, kTop = 40, kBottom = 60;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  std::map<double, std::vector<const SweepPoint*>> lines;  // by bandwidth
  double max_x = 0, max_y = 0;
  for (const SweepPoint& s : points) {
    lines[s.fabric_bandwidth_gbps].push_back(&s);
    max_x = std::max(max_x, s.added_latency_ns / 1e3);
    if (std::isfinite(s.prediction.overhead_pct))
      max_y = std::max(max_y, s.prediction.overhead_pct);
  }
  const double x_step = NiceStep(max_x, 5), y_step = NiceStep(max_y, 5);
  const double x_max = std::max(x_step, std::ceil(max_x / x_step) * x_step);
  const double y_max = std::max(y_step, std::ceil(max_y / y_step) * y_step);
  const auto px = [&](double x) { return kLeft + x / x_max * plot_w; };
  const auto py = [&](double y) {
    return kTop + plot_h - std::clamp(y, 0.0, y_max) / y_max * plot_h;
  };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" font-size=\"15\">{3}</text>\n",
      kWidth, kHeight, kLeft, XmlEscape("DxPU overhead: " + title));
  const auto ticks = [](double max, double step) {
    return static_cast<int>(std::lround(max / step));
  };
  for (int i = 0; i <= ticks(x_max, x_step); ++i) {
    const double x = i * x_step;
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:g}</text>\n",
        px(x), kTop, kTop + plot_h, kTop + plot_h + 18, x);
  }
  for (int i = 0; i <= ticks(y_max, y_step); ++i) {
    const double y = i * y_step;
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        kLeft, py(y), kLeft + plot_w, kLeft - 6, py(y) + 4, y);
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n"
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">added one-way latency (us)</text>\n"
      "<text transform=\"translate(18 {:.1f}) rotate(-90)\" text-anchor=\"middle\">"
      "overhead (%)</text>\n",
      kLeft, kTop, plot_w, plot_h, kLeft + plot_w / 2, kHeight - 18, kTop + plot_h / 2);
  size_t colour = 0;
  for (const auto& [bandwidth, line] : lines) {
    const char* c = kColours[colour % std::size(kColours)];
    std::string pts;
    for (const SweepPoint* s : line) {
      const double x = px(s->added_latency_ns / 1e3), y = py(s->prediction.overhead_pct);
      pts += fmt::format("{:.1f},{:.1f} ", x, y);
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", x, y, c);
    }
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                       pts, c);
    const double ly = kTop + 10 + 20 * static_cast<double>(colour);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"/><text x=\"{4:.1f}\" y=\"{5:.1f}\">{6:g} Gb/s</text>\n",
        kLeft + plot_w + 15, ly, kLeft + plot_w + 40, c, kLeft + plot_w + 46, ly + 4, bandwidth);
    colour++;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace dxpu::perfmodel
