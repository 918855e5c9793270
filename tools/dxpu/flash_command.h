// flash_command.h - `dxpu flash ...`: bridge firmware images and flash (docs/firmware.md):
// keygen, sign, inspect, init, and push and status over bridges' management sockets.
#ifndef DXPU_TOOLS_DXPU_FLASH_COMMAND_H_
#define DXPU_TOOLS_DXPU_FLASH_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddFlashCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_FLASH_COMMAND_H_
