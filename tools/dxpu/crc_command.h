// crc_command.h - `dxpu crc32c`: the CRC32C that protects every DxFP frame.
#ifndef DXPU_TOOLS_DXPU_CRC_COMMAND_H_
#define DXPU_TOOLS_DXPU_CRC_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddCrcCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_CRC_COMMAND_H_
