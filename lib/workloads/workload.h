// workload.h - the AI-shaped workloads `dxpu demo` runs natively and through DxPU: each one
// drives devices [0, n) of a libdxgpu Runtime, checks every result against a CPU reference
// computed in this process from the same seeded inputs, and reports the port time of its timed
// part and the runtime's Stats over it (README.md in this folder describes each workload).
//
//   WorkloadResult r = RunWorkload("decode-loop", *rt, 1, Scale::kDemo, 42);
//   if (!r.ok) std::cerr << r.error;
//
// The model's kernels are MEMSET32, AXPY, GEMM and REDUCE_SUM (docs/dxgpu.md): there is no
// elementwise nonlinearity, so the "networks" here are linear; their shapes, launches, copies
// and synchronisations are what matters to the transport.
#ifndef DXPU_LIB_WORKLOADS_WORKLOAD_H_
#define DXPU_LIB_WORKLOADS_WORKLOAD_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dxgpu/runtime.h"
#include "dxgpu/stats.h"

namespace dxpu::workloads {

enum class Scale {
  kTest,  // tiny: unit tests and CI (well under a second)
  kDemo,  // what the demo runs (seconds on the direct port)
};

struct WorkloadResult {
  std::string name;          // "mlp-train", "decode-loop", "data-loading"
  bool ok = false;           // ran, and every check passed
  std::string error;         // what failed: a runtime Status, or which check, where, by how much
  uint64_t elapsed_ns = 0;   // port time of the timed part (after set-up and warm-up)
  uint32_t iterations = 0;   // steps, tokens or batches completed in the timed part
  double max_abs_error = 0;  // largest |device - CPU| over every value checked
  dxgpu::Stats stats;        // the runtime's stats over the timed part
  std::string summary;       // one line on what was computed ("loss 21.3 -> 4.1 in 10 steps")
};

struct WorkloadInfo {
  std::string name;
  std::string description;
};

// The workloads, in the order the demo shows them.
std::vector<WorkloadInfo> ListWorkloads();

// Runs workload `name` on devices [0, devices) of `rt` (devices: 1 or more, at most
// rt.device_count()). Everything it allocates (device and pinned memory, streams) is freed
// before it returns, on every path. progress(done, total) is called after each iteration
// when set. Never throws for a runtime error or a wrong result: ok is false and error says why.
WorkloadResult RunWorkload(std::string_view name, dxgpu::Runtime& rt, size_t devices, Scale scale,
                           uint64_t seed,
                           const std::function<void(uint32_t, uint32_t)>& progress = {});

}  // namespace dxpu::workloads

#endif  // DXPU_LIB_WORKLOADS_WORKLOAD_H_
