// rtl_command.h - `dxpu rtl regress`: builds the RTL testbenches, runs every RTL test (ctest
// label rtl) over N seeds, keeps the FST waveforms of the failing runs only, merges the
// coverage with verilator_coverage, and ends with 'N passed, M failed' (docs/rtl.md).
#ifndef DXPU_TOOLS_DXPU_RTL_COMMAND_H_
#define DXPU_TOOLS_DXPU_RTL_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddRtlCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_RTL_COMMAND_H_
