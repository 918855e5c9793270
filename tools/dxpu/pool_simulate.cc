// pool_simulate.cc - `dxpu pool simulate` (pool_simulate.h).
#include "pool_simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "command.h"
#include "error_report.h"
#include "lib/cli/options.h"
#include "manager/simulate/curve_svg.h"
#include "manager/simulate/fixed_world.h"
#include "manager/simulate/openb_trace.h"
#include "manager/simulate/pool_world.h"
#include "manager/simulate/sample_trace.h"
#include "perfmodel/model.h"
#include "progress.h"
#include "sim-world/replay/workload_traces.h"

namespace dxpu::cli {
namespace {
// Named as well: a unity build shares one anonymous namespace among the CLI's files.
namespace pool_simulate {

namespace fs = std::filesystem;
namespace ps = poolsim;

// The DxPU world's policies, as --policy names them: "dxpu-" and the pool policy.
constexpr std::string_view kDxpuPrefix = "dxpu-";

struct SimulateArgs {
  std::string nodes;
  std::string pods;
  std::vector<std::string> policies = {"best-fit", "random-fit", "dxpu-naive"};
  unsigned seeds = 10;
  uint64_t first_seed = 42;
  double ratio = 1.3;
  size_t row_nodes = 0;   // the DxPU world's fabric scope: nodes per row; 0: the hall
  size_t rack_nodes = 8;  // ... and its racks, for each placement's reach
  std::string reference = "resnet-train";  // the workload whose overhead is predicted; "none"
  std::chrono::nanoseconds fabric_latency = std::chrono::microseconds(1);   // one way, base
  std::chrono::nanoseconds switch_latency = std::chrono::nanoseconds(500);  // one way, each
  std::string svg;          // a file: the mean curves as a chart
  std::string make_sample;  // a directory: write a sample trace there and stop
  size_t sample_nodes = 64;
  size_t sample_pods = 600;
  bool json = false;
};

struct Spread {
  double mean = 0;
  double min = 0;
  double max = 0;
};

Spread SpreadOf(const std::vector<double>& v) {
  Spread s;
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  return s;
}

nlohmann::json SpreadJson(const Spread& s) {
  return {{"mean", s.mean}, {"min", s.min}, {"max", s.max}};
}

// One policy's runs, over the seeds.
struct PolicyRuns {
  std::string name;  // best-fit, ..., dxpu-naive, dxpu-scarcity
  std::vector<ps::SimRun> runs;
};

int Fail(const SimulateArgs& a, const Error& e, int code) {
  return ReportError("pool simulate", e, a.json, std::cout, std::cerr, code);
}

int MakeSample(const SimulateArgs& a) {
  const ps::SampleTrace t =
      ps::MakeSampleTrace({.seed = a.first_seed, .nodes = a.sample_nodes, .pods = a.sample_pods});
  std::error_code ec;
  fs::create_directories(a.make_sample, ec);
  const fs::path nodes = fs::path(a.make_sample) / "nodes.csv";
  const fs::path pods = fs::path(a.make_sample) / "pods.csv";
  for (const auto& [path, text] : {std::pair{nodes, &t.node_csv}, std::pair{pods, &t.pod_csv}}) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << *text;
    if (!out.good())
      return Fail(a, Error{"write", fmt::format("{}: cannot be written", path.string())},
                  kExitFailure);
  }
  if (a.json) {
    std::cout << nlohmann::json{{"nodes", nodes.string()}, {"pods", pods.string()}}.dump(2) << "\n";
  } else {
    std::cout << fmt::format("wrote {} nodes to {} and {} pods to {}\n", a.sample_nodes,
                             nodes.string(), a.sample_pods, pods.string());
  }
  return kExitOk;
}

std::vector<double> Collect(const PolicyRuns& p, const std::function<double(const ps::SimRun&)>& f,
                            bool failures_only = false) {
  std::vector<double> v;
  for (const ps::SimRun& r : p.runs)
    if (!failures_only || r.first_failure) v.push_back(f(r));
  return v;
}

// The mean curve over the runs: at each arrived percent, the mean of the runs that have it.
std::vector<std::pair<int, double>> MeanCurve(const PolicyRuns& p) {
  std::map<int, std::pair<double, size_t>> sums;
  for (const ps::SimRun& r : p.runs) {
    for (const ps::CurvePoint& c : r.curve) {
      sums[c.arrived_percent].first += c.allocated_percent;
      ++sums[c.arrived_percent].second;
    }
  }
  std::vector<std::pair<int, double>> out;
  out.reserve(sums.size());
  for (const auto& [at, s] : sums) out.emplace_back(at, s.first / static_cast<double>(s.second));
  return out;
}

std::string SkippedText(const ps::SkipCounts& s) {
  std::vector<std::string> parts;
  for (const auto& [why, n] : s) parts.push_back(fmt::format("{} {}", n, why));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

// What was read, for the report.
// The reference workload's predicted overhead through DxPU, by reach (dxpu model).
struct Overheads {
  bool present = false;
  double in_rack_pct = 0;       // host and box under one switch
  double across_racks_pct = 0;  // three: the spine between them
};

struct Trace {
  const ps::NodeList& nodes;
  const ps::PodList& pods;
  size_t gpu_nodes = 0;
  uint64_t gpus = 0;
  Overheads overheads;
};

// The share of a policy's GPU placements in the host's rack, and the placements' mean predicted
// overhead; nullopt for a world without placements through the fabric.
struct Reach {
  double in_rack_share = 0;
  double overhead_pct = 0;
};
std::optional<Reach> ReachOf(const PolicyRuns& p, const Overheads& o) {
  double in_rack = 0;
  double across = 0;
  for (const ps::SimRun& r : p.runs) {
    in_rack += static_cast<double>(r.gpu_pods_in_rack);
    across += static_cast<double>(r.gpu_pods_across_racks);
  }
  if (in_rack + across == 0) return std::nullopt;
  return Reach{in_rack / (in_rack + across),
               (in_rack * o.in_rack_pct + across * o.across_racks_pct) / (in_rack + across)};
}

void PrintJson(const SimulateArgs& a, const Trace& t, const std::vector<PolicyRuns>& results) {
  const int at = static_cast<int>(std::lround(a.ratio * 100));
  nlohmann::json out;
  // The worlds the run's policies are in, in order ("fixed", "dxpu"); each policy says its own.
  out["worlds"] = nlohmann::json::array();
  for (const PolicyRuns& p : results) {
    const std::string world = p.runs.empty() ? "" : p.runs.front().world;
    if (!world.empty() &&
        std::find(out["worlds"].begin(), out["worlds"].end(), world) == out["worlds"].end())
      out["worlds"].push_back(world);
  }
  out["nodes"] = {{"file", a.nodes},
                  {"read", t.nodes.rows.size()},
                  {"with_gpus", t.gpu_nodes},
                  {"gpus", t.gpus},
                  {"skipped", t.nodes.skipped}};
  out["pods"] = {{"file", a.pods}, {"read", t.pods.rows.size()}, {"skipped", t.pods.skipped}};
  out["ratio"] = a.ratio;
  out["seeds"] = {{"first", a.first_seed}, {"count", a.seeds}};
  if (t.overheads.present) {
    out["reference"] = {{"workload", a.reference},
                        {"fabric_latency_ns", static_cast<int64_t>(a.fabric_latency.count())},
                        {"switch_latency_ns", static_cast<int64_t>(a.switch_latency.count())},
                        {"rack_nodes", a.rack_nodes},
                        {"overhead_pct_in_rack", t.overheads.in_rack_pct},
                        {"overhead_pct_across_racks", t.overheads.across_racks_pct}};
  }
  out["policies"] = nlohmann::json::array();
  for (const PolicyRuns& p : results) {
    nlohmann::json j;
    j["policy"] = p.name;
    j["world"] = p.runs.empty() ? "" : p.runs.front().world;
    j["allocated_percent_at_ratio"] =
        SpreadJson(SpreadOf(Collect(p, [&](const ps::SimRun& r) { return r.AllocatedAt(at); })));
    j["allocated_percent_at_100"] =
        SpreadJson(SpreadOf(Collect(p, [&](const ps::SimRun& r) { return r.AllocatedAt(100); })));
    j["first_failure"] = {
        {"runs_with_one", Collect(
                              p, [](const ps::SimRun&) { return 0.0; }, true)
                              .size()},
        {"arrived_percent",
         SpreadJson(SpreadOf(Collect(
             p, [](const ps::SimRun& r) { return r.first_failure->arrived_percent; }, true)))},
        {"allocated_percent",
         SpreadJson(SpreadOf(Collect(
             p, [](const ps::SimRun& r) { return r.first_failure->allocated_percent; }, true)))}};
    j["runs"] = nlohmann::json::array();
    for (const ps::SimRun& r : p.runs) {
      j["runs"].push_back({{"seed", r.seed},
                           {"arrivals", r.arrivals},
                           {"placed", r.placed},
                           {"refused", r.refused},
                           {"gpu_pods_refused", r.gpu_pods_refused},
                           {"constrained_arrivals", r.constrained_arrivals},
                           {"constrained_placed", r.constrained_placed},
                           {"capacity_milli", r.capacity_milli},
                           {"arrived_milli", r.arrived_milli},
                           {"allocated_milli", r.allocated_milli},
                           {"allocated_percent_at_ratio", r.AllocatedAt(at)},
                           {"idle_gpus", r.idle_gpus},
                           {"stranded_gpus", r.stranded_gpus}});
    }
    nlohmann::json curve = nlohmann::json::array();
    for (const auto& [x, y] : MeanCurve(p)) curve.push_back({x, y});
    j["mean_curve"] = curve;
    if (const std::optional<Reach> reach = ReachOf(p, t.overheads)) {
      j["gpu_pods_in_rack_share"] = reach->in_rack_share;
      if (t.overheads.present) j["predicted_overhead_pct"] = reach->overhead_pct;
    }
    out["policies"].push_back(j);
  }
  std::cout << out.dump(2) << "\n";
}

void PrintText(const SimulateArgs& a, const Trace& t, const std::vector<PolicyRuns>& results) {
  const int at = static_cast<int>(std::lround(a.ratio * 100));
  std::cout << fmt::format(
      "the cluster: {} nodes with GPUs ({} GPUs) from {}; {} pods from {}\n"
      "skipped: nodes {}; pods {}\n"
      "{} seeds from {}; pods arrive until their GPU requests reach {:.0f}% of the GPUs\n",
      t.gpu_nodes, t.gpus, a.nodes, t.pods.rows.size(), a.pods, SkippedText(t.nodes.skipped),
      SkippedText(t.pods.skipped), a.seeds, a.first_seed, a.ratio * 100);
  std::cout << fmt::format("{:<14} {:>22} {:>24} {:>7} {:>7} {:>9}\n", "policy",
                           fmt::format("allocated at {}%", at), "first refusal (arrived)", "placed",
                           "refused", "stranded");
  for (const PolicyRuns& p : results) {
    const Spread alloc =
        SpreadOf(Collect(p, [&](const ps::SimRun& r) { return r.AllocatedAt(at); }));
    const std::vector<double> fail_at = Collect(
        p, [](const ps::SimRun& r) { return r.first_failure->allocated_percent; }, true);
    const std::vector<double> fail_arrived = Collect(
        p, [](const ps::SimRun& r) { return r.first_failure->arrived_percent; }, true);
    const Spread placed =
        SpreadOf(Collect(p, [](const ps::SimRun& r) { return static_cast<double>(r.placed); }));
    const Spread refused =
        SpreadOf(Collect(p, [](const ps::SimRun& r) { return static_cast<double>(r.refused); }));
    const Spread stranded = SpreadOf(
        Collect(p, [](const ps::SimRun& r) { return static_cast<double>(r.stranded_gpus); }));
    const std::string failure =
        fail_at.empty()
            ? "none"
            : fmt::format("{:.1f}% ({:.1f}%)", SpreadOf(fail_at).mean, SpreadOf(fail_arrived).mean);
    std::cout << fmt::format(
        "{:<14} {:>22} {:>24} {:>7.0f} {:>7.0f} {:>9.1f}\n", p.name,
        fmt::format("{:.2f}% ({:.2f}-{:.2f})", alloc.mean, alloc.min, alloc.max), failure,
        placed.mean, refused.mean, stranded.mean);
  }
  std::cout << "allocated: GPU milli allocated over the cluster's, the mean over the seeds "
               "(range); first refusal: the allocation when the first pod found no node, and "
               "how much had arrived; stranded: idle GPUs at the end that no host able to use "
               "them can give the typical GPU pod's CPU and memory (the means)\n";
  if (!t.overheads.present) return;
  std::cout << fmt::format(
      "predicted overhead of {} through DxPU (dxpu model; {} one way and {} per switch): "
      "host and box in one rack {:+.2f}%, across the spine {:+.2f}%\n",
      a.reference, FormatDuration(a.fabric_latency), FormatDuration(a.switch_latency),
      t.overheads.in_rack_pct, t.overheads.across_racks_pct);
  for (const PolicyRuns& p : results) {
    if (const std::optional<Reach> reach = ReachOf(p, t.overheads)) {
      std::cout << fmt::format(
          "  {}: {:.1f}% of its GPU pods in their host's rack ({} nodes); "
          "mean predicted overhead {:+.2f}%\n",
          p.name, reach->in_rack_share * 100, a.rack_nodes, reach->overhead_pct);
    }
  }
}

// The reference workload recorded on the simulator's model GPUs (as `dxpu trace record` does),
// then `dxpu model`'s prediction at the fabric latency of each reach.
Overheads PredictOverheads(const SimulateArgs& a, std::string* error) {
  perfmodel::RecordOptions options;
  options.workload = a.reference;
  perfmodel::ReplayResult<std::unique_ptr<perfmodel::TraceRecorder>> recorded =
      perfmodel::RecordWorkload(options);
  if (!recorded.ok()) {
    *error = recorded.error().message;
    return {};
  }
  const perfmodel::Trace workload = recorded.value()->ToTrace(a.reference);
  const auto predict = [&](int switches) {
    perfmodel::ModelParams params;
    params.added_latency_ns = static_cast<double>(a.fabric_latency.count()) +
                              switches * static_cast<double>(a.switch_latency.count());
    return perfmodel::Predict(workload, params).overhead_pct;
  };
  return {true, predict(1), predict(3)};
}

int Run(const SimulateArgs& a) {
  if (!a.make_sample.empty()) return MakeSample(a);
  if (a.nodes.empty() || a.pods.empty())
    return Fail(a,
                Error{"usage",
                      "--nodes and --pods name the trace's CSV files "
                      "(or --make-sample DIR writes a sample)"},
                kExitUsage);
  const ps::NodeList nodes = ps::ReadNodeList(a.nodes);
  if (!nodes.ok()) return Fail(a, Error{"bad-trace", nodes.error}, kExitFailure);
  const ps::PodList pods = ps::ReadPodList(a.pods);
  if (!pods.ok()) return Fail(a, Error{"bad-trace", pods.error}, kExitFailure);
  uint64_t gpus = 0;
  size_t gpu_nodes = 0;
  for (const ps::TraceNode& n : nodes.rows) {
    gpus += n.gpus;
    gpu_nodes += n.gpus > 0 ? 1 : 0;
  }
  if (gpus == 0) return Fail(a, Error{"bad-trace", a.nodes + ": no node has GPUs"}, kExitFailure);
  if (pods.rows.empty())
    return Fail(a, Error{"bad-trace", a.pods + ": no usable pod"}, kExitFailure);

  std::vector<PolicyRuns> results;
  Progress progress("pool simulate");
  uint64_t done = 0;
  const uint64_t total = uint64_t{a.policies.size()} * a.seeds;
  for (const std::string& name : a.policies) {
    PolicyRuns p{name, {}};
    for (unsigned s = 0; s < a.seeds; ++s) {
      const ps::ArrivalOptions arrivals{.ratio = a.ratio, .seed = a.first_seed + s};
      if (const std::optional<ps::FixedPolicy> fixed = ps::ParseFixedPolicy(name)) {
        p.runs.push_back(ps::RunFixed(nodes.rows, pods.rows, *fixed, arrivals));
      } else {
        ps::PoolWorldOptions world;
        world.policy = *ps::ParsePoolPolicy(name.substr(std::string_view(kDxpuPrefix).size()));
        world.row_nodes = a.row_nodes;
        world.rack_nodes = a.rack_nodes;
        p.runs.push_back(ps::RunPool(nodes.rows, pods.rows, world, arrivals));
      }
      progress.Update(++done, total);
    }
    results.push_back(std::move(p));
  }

  if (!a.svg.empty()) {
    std::vector<ps::NamedCurve> curves;
    for (const PolicyRuns& p : results) {
      ps::NamedCurve c{p.name, {}, std::nullopt};
      for (const auto& [x, y] : MeanCurve(p)) c.xy.emplace_back(x, y);
      const std::vector<double> fx = Collect(
          p, [](const ps::SimRun& r) { return r.first_failure->arrived_percent; }, true);
      const std::vector<double> fy = Collect(
          p, [](const ps::SimRun& r) { return r.first_failure->allocated_percent; }, true);
      if (!fx.empty()) c.first_refusal = std::pair{SpreadOf(fx).mean, SpreadOf(fy).mean};
      curves.push_back(std::move(c));
    }
    std::ofstream out(a.svg, std::ios::binary | std::ios::trunc);
    out << ps::CurveSvg(curves, a.ratio * 100,
                        fmt::format("{}: GPUs allocated as pods arrive ({} seeds, means)",
                                    fs::path(a.pods).filename().string(), a.seeds));
    if (!out.good())
      return Fail(a, Error{"write", fmt::format("{}: cannot be written", a.svg)}, kExitFailure);
  }
  Trace trace{nodes, pods, gpu_nodes, gpus, {}};
  const bool any_pool = std::any_of(a.policies.begin(), a.policies.end(), [](const std::string& n) {
    return n.starts_with(kDxpuPrefix);
  });
  if (any_pool && a.reference != "none") {
    std::string error;
    trace.overheads = PredictOverheads(a, &error);
    if (!trace.overheads.present)
      return Fail(a, Error{"reference", a.reference + ": " + error}, kExitFailure);
  }
  if (a.json)
    PrintJson(a, trace, results);
  else
    PrintText(a, trace, results);
  return kExitOk;
}

}  // namespace pool_simulate
}  // namespace

std::function<int()> AddPoolSimulateCommand(CLI::App& pool, CLI::App** app) {
  auto a = std::make_shared<pool_simulate::SimulateArgs>();
  CLI::App* cmd = pool.add_subcommand(
      "simulate",
      "Replay a GPU cluster trace in virtual time, in this process (no manager): Alibaba's "
      "cluster-trace-gpu-v2023 (\"openb\") node and pod lists, or the same format. Pods arrive "
      "as the FGD paper (USENIX ATC'23) had them: in a seeded random order, then more drawn "
      "from the trace until their GPU requests reach --ratio of the cluster's GPUs; nothing "
      "leaves. Two worlds on the same arrivals: GPUs fixed inside servers, each pod taking "
      "CPU, memory and GPUs from one node by a baseline policy; and DxPU pools, each node's "
      "GPUs a GPU box and its CPUs and memory a host, a pod's GPUs chosen by the pool "
      "manager's own allocation code from any box in its fabric scope. Reports the share of "
      "GPU capacity allocated and when pods start to be refused.");
  cmd->add_option("--nodes", a->nodes, "the node list (openb_node_list_gpu_node.csv)");
  cmd->add_option("--pods", a->pods, "the pod list (openb_pod_list_default.csv)");
  cmd->add_option("--policy", a->policies,
                  "fixed servers: best-fit, random-fit, first-fit, k8s-default; GPUs in DxPU "
                  "pools: "
                  "dxpu-naive, dxpu-scarcity (repeatable; default: best-fit, random-fit, "
                  "dxpu-naive)")
      ->check(CLI::IsMember(
          {"best-fit", "random-fit", "first-fit", "k8s-default", "dxpu-naive", "dxpu-scarcity"}));
  cmd->add_option("--seeds", a->seeds, "runs per policy, each with its own seed")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  cmd->add_option("--first-seed", a->first_seed, "the first run's seed (the paper's: 42)")
      ->capture_default_str();
  cmd->add_option("--ratio", a->ratio, "arrivals stop at this share of the GPU capacity")
      ->check(CLI::Range(0.01, 10.0))
      ->capture_default_str();
  cmd->add_option("--row-nodes", a->row_nodes,
                  "the DxPU world's fabric scope: nodes (hosts and boxes, in the node list's "
                  "order) per row of racks; a pod's GPUs come from its host's row. 0: the hall")
      ->capture_default_str();
  cmd->add_option("--rack-nodes", a->rack_nodes,
                  "nodes per rack in the DxPU world: a placement whose GPUs are in its host's "
                  "rack crosses one switch, others three (the spine)")
      ->capture_default_str();
  cmd->add_option("--reference", a->reference,
                  "the workload whose overhead through DxPU is predicted for the placements "
                  "(dxpu model on the simulator's recording of it: dxpu trace list), or none")
      ->capture_default_str();
  AddBoundedDuration(*cmd, "--fabric-latency", &a->fabric_latency,
                     "the fabric's one-way latency besides switches (proxies, cables)",
                     {std::chrono::nanoseconds(0), std::chrono::milliseconds(1)});
  AddBoundedDuration(*cmd, "--switch-latency", &a->switch_latency,
                     "one way, each switch between host and box",
                     {std::chrono::nanoseconds(0), std::chrono::milliseconds(1)});
  cmd->add_option("--svg", a->svg,
                  "also write the mean curves (GPUs allocated as requests arrive, a line per "
                  "policy, the first refusal marked) to this SVG file");
  cmd->add_option("--make-sample", a->make_sample,
                  "write a small sample trace in the same format (nodes.csv, pods.csv) into "
                  "this directory, from --first-seed, and stop");
  cmd->add_option("--sample-nodes", a->sample_nodes, "the sample's nodes")
      ->check(CLI::Range(size_t{1}, size_t{100000}))
      ->capture_default_str();
  cmd->add_option("--sample-pods", a->sample_pods, "the sample's pods")
      ->check(CLI::Range(size_t{1}, size_t{1000000}))
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "print the results as JSON (with each run and the mean curve)");
  cmd->footer(
      "Examples:\n"
      "  dxpu pool simulate --nodes openb_node_list_gpu_node.csv --pods "
      "openb_pod_list_default.csv\n"
      "  dxpu pool simulate --make-sample /tmp/sample\n"
      "  dxpu pool simulate --nodes /tmp/sample/nodes.csv --pods /tmp/sample/pods.csv "
      "--policy best-fit --seeds 3 --json\n"
      "The trace: github.com/alibaba/clusterdata, cluster-trace-gpu-v2023/csv "
      "(docs/pool-simulate.md).\n"
      "Exit status: 0 done, 1 a file is not such a list, 2 bad command line.");
  *app = cmd;
  return [a] { return pool_simulate::Run(*a); };
}

}  // namespace dxpu::cli
