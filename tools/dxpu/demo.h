// demo.h - `dxpu demo`, what `make demo` runs. Until the GPU pool over DxFP exists, the
// demo walks the data path of one MMIO read and bulk DMA with the protocol core alone.
#ifndef DXPU_TOOLS_DXPU_DEMO_H_
#define DXPU_TOOLS_DXPU_DEMO_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "checks.h"
#include "command.h"
#include "demo_mmio.h"
#include "demo_transfer.h"

namespace dxpu::cli {

// One bulk transfer and what it took on the wire. mrrs and rcb are 0 for writes.
struct TransferRow {
  uint64_t addr = 0;
  uint64_t nbytes = 0;
  uint32_t mrrs = 0;
  uint32_t mps = 0;
  uint32_t rcb = 0;
  TransferStats stats;
};

struct DemoResult {
  MmioScenario mmio_scenario{};
  MmioResult mmio;
  TransferRow dma_read;
  std::vector<TransferRow> dma_read_sweep;
  TransferRow posted_write;
  Checks checks;

  bool ok() const { return checks.failed() == 0; }
};

// Runs every part of the demo; failures are recorded in the result's checks.
DemoResult RunDemo();

Command AddDemoCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_DEMO_H_
