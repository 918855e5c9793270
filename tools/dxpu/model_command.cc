// model_command.cc - `dxpu model` (model_command.h, docs/perf-model.md).
#include "model_command.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "numbers.h"
#include "perfmodel/kineto_trace.h"
#include "perfmodel/model.h"
#include "perfmodel/sweep.h"
#include "perfmodel/timeline.h"
#include "progress.h"
#include "sim-world/replay/replay.h"

namespace dxpu::cli {
namespace {

using perfmodel::ModelParams;
using perfmodel::Prediction;

struct ModelArgs {
  std::string trace;
  perfmodel::WorkloadSummary summary;
  std::chrono::nanoseconds native{0};
  std::chrono::nanoseconds latency = std::chrono::microseconds(1);
  std::vector<std::chrono::nanoseconds> sweep_latency = {
      std::chrono::nanoseconds(0),  std::chrono::nanoseconds(500), std::chrono::microseconds(1),
      std::chrono::microseconds(2), std::chrono::microseconds(5),  std::chrono::microseconds(10)};
  // ModelParams' latencies as options take them; copied into params before the run.
  std::chrono::nanoseconds pcie_latency{static_cast<int64_t>(ModelParams{}.pcie_latency_ns)};
  std::chrono::nanoseconds box_pcie_latency{
      static_cast<int64_t>(ModelParams{}.box_pcie_latency_ns)};
  std::vector<double> sweep_bandwidth_gbps;  // default: --bandwidth-gbps alone
  ModelParams params;
  std::string svg, csv;
  std::string timeline;  // the native and DxPU timelines as a Chrome trace
  bool json = false;
  bool replay = false;
};

std::string ByteSize(uint64_t b) {
  if (b >= (uint64_t{1} << 30))
    return fmt::format("{:.1f} GiB", static_cast<double>(b) / (1 << 30));
  if (b >= (uint64_t{1} << 20))
    return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  return fmt::format("{} B", b);
}

std::string Time(double ns) {
  if (ns >= 1e9) return fmt::format("{:.3f} s", ns / 1e9);
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  return fmt::format("{:.3f} us", ns / 1e3);
}

std::string QueuesOf(const ModelParams& p) {
  return p.serial_streams ? "streams serialised" : "one queue per stream";
}

void PrintPrediction(const std::string& workload, const ModelParams& p, const Prediction& r) {
  const perfmodel::WorkloadCounts& c = r.counts;
  std::cout
      << "workload: " << workload << '\n'
      << fmt::format(
             "  launches {} (queue dry at {}), syncs {}, kernels {}, H2D {} copies {}, D2H "
             "{} copies {}, other {}{}{}\n",
             c.launches == 0 ? std::string("-") : std::to_string(c.launches), c.dry_launches,
             c.syncs, c.kernels, c.h2d_copies, ByteSize(c.h2d_bytes), c.d2h_copies,
             ByteSize(c.d2h_bytes), c.other_ops,
             c.peer_copies_between_boxes == 0
                 ? std::string()
                 : fmt::format(", peer copies between boxes {} {}", c.peer_copies_between_boxes,
                               ByteSize(c.peer_bytes_between_boxes)),
             c.collectives == 0 ? std::string() : fmt::format(", collectives {}", c.collectives))
      << fmt::format(
             "fabric: +{:g} us one way, {:g} Gb/s, box PCIe {:g} ns (native PCIe: {:g} ns, {:g} "
             "Gb/s; MPS {}, MRRS {}, {} read tags, {:g}-byte TLP overhead, {})\n",
             p.added_latency_ns / 1e3, p.fabric_bandwidth_gbps, p.box_pcie_latency_ns,
             p.pcie_latency_ns, p.pcie_bandwidth_gbps, p.mps, p.mrrs, p.read_tags,
             p.tlp_overhead_bytes, QueuesOf(p))
      << fmt::format("native {}   dxpu {}   overhead {:+.2f}%\n", Time(r.native_ns),
                     Time(r.dxpu_ns), r.overhead_pct);
  const double added = r.dxpu_ns - r.native_ns;
  const perfmodel::Breakdown& b = r.breakdown;
  std::cout << "  where the added time goes:\n";
  for (const auto& [name, ns] :
       {std::pair{"sync", b.sync_ns}, std::pair{"launch", b.launch_ns}, std::pair{"h2d", b.h2d_ns},
        std::pair{"d2h", b.d2h_ns}, std::pair{"other", b.other_ns}, std::pair{"peer", b.peer_ns}}) {
    std::cout << fmt::format("    {:<7} {:>12} {:>6.1f}%\n", name, Time(ns),
                             added > 0 ? ns / added * 100 : 0.0);
  }
}

void PrintSweep(const std::vector<perfmodel::SweepPoint>& points,
                const std::vector<double>& bandwidths) {
  std::cout << "predicted overhead (%) by added one-way latency and fabric bandwidth, the other "
               "parameters as above:\n  latency_us";
  for (const double bw : bandwidths)
    std::cout << fmt::format(" {:>10}", fmt::format("{:g}Gb/s", bw));
  std::cout << '\n';
  for (size_t i = 0; i < points.size(); i += bandwidths.size()) {
    std::cout << fmt::format("  {:>10g}", points[i].added_latency_ns / 1e3);
    for (size_t j = 0; j < bandwidths.size(); ++j)
      std::cout << fmt::format(" {:>10.2f}", points[i + j].prediction.overhead_pct);
    std::cout << '\n';
  }
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::cerr << "dxpu model: cannot write " << path << '\n';
    return false;
  }
  return true;
}

// The trace replayed in the simulator at each swept latency (the fabric's bandwidth), beside
// the model's prediction for it.
std::optional<nlohmann::json> Replay(const perfmodel::Trace& trace, const ModelArgs& a) {
  nlohmann::json rows = nlohmann::json::array();
  Progress progress("replaying");
  const size_t points = a.sweep_latency.size();
  for (size_t i = 0; i < points; ++i) {
    ModelParams p = a.params;
    p.added_latency_ns = static_cast<double>(a.sweep_latency[i].count());
    perfmodel::ReplayResult<perfmodel::ReplayComparison> c = perfmodel::CompareWithSimulation(
        trace, p,
        [&](size_t done, size_t total) { progress.Update(i * total + done, points * total); });
    if (!c.ok()) {
      std::cerr << "dxpu model: replay: " << c.error().message << '\n';
      return std::nullopt;
    }
    const perfmodel::ReplayComparison& r = c.value();
    rows.push_back({{"added_latency_us", Microseconds(a.sweep_latency[i])},
                    {"simulated_native_us", static_cast<double>(r.native.elapsed_ns) / 1e3},
                    {"simulated_dxpu_us", static_cast<double>(r.dxpu.elapsed_ns) / 1e3},
                    {"simulated_overhead_pct", r.simulated_overhead_pct},
                    {"predicted_native_us", r.predicted.native_ns / 1e3},
                    {"predicted_dxpu_us", r.predicted.dxpu_ns / 1e3},
                    {"predicted_overhead_pct", r.predicted.overhead_pct},
                    {"difference_pp", r.predicted.overhead_pct - r.simulated_overhead_pct}});
  }
  return rows;
}

// The replay beside the model with the simulator's parameters (AsSimulated), which is what the
// replay checks; where those differ from the user's, the sweep's prediction above differs too,
// and the last lines say so and by how much.
void PrintReplay(const nlohmann::json& rows, const ModelParams& p,
                 const std::vector<perfmodel::SweepPoint>& sweep) {
  const ModelParams sim = perfmodel::AsSimulated(p);
  std::cout << fmt::format(
      "replayed in the simulator ({:g} Gb/s), against the model with the simulator's parameters "
      "({}, {:g}-byte TLP overhead):\n  {:>10} {:>12} {:>12} {:>10} {:>10} {:>8}\n",
      p.fabric_bandwidth_gbps, QueuesOf(sim), sim.tlp_overhead_bytes, "latency_us", "sim native",
      "sim dxpu", "simulated", "sim-model", "diff");
  for (const nlohmann::json& r : rows) {
    std::cout << fmt::format(
        "  {:>10g} {:>12} {:>12} {:>9.2f}% {:>9.2f}% {:>+6.2f}pp\n",
        r["added_latency_us"].get<double>(), Time(r["simulated_native_us"].get<double>() * 1e3),
        Time(r["simulated_dxpu_us"].get<double>() * 1e3), r["simulated_overhead_pct"].get<double>(),
        r["predicted_overhead_pct"].get<double>(), r["difference_pp"].get<double>());
  }
  std::cout
      << "  simulated: the overhead the simulator measured; sim-model: the model's prediction "
         "with the simulator's parameters; diff: sim-model - simulated\n";
  if (sim.serial_streams == p.serial_streams && sim.tlp_overhead_bytes == p.tlp_overhead_bytes)
    return;
  std::string differs;
  for (const nlohmann::json& r : rows) {
    const double us = r["added_latency_us"].get<double>();
    for (const perfmodel::SweepPoint& pt : sweep) {
      if (std::abs(pt.added_latency_ns - us * 1e3) < 0.5 &&
          pt.fabric_bandwidth_gbps == p.fabric_bandwidth_gbps) {
        differs += fmt::format("{}{:.2f}% at {:g} us", differs.empty() ? "" : ", ",
                               pt.prediction.overhead_pct, us);
        break;
      }
    }
  }
  std::cout << fmt::format(
      "  the predicted overhead above is for the parameters given ({}, {:g}-byte TLP overhead: a "
      "real GPU and link), not the simulator's{}{}\n",
      QueuesOf(p), p.tlp_overhead_bytes, differs.empty() ? "" : ": ", differs);
}

int RunModel(ModelArgs& a) {
  a.params.added_latency_ns = static_cast<double>(a.latency.count());
  a.params.pcie_latency_ns = static_cast<double>(a.pcie_latency.count());
  a.params.box_pcie_latency_ns = static_cast<double>(a.box_pcie_latency.count());
  if (a.sweep_bandwidth_gbps.empty()) a.sweep_bandwidth_gbps = {a.params.fabric_bandwidth_gbps};
  if (const std::string bad = perfmodel::CheckParams(a.params); !bad.empty()) {
    std::cerr << "dxpu model: " << bad << '\n';
    return kExitUsage;
  }
  std::optional<perfmodel::Trace> trace;
  std::string workload;
  if (!a.trace.empty()) {
    perfmodel::ParseResult<perfmodel::Trace> parsed = perfmodel::ReadKinetoTrace(a.trace);
    if (!parsed.ok()) {
      std::cerr << "dxpu model: " << parsed.error().message << '\n';  // names the file
      return kExitFailure;
    }
    trace = std::move(parsed).value();
    workload = fmt::format("{} ({} events read, {} skipped)", a.trace, trace->events_read,
                           trace->events_skipped);
    for (const std::string& w : trace->warnings) std::cerr << "dxpu model: warning: " << w << '\n';
    if (const std::string bad = perfmodel::CheckPlacement(*trace, a.params); !bad.empty()) {
      std::cerr << "dxpu model: --placement: " << bad << '\n';
      return kExitUsage;
    }
  } else {
    if (a.native.count() <= 0) {
      std::cerr << "dxpu model: give a trace file, or summary counts with --native (the "
                   "workload's native time, e.g. --native 12ms)\n";
      return kExitUsage;
    }
    a.summary.native_ns = static_cast<double>(a.native.count());
    workload = "summary counts (every cost on the critical path: an upper bound)";
  }
  const auto predict = [&](const ModelParams& p) {
    return trace ? perfmodel::Predict(*trace, p) : perfmodel::Predict(a.summary, p);
  };
  const Prediction prediction = predict(a.params);
  std::vector<double> latencies_ns;
  for (const std::chrono::nanoseconds d : a.sweep_latency)
    latencies_ns.push_back(static_cast<double>(d.count()));
  std::vector<perfmodel::SweepPoint> sweep;
  {
    Progress progress("sweeping");
    sweep = perfmodel::Sweep(predict, a.params, latencies_ns, a.sweep_bandwidth_gbps,
                             [&](size_t done, size_t total) { progress.Update(done, total); });
  }
  std::vector<std::string> written;  // "wrote FILE (what)" lines, printed last
  if (!a.svg.empty()) {
    if (!WriteFile(a.svg, perfmodel::SweepToSvg(sweep, a.trace.empty() ? "summary" : a.trace)))
      return kExitFailure;
    written.push_back(fmt::format("wrote {} (the sweep's overhead curves, SVG)", a.svg));
  }
  if (!a.csv.empty()) {
    if (!WriteFile(a.csv, perfmodel::SweepToCsv(sweep))) return kExitFailure;
    written.push_back(fmt::format("wrote {} (the sweep, CSV)", a.csv));
  }
  if (!a.timeline.empty()) {
    if (!trace) {
      std::cerr << "dxpu model: --timeline needs a trace\n";
      return kExitUsage;
    }
    // Written into the file as it is made: a million events' timeline is hundreds of MB.
    std::ofstream timeline(a.timeline, std::ios::binary | std::ios::trunc);
    if (timeline) perfmodel::WriteTimeline(timeline, *trace, perfmodel::Retime(*trace, a.params));
    timeline.close();
    if (!timeline) {
      std::cerr << "dxpu model: cannot write " << a.timeline << '\n';
      return kExitFailure;
    }
    written.push_back(fmt::format(
        "wrote {} (the native and DxPU timelines, Chrome trace: chrome://tracing or Perfetto)",
        a.timeline));
  }
  std::optional<nlohmann::json> replay;
  if (a.replay) {
    if (!trace) {
      std::cerr << "dxpu model: --replay needs a trace\n";
      return kExitUsage;
    }
    replay = Replay(*trace, a);
    if (!replay) return kExitFailure;
  }
  if (a.json) {
    nlohmann::json out = perfmodel::ToJson(prediction);
    out["workload"] = workload;
    out["warnings"] = trace ? trace->warnings : std::vector<std::string>{};
    out["params"] = perfmodel::ToJson(a.params);
    out["sweep"] = perfmodel::SweepToJson(sweep);
    if (replay) {
      out["replay"] = *replay;  // its predicted_* with replay_params, not params
      out["replay_params"] = perfmodel::ToJson(perfmodel::AsSimulated(a.params));
    }
    std::cout << out.dump(2) << '\n';
    for (const std::string& w : written) std::cerr << w << '\n';  // stdout stays one JSON
    return kExitOk;
  }
  PrintPrediction(workload, a.params, prediction);
  PrintSweep(sweep, a.sweep_bandwidth_gbps);
  if (replay) PrintReplay(*replay, a.params, sweep);
  for (const std::string& w : written) std::cout << w << '\n';
  return kExitOk;
}

void AddWorkloadOptions(CLI::App* cmd, ModelArgs& a) {
  cmd->add_option("trace", a.trace,
                  "PyTorch profiler (Kineto) Chrome trace, JSON or gzipped JSON "
                  "(torch.profiler with ProfilerActivity.CUDA, export_chrome_trace); or a "
                  "directory of a multi-GPU job's traces, one file per rank (*.json, *.json.gz, "
                  "rank 0's name first)");
  // Not CLI::ExistingFile: a trace that cannot be read is exit 1 with the reader's reason
  // (docs/perf-model.md), not a usage error.
  const char* group = "Summary counts (instead of a trace)";
  AddBoundedDuration(*cmd, "--native", &a.native, "the workload's native time",
                     {std::chrono::nanoseconds(1), std::chrono::hours(24)},
                     {{"--native-us", DurationUnit::kMicroseconds}})
      ->group(group)
      ->default_str("");
  cmd->add_option("--syncs", a.summary.syncs, "synchronisations the host waits on")->group(group);
  cmd->add_option("--dry-launches", a.summary.dry_launches,
                  "launches that find the GPU's queue empty (their latency is exposed)")
      ->group(group);
  cmd->add_option("--h2d-copies", a.summary.h2d_copies, "host-to-device copies")->group(group);
  cmd->add_option("--h2d-bytes", a.summary.h2d_bytes, "their bytes in all")->group(group);
  cmd->add_option("--d2h-copies", a.summary.d2h_copies, "device-to-host copies")->group(group);
  cmd->add_option("--d2h-bytes", a.summary.d2h_bytes, "their bytes in all")->group(group);
}

void AddFabricOptions(CLI::App* cmd, ModelArgs& a) {
  const char* group = "Fabric";
  ModelParams& p = a.params;
  AddBoundedDuration(*cmd, "--latency", &a.latency, "added one-way latency of the fabric",
                     {std::chrono::nanoseconds(0), std::chrono::seconds(1)},
                     {{"--latency-us", DurationUnit::kMicroseconds}})
      ->group(group);
  cmd->add_option("--bandwidth-gbps", p.fabric_bandwidth_gbps, "fabric bandwidth, Gb/s")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--mps", p.mps, "Max Payload Size, bytes")->group(group)->capture_default_str();
  cmd->add_option("--mrrs", p.mrrs, "Max Read Request Size, bytes")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--tags", p.read_tags, "outstanding read tags of the GPU")
      ->group(group)
      ->capture_default_str();
  AddBoundedDuration(*cmd, "--pcie-latency", &a.pcie_latency, "native one-way PCIe latency",
                     {std::chrono::nanoseconds(0), std::chrono::seconds(1)},
                     {{"--pcie-latency-ns", DurationUnit::kNanoseconds}})
      ->group(group);
  AddBoundedDuration(*cmd, "--box-pcie-latency", &a.box_pcie_latency,
                     "one-way latency of the GPU box's own PCIe link (bridge to GPU)",
                     {std::chrono::nanoseconds(0), std::chrono::seconds(1)},
                     {{"--box-pcie-latency-ns", DurationUnit::kNanoseconds}})
      ->group(group);
  cmd->add_option("--pcie-bandwidth-gbps", p.pcie_bandwidth_gbps, "native PCIe bandwidth, Gb/s")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--tlp-overhead", p.tlp_overhead_bytes, "bytes per TLP besides its payload")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--prefetch", p.prefetch, "pushbuffers the GPU fetches ahead")
      ->group(group)
      ->capture_default_str();
  cmd->add_option("--pushbuffer-bytes", p.pushbuffer_bytes, "bytes of one submission's commands")
      ->group(group)
      ->capture_default_str();
  cmd->add_flag("--serial-streams", p.serial_streams,
                "one in-order queue per GPU (the model GPU); default: one per stream")
      ->group(group);
  cmd->add_option("--placement", p.gpus_per_box,
                  "GPUs per box through DxPU, in the trace's GPU order (rank order for a "
                  "directory of ranks): 2,2 puts GPUs 0-1 in one box and 2-3 in another; a peer "
                  "copy between boxes crosses the fabric twice. Default: all in one box")
      ->delimiter(',')
      ->check(CLI::Range(size_t{1}, size_t{1024}))
      ->group(group);
}

}  // namespace

Command AddModelCommand(CLI::App& parent) {
  auto args = std::make_shared<ModelArgs>();
  CLI::App* cmd = parent.add_subcommand(
      "model",
      "Predict what DxPU costs a workload (docs/perf-model.md): its time natively and through "
      "DxPU, the overhead, and where the added time goes (synchronisations, launches that find "
      "the GPU idle, host-to-device copies as non-posted reads, device-to-host copies as "
      "posted writes, other). The workload is a PyTorch profiler trace, re-timed event by "
      "event, or summary counts. Then a sweep over added latency and fabric bandwidth, as a "
      "table, and with --svg/--csv as a plot and a table file.");
  AddWorkloadOptions(cmd, *args);
  AddFabricOptions(cmd, *args);
  const char* group = "Sweep and output";
  AddDurationListOption(*cmd, "--sweep-latency", &args->sweep_latency,
                        "added one-way latencies to sweep (comma-separated)",
                        {std::chrono::nanoseconds(0), std::chrono::seconds(1)},
                        {{"--sweep-latency-us", DurationUnit::kMicroseconds}})
      ->group(group);
  cmd->add_option("--sweep-bandwidth-gbps", args->sweep_bandwidth_gbps,
                  "fabric bandwidths to sweep, Gb/s (comma-separated; default --bandwidth-gbps)")
      ->group(group)
      ->delimiter(',')
      ->check(CLI::Range(1e-3, 1e6));
  cmd->add_option("--svg", args->svg, "write the overhead curve as an SVG plot")->group(group);
  cmd->add_option("--csv", args->csv, "write the sweep as CSV")->group(group);
  cmd->add_option("--timeline", args->timeline,
                  "write the trace natively and as the model re-times it through DxPU (at "
                  "--latency), side by side, as a Chrome trace for chrome://tracing or "
                  "Perfetto; each DxPU event's args say how much later it starts (later_us)")
      ->group(group);
  cmd->add_flag("--json", args->json, "print the prediction and the sweep as JSON")->group(group);
  cmd->add_flag("--replay", args->replay,
                "also replay the trace on the model GPUs in the simulator, natively and through "
                "DxPU, at each swept latency (the fabric's bandwidth), and print the simulated "
                "overhead beside the model's prediction with the simulator's parameters "
                "(sim-model: streams serialised, 12-byte TLP overhead)")
      ->group(group);
  cmd->footer(
      "Examples:\n"
      "  dxpu model tools/traces/resnet-train.json.gz --latency 2us\n"
      "  dxpu model tools/traces/data-loading.json.gz --latency 5us --timeline t.json\n"
      "  dxpu model trace.json --sweep-bandwidth-gbps 25,100,400 --svg overhead.svg --csv o.csv\n"
      "  dxpu model --native 12ms --syncs 40 --dry-launches 35 --h2d-copies 20 "
      "--h2d-bytes 83886080");
  return {cmd, [args] { return RunModel(*args); }};
}

}  // namespace dxpu::cli
