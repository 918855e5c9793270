// lspci_command.h - `dxpu lspci`: the PCI devices dxpu.ko attached (its PCI domains, >= 0x10000,
// under /sys/devices/dxpu), as libpci reads them - IDs, class, revision, BARs and their sizes -
// joined with where each lives: the slot, its bridge and that bridge's session, and the BDF
// the bridge presents the device at (/sys/devices/dxpu/slots and bridges).
#ifndef DXPU_TOOLS_DXPU_LSPCI_COMMAND_H_
#define DXPU_TOOLS_DXPU_LSPCI_COMMAND_H_

#include <CLI/CLI.hpp>

#include "command.h"

namespace dxpu::cli {

Command AddLspciCommand(CLI::App& parent);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_LSPCI_COMMAND_H_
