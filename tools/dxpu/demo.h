// demo.h - `dxpu demo`, the main job (what `make demo` runs): a GPU box with model GPUs, a host
// that borrows some of them through DxPU, AI-shaped workloads run natively and through DxPU with
// every result checked against the CPU, and what disaggregation cost, measured here and
// simulated with hardware-like fabric figures (docs/demo.md).
#ifndef DXPU_TOOLS_DXPU_DEMO_H_
#define DXPU_TOOLS_DXPU_DEMO_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddDemoCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_DEMO_H_
