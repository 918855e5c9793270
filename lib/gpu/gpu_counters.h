// gpu_counters.h - what the GPU model counts: TLPs in and out by kind, DMA traffic, channel
// work, interrupts, and every TLP it refused or dropped (so nothing is lost silently).
#ifndef DXPU_LIB_GPU_GPU_COUNTERS_H_
#define DXPU_LIB_GPU_GPU_COUNTERS_H_

#include <cstdint>

#include "pcie/function.h"

namespace dxpu::gpu {

// The PCIe endpoint's counters (pcie::FunctionCounters: TLPs in and out, malformed, UR sent,
// unsupported, unexpected completions, completion timeouts, dropped writes, DMA reads and
// writes sent, interrupts sent), then the GPU's own.
struct GpuCounters : pcie::FunctionCounters {
  uint64_t mmio_reads = 0;   // memory reads a BAR claimed (registers or memory window)
  uint64_t mmio_writes = 0;  // memory writes a BAR claimed
  uint64_t cfg_reads = 0;
  uint64_t cfg_writes = 0;
  uint64_t dma_read_bytes = 0;   // bytes the completions of its DMA reads brought
  uint64_t dma_write_bytes = 0;  // enabled bytes its DMA writes carried
  uint64_t doorbells = 0;        // GP_PUT writes
  uint64_t gpfifo_entries = 0;   // fetched
  uint64_t commands = 0;         // decoded and started
  uint64_t kernels = 0;
  uint64_t copies = 0;  // finished
  uint64_t semaphores = 0;
  uint64_t unmapped_mmio = 0;   // BAR0 DWs at unmapped offsets (read 0, writes ignored)
  uint64_t channel_errors = 0;  // times the channel stopped with an error
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_GPU_COUNTERS_H_
