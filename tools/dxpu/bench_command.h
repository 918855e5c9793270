// bench_command.h - `dxpu bench fabric`: DxFP session goodput against the raw link moving
// the same bytes, over the in-memory link and UDP loopback, with and without loss.
#ifndef DXPU_TOOLS_DXPU_BENCH_COMMAND_H_
#define DXPU_TOOLS_DXPU_BENCH_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddBenchCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_BENCH_COMMAND_H_
