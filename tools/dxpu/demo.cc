// demo.cc - `dxpu demo`: the main job (demo.h, docs/demo.md).
#include "demo.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "demo_bridge.h"
#include "demo_pool.h"
#include "demo_report.h"
#include "dxgpu/runtime.h"
#include "host/direct_port.h"
#include "numbers.h"
#include "progress.h"
#include "rtl-sim/datapath_choice.h"
#include "sim-world/sim_port.h"
#include "workloads/workload.h"

namespace dxpu::cli {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kDemoHostNode = 0x4057;
// Session link-down and completion timeout with the RTL data path in the loop (docs/demo.md).
constexpr uint64_t kRtlTimeoutNs = 60'000'000'000;

struct DemoOptions {
  std::string link = "udp";
  std::string profile = "dxgpu";
  size_t box_gpus = 4;
  size_t attach = 2;
  bool quick = false;
  bool simulate = true;
  std::vector<std::chrono::nanoseconds> sim_latency = {std::chrono::microseconds(1),
                                                       std::chrono::microseconds(2)};
  std::string out = "dxpu-demo";
  bool json = false;
  uint64_t seed = 1;
  std::string datapath = "golden";
};

// One step of the scene on stderr, so a watcher sees where it is.
void Step(int n, int total, const std::string& what) {
  std::cerr << fmt::format("[{}/{}] {}\n", n, total, what);
}

DemoRun RunOn(dxgpu::Runtime& rt, const std::string& workload, size_t devices,
              workloads::Scale scale, uint64_t seed, const std::string& label) {
  Progress progress(label);
  const workloads::WorkloadResult w =
      workloads::RunWorkload(workload, rt, devices, scale, seed,
                             [&](uint32_t done, uint32_t total) { progress.Update(done, total); });
  DemoRun r;
  r.ok = w.ok;
  r.error = w.error;
  r.elapsed_ns = w.elapsed_ns;
  r.iterations = w.iterations;
  r.max_abs_error = w.max_abs_error;
  r.stats = w.stats;
  return r;
}

DemoRun Failed(const std::string& why) {
  DemoRun r;
  r.error = why;
  return r;
}

std::vector<DemoDevice> Devices(const dxgpu::Port& port) {
  std::vector<DemoDevice> v;
  for (size_t i = 0; i < port.device_count(); ++i) {
    const dxgpu::PortDeviceInfo& info = port.device_info(i);
    v.push_back({info.profile, info.location, info.memory_bytes});
  }
  return v;
}

// The simulated pair (native, dxpu) of one workload at one added latency.
DemoSimRun Simulate(const DemoOptions& o, const std::string& workload,
                    std::chrono::nanoseconds latency, workloads::Scale scale) {
  DemoSimRun s;
  s.added_latency_ns = static_cast<uint64_t>(latency.count());
  for (bool dxpu : {false, true}) {
    host::SimPortOptions so;
    so.through_dxpu = dxpu;
    so.profiles.assign(o.attach, o.profile);
    so.fabric.added_latency_ns = s.added_latency_ns;
    so.seed = o.seed;
    auto port = host::OpenSimulatedPort(so);
    DemoRun& run = dxpu ? s.dxpu : s.native;
    if (!port.ok()) {
      run = Failed(port.status().ToString());
      continue;
    }
    auto rt = dxgpu::Runtime::Open(std::move(*port));
    if (!rt.ok()) {
      run = Failed(rt.status().ToString());
      continue;
    }
    run = RunOn(
        **rt, workload, o.attach, scale, o.seed,
        fmt::format("{} sim {} {}", workload, dxpu ? "dxpu" : "native", FormatDuration(latency)));
  }
  return s;
}

int Run(const DemoOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const workloads::Scale scale = o.quick ? workloads::Scale::kTest : workloads::Scale::kDemo;
  const int steps = o.simulate ? 6 : 5;
  DemoReport report;
  report.link = o.link;
  report.datapath = o.datapath;
  report.box_gpus = o.box_gpus;
  report.sim_bandwidth_bps = host::SimFabric{}.fabric_bandwidth_bps;

  const fs::path dir = fs::temp_directory_path() / fmt::format("dxpu-demo-{}", getpid());
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::cerr << "dxpu demo: cannot create " << dir << ": " << ec.message() << "\n";
    return kExitFailure;
  }
  struct RemoveDir {
    fs::path p;
    ~RemoveDir() {
      std::error_code ignored;
      fs::remove_all(p, ignored);
    }
  } remove_dir{dir};

  Step(1, steps,
       fmt::format("starting a GPU box: dxpu-bridge with {} x {} over {}, {} data path", o.box_gpus,
                   o.profile, o.link, o.datapath));
  DemoBridgeOptions bo;
  bo.link = o.link;
  bo.profiles.assign(o.box_gpus, o.profile);
  bo.dir = dir;
  std::string why;
  const std::optional<bridge::DataPlane> plane = bridge::DataPlaneNamed(o.datapath, &why);
  if (!plane) {
    std::cerr << "dxpu demo: --datapath=" << o.datapath << ": " << why << "\n";
    return kExitUsage;
  }
  bo.plane = *plane;
  if (o.datapath == "rtl") {
    // The simulated hardware runs a few thousand TLPs per second, not millions: timeouts
    // sized for a hardware data plane would fire while the bridge is simulating a burst.
    bo.link_down_ns = kRtlTimeoutNs;
    bo.completion_timeout_ns = kRtlTimeoutNs;
  }
  Result<std::unique_ptr<DemoBridge>> box = DemoBridge::Start(bo);
  if (!box.ok()) {
    std::cerr << "dxpu demo: " << box.error().message << "\n";
    return kExitFailure;
  }
  report.bridge = box.value()->where();

  Step(2, steps,
       fmt::format("borrowing {} GPUs through DxPU; opening {} native GPUs", o.attach, o.attach));
  auto dxpu_port = box.value()->OpenHostPort(o.attach, kDemoHostNode);
  if (!dxpu_port.ok()) {
    std::cerr << "dxpu demo: " << dxpu_port.status().ToString() << "\n";
    return kExitFailure;
  }
  report.dxpu_devices = Devices(**dxpu_port);
  auto native_port = host::OpenDirectPort({std::vector<std::string>(o.attach, o.profile)});
  if (!native_port.ok()) {
    std::cerr << "dxpu demo: " << native_port.status().ToString() << "\n";
    return kExitFailure;
  }
  report.native_devices = Devices(**native_port);
  auto dxpu_rt = dxgpu::Runtime::Open(std::move(*dxpu_port));
  auto native_rt = dxgpu::Runtime::Open(std::move(*native_port));
  if (!dxpu_rt.ok() || !native_rt.ok()) {
    std::cerr << "dxpu demo: " << (dxpu_rt.ok() ? native_rt.status() : dxpu_rt.status()).ToString()
              << "\n";
    return kExitFailure;
  }

  const std::vector<workloads::WorkloadInfo> list = workloads::ListWorkloads();
  Step(3, steps, fmt::format("running {} workloads natively and through DxPU", list.size()));
  for (const workloads::WorkloadInfo& w : list) {
    DemoRow row;
    row.name = w.name;
    row.description = w.description;
    row.native = RunOn(**native_rt, w.name, o.attach, scale, o.seed, w.name + " native");
    row.dxpu = RunOn(**dxpu_rt, w.name, o.attach, scale, o.seed, w.name + " DxPU");
    std::cerr << fmt::format("      {:<14} native {:.2f} ms, DxPU {:.2f} ms{}\n", w.name,
                             static_cast<double>(row.native.elapsed_ns) / 1e6,
                             static_cast<double>(row.dxpu.elapsed_ns) / 1e6,
                             row.native.ok && row.dxpu.ok ? ", results verified" : ", FAILED");
    report.rows.push_back(std::move(row));
  }
  Step(4, steps,
       "the pool: 2 boxes, 3 hosts through dxpu-manager and dxpu-agent; GPUs taken, given back "
       "and taken again");
  report.pool = RunPoolScene(dir / "pool");
  if (o.simulate) {
    Step(5, steps, "the same workloads in the simulator with hardware-like fabric figures");
    for (DemoRow& row : report.rows) {
      for (std::chrono::nanoseconds d : o.sim_latency)
        row.simulated.push_back(Simulate(o, row.name, d, scale));
    }
  }
  dxpu_rt->reset();
  native_rt->reset();
  box.value()->Stop();

  Step(steps, steps, "report");
  report.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const nlohmann::ordered_json j = DemoJson(report);
  if (!o.out.empty()) {
    fs::create_directories(o.out, ec);
    std::ofstream(fs::path(o.out) / "demo.json") << j.dump(2) << '\n';
    std::ofstream(fs::path(o.out) / "demo.svg") << DemoSvg(report);
  }
  if (o.json) {
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << DemoTable(report);
    if (!o.out.empty()) std::cout << fmt::format("Wrote {0}/demo.json and {0}/demo.svg.\n", o.out);
  }
  return report.ok() ? kExitOk : kExitFailure;
}

}  // namespace

Command AddDemoCommand(CLI::App& parent) {
  auto opts = std::make_shared<DemoOptions>();
  CLI::App* cmd = parent.add_subcommand("demo", "Run the DxPU demo (what `make demo` runs)");
  cmd->footer(
      "Starts a GPU box (dxpu-bridge in this process, with model GPUs) and a host that\n"
      "borrows some of its GPUs through DxPU: the userspace host proxy, DxFP over the link,\n"
      "the bridge, the GPU models. Runs AI-shaped workloads (an MLP training step, a\n"
      "token-by-token decode loop, a data-loading loop) natively (the same GPU models on an\n"
      "ideal local link) and through DxPU, checks every result against the CPU, and prints\n"
      "each workload's time both ways, the overhead, and where the extra time went. Then\n"
      "runs the same workloads in the simulator with the fabric at hardware-like figures\n"
      "(1-2 us added one way, 100 Gb/s) and prints those overheads beside the measured ones.\n"
      "Writes the results as JSON and an SVG chart to --out. Exit code 1 if any result is\n"
      "wrong or a step fails.");
  cmd->add_option("--link", opts->link,
                  "how the host reaches the box: udp (loopback), unix "
                  "(AF_UNIX datagrams, as QEMU), mem (in-memory)")
      ->check(CLI::IsMember({"udp", "unix", "mem"}))
      ->capture_default_str();
  cmd->add_option("--profile", opts->profile, "GPU model profile (dxgpu, a100-40g, h100-80g)")
      ->capture_default_str();
  cmd->add_option("--box-gpus", opts->box_gpus, "GPUs in the box")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  cmd->add_option("--attach", opts->attach, "GPUs the host borrows (1 or 2 are used)")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  // A bare number is still read in microseconds, the option's unit before durations.
  AddDurationListOption(*cmd, "--sim-latency", &opts->sim_latency,
                        "added one-way fabric latencies to simulate (comma-separated)",
                        {std::chrono::nanoseconds(0), std::chrono::seconds(1)}, {},
                        DurationUnit::kMicroseconds);
  cmd->add_flag("!--no-sim", opts->simulate, "skip the simulated runs");
  cmd->add_flag("--quick", opts->quick, "tiny workloads (a smoke test in seconds)");
  cmd->add_option("--out", opts->out, "directory for demo.json and demo.svg ('' to skip)")
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "print the JSON document instead of the table");
  cmd->add_option("--datapath", opts->datapath, bridge::DatapathHelp())
      ->check(CLI::IsMember(bridge::DatapathNames()))
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "seed of the workloads' inputs")->capture_default_str();
  return {cmd, [opts] {
            if (opts->attach > opts->box_gpus) {
              std::cerr << "dxpu demo: --attach must not exceed --box-gpus\n";
              return kExitUsage;
            }
            return Run(*opts);
          }};
}

}  // namespace dxpu::cli
