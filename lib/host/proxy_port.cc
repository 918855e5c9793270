// proxy_port.cc - GPUs borrowed from bridges over DxFP (proxy_port.h).
#include "host/proxy_port.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "crypto/fabric_keys.h"
#include "fabric/link_driver.h"
#include "host/host_port.h"
#include "host/realtime_host.h"

namespace dxpu::host {

using dxgpu::ErrorCode;
using dxgpu::Status;

std::vector<HostDmaGrant> HostDmaGrants() {
  const HostProxyOptions defaults;
  return {{kDmaRangeBase, kDmaRangeSize},
          {defaults.msi_base, defaults.msi_size},
          {BarAllocator::kLow64, BarAllocator::kHigh64 - BarAllocator::kLow64}};
}

dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenProxyPort(ProxyPortOptions options) {
  std::string error;
  HostProxyOptions po;
  po.node_id = options.node_id;
  po.request_timeout_ns = options.request_timeout_ns;
  std::unique_ptr<RealTimeHost> host = RealTimeHost::Create(po, &error, options.realtime);
  if (host == nullptr) return Status{ErrorCode::kInternal, error};

  dxfp_session_config session = options.session;
  if (session.max_frame == 0) dxfp_session_config_defaults(&session);
  std::vector<DeviceId> devices;
  std::vector<PathId> paths;
  std::random_device rd;
  for (BridgeAttachment& b : options.bridges) {
    dxfp_session_config sc = session;
    // Random: a session ID and epoch name a session without being guessable.
    sc.session_id = rd() | 1U;
    sc.epoch = rd() | 1U;
    sc.initial_seq = rd();
    if (b.public_key && !options.key)
      return Status{ErrorCode::kInvalidArgument, b.name + ": a bridge key but no host key"};
    if (b.public_key) crypto::SetHostAuth(&sc, *options.key, *b.public_key);
    std::optional<PathId> path =
        host->AddBridge(b.name, std::move(b.link), std::move(b.peer), sc, &error);
    if (!path) return Status{ErrorCode::kInvalidArgument, b.name + ": " + error};
    paths.push_back(*path);
    for (uint16_t bdf : b.host_bdfs)
      devices.push_back(host->proxy_for_setup().AddDevice(*path, bdf));
  }
  host->Start();

  // Every session established (or gone down) within the bound.
  const uint64_t deadline = host->Now() + options.connect_timeout_ns;
  host->WaitUntil(
      [&](const HostProxy& proxy) {
        return std::ranges::all_of(
            paths, [&](PathId p) { return proxy.path(p).up || proxy.path(p).down; });
      },
      deadline);
  std::string failed;
  host->Run([&](HostProxy& proxy, uint64_t) {
    for (PathId p : paths) {
      const PathState& s = proxy.path(p);
      if (!s.up)
        failed += fmt::format("{}{}: {}", failed.empty() ? "" : "; ", s.name,
                              s.down ? "session down (" + s.down_reason + ")"
                                     : "no answer to HELLO within the connect timeout");
    }
  });
  if (!failed.empty()) return Status{ErrorCode::kUnavailable, "cannot reach " + failed};

  AttachOptions ao;
  dxgpu::Expected<std::vector<PortDevice>> attached = AttachAll(*host, devices, ao);
  if (!attached.ok()) return attached.status();
  return std::unique_ptr<dxgpu::Port>(
      new HostPort("dxpu", std::move(host), std::move(attached).value()));
}

}  // namespace dxpu::host
