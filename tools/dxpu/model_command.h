// model_command.h - `dxpu model`: the performance model (docs/perf-model.md). Predicts a
// workload's time natively and through DxPU, with the breakdown of the added time, from a
// PyTorch profiler trace or from summary counts; sweeps latency and bandwidth and writes the
// overhead curve as SVG, CSV and JSON.
#ifndef DXPU_TOOLS_DXPU_MODEL_COMMAND_H_
#define DXPU_TOOLS_DXPU_MODEL_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddModelCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_MODEL_COMMAND_H_
