// pki_command.h - `dxpu pki init DIR` and `dxpu pki issue DIR --cn NAME`: the pool's own CA and
// the certificates of its control plane (docs/manager.md "TLS and roles").
#ifndef DXPU_TOOLS_DXPU_PKI_COMMAND_H_
#define DXPU_TOOLS_DXPU_PKI_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddPkiCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_PKI_COMMAND_H_
