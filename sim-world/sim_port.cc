// sim_port.cc - libdxgpu ports in the deterministic simulator (sim_port.h).
#include "sim-world/sim_port.h"

#include <fmt/format.h>

#include "gpu/device_profile.h"
#include "host/host_port.h"
#include "host/proxy_port.h"
#include "sim-world/sim_host.h"

namespace dxpu::host {

using dxgpu::ErrorCode;
using dxgpu::Status;

namespace {

constexpr uint64_t kSimNode = 0x5111;

sim::PathConfig Path(uint64_t latency, uint64_t bandwidth) {
  sim::PathConfig p;
  p.latency = latency;
  p.bandwidth_bps = bandwidth;
  return p;
}

uint16_t HostBdf(size_t i) { return static_cast<uint16_t>((i + 1) << 8); }

// A native GPU's options: the defaults, with device i's activity log when there is one.
gpu::GpuOptions NativeGpuOptions(const SimPortOptions& options, size_t i) {
  gpu::GpuOptions o;
  if (options.gpu_activity) {
    o.activity = [sink = options.gpu_activity, i](const gpu::CommandActivity& a) { sink(i, a); };
  }
  return o;
}

}  // namespace

dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenSimulatedPort(const SimPortOptions& options) {
  std::vector<gpu::DeviceProfile> profiles;
  for (const std::string& name : options.profiles) {
    std::optional<gpu::DeviceProfile> p = gpu::FindProfile(name);
    if (!p) return Status{ErrorCode::kInvalidArgument, "no GPU profile named " + name};
    profiles.push_back(*p);
  }
  HostProxyOptions po;
  po.node_id = kSimNode;
  auto host = std::make_unique<SimHost>(po, options.seed);
  const SimFabric& f = options.fabric;
  std::string error;
  std::vector<DeviceId> devices;

  if (!options.through_dxpu) {
    const sim::PathConfig pcie = Path(f.pcie_latency_ns, f.pcie_bandwidth_bps);
    for (size_t i = 0; i < profiles.size(); ++i) {
      std::optional<DeviceId> d = host->AddDirectDevice(profiles[i], HostBdf(i), pcie, &error,
                                                        NativeGpuOptions(options, i));
      if (!d) return Status{ErrorCode::kInvalidArgument, options.profiles[i] + ": " + error};
      devices.push_back(*d);
    }
  } else {
    dxfp_session_config session;
    dxfp_session_config_defaults(&session);
    session.max_frame = f.max_frame;
    bridge::BridgeBoxConfig bc;
    bc.node_id = 0xb0c5;
    bc.epoch = 1;
    bc.session = session;
    // Peer to peer crosses the box's PCIe as it would a native host's: two modelled links.
    bc.box_links = {f.pcie_latency_ns, f.pcie_bandwidth_bps};
    bc.gpu_activity = options.gpu_activity;  // box device i is the port's device i
    for (size_t i = 0; i < profiles.size(); ++i) bc.devices.push_back({profiles[i], HostBdf(i), 0});
    std::unique_ptr<bridge::BridgeBox> box = bridge::BridgeBox::Create(bc, &error);
    if (box == nullptr) return Status{ErrorCode::kInvalidArgument, "bridge: " + error};
    for (size_t i = 0; i < profiles.size(); ++i) {
      const auto d = static_cast<bridge::DeviceIndex>(i);
      if (box->Assign(d, kSimNode, HostBdf(i)) != bridge::ManageResult::kOk)
        return Status{ErrorCode::kInternal, "the simulated bridge refused an assignment"};
      for (const HostDmaGrant& g : HostDmaGrants()) {
        if (box->GrantDma(d, {g.base, g.base, g.size}) != bridge::ManageResult::kOk)
          return Status{ErrorCode::kInternal, "the simulated bridge refused a DMA grant"};
      }
    }
    dxfp_session_config hs = session;
    hs.session_id = 1;
    hs.epoch = 3;
    hs.initial_seq = 1000;
    const sim::PathConfig fabric = Path(2 * f.pcie_latency_ns + f.added_latency_ns,
                                        std::min(f.fabric_bandwidth_bps, f.pcie_bandwidth_bps));
    std::optional<PathId> path = host->AddBox(std::move(box), hs, fabric, &error);
    if (!path) return Status{ErrorCode::kInvalidArgument, error};
    for (size_t i = 0; i < profiles.size(); ++i)
      devices.push_back(host->proxy().AddDevice(*path, HostBdf(i)));
    const PathId p = *path;
    if (!host->WaitUntil([&](const HostProxy& proxy) { return proxy.path(p).up; },
                         host->Now() + 1'000'000'000))
      return Status{ErrorCode::kUnavailable, "the simulated session did not establish"};
  }
  AttachOptions ao;
  dxgpu::Expected<std::vector<PortDevice>> attached = AttachAll(*host, devices, ao);
  if (!attached.ok()) return attached.status();
  const std::string kind = options.through_dxpu ? "dxpu-sim" : "native-sim";
  return std::unique_ptr<dxgpu::Port>(
      new HostPort(kind, std::move(host), std::move(attached).value()));
}

}  // namespace dxpu::host
