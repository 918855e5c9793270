// kernels.h - the compute engine's kernels and the roofline model that times them. Kernels
// compute for real on the CPU, in device memory (so results can be checked), up to a work
// size; each one's time on the modelled GPU is
//   launch_overhead_ns + ceil(max(flops * 1e9 / peak_fp32_flops, bytes * 1e9 / bandwidth))
// with the profile's Roofline and the flops/bytes of CostOf (docs/dxgpu.md, "Kernels"). TIMED
// computes nothing and takes exactly its ns: no roofline, no launch overhead.
#ifndef DXPU_LIB_GPU_KERNELS_H_
#define DXPU_LIB_GPU_KERNELS_H_

#include <cstdint>

#include "gpu/commands.h"
#include "gpu/device_profile.h"
#include "gpu/sparse_memory.h"

namespace dxpu::gpu {

// Limits: beyond them a kernel fails with KERNEL_TOO_BIG.
inline constexpr uint64_t kMaxVectorElements = uint64_t{1} << 26;  // MEMSET32, AXPY, REDUCE
inline constexpr uint64_t kMaxGemmWork = uint64_t{1} << 27;        // m * n * k
inline constexpr uint64_t kMaxGemmMatrix = uint64_t{1} << 26;      // elements of A, B or C
inline constexpr uint64_t kMaxTimedNs = 60'000'000'000;            // TIMED: 60 s

struct KernelCost {
  double flops = 0;
  double bytes = 0;  // device-memory traffic

  bool operator==(const KernelCost&) const = default;
};

// memset 0 flop, 4n bytes; axpy 2n flop, 12n bytes; gemm 2mnk flop, 4(mk + kn + 2mn) bytes;
// reduce n flop, 4n bytes.
KernelCost CostOf(const Memset32Command& c);
KernelCost CostOf(const AxpyCommand& c);
KernelCost CostOf(const GemmCommand& c);
KernelCost CostOf(const ReduceSumCommand& c);

// A kernel's time on the roofline, in ns (launch overhead included).
uint64_t KernelNs(const Roofline& roofline, const KernelCost& cost);
// TIMED's time: exactly c.ns. A trace's kernel durations are measured execution times, which
// already hold whatever a launch costs on the device: no launch overhead is added.
uint64_t KernelNs(const TimedCommand& c);
// A device-to-device COPY: ceil(2 * size * 1e9 / memory_bandwidth) ns, no launch overhead.
uint64_t DeviceCopyNs(const Roofline& roofline, uint64_t size);

// Checks (work size: KERNEL_TOO_BIG; 4-byte alignment: BAD_ALIGNMENT; ranges inside device
// memory: BAD_ADDRESS, in that order), then computes. On an error nothing is written.
ChannelError RunKernel(SparseMemory& memory, const Memset32Command& c);
// y[i] = a * x[i] + y[i], fp32.
ChannelError RunKernel(SparseMemory& memory, const AxpyCommand& c);
// C = alpha * A * B + beta * C, row-major fp32, each dot product summed in fp32 in index
// order; with beta == 0, C is not read (as BLAS does).
ChannelError RunKernel(SparseMemory& memory, const GemmCommand& c);
// *out = sum of x[i], accumulated in double in index order, then rounded to float.
ChannelError RunKernel(SparseMemory& memory, const ReduceSumCommand& c);
// Computes nothing, reads and writes no memory: only the limit (ns <= kMaxTimedNs, else
// KERNEL_TOO_BIG) is checked.
ChannelError RunKernel(SparseMemory& memory, const TimedCommand& c);

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_KERNELS_H_
