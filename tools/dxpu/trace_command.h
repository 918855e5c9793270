// trace_command.h - `dxpu trace`: traces from the model GPU's own runs (docs/perf-model.md,
// "Traces"). `record` runs a workload on the simulator's native model GPUs with the trace
// recorder on and writes the Kineto Chrome trace `dxpu model` reads; `list` names the
// workloads.
#ifndef DXPU_TOOLS_DXPU_TRACE_COMMAND_H_
#define DXPU_TOOLS_DXPU_TRACE_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddTraceCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_TRACE_COMMAND_H_
