// run_command.h - `dxpu run`: the demo's workloads on the GPUs of one port, each checked against
// the CPU: the kernel port (GPUs dxgpu.ko drives, through /dev/dxgpuN) or the direct port (GPU
// models in this process).
#ifndef DXPU_TOOLS_DXPU_RUN_COMMAND_H_
#define DXPU_TOOLS_DXPU_RUN_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddRunCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_RUN_COMMAND_H_
