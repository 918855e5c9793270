// sim_port.h - libdxgpu ports in the deterministic simulator: the same host proxy, GPU models
// and bridge as in real time, on a virtual clock, with the links modelled (latency, bandwidth)
// instead of run. Host software costs no time here, so what a workload's time grows by from
// the native port to the dxpu port is the fabric alone: the overhead hardware would see.
//   native  each GPU on a modelled local PCIe link (TLPs, pcie latency and bandwidth);
//   dxpu    the GPUs in bridge boxes (BridgeBox), all in one unless SimPortOptions::gpus_per_box
//           places them over several; each box behind its own DxFP session on its own modelled
//           fabric path: one-way latency = 2 x pcie latency (host and box sides) + added
//           latency, bandwidth = min(fabric, pcie). Peer traffic between two GPUs of one box
//           stays behind the box's switch; between boxes it goes up the source's fabric path to
//           the host proxy, which routes it as a root complex does, and down the target's.
// Single-threaded: the caller's Wait runs the simulated world.
#ifndef DXPU_SIM_WORLD_SIM_PORT_H_
#define DXPU_SIM_WORLD_SIM_PORT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dxgpu/port.h"
#include "gpu/activity.h"

namespace dxpu::host {

struct SimFabric {
  uint64_t pcie_latency_ns = 250;                 // one way, a local Gen4 x16 link
  uint64_t pcie_bandwidth_bps = 200'000'000'000;  // what Gen4 x16 carries of TLPs (25 GB/s)
  uint64_t added_latency_ns = 1000;               // one way: proxies, switches and cables
  uint64_t fabric_bandwidth_bps = 100'000'000'000;
  uint32_t max_frame = 9000;  // DxFP frames on a jumbo-frame fabric
};

struct SimPortOptions {
  bool through_dxpu = false;  // false: native
  std::vector<std::string> profiles = {"dxgpu"};
  SimFabric fabric;
  uint64_t seed = 1;
  // Through DxPU, how many GPUs each bridge box holds: the GPUs in port order fill box 0, then
  // box 1, and so on. Empty: every GPU in one box. Its sum must be the number of profiles and
  // no entry zero (else kInvalidArgument). A native port ignores it: each of its GPUs has a PCIe
  // link of its own, so the same options may open both ports.
  std::vector<size_t> gpus_per_box;
  // Every GPU's activity log (gpu/activity.h, docs/dxgpu.md "The activity log"), with the
  // GPU's index in the port: each kernel and COPY as it finishes, times on the channel's clock
  // (the simulator's, as Port::Now). Called from inside Port::Wait. Null: off.
  std::function<void(size_t device, const gpu::CommandActivity&)> gpu_activity = nullptr;
};

dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenSimulatedPort(const SimPortOptions& options);

// Whether `gpus_per_box` places `gpus` GPUs (sim_port.h's rule, what OpenSimulatedPort checks):
// kInvalidArgument saying why not; empty is every GPU in one box, always fine.
dxgpu::Status CheckPlacement(std::span<const size_t> gpus_per_box, size_t gpus);

}  // namespace dxpu::host

#endif  // DXPU_SIM_WORLD_SIM_PORT_H_
