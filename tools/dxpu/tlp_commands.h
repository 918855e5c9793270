// tlp_commands.h - `dxpu tlp decode` and `dxpu tlp encode`.
#ifndef DXPU_TOOLS_DXPU_TLP_COMMANDS_H_
#define DXPU_TOOLS_DXPU_TLP_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <vector>

#include "command.h"

namespace dxpu::cli {

// Adds the `tlp` command group to parent; returns its runnable subcommands.
std::vector<Command> AddTlpCommands(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_TLP_COMMANDS_H_
