// run_command.cc - `dxpu run` (run_command.h).
#include "run_command.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "demo_report.h"
#include "dxgpu/runtime.h"
#include "error_report.h"
#include "gpu/device_profile.h"
#include "host/direct_port.h"
#include "host/kernel_port.h"
#include "lib/cli/options.h"
#include "progress.h"
#include "workloads/workload.h"

namespace dxpu::cli {
namespace {

struct RunOptions {
  std::string port = "kernel";
  std::vector<std::string> devices;   // --port kernel: device files (default /dev/dxgpu0)
  std::vector<std::string> profiles;  // --port direct: one model GPU each (default dxgpu)
  std::string workload = "all";
  std::string scale = "demo";
  uint64_t seed = 1;
  std::chrono::nanoseconds wait_timeout = std::chrono::seconds(10);  // RuntimeOptions' default
  bool json = false;
};

dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenPort(const RunOptions& o) {
  if (o.port == "direct") {
    host::DirectPortOptions d;
    if (!o.profiles.empty()) d.profiles = o.profiles;
    return host::OpenDirectPort(d);
  }
  host::KernelPortOptions k;
  if (!o.devices.empty()) k.devices = o.devices;
  return host::OpenKernelPort(k);
}

int Fail(const RunOptions& o, const dxgpu::Status& s) {
  return ReportError("run", {std::string(dxgpu::ErrorCodeName(s.code())), s.message()}, o.json,
                     std::cout, std::cerr, kExitFailure);
}

std::string Plural(size_t n, const char* what) {
  return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
}

void PrintJson(const RunOptions& o, const dxgpu::Port& port,
               const std::vector<workloads::WorkloadResult>& results) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (size_t i = 0; i < port.device_count(); ++i) {
    const dxgpu::PortDeviceInfo& d = port.device_info(i);
    devices.push_back({{"profile", d.profile},
                       {"location", d.location},
                       {"vendor_id", fmt::format("{:04x}", d.vendor_id)},
                       {"device_id", fmt::format("{:04x}", d.device_id)},
                       {"memory_bytes", d.memory_bytes}});
  }
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const workloads::WorkloadResult& r : results) {
    nlohmann::ordered_json j{{"name", r.name},
                             {"ok", r.ok},
                             {"iterations", r.iterations},
                             {"elapsed_ns", r.elapsed_ns},
                             {"max_abs_error", r.max_abs_error},
                             {"summary", r.summary},
                             {"stats", StatsJson(r.stats)}};
    if (!r.ok) j["error"] = r.error;
    rows.push_back(std::move(j));
  }
  const bool ok = std::ranges::all_of(results, &workloads::WorkloadResult::ok);
  std::cout << nlohmann::ordered_json{{"port", o.port},     {"scale", o.scale},  {"seed", o.seed},
                                      {"devices", devices}, {"workloads", rows}, {"ok", ok}}
                   .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
            << '\n';
}

void PrintTable(const RunOptions& o, const dxgpu::Port& port,
                const std::vector<workloads::WorkloadResult>& results) {
  std::cout << fmt::format("{} port, {}:\n", o.port, Plural(port.device_count(), "GPU"));
  for (size_t i = 0; i < port.device_count(); ++i) {
    const dxgpu::PortDeviceInfo& d = port.device_info(i);
    std::cout << fmt::format("  GPU {}: {}, {} MiB, {}\n", i, d.profile, d.memory_bytes >> 20,
                             d.location);
  }
  std::cout << fmt::format("{:<14} {:<6} {:>10} {:>12} {:>13}  {}\n", "workload", "result",
                           "iterations", "elapsed", "max_abs_error", "summary");
  size_t passed = 0;
  for (const workloads::WorkloadResult& r : results) {
    passed += r.ok ? 1 : 0;
    std::string line = fmt::format(
        "{:<14} {:<6} {:>10} {:>9.2f} ms {:>13.3g}  {}", r.name, r.ok ? "ok" : "FAILED",
        r.iterations, static_cast<double>(r.elapsed_ns) / 1e6, r.max_abs_error, r.summary);
    line.erase(line.find_last_not_of(' ') + 1);
    std::cout << line << '\n';
    if (!r.ok) std::cout << "  error: " << r.error << '\n';
  }
  std::cout << fmt::format("{} on {} (scale {}, seed {}): {} passed, {} failed\n",
                           Plural(results.size(), "workload"), Plural(port.device_count(), "GPU"),
                           o.scale, o.seed, passed, results.size() - passed);
}

int RunWorkloads(const RunOptions& o) {
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port = OpenPort(o);
  if (!port.ok()) return Fail(o, port.status());
  dxgpu::RuntimeOptions ro;
  ro.sync_timeout_ns = static_cast<uint64_t>(o.wait_timeout.count());
  dxgpu::Expected<std::unique_ptr<dxgpu::Runtime>> rt = dxgpu::Runtime::Open(std::move(*port), ro);
  if (!rt.ok()) return Fail(o, rt.status());
  dxgpu::Runtime& runtime = **rt;

  std::vector<std::string> names;
  for (const workloads::WorkloadInfo& w : workloads::ListWorkloads()) {
    if (o.workload == "all" || o.workload == w.name) names.push_back(w.name);
  }
  const workloads::Scale scale =
      o.scale == "test" ? workloads::Scale::kTest : workloads::Scale::kDemo;
  std::vector<workloads::WorkloadResult> results;
  for (size_t i = 0; i < names.size(); ++i) {
    std::cerr << fmt::format("[{}/{}] {} on {}\n", i + 1, names.size(), names[i],
                             Plural(runtime.device_count(), "GPU"));
    Progress progress(names[i]);
    results.push_back(workloads::RunWorkload(
        names[i], runtime, runtime.device_count(), scale, o.seed,
        [&](uint32_t done, uint32_t total) { progress.Update(done, total); }));
  }
  if (o.json) {
    PrintJson(o, runtime.port(), results);
  } else {
    PrintTable(o, runtime.port(), results);
  }
  return std::ranges::all_of(results, &workloads::WorkloadResult::ok) ? kExitOk : kExitFailure;
}

}  // namespace

Command AddRunCommand(CLI::App& parent) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "run", "Run the workloads on the GPUs of a port (dxgpu.ko's, or models in this process)");
  cmd->footer(
      "Opens the GPUs through a port and runs the demo's AI-shaped workloads on all of them\n"
      "(an MLP training step, a token-by-token decode loop, a data-loading loop), each\n"
      "checked against the CPU; prints per workload ok or FAILED, the iterations, the time\n"
      "of the timed part, the largest difference from the CPU, and a summary.\n"
      "Ports: kernel - GPUs the dxgpu.ko driver drives (remote ones dxpu.ko attached, a slot\n"
      "bound and powered on, or local ones), through its character devices /dev/dxgpuN\n"
      "(--device, default /dev/dxgpu0); direct - GPU models in this process on an ideal local\n"
      "link (--profile, default one dxgpu), to try it here.\n"
      "Exit status: 0 all passed, 1 a workload failed or the port could not be opened,\n"
      "2 bad command line.\n"
      "Examples:\n"
      "  dxpu run --device /dev/dxgpu0 --device /dev/dxgpu1\n"
      "  dxpu run --port direct --workload decode-loop --scale test --json");
  cmd->add_option("--port", opts->port, "kernel (dxgpu.ko's devices) or direct (models here)")
      ->check(CLI::IsMember({"kernel", "direct"}))
      ->capture_default_str();
  cmd->add_option("--device", opts->devices,
                  "a device file of the kernel port, repeatable (default /dev/dxgpu0)")
      ->type_name("PATH");
  std::vector<std::string> profiles;
  for (std::string_view p : gpu::ProfileNames()) profiles.emplace_back(p);
  cmd->add_option("--profile", opts->profiles,
                  "a GPU model of the direct port, repeatable (default dxgpu)")
      ->check(CLI::IsMember(profiles));
  std::vector<std::string> names = {"all"};
  for (const workloads::WorkloadInfo& w : workloads::ListWorkloads()) names.push_back(w.name);
  cmd->add_option("--workload", opts->workload, "the workload to run, or all")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  cmd->add_option("--scale", opts->scale, "test (tiny, under a second) or demo (seconds)")
      ->check(CLI::IsMember({"test", "demo"}))
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "seed of the workloads' inputs")->capture_default_str();
  AddBoundedDuration(*cmd, "--wait-timeout", &opts->wait_timeout,
                     "the longest one wait for a GPU's work lasts before the workload fails "
                     "(1s .. 10min; raise it for slow hosts, e.g. emulated ones)",
                     {std::chrono::seconds(1), std::chrono::minutes(10)});
  cmd->add_flag("--json", opts->json, "print the results as JSON");
  return {cmd, [opts] {
            if (opts->port == "direct" && !opts->devices.empty()) {
              std::cerr << "dxpu run: --device is for --port kernel (direct: --profile)\n";
              return kExitUsage;
            }
            if (opts->port == "kernel" && !opts->profiles.empty()) {
              std::cerr << "dxpu run: --profile is for --port direct (kernel: --device)\n";
              return kExitUsage;
            }
            return RunWorkloads(*opts);
          }};
}

}  // namespace dxpu::cli
