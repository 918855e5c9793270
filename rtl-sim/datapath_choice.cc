// datapath_choice.cc - the data planes by name (datapath_choice.h).
#include "rtl-sim/datapath_choice.h"

#ifdef DXPU_WITH_RTL
#include "rtl-sim/datapath/rtl_datapath.h"
#include "rtl-sim/datapath/rtl_port.h"
#endif

namespace dxpu::bridge {

std::vector<std::string> DatapathNames() { return {"golden", "rtl"}; }

std::optional<DataPlane> DataPlaneNamed(std::string_view name, std::string* why) {
  if (name == "golden") return DataPlane{MakeGoldenDatapath, {}};
  if (name == "rtl") {
#ifdef DXPU_WITH_RTL
    return DataPlane{MakeRtlDatapath, rtl::RtlPortFraming()};
#else
    *why =
        "the RTL data path is not built in (Verilator was missing at build time: tools/bootstrap)";
    return std::nullopt;
#endif
  }
  *why = "no data path named '" + std::string(name) + "' (golden, rtl)";
  return std::nullopt;
}

const char* DatapathHelp() {
  return "the data plane that translates and checks every TLP and frames the hosts' DxFP\n"
         "sessions: golden (the C++ model and lib/core) or rtl (the Verilated RTL of rtl-sim/\n"
         "in the loop, a DxFP port per host session: bit for bit the same decisions and\n"
         "frames, slower: for RTL regression runs)";
}

}  // namespace dxpu::bridge
