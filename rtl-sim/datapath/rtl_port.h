// rtl_port.h - one host session's DxFP framing as the Verilated RTL (rtl/dxpu_dxfp_port.sv)
// behind lib/fabric's DataFraming: what `dxpu-bridge --datapath=rtl` runs for each host once its
// handshake is done (docs/rtl.md, "the port in the bridge"). The firmware side of the hardware:
// frames go in as beats and come out of it, TLPs go in header beside payload and come out in
// order; the port's credit refusal (s_tlp_no_credit) is the session's NO_CREDIT. Time is the
// port's `now` input: the model is clocked until it settles at each call, so the hardware runs
// infinitely fast against the time the caller gives.
#ifndef DXPU_RTL_SIM_DATAPATH_RTL_PORT_H_
#define DXPU_RTL_SIM_DATAPATH_RTL_PORT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "fabric/data_framing.h"

namespace dxpu::rtl {

// The sizes of the Verilated bridge port (rtl_dxfp_port_bridge in rtl-sim/CMakeLists.txt).
struct RtlPortModel {
  unsigned data_width = 256;
  uint32_t window = 256;  // the replay window: the session's replay_window must be this
  uint32_t max_frame = 9216;
};
RtlPortModel BridgePortModel();

class RtlPort : public fabric::DataFraming {
 public:
  // A port started from the handshake's state; null with *error set when the session does not
  // fit the model (its replay window, frame size).
  static std::unique_ptr<RtlPort> Create(const fabric::FramingStart& start,
                                         std::string* error = nullptr);

  // Clock cycles simulated so far.
  virtual uint64_t cycles() const = 0;
  // Counter i of the port (PortCounter, port_counters.h).
  virtual uint64_t counter(unsigned i) const = 0;
  // TLPs delivered that lib/core could not decode (0 unless the RTL is wrong).
  virtual uint64_t bad_tlps() const = 0;
  // Writes an FST waveform of everything from now on.
  virtual bool Trace(const std::string& path) = 0;
};

// The factory a bridge's Endpoints take (fabric::EndpointOptions::framing).
fabric::DataFramingFactory RtlPortFraming();

}  // namespace dxpu::rtl

#endif  // DXPU_RTL_SIM_DATAPATH_RTL_PORT_H_
