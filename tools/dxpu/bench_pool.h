// bench_pool.h - `dxpu bench pool`: the pool manager at scale (issue 34; docs/manager.md
// "Scale"). The manager's real core (PoolManager) over a real store builds a pool of boxes of 8
// GPUs and registered hosts, then allocates until a share of the GPUs is held, churns at that
// share (releases and allocations), probes every box once, reopens the pool from the store and
// measures the manager's heap per GPU. Each operation is timed: its rate, p50 and p99. The
// bridges are real BridgeBox firmware objects and the agents models of hosts, all in this
// process (a process per node does not fit a small machine): no network latency is included.
#ifndef DXPU_TOOLS_DXPU_BENCH_POOL_H_
#define DXPU_TOOLS_DXPU_BENCH_POOL_H_

#include <CLI/CLI.hpp>
#include <functional>

namespace dxpu::cli {

// Adds `pool` under `bench`; the returned function runs it (once parsed).
std::function<int()> AddBenchPoolCommand(CLI::App& bench, CLI::App** app);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_BENCH_POOL_H_
