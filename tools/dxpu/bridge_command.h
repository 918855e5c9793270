// bridge_command.h - `dxpu bridge ...`: management requests to a dxpu-bridge (status,
// assign, release, grant, revoke) over its management socket.
#ifndef DXPU_TOOLS_DXPU_BRIDGE_COMMAND_H_
#define DXPU_TOOLS_DXPU_BRIDGE_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddBridgeCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_BRIDGE_COMMAND_H_
