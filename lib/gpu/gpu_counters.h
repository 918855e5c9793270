// gpu_counters.h - what the GPU model counts: TLPs in and out by kind, DMA traffic, channel
// work, interrupts, and every TLP it refused or dropped (so nothing is lost silently).
#ifndef DXPU_LIB_GPU_GPU_COUNTERS_H_
#define DXPU_LIB_GPU_GPU_COUNTERS_H_

#include <cstdint>

namespace dxpu::gpu {

struct GpuCounters {
  uint64_t tlps_in = 0;      // every TLP Receive was given
  uint64_t tlps_out = 0;     // every TLP Poll's caller took
  uint64_t mmio_reads = 0;   // memory reads a BAR claimed (registers or memory window)
  uint64_t mmio_writes = 0;  // memory writes a BAR claimed
  uint64_t cfg_reads = 0;
  uint64_t cfg_writes = 0;
  uint64_t dma_read_requests = 0;   // memory reads sent
  uint64_t dma_read_bytes = 0;      // bytes their completions brought
  uint64_t dma_write_requests = 0;  // memory writes sent (copies, semaphores; not MSI-X)
  uint64_t dma_write_bytes = 0;     // enabled bytes they carried
  uint64_t doorbells = 0;           // GP_PUT writes
  uint64_t gpfifo_entries = 0;      // fetched
  uint64_t commands = 0;            // decoded and started
  uint64_t kernels = 0;
  uint64_t copies = 0;  // finished
  uint64_t semaphores = 0;
  uint64_t interrupts_sent = 0;  // MSI-X messages sent
  uint64_t completion_timeouts = 0;
  uint64_t unexpected_completions = 0;  // no read in flight with that tag: dropped
  uint64_t malformed = 0;       // refused: fails dxpu_tlp_validate, poisoned, or a completion that
                                // disagrees with its read
  uint64_t ur_sent = 0;         // Unsupported Request completions sent
  uint64_t unmapped_mmio = 0;   // BAR0 DWs at unmapped offsets (read 0, writes ignored)
  uint64_t dropped_writes = 0;  // memory writes claimed by no BAR or past device memory
  uint64_t unsupported = 0;     // TLPs of kinds the function does not take (messages, type 1
                                // configuration): dropped, or UR when non-posted
  uint64_t channel_errors = 0;  // times the channel stopped with an error
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_GPU_COUNTERS_H_
