// sim_command.h - `dxpu sim fabric`: runs the DxFP fabric in the deterministic simulator over
// many seeds with a fault mix, checks the invariants after each, and reports.
#ifndef DXPU_TOOLS_DXPU_SIM_COMMAND_H_
#define DXPU_TOOLS_DXPU_SIM_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddSimCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_SIM_COMMAND_H_
