// demo.cc - `dxpu demo`: the scenario's inputs, the runs, and the command.
#include "demo.h"

#include <core/tlp_codec.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <array>
#include <iostream>
#include <memory>

#include "demo_report.h"
#include "numbers.h"

namespace dxpu::cli {
namespace {

// (b) The GPU's copy engine reads 1 MiB of host memory from an address that is not
// MRRS-aligned, so the first and last requests are partial.
constexpr uint64_t kDmaReadAddr = 0x1'2345'6010ull;
constexpr uint64_t kDmaReadBytes = 1ull << 20;
constexpr uint32_t kDmaMrrs = 512;
constexpr uint32_t kDmaMps = 256;
constexpr uint32_t kRcb = DXPU_TLP_MIN_RCB;
constexpr std::array<uint32_t, 2> kSweepMrrs = {512, 4096};
constexpr std::array<uint32_t, 3> kSweepMps = {128, 256, 512};

// (c) The host writes 256 KiB into the GPU's BAR1 aperture (a 64-bit BAR, as the host
// assigned it) with posted writes.
constexpr uint64_t kWriteAddr = 0x5'0000'0000ull;
constexpr uint64_t kWriteBytes = 256ull << 10;
constexpr uint32_t kWriteMps = 256;

void CheckTransfer(const TransferRow& row, std::string_view what, Checks& checks) {
  const TransferStats& s = row.stats;
  checks.Expect(s.tlp_failures == 0, fmt::format("{}: every TLP encodes and decodes ({} failures)",
                                                 what, s.tlp_failures));
  checks.Expect(s.data_errors == 0, fmt::format("{}: all {} bytes arrive intact ({} wrong)", what,
                                                row.nbytes, s.data_errors));
  checks.Expect(s.payload_bytes >= row.nbytes, fmt::format("{}: payload covers the data", what));
  double e = s.Efficiency();
  checks.Expect(e > 0.0 && e < 1.0, fmt::format("{}: efficiency {} in (0,1)", what, e));
}

TransferRow DmaRead(uint32_t mrrs, uint32_t mps, const MmioScenario& s, Checks& checks) {
  TransferRow row{kDmaReadAddr, kDmaReadBytes, mrrs, mps, kRcb, {}};
  DmaReadConfig config{kDmaReadAddr, kDmaReadBytes, mrrs, mps, kRcb, s.virtual_gpu_id, s.host_id};
  std::string what = fmt::format("DMA read MRRS {} MPS {}", mrrs, mps);
  Progress progress(what);
  Result<TransferStats> stats = SimulateDmaRead(config, progress);
  if (checks.Expect(stats.ok(), what + ": split helpers accept the configuration")) {
    row.stats = stats.value();
    CheckTransfer(row, what, checks);
  }
  return row;
}

TransferRow PostedWriteStream(const MmioScenario& s, Checks& checks) {
  TransferRow row{kWriteAddr, kWriteBytes, 0, kWriteMps, 0, {}};
  PostedWriteConfig config{kWriteAddr, kWriteBytes, kWriteMps, s.host_id};
  std::string what = fmt::format("posted writes MPS {}", kWriteMps);
  Progress progress(what);
  Result<TransferStats> stats = SimulatePostedWrite(config, progress);
  if (checks.Expect(stats.ok(), what + ": split helper accepts the configuration")) {
    row.stats = stats.value();
    CheckTransfer(row, what, checks);
  }
  return row;
}

struct DemoOptions {
  bool json = false;
};

int Run(const DemoOptions& opts) {
  DemoResult result = RunDemo();
  if (opts.json) {
    std::cout << DemoJson(result).dump(2) << '\n';
  } else {
    std::cout << DemoText(result);
  }
  if (!result.ok()) {
    std::cerr << "dxpu demo: " << result.checks.failed() << " internal check(s) failed\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

DemoResult RunDemo() {
  DemoResult r;
  r.mmio_scenario = DefaultMmioScenario();
  spdlog::info("demo: MMIO read");
  r.mmio = RunMmioRead(r.mmio_scenario, r.checks);
  spdlog::info("demo: DMA read");
  r.dma_read = DmaRead(kDmaMrrs, kDmaMps, r.mmio_scenario, r.checks);
  for (uint32_t mrrs : kSweepMrrs) {
    for (uint32_t mps : kSweepMps) {
      r.dma_read_sweep.push_back(DmaRead(mrrs, mps, r.mmio_scenario, r.checks));
    }
  }
  spdlog::info("demo: posted writes");
  r.posted_write = PostedWriteStream(r.mmio_scenario, r.checks);
  spdlog::info("demo: {} checks passed, {} failed", r.checks.passed(), r.checks.failed());
  return r;
}

Command AddDemoCommand(CLI::App& parent) {
  auto opts = std::make_shared<DemoOptions>();
  CLI::App* cmd = parent.add_subcommand("demo", "Run the DxPU demo (what `make demo` runs)");
  cmd->footer(
      "Foundation stage, until the GPU pool over DxFP lands: (a) one MMIO read of a remote\n"
      "GPU register, hop by hop: the host proxy's MRd, the bridge's tag/ID/address\n"
      "translation, the GPU's CplD and the translation back; (b) a 1 MiB GPU DMA read of\n"
      "host memory split at MRRS, MPS and RCB, and a sweep of MPS x MRRS; (c) a 256 KiB\n"
      "posted write stream. Every TLP is encoded and decoded with lib/core and the data is\n"
      "rebuilt from the decoded TLPs; TLPs, header bytes and wire efficiency are counted.\n"
      "Exit code 1 if any internal check fails.");
  cmd->add_flag("--json", opts->json, "print the same results as one JSON object");
  return {cmd, [opts] { return Run(*opts); }};
}

}  // namespace dxpu::cli
