// datapath_choice.h - the data planes a bridge can run, by name, for every command that starts
// one (dxpu-bridge --datapath, dxpu demo --datapath): "golden", the C++ model
// (golden_datapath.cc), and "rtl", the Verilated RTL of rtl-sim/ (when built with Verilator).
#ifndef DXPU_BRIDGE_FW_DATAPATH_CHOICE_H_
#define DXPU_BRIDGE_FW_DATAPATH_CHOICE_H_

#include <string>
#include <string_view>
#include <vector>

#include "bridge-fw/golden_datapath.h"

namespace dxpu::bridge {

// Every name DatapathNamed() knows, built in or not ("golden", "rtl"): for a CLI's choices.
std::vector<std::string> DatapathNames();

// The factory of the data plane called `name`; nullptr with *why set when the name is unknown
// or that data plane is not built into this binary.
DatapathFactory DatapathNamed(std::string_view name, std::string* why);

// One line per data plane for a --datapath option's help.
const char* DatapathHelp();

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_DATAPATH_CHOICE_H_
