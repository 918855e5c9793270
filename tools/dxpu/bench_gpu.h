// bench_gpu.h - `dxpu bench gpu`: what a borrowed GPU costs against a local one, measured in
// one run: MMIO read round trip, posted MMIO write (doorbell) rate, and H2D/D2H bandwidth by
// size, each through the direct port (the native baseline) and through DxPU (the userspace
// host proxy, DxFP over the chosen link, a dxpu-bridge in this process), with the ratio.
#ifndef DXPU_TOOLS_DXPU_BENCH_GPU_H_
#define DXPU_TOOLS_DXPU_BENCH_GPU_H_

#include <CLI/CLI.hpp>
#include <functional>

namespace dxpu::cli {

// Adds `gpu` under `bench`; the returned function runs it (once parsed).
std::function<int()> AddBenchGpuCommand(CLI::App& bench, CLI::App** app);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_BENCH_GPU_H_
