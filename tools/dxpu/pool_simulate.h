// pool_simulate.h - `dxpu pool simulate`: a public GPU cluster trace (Alibaba's
// cluster-trace-gpu-v2023, "openb") replayed in virtual time, in this process, no manager
// needed: GPUs fixed inside servers under the FGD paper's baseline policies, and GPUs in DxPU
// pools lent by the pool manager's allocation code (docs/pool-simulate.md).
#ifndef DXPU_TOOLS_DXPU_POOL_SIMULATE_H_
#define DXPU_TOOLS_DXPU_POOL_SIMULATE_H_

#include <CLI/CLI.hpp>
#include <functional>

namespace dxpu::cli {

// Adds `simulate` under `pool`; the returned function runs it (once parsed).
std::function<int()> AddPoolSimulateCommand(CLI::App& pool, CLI::App** app);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_POOL_SIMULATE_H_
