// demo_mmio.h - one MMIO read of a remote GPU's register, hop by hop: the host proxy's MRd,
// the bridge's ID/tag/address translation, the GPU's CplD and the translation back. Each
// hop decodes the TLP it receives and encodes the one it sends with the lib/core codec.
#ifndef DXPU_TOOLS_DXPU_DEMO_MMIO_H_
#define DXPU_TOOLS_DXPU_DEMO_MMIO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "checks.h"
#include "hex.h"

namespace dxpu::cli {

// The scenario's inputs.
struct MmioScenario {
  uint16_t host_id;         // the host's root port: requester of the read
  uint16_t virtual_gpu_id;  // the GPU as the host sees it
  uint16_t bridge_id;       // the bridge's requester ID inside the GPU box
  uint16_t gpu_id;          // the GPU's own ID inside the box
  uint64_t host_bar0;       // BAR0 as the host assigned it
  uint64_t device_bar0;     // BAR0 as the GPU box assigned it
  uint32_t offset;          // register offset in BAR0
  uint16_t host_tag;        // tag the host proxy uses
  uint16_t bridge_tag;      // tag the bridge allocates for the forwarded read
  uint32_t register_value;  // what the GPU's register holds
};

// What the demo runs.
MmioScenario DefaultMmioScenario();

struct MmioHop {
  std::string name;   // stable id: "host-mrd", "bridge-mrd", "gpu-cpld", "bridge-cpld"
  std::string where;  // the link the TLP travels
  std::vector<std::string> changes;    // what this hop rewrote, if anything
  std::vector<std::string> notes;      // how this hop computed fields, if it did
  Bytes wire;                          // the encoded TLP
  std::string summary;                 // dxpu_tlp_format of it
  std::optional<uint32_t> fabric_crc;  // CRC32C, for TLPs that cross the DxFP fabric
};

struct MmioResult {
  std::vector<MmioHop> hops;
  std::optional<uint32_t> value;  // the value the host's read returned
};

// Runs the hops; every step's success is a check in checks. Stops at the first hop that
// cannot continue.
MmioResult RunMmioRead(const MmioScenario& s, Checks& checks);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_DEMO_MMIO_H_
