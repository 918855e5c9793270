// bench_gpu.cc - `dxpu bench gpu` (bench_gpu.h).
#include "bench_gpu.h"

#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command.h"
#include "demo_bridge.h"
#include "dxgpu/runtime.h"
#include "gpu/gpu_registers.h"
#include "host/direct_port.h"
#include "progress.h"
#include "stats.h"

namespace dxpu::cli {
namespace {

namespace fs = std::filesystem;
namespace regs = gpu::regs;

constexpr uint64_t kBenchHostNode = 0xbe7c;

struct BenchGpuArgs {
  std::string link = "mem";
  std::string profile = "dxgpu";
  std::vector<uint64_t> sizes = {4096, 65536, 1u << 20, 16u << 20, 64u << 20};
  uint32_t mmio_reads = 2000;
  uint32_t doorbells = 20000;
  uint64_t min_bytes = 128u << 20;  // each bandwidth cell copies at least this much
  std::string direction = "both";   // "h2d", "d2h" or "both"
  bool json = false;
};

struct Cell {
  std::string what;  // "mmio-read", "doorbell", "h2d", "d2h"
  uint64_t size = 0;
  double direct = 0;  // ns per read; writes/s; bytes/s
  double dxpu = 0;
  bool higher_is_better = true;
  std::string error;
  double Ratio() const { return direct == 0 ? 0 : dxpu / direct; }
};

// One port's figures, in the order of the cells.
class PortBench {
 public:
  PortBench(dxgpu::Runtime& rt, const BenchGpuArgs& args) : rt_(rt), args_(args) {}

  dxgpu::Expected<double> MmioReadNs() {
    dxgpu::Port& port = rt_.port();
    std::vector<double> ns;
    for (uint32_t i = 0; i < args_.mmio_reads; ++i) {
      const uint64_t t0 = port.Now();
      auto v = port.ReadRegister(0, regs::kId);
      if (!v.ok()) return v.status();
      if (*v != regs::kIdValue)
        return dxgpu::Status{dxgpu::ErrorCode::kInternal, "register ID read back wrong"};
      ns.push_back(static_cast<double>(port.Now() - t0));
    }
    return Median(ns);
  }

  // Posted writes per second; a read at the end proves they all arrived (reads do not pass
  // writes).
  dxgpu::Expected<double> DoorbellsPerSecond() {
    dxgpu::Port& port = rt_.port();
    const uint64_t t0 = port.Now();
    for (uint32_t i = 0; i < args_.doorbells; ++i) {
      dxgpu::Status s = port.WriteRegister(0, regs::kIntrEnable, i & regs::kIntrMask);
      if (!s.ok()) return s;
    }
    auto v = port.ReadRegister(0, regs::kIntrEnable);
    if (!v.ok()) return v.status();
    const double seconds = static_cast<double>(port.Now() - t0) / 1e9;
    if (*v != ((args_.doorbells - 1) & regs::kIntrMask))
      return dxgpu::Status{dxgpu::ErrorCode::kInternal, "the last write is not what reads back"};
    return args_.doorbells / seconds;
  }

  // Bytes per second of synchronous copies from/to pinned memory of `size` bytes.
  dxgpu::Expected<double> CopyBytesPerSecond(bool h2d, uint64_t size) {
    auto host = rt_.MallocHost(size);
    if (!host.ok()) return host.status();
    auto dev = rt_.Malloc(0, size);
    if (!dev.ok()) {
      (void)rt_.FreeHost(*host);
      return dev.status();
    }
    auto* bytes = static_cast<uint8_t*>(*host);
    for (uint64_t i = 0; i < size; i += 4096) bytes[i] = static_cast<uint8_t>(i >> 12);
    const uint64_t reps = std::max<uint64_t>(2, args_.min_bytes / size);
    dxgpu::Status s;
    // One untimed copy first: pages touched, paths warm.
    s = h2d ? rt_.MemcpyHtoD(*dev, *host, size) : rt_.MemcpyDtoH(*host, *dev, size);
    const uint64_t t0 = rt_.port().Now();
    for (uint64_t r = 0; r < reps && s.ok(); ++r)
      s = h2d ? rt_.MemcpyHtoD(*dev, *host, size) : rt_.MemcpyDtoH(*host, *dev, size);
    const uint64_t took = rt_.port().Now() - t0;
    (void)rt_.Free(*dev);
    (void)rt_.FreeHost(*host);
    if (!s.ok()) return s;
    return static_cast<double>(reps * size) * 1e9 / static_cast<double>(took);
  }

 private:
  dxgpu::Runtime& rt_;
  const BenchGpuArgs& args_;
};

void Fill(Cell& c, const dxgpu::Expected<double>& direct, const dxgpu::Expected<double>& dxpu) {
  if (!direct.ok()) c.error = "direct: " + direct.status().ToString();
  if (!dxpu.ok()) c.error += (c.error.empty() ? "" : "; ") + ("dxpu: " + dxpu.status().ToString());
  if (direct.ok()) c.direct = *direct;
  if (dxpu.ok()) c.dxpu = *dxpu;
}

std::string Figure(const Cell& c, double v) {
  if (c.what == "mmio-read") return fmt::format("{:.2f} us", v / 1000);
  if (c.what == "doorbell") return fmt::format("{:.2f} M/s", v / 1e6);
  return fmt::format("{:.2f} GB/s", v / 1e9);
}

std::string SizeText(uint64_t s) {
  if (s == 0) return "";
  if (s >= (1u << 20)) return fmt::format("{} MiB", s >> 20);
  return fmt::format("{} KiB", s >> 10);
}

int RunBenchGpu(const BenchGpuArgs& args) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("dxpu-bench-{}", getpid());
  std::error_code ec;
  fs::create_directories(dir, ec);
  DemoBridgeOptions bo;
  bo.link = args.link;
  bo.profiles = {args.profile};
  bo.dir = dir;
  Result<std::unique_ptr<DemoBridge>> box = DemoBridge::Start(bo);
  if (!box.ok()) {
    std::cerr << "dxpu bench gpu: " << box.error().message << "\n";
    return kExitFailure;
  }
  auto dxpu_port = box.value()->OpenHostPort(1, kBenchHostNode);
  auto direct_port = host::OpenDirectPort({{args.profile}});
  if (!dxpu_port.ok() || !direct_port.ok()) {
    std::cerr << "dxpu bench gpu: "
              << (dxpu_port.ok() ? direct_port.status() : dxpu_port.status()).ToString() << "\n";
    return kExitFailure;
  }
  auto dxpu_rt = dxgpu::Runtime::Open(std::move(*dxpu_port));
  auto direct_rt = dxgpu::Runtime::Open(std::move(*direct_port));
  if (!dxpu_rt.ok() || !direct_rt.ok()) {
    std::cerr << "dxpu bench gpu: "
              << (dxpu_rt.ok() ? direct_rt.status() : dxpu_rt.status()).ToString() << "\n";
    return kExitFailure;
  }
  PortBench direct(**direct_rt, args);
  PortBench dxpu(**dxpu_rt, args);

  std::vector<Cell> cells;
  std::vector<bool> directions;
  if (args.direction != "d2h") directions.push_back(true);
  if (args.direction != "h2d") directions.push_back(false);
  const uint64_t total = 2 + directions.size() * args.sizes.size();
  Progress progress("bench gpu");
  uint64_t done = 0;
  {
    Cell c{"mmio-read", 0, 0, 0, false, {}};
    Fill(c, direct.MmioReadNs(), dxpu.MmioReadNs());
    cells.push_back(c);
    progress.Update(++done, total);
  }
  {
    Cell c{"doorbell", 0, 0, 0, true, {}};
    Fill(c, direct.DoorbellsPerSecond(), dxpu.DoorbellsPerSecond());
    cells.push_back(c);
    progress.Update(++done, total);
  }
  for (bool h2d : directions) {
    for (uint64_t size : args.sizes) {
      Cell c{h2d ? "h2d" : "d2h", size, 0, 0, true, {}};
      Fill(c, direct.CopyBytesPerSecond(h2d, size), dxpu.CopyBytesPerSecond(h2d, size));
      cells.push_back(c);
      progress.Update(++done, total);
    }
  }
  dxpu_rt->reset();
  direct_rt->reset();
  box.value()->Stop();
  fs::remove_all(dir, ec);

  bool failed = false;
  if (args.json) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const Cell& c : cells) {
      nlohmann::ordered_json r{{"what", c.what},
                               {"size", c.size},
                               {"unit", c.what == "mmio-read"  ? "ns"
                                        : c.what == "doorbell" ? "writes/s"
                                                               : "bytes/s"},
                               {"direct", c.direct},
                               {"dxpu", c.dxpu},
                               {"ratio", c.Ratio()}};
      if (!c.error.empty()) r["error"] = c.error;
      failed |= !c.error.empty();
      rows.push_back(r);
    }
    std::cout << nlohmann::ordered_json{{"link", args.link},
                                        {"profile", args.profile},
                                        {"results", rows}}
                     .dump(2)
              << '\n';
  } else {
    std::cout << fmt::format(
        "direct: {} on an ideal local link; dxpu: host proxy, DxFP over {}, "
        "dxpu-bridge (this process)\n",
        args.profile, args.link);
    std::cout << fmt::format("{:<10} {:>8} {:>14} {:>14} {:>8}\n", "what", "size", "direct", "dxpu",
                             "ratio");
    for (const Cell& c : cells) {
      failed |= !c.error.empty();
      std::cout << fmt::format("{:<10} {:>8} {:>14} {:>14} {:>8.3f}{}\n", c.what, SizeText(c.size),
                               Figure(c, c.direct), Figure(c, c.dxpu), c.Ratio(),
                               c.error.empty() ? "" : "  " + c.error);
    }
    std::cout << "ratio: dxpu / direct (for mmio-read, the round trip: higher is slower)\n";
  }
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

std::function<int()> AddBenchGpuCommand(CLI::App& bench, CLI::App** app) {
  auto args = std::make_shared<BenchGpuArgs>();
  CLI::App* cmd = bench.add_subcommand(
      "gpu",
      "A borrowed GPU against a local one, in one run: MMIO read round trip (median), posted "
      "MMIO write (doorbell) rate, and H2D/D2H bandwidth of synchronous copies from pinned "
      "memory by size, each through the direct port (the GPU model on an ideal local link) and "
      "through DxPU (userspace host proxy, DxFP over --link, a dxpu-bridge in this process), "
      "with the ratio dxpu/direct. Both sides run the same GPU model on this machine's CPU.");
  cmd->add_option("--link", args->link, "the DxPU side's link: mem, udp (loopback) or unix")
      ->check(CLI::IsMember({"mem", "udp", "unix"}))
      ->capture_default_str();
  cmd->add_option("--profile", args->profile, "GPU model profile")->capture_default_str();
  cmd->add_option("--size", args->sizes,
                  "copy sizes in bytes, 4 B .. 1 GiB (default 4 KiB .. 64 MiB)")
      ->check(CLI::Range(uint64_t{4}, uint64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--mmio-reads", args->mmio_reads, "register reads to time")
      ->check(CLI::Range(1u, 1'000'000u))
      ->capture_default_str();
  cmd->add_option("--doorbells", args->doorbells, "posted register writes to time")
      ->check(CLI::Range(1u, 10'000'000u))
      ->capture_default_str();
  cmd->add_option("--min-bytes", args->min_bytes, "bytes each bandwidth cell copies at least")
      ->capture_default_str();
  cmd->add_option("--direction", args->direction, "copies to time: h2d, d2h or both")
      ->check(CLI::IsMember({"h2d", "d2h", "both"}))
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "print the results as JSON");
  cmd->footer(
      "Examples:\n"
      "  dxpu bench gpu\n"
      "  dxpu bench gpu --link udp --size 65536 --size 67108864 --json");
  *app = cmd;
  return [args] { return RunBenchGpu(*args); };
}

}  // namespace dxpu::cli
