// pool_command.h - `dxpu pool ...`: a client of the pool manager (dxpu-manager) over its
// REST/JSON API: the pool's status, boxes, GPUs, hosts and allocations; allocate and release.
#ifndef DXPU_TOOLS_DXPU_POOL_COMMAND_H_
#define DXPU_TOOLS_DXPU_POOL_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddPoolCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_POOL_COMMAND_H_
