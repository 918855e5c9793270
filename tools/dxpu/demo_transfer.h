// demo_transfer.h - bulk transfers as the PCIe TLPs that carry them: a DMA read split at
// Max Read Request Size and answered with completions split at the Read Completion Boundary
// and Max Payload Size, and a posted write stream split at Max Payload Size. Every TLP is
// encoded and decoded with the lib/core codec, and the receiver rebuilds the data from the
// decoded TLPs alone, so the counts below are of TLPs that really made the round trip.
#ifndef DXPU_TOOLS_DXPU_DEMO_TRANSFER_H_
#define DXPU_TOOLS_DXPU_DEMO_TRANSFER_H_

#include <cstdint>

#include "progress.h"
#include "result.h"

namespace dxpu::cli {

struct TransferStats {
  uint64_t requests = 0;       // MRd (read) or MWr (write) TLPs
  uint64_t completions = 0;    // CplD TLPs
  uint64_t payload_bytes = 0;  // payload on the wire: whole DWs
  uint64_t header_bytes = 0;   // TLP headers (3DW or 4DW), both directions
  uint64_t tlp_failures = 0;   // TLPs that failed to encode or decode, or decoded differently
  uint64_t data_errors = 0;    // bytes of the transfer that did not arrive intact

  // payload / (payload + headers): TLP bytes only, no link or fabric framing.
  double Efficiency() const;
};

struct DmaReadConfig {
  uint64_t addr = 0;  // host memory the GPU reads
  uint64_t nbytes = 0;
  uint32_t mrrs = 512;  // Max Read Request Size
  uint32_t mps = 256;   // Max Payload Size of the completer
  uint32_t rcb = 64;    // Read Completion Boundary
  uint16_t requester_id = 0;
  uint16_t completer_id = 0;
};

struct PostedWriteConfig {
  uint64_t addr = 0;  // where the writes land
  uint64_t nbytes = 0;
  uint32_t mps = 256;
  uint16_t requester_id = 0;
};

// Errors: the split helpers' (bad-param) when the configuration is invalid.
Result<TransferStats> SimulateDmaRead(const DmaReadConfig& config, Progress& progress);
Result<TransferStats> SimulatePostedWrite(const PostedWriteConfig& config, Progress& progress);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_DEMO_TRANSFER_H_
