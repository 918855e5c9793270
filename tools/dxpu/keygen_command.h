// keygen_command.h - `dxpu keygen`: a host's or a bridge's long-term fabric key pair
// (X25519, docs/security.md "Keys").
#ifndef DXPU_TOOLS_DXPU_KEYGEN_COMMAND_H_
#define DXPU_TOOLS_DXPU_KEYGEN_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddKeygenCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_KEYGEN_COMMAND_H_
