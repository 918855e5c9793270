// demo_report.cc - the demo's table, JSON and SVG (demo_report.h).
#include "demo_report.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

namespace dxpu::cli {
namespace {

std::string Millis(uint64_t ns) { return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6); }

// "+1.20 ms" / "-0.05 ms": how much longer through DxPU.
std::string Delta(uint64_t native_ns, uint64_t dxpu_ns) {
  const double d = (static_cast<double>(dxpu_ns) - static_cast<double>(native_ns)) / 1e6;
  return fmt::format("{:+.2f}", d);
}

std::string Percent(double p) { return fmt::format("{:+.1f}%", p); }

// The categories of "where the time went": host time inside each kind of call.
uint64_t SyncNs(const dxgpu::Stats& s) { return s.sync.ns; }
uint64_t LaunchNs(const dxgpu::Stats& s) { return s.launch.ns + s.copy_async.ns; }
uint64_t H2dNs(const dxgpu::Stats& s) { return s.h2d.ns; }
uint64_t D2hNs(const dxgpu::Stats& s) { return s.d2h.ns; }

nlohmann::ordered_json RunJson(const DemoRun& r) {
  nlohmann::ordered_json j{{"ok", r.ok},
                           {"elapsed_ns", r.elapsed_ns},
                           {"iterations", r.iterations},
                           {"max_abs_error", r.max_abs_error},
                           {"stats", StatsJson(r.stats)}};
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '&') {
      out += "&amp;";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

nlohmann::ordered_json StatsJson(const dxgpu::Stats& s) {
  const auto op = [](const dxgpu::OpStats& o) {
    return nlohmann::ordered_json{{"calls", o.calls}, {"ns", o.ns}, {"bytes", o.bytes}};
  };
  return {{"launch", op(s.launch)},
          {"copy_async", op(s.copy_async)},
          {"sync", op(s.sync)},
          {"h2d", op(s.h2d)},
          {"d2h", op(s.d2h)},
          {"d2d", op(s.d2d)},
          {"submissions", s.submissions}};
}

bool DemoReport::ok() const {
  if (rows.empty() || !pool.ok()) return false;
  return std::all_of(rows.begin(), rows.end(), [](const DemoRow& r) {
    return r.native.ok && r.dxpu.ok &&
           std::all_of(r.simulated.begin(), r.simulated.end(),
                       [](const DemoSimRun& s) { return s.native.ok && s.dxpu.ok; });
  });
}

double OverheadPercent(uint64_t native_ns, uint64_t dxpu_ns) {
  if (native_ns == 0) return 0;
  return (static_cast<double>(dxpu_ns) - static_cast<double>(native_ns)) * 100.0 /
         static_cast<double>(native_ns);
}

std::string DemoTable(const DemoReport& report) {
  std::string out;
  out += fmt::format(
      "GPU box: {} model GPUs behind a dxpu-bridge on {} ({} data path); this host borrowed {} "
      "of them.\n",
      report.box_gpus, report.bridge, report.datapath, report.dxpu_devices.size());
  for (size_t i = 0; i < report.dxpu_devices.size(); ++i) {
    const DemoDevice& d = report.dxpu_devices[i];
    out +=
        fmt::format("  GPU {}: {} at {}, {} MiB\n", i, d.profile, d.location, d.memory_bytes >> 20);
  }
  out += "Native: the same GPU models on an ideal local PCIe link in this process.\n\n";
  out += fmt::format("{:<14} {:>11} {:>11} {:>9}   {:<44}", "workload", "native", "DxPU",
                     "overhead", "DxPU - native, ms: sync launch h2d d2h");
  for (const DemoSimRun& s :
       report.rows.empty() ? std::vector<DemoSimRun>{} : report.rows.front().simulated)
    out += fmt::format(" {:>10}", fmt::format("sim {}us", s.added_latency_ns / 1000));
  out += "\n";
  for (const DemoRow& r : report.rows) {
    const bool ok = r.native.ok && r.dxpu.ok;
    out += fmt::format(
        "{:<14} {:>11} {:>11} {:>9}   ", r.name, Millis(r.native.elapsed_ns),
        Millis(r.dxpu.elapsed_ns),
        ok ? Percent(OverheadPercent(r.native.elapsed_ns, r.dxpu.elapsed_ns)) : "FAILED");
    const dxgpu::Stats& n = r.native.stats;
    const dxgpu::Stats& d = r.dxpu.stats;
    out += fmt::format(
        "{:<44}", fmt::format("sync {}  launch {}  h2d {}  d2h {}", Delta(SyncNs(n), SyncNs(d)),
                              Delta(LaunchNs(n), LaunchNs(d)), Delta(H2dNs(n), H2dNs(d)),
                              Delta(D2hNs(n), D2hNs(d))));
    for (const DemoSimRun& s : r.simulated) {
      out += fmt::format(" {:>10}",
                         s.native.ok && s.dxpu.ok
                             ? Percent(OverheadPercent(s.native.elapsed_ns, s.dxpu.elapsed_ns))
                             : "FAILED");
    }
    out += "\n";
  }
  out +=
      "\nmeasured: real time on this machine, native vs the full userspace path (host proxy,\n"
      "DxFP over the link, dxpu-bridge, GPU model), so it includes this CPU's software cost.\n"
      "DxPU - native: the host's time in each kind of call. The GPU models compute on this\n"
      "CPU: natively inside the launching call, through DxPU in the bridge's thread while\n"
      "the host waits, so time moves from launch to sync.\n"
      "sim Nus: simulated (virtual time), the same workloads with the fabric at hardware-like\n"
      "figures: N us added one way, " +
      fmt::format("{} Gb/s", report.sim_bandwidth_bps / 1'000'000'000) +
      "; the overhead hardware DxPU would show.\n";
  for (const DemoRow& r : report.rows) {
    if (!r.native.error.empty()) out += fmt::format("{} native: {}\n", r.name, r.native.error);
    if (!r.dxpu.error.empty()) out += fmt::format("{} DxPU: {}\n", r.name, r.dxpu.error);
    for (const DemoSimRun& s : r.simulated) {
      if (!s.native.error.empty())
        out += fmt::format("{} sim native: {}\n", r.name, s.native.error);
      if (!s.dxpu.error.empty()) out += fmt::format("{} sim DxPU: {}\n", r.name, s.dxpu.error);
    }
  }
  out +=
      "\nThe pool: 2 boxes of 4 GPUs, 3 hosts, through dxpu-manager and its agents (every step\n"
      "audited against the bridges' owners and the agents' devices):\n";
  for (const PoolSceneStep& s : report.pool.steps)
    out += fmt::format("  {:<30} {}{}\n", s.what, s.outcome, s.ok ? "" : "  FAILED");
  if (!report.pool.error.empty()) out += fmt::format("  FAILED: {}\n", report.pool.error);
  out += fmt::format("{} in {:.1f} s.\n",
                     report.ok()
                         ? "Every result matched the CPU reference and the pool held its invariants"
                         : "SOME RESULTS FAILED (see above)",
                     report.wall_seconds);
  return out;
}

nlohmann::ordered_json DemoJson(const DemoReport& report) {
  nlohmann::ordered_json j;
  j["ok"] = report.ok();
  j["link"] = report.link;
  j["datapath"] = report.datapath;
  j["bridge"] = report.bridge;
  j["box_gpus"] = report.box_gpus;
  const auto devices = [](const std::vector<DemoDevice>& v) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (const DemoDevice& d : v)
      a.push_back(
          {{"profile", d.profile}, {"location", d.location}, {"memory_bytes", d.memory_bytes}});
    return a;
  };
  j["native_devices"] = devices(report.native_devices);
  j["dxpu_devices"] = devices(report.dxpu_devices);
  j["sim_bandwidth_bps"] = report.sim_bandwidth_bps;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const DemoRow& r : report.rows) {
    nlohmann::ordered_json row{
        {"name", r.name},
        {"description", r.description},
        {"native", RunJson(r.native)},
        {"dxpu", RunJson(r.dxpu)},
        {"overhead_pct", OverheadPercent(r.native.elapsed_ns, r.dxpu.elapsed_ns)}};
    const dxgpu::Stats& n = r.native.stats;
    const dxgpu::Stats& d = r.dxpu.stats;
    const auto diff = [](uint64_t a, uint64_t b) {
      return static_cast<int64_t>(b) - static_cast<int64_t>(a);
    };
    row["where_ns"] = {{"sync", diff(SyncNs(n), SyncNs(d))},
                       {"launch", diff(LaunchNs(n), LaunchNs(d))},
                       {"h2d", diff(H2dNs(n), H2dNs(d))},
                       {"d2h", diff(D2hNs(n), D2hNs(d))}};
    nlohmann::ordered_json sims = nlohmann::ordered_json::array();
    for (const DemoSimRun& s : r.simulated) {
      sims.push_back({{"added_latency_ns", s.added_latency_ns},
                      {"native", RunJson(s.native)},
                      {"dxpu", RunJson(s.dxpu)},
                      {"overhead_pct", OverheadPercent(s.native.elapsed_ns, s.dxpu.elapsed_ns)}});
    }
    row["simulated"] = sims;
    rows.push_back(row);
  }
  j["workloads"] = rows;
  nlohmann::ordered_json pool_steps = nlohmann::ordered_json::array();
  for (const PoolSceneStep& s : report.pool.steps)
    pool_steps.push_back({{"what", s.what}, {"outcome", s.outcome}, {"ok", s.ok}});
  j["pool"] = {{"ok", report.pool.ok()}, {"error", report.pool.error}, {"steps", pool_steps}};
  j["wall_seconds"] = report.wall_seconds;
  return j;
}

std::string DemoSvg(const DemoReport& report) {
  // Grouped bars per workload: measured overhead, then each simulated latency.
  const size_t groups = report.rows.size();
  const size_t bars = 1 + (report.rows.empty() ? 0 : report.rows.front().simulated.size());
  double top = 10;
  for (const DemoRow& r : report.rows) {
    top = std::max(top, OverheadPercent(r.native.elapsed_ns, r.dxpu.elapsed_ns));
    for (const DemoSimRun& s : r.simulated)
      top = std::max(top, OverheadPercent(s.native.elapsed_ns, s.dxpu.elapsed_ns));
  }
  top = std::ceil(top / 10) * 10;
  const int width = 160 + static_cast<int>(groups) * (static_cast<int>(bars) * 36 + 40);
  const int height = 360;
  const int base = 300;
  const int plot_h = 240;
  const char* colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b"};
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<text x=\"10\" y=\"20\" font-size=\"14\">DxPU overhead vs native (%): measured on this "
      "machine and simulated with hardware-like fabric figures</text>\n",
      width, height);
  for (int t = 0; t <= 4; ++t) {
    const double v = top * t / 4;
    const int y = base - static_cast<int>(plot_h * t / 4);
    svg += fmt::format(
        "<line x1=\"60\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#ddd\"/><text x=\"55\" "
        "y=\"{2}\" text-anchor=\"end\">{3:.0f}%</text>\n",
        y, width - 10, y + 4, v);
  }
  for (size_t g = 0; g < groups; ++g) {
    const DemoRow& r = report.rows[g];
    std::vector<double> values{OverheadPercent(r.native.elapsed_ns, r.dxpu.elapsed_ns)};
    for (const DemoSimRun& s : r.simulated)
      values.push_back(OverheadPercent(s.native.elapsed_ns, s.dxpu.elapsed_ns));
    const int x0 = 80 + static_cast<int>(g) * (static_cast<int>(bars) * 36 + 40);
    for (size_t b = 0; b < values.size(); ++b) {
      const double v = std::max(0.0, values[b]);
      const int h = static_cast<int>(plot_h * v / top);
      const int x = x0 + static_cast<int>(b) * 36;
      svg += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"30\" height=\"{}\" fill=\"{}\"/><text x=\"{}\" "
          "y=\"{}\" text-anchor=\"middle\" font-size=\"10\">{:.1f}</text>\n",
          x, base - h, h, colors[b % 5], x + 15, base - h - 3, values[b]);
    }
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                       x0 + static_cast<int>(values.size()) * 18, base + 18, Escape(r.name));
  }
  // Legend.
  int lx = 80;
  svg += fmt::format(
      "<rect x=\"{}\" y=\"335\" width=\"12\" height=\"12\" fill=\"{}\"/><text "
      "x=\"{}\" y=\"346\">measured</text>\n",
      lx, colors[0], lx + 16);
  lx += 90;
  if (!report.rows.empty()) {
    for (size_t b = 0; b < report.rows.front().simulated.size(); ++b) {
      svg += fmt::format(
          "<rect x=\"{}\" y=\"335\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" "
          "y=\"346\">simulated, {} us added</text>\n",
          lx, colors[(b + 1) % 5], lx + 16,
          report.rows.front().simulated[b].added_latency_ns / 1000);
      lx += 170;
    }
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace dxpu::cli
