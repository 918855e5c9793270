// rtl_datapath.h - the bridge's data plane as the Verilated RTL (rtl/dxpu_datapath.sv) behind
// the same interface as the C++ golden model (bridge-fw/datapath.h): the firmware side of the
// hardware. Control calls become register writes and commands (docs/rtl.md, register map);
// the checks the hardware leaves to firmware (a window overlapping another, a full DMA table)
// read the hardware's tables back through the registers. Each TLP is streamed in as header
// beside payload, clocked through, and its decision read from the output's first beat; the
// payload beats that come out are compared with the ones that went in.
#ifndef DXPU_RTL_SIM_DATAPATH_RTL_DATAPATH_H_
#define DXPU_RTL_SIM_DATAPATH_RTL_DATAPATH_H_

#include <cstdint>
#include <memory>
#include <string>

#include "bridge-fw/datapath.h"
#include "bridge-fw/golden_datapath.h"

namespace dxpu::bridge {

// The sizes the Verilated model was built with (its PARAMS register).
struct RtlDatapathParams {
  uint16_t devices = 0;
  uint16_t hosts = 0;
  uint16_t tags = 0;
  uint16_t dma_windows = 0;
};

class RtlDatapath : public Datapath {
 public:
  // The model with `data_width`-bit beats (64 or 256) configured as `config` says; null with
  // *error set when the configuration is invalid or larger than the model's tables.
  static std::unique_ptr<RtlDatapath> Create(const GoldenDatapathConfig& config,
                                             unsigned data_width = 64,
                                             std::string* error = nullptr);

  virtual RtlDatapathParams params() const = 0;
  // Clock cycles simulated so far.
  virtual uint64_t cycles() const = 0;
  // Output beats whose payload differed from what went in (0 unless the RTL is wrong), and
  // output headers lib/core could not decode.
  virtual uint64_t payload_mismatches() const = 0;
  virtual uint64_t bad_headers() const = 0;
  // Writes an FST waveform of everything from now on (debugging a decision).
  virtual bool Trace(const std::string& path) = 0;
};

// A DatapathFactory (golden_datapath.h): the 256-bit model (a PCIe Gen4 x16 data path's width;
// a quarter of the 64-bit model's beats for the same payload), what `dxpu-bridge --datapath=rtl`
// and `dxpu demo --datapath rtl` run.
std::unique_ptr<Datapath> MakeRtlDatapath(const GoldenDatapathConfig& config, std::string* error);

}  // namespace dxpu::bridge

#endif  // DXPU_RTL_SIM_DATAPATH_RTL_DATAPATH_H_
