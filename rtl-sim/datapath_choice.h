// datapath_choice.h - the data planes a bridge can run, by name, for every command that starts
// one (dxpu-bridge --datapath, dxpu demo --datapath): "golden", the C++ model
// (golden_datapath.cc) with lib/core framing each host session, and "rtl", the Verilated RTL of
// rtl-sim/ for both: dxpu_datapath translating and checking, a dxpu_dxfp_port per host session
// framing (when built with Verilator). Here in rtl-sim/, above both bridge-fw/ and the RTL it
// names, so that neither includes the other the wrong way: the bridge's library knows only the
// Datapath interface and DataPlane (golden_datapath.h), the programs that start a bridge link
// this choice.
#ifndef DXPU_RTL_SIM_DATAPATH_CHOICE_H_
#define DXPU_RTL_SIM_DATAPATH_CHOICE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridge-fw/golden_datapath.h"

namespace dxpu::bridge {

// Every name DataPlaneNamed() knows, built in or not ("golden", "rtl"): for a CLI's choices.
std::vector<std::string> DatapathNames();

// The data plane called `name`; nullopt with *why set when the name is unknown or that data
// plane is not built into this binary.
std::optional<DataPlane> DataPlaneNamed(std::string_view name, std::string* why);

// One line per data plane for a --datapath option's help.
const char* DatapathHelp();

}  // namespace dxpu::bridge

#endif  // DXPU_RTL_SIM_DATAPATH_CHOICE_H_
