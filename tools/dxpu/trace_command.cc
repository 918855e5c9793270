// trace_command.cc - `dxpu trace record|list` (trace_command.h).
#include "trace_command.h"

#include <zlib.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "numbers.h"
#include "sim-world/replay/workload_traces.h"

namespace dxpu::cli {
namespace {

struct RecordArgs {
  perfmodel::RecordOptions options;
  std::string out;
  std::chrono::nanoseconds latency = std::chrono::microseconds(1);
  std::string runtime = "cuda";  // the names and args the trace is written with
  bool json = false;
};

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The text into `path`, gzipped when the name ends in .gz.
bool WriteTraceFile(const std::string& path, const std::string& text) {
  const bool gz = EndsWith(path, ".gz");
  gzFile f = gzopen(path.c_str(), gz ? "wb9" : "wbT");  // T: written as it is
  if (f == nullptr) return false;
  const bool ok =
      gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size());
  return gzclose(f) == Z_OK && ok;
}

int RunRecord(const RecordArgs& a) {
  perfmodel::RecordOptions options = a.options;
  options.added_latency_ns = static_cast<uint64_t>(a.latency.count());
  perfmodel::ReplayResult<std::unique_ptr<perfmodel::TraceRecorder>> r =
      perfmodel::RecordWorkload(options);
  if (!r.ok()) {
    std::cerr << "dxpu trace record: " << r.error().message << '\n';
    return kExitFailure;
  }
  std::ostringstream kineto;
  if (a.runtime == "hip") {
    r.value()->WriteKinetoHip(kineto);
  } else {
    r.value()->WriteKineto(kineto);
  }
  if (!WriteTraceFile(a.out, kineto.str())) {
    std::cerr << "dxpu trace record: cannot write " << a.out << '\n';
    return kExitFailure;
  }
  const perfmodel::Trace t = r.value()->ToTrace(a.out);
  int64_t end = 0;
  for (const perfmodel::RuntimeCall& c : t.calls) end = std::max(end, c.start_ns + c.dur_ns);
  for (const perfmodel::GpuOp& o : t.ops) end = std::max(end, o.start_ns + o.dur_ns);
  if (a.json) {
    std::cout << nlohmann::json{{"workload", a.options.workload},
                                {"file", a.out},
                                {"calls", t.calls.size()},
                                {"gpu_ops", t.ops.size()},
                                {"span_us", static_cast<double>(end) / 1e3}}
                     .dump(2)
              << '\n';
  } else {
    std::cout << fmt::format("{}: {} host calls, {} GPU operations, {:.3f} ms -> {}\n",
                             a.options.workload, t.calls.size(), t.ops.size(),
                             static_cast<double>(end) / 1e6, a.out);
  }
  return kExitOk;
}

}  // namespace

Command AddTraceCommand(CLI::App& parent) {
  CLI::App* trace = parent.add_subcommand(
      "trace", "Traces from the model GPU's own runs, for `dxpu model` (docs/perf-model.md)");
  trace->require_subcommand(1);
  auto args = std::make_shared<RecordArgs>();
  CLI::App* record = trace->add_subcommand(
      "record",
      "Run a workload on the simulator's native model GPUs with the trace recorder on and write "
      "what a PyTorch profiler would have: a Kineto Chrome trace (gzipped when FILE ends in "
      ".gz). The host calls are libdxgpu's, named as CUDA's; the GPU operations are the model "
      "GPU's commands, timed on its clock.");
  record->add_option("workload", args->options.workload, "what to run (dxpu trace list)")
      ->required();
  record->add_option("--out,-o", args->out, "the trace file to write")->required();
  record->add_option("--devices", args->options.devices, "GPUs (the demo's workloads)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  record
      ->add_option("--iterations", args->options.iterations,
                   "steps, batches or tokens of a synthetic workload (0: its default)")
      ->check(CLI::Range(0, 100'000))
      ->capture_default_str();
  record->add_flag("--demo-scale", args->options.demo_scale,
                   "the demo's workloads at the demo's size (default: the test size)");
  record->add_option("--seed", args->options.seed, "the demo's workloads' data")
      ->capture_default_str();
  record->add_flag("--through-dxpu", args->options.through_dxpu,
                   "run through DxPU in the simulator instead of natively");
  AddBoundedDuration(*record, "--latency", &args->latency,
                     "with --through-dxpu: the fabric's added one-way latency",
                     {std::chrono::nanoseconds(0), std::chrono::seconds(1)},
                     {{"--latency-us", DurationUnit::kMicroseconds}});
  record
      ->add_option("--placement", args->options.gpus_per_box,
                   "with --through-dxpu: GPUs per bridge box (2,2: GPUs 0-1 in one box, 2-3 in "
                   "another; peer copies between boxes cross the fabric twice). Default: one box")
      ->delimiter(',')
      ->check(CLI::Range(size_t{1}, size_t{8}));
  record
      ->add_option("--runtime", args->runtime,
                   "cuda: as PyTorch on CUDA records it; hip: as PyTorch on ROCm does (HIP's "
                   "names, a copy's size on its host call)")
      ->check(CLI::IsMember({"cuda", "hip"}))
      ->capture_default_str();
  record->add_flag("--json", args->json, "print what was recorded as JSON");
  CLI::App* list = trace->add_subcommand("list", "The workloads `record` knows");
  record->footer(
      "Examples:\n"
      "  dxpu trace record llm-decode --out llm-decode.json.gz\n"
      "  dxpu trace record mlp-train --devices 2 --out mlp.json && dxpu model mlp.json --replay");
  return {trace, [args, record, list] {
            if (list->parsed()) {
              for (const auto& [name, description] : perfmodel::RecordableWorkloads())
                std::cout << fmt::format("{:<14} {}\n", name, description);
              return kExitOk;
            }
            if (!record->parsed()) return kExitUsage;
            return RunRecord(*args);
          }};
}

}  // namespace dxpu::cli
