// datapath_choice.cc - the data planes by name (datapath_choice.h).
#include "bridge-fw/datapath_choice.h"

#ifdef DXPU_WITH_RTL
#include "rtl-sim/datapath/rtl_datapath.h"
#endif

namespace dxpu::bridge {

std::vector<std::string> DatapathNames() { return {"golden", "rtl"}; }

DatapathFactory DatapathNamed(std::string_view name, std::string* why) {
  if (name == "golden") return MakeGoldenDatapath;
  if (name == "rtl") {
#ifdef DXPU_WITH_RTL
    return MakeRtlDatapath;
#else
    *why =
        "the RTL data path is not built in (Verilator was missing at build time: tools/bootstrap)";
    return nullptr;
#endif
  }
  *why = "no data path named '" + std::string(name) + "' (golden, rtl)";
  return nullptr;
}

const char* DatapathHelp() {
  return "the data plane that translates and checks every TLP: golden (the C++ model) or\n"
         "rtl (the Verilated RTL of rtl-sim/ in the loop, bit for bit the same decisions,\n"
         "slower: for RTL regression runs)";
}

}  // namespace dxpu::bridge
