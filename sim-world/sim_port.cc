// sim_port.cc - libdxgpu ports in the deterministic simulator (sim_port.h).
#include "sim-world/sim_port.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <span>

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

// The placement as box sizes (sim_port.h): every GPU in one box when none is given.
dxgpu::Expected<std::vector<size_t>> BoxSizes(const SimPortOptions& options, size_t gpus) {
  if (options.gpus_per_box.empty()) return std::vector<size_t>{gpus};
  if (Status s = CheckPlacement(options.gpus_per_box, gpus); !s.ok()) return s;
  return options.gpus_per_box;
}

// Box k, holding the port's GPUs [first, first + count): each at its host BDF in the port (host
// BDFs are the host's, so they differ across boxes too), assigned to the simulated host and
// granted its DMA windows.
dxgpu::Expected<std::unique_ptr<bridge::BridgeBox>> MakeBox(
    const SimPortOptions& options, std::span<const gpu::DeviceProfile> profiles, size_t k,
    size_t first, size_t count, const dxfp_session_config& session) {
  const SimFabric& f = options.fabric;
  bridge::BridgeBoxConfig bc;
  bc.node_id = 0xb0c5 + k;
  bc.epoch = 1;
  bc.session = session;
  // Peer to peer crosses the box's PCIe as it would a native host's: two modelled links.
  bc.box_links = {f.pcie_latency_ns, f.pcie_bandwidth_bps};
  if (options.gpu_activity) {
    // Box device j is the port's device first + j.
    bc.gpu_activity = [sink = options.gpu_activity, first](
                          size_t j, const gpu::CommandActivity& a) { sink(first + j, a); };
  }
  for (size_t i = first; i < first + count; ++i) bc.devices.push_back({profiles[i], HostBdf(i), 0});
  std::string error;
  std::unique_ptr<bridge::BridgeBox> box = bridge::BridgeBox::Create(bc, &error);
  if (box == nullptr) return Status{ErrorCode::kInvalidArgument, "bridge: " + error};
  for (size_t j = 0; j < count; ++j) {
    const auto d = static_cast<bridge::DeviceIndex>(j);
    if (box->Assign(d, kSimNode, HostBdf(first + j)) != bridge::ManageResult::kOk)
      return Status{ErrorCode::kInternal, "the simulated bridge refused an assignment"};
    // The whole BAR range is among them: a GPU in another box is reached through the host.
    for (const HostDmaGrant& g : HostDmaGrants()) {
      if (box->GrantDma(d, {g.base, g.base, g.size}) != bridge::ManageResult::kOk)
        return Status{ErrorCode::kInternal, "the simulated bridge refused a DMA grant"};
    }
  }
  return box;
}

// The GPUs in bridge boxes as `sizes` places them, each box behind its own session and fabric
// path; appends the port's devices in order and waits until every session is up.
Status AddBoxes(SimHost& host, const SimPortOptions& options,
                std::span<const gpu::DeviceProfile> profiles, std::span<const size_t> sizes,
                std::vector<DeviceId>* devices) {
  const SimFabric& f = options.fabric;
  dxfp_session_config session;
  dxfp_session_config_defaults(&session);
  session.max_frame = f.max_frame;
  const sim::PathConfig fabric = Path(2 * f.pcie_latency_ns + f.added_latency_ns,
                                      std::min(f.fabric_bandwidth_bps, f.pcie_bandwidth_bps));
  std::string error;
  std::vector<PathId> paths;
  size_t first = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    dxgpu::Expected<std::unique_ptr<bridge::BridgeBox>> box =
        MakeBox(options, profiles, k, first, sizes[k], session);
    if (!box.ok()) return box.status();
    dxfp_session_config hs = session;
    hs.session_id = static_cast<uint32_t>(1 + k);
    hs.epoch = 3;
    hs.initial_seq = 1000;
    std::optional<PathId> path = host.AddBox(std::move(box).value(), hs, fabric, &error);
    if (!path) return Status{ErrorCode::kInvalidArgument, error};
    for (size_t i = first; i < first + sizes[k]; ++i)
      devices->push_back(host.proxy().AddDevice(*path, HostBdf(i)));
    paths.push_back(*path);
    first += sizes[k];
  }
  const auto all_up = [&](const HostProxy& proxy) {
    return std::all_of(paths.begin(), paths.end(), [&](PathId p) { return proxy.path(p).up; });
  };
  if (!host.WaitUntil(all_up, host.Now() + 1'000'000'000))
    return Status{ErrorCode::kUnavailable, "the simulated session did not establish"};
  return {};
}

}  // namespace

Status CheckPlacement(std::span<const size_t> gpus_per_box, size_t gpus) {
  if (gpus_per_box.empty()) return {};
  size_t placed = 0;
  for (size_t k = 0; k < gpus_per_box.size(); ++k) {
    if (gpus_per_box[k] == 0)
      return Status{
          ErrorCode::kInvalidArgument,
          fmt::format("gpus_per_box [{}]: box {} holds no GPU; every box holds one or more",
                      fmt::join(gpus_per_box, ", "), k)};
    placed += gpus_per_box[k];
  }
  if (placed != gpus)
    return Status{ErrorCode::kInvalidArgument,
                  fmt::format("gpus_per_box [{}] places {} GPUs, but the port has {} (one per "
                              "profile)",
                              fmt::join(gpus_per_box, ", "), placed, gpus)};
  return {};
}

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
    dxgpu::Expected<std::vector<size_t>> sizes = BoxSizes(options, profiles.size());
    if (!sizes.ok()) return sizes.status();
    if (Status s = AddBoxes(*host, options, profiles, sizes.value(), &devices); !s.ok()) return s;
  }
  AttachOptions ao;
  dxgpu::Expected<std::vector<PortDevice>> attached = AttachAll(*host, devices, ao);
  if (!attached.ok()) return attached.status();
  const std::string kind = options.through_dxpu ? "dxpu-sim" : "native-sim";
  return std::unique_ptr<dxgpu::Port>(
      new HostPort(kind, std::move(host), std::move(attached).value()));
}

}  // namespace dxpu::host
