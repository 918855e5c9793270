// proxy_backend.cc - attach through the userspace host proxy (proxy_backend.h).
#include "manager/proxy_backend.h"

#include <iterator>
#include <optional>
#include <utility>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "bridge-fw/bridge_config.h"
#include "crypto/fabric_keys.h"
#include "host/proxy_port.h"
#include "link/udp_link.h"
#include "manager/pool_json.h"

namespace dxpu::manager {

namespace {

PoolError Unavailable(std::string name, std::string message) {
  return PoolError{ErrorKind::kUnavailable, std::move(name), std::move(message)};
}

}  // namespace

std::optional<std::string> ProxyBackend::Alive(const BridgePort& bp, uint16_t bdf) {
  if (!bp.port || !bp.bdfs.contains(bdf)) return std::nullopt;
  const auto index = static_cast<size_t>(std::distance(bp.bdfs.begin(), bp.bdfs.find(bdf)));
  if (index >= bp.port->device_count() || !bp.port->Health(index).ok()) return std::nullopt;
  const dxgpu::PortDeviceInfo& info = bp.port->device_info(index);
  return fmt::format("{} ({}, {:04x}:{:04x}, {} MiB)", info.location, info.profile, info.vendor_id,
                     info.device_id, info.memory_bytes >> 20);
}

PoolResult<Done> ProxyBackend::Reopen(const std::string& fabric, const std::string& bridge_key,
                                      BridgePort& bp, uint64_t node_id,
                                      std::set<uint16_t> bdfs) const {
  bp.port.reset();  // the bridge sees the new session's HELLO as this host reconnecting
  bp.bdfs.clear();
  if (bdfs.empty()) return Done{};
  if (!fabric.starts_with("udp:")) {
    return PoolError{ErrorKind::kBadRequest, "bad-fabric",
                     fmt::format("the userspace agent reaches bridges over UDP (udp:IP:PORT), "
                                 "not '{}'",
                                 fabric)};
  }
  std::optional<link::LinkAddress> peer = bridge::ParseIpPort(fabric.substr(4));
  if (!peer) {
    return PoolError{ErrorKind::kBadRequest, "bad-fabric",
                     fmt::format("'{}' is not udp:IP:PORT", fabric)};
  }
  auto link = link::UdpLink::Open("0.0.0.0", 0);
  if (!link.ok()) return Unavailable("link", "udp: " + link.error.message());
  host::ProxyPortOptions po;
  po.node_id = node_id;
  dxfp_session_config_defaults(&po.session);
  po.session.link_down_ns = options_.link_down_ns;
  po.connect_timeout_ns = options_.connect_timeout_ns;
  host::BridgeAttachment a;
  a.name = fabric;
  a.link = std::move(link.link);
  a.peer = *peer;
  a.host_bdfs.assign(bdfs.begin(), bdfs.end());
  if (!bridge_key.empty()) {
    crypto::KeyResult<crypto::Key> key = crypto::ParseFabricPublicKey(bridge_key);
    if (!key.ok()) return PoolError{ErrorKind::kBadRequest, "bad-bridge-key", key.error().message};
    if (!options_.key) {
      return PoolError{
          ErrorKind::kBadRequest, "no-fabric-key",
          fmt::format("{} authenticates its hosts; start the agent with --fabric-key", fabric)};
    }
    a.public_key = key.value();
    po.key = options_.key;
  }
  po.bridges.push_back(std::move(a));
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port = host::OpenProxyPort(std::move(po));
  if (!port.ok()) return Unavailable("attach-failed", port.status().ToString());
  bp.port = std::move(port).value();
  bp.bdfs = std::move(bdfs);
  bp.node_id = node_id;
  return Done{};
}

PoolResult<std::string> ProxyBackend::Attach(const AttachRequest& r) {
  BridgePort& bp = bridges_[r.fabric];
  if (std::optional<std::string> line = Alive(bp, r.host_bdf); line && bp.node_id == r.node_id)
    return *line;
  std::set<uint16_t> want = bp.bdfs;
  want.insert(r.host_bdf);
  bp.bridge_key = r.bridge_key;  // the manager's latest word on the bridge's key
  PoolResult<Done> opened = Reopen(r.fabric, r.bridge_key, bp, r.node_id, want);
  if (!opened.ok()) {
    // Keep what the host had on that bridge, if it still comes up.
    want.erase(r.host_bdf);
    if (!want.empty() && !Reopen(r.fabric, r.bridge_key, bp, r.node_id, want).ok())
      spdlog::warn("agent: {}: the other GPUs of {} did not come back either", r.gpu, r.fabric);
    return opened.error();
  }
  std::optional<std::string> line = Alive(bp, r.host_bdf);
  if (!line) return Unavailable("attach-failed", fmt::format("{} did not come up", r.gpu));
  spdlog::info("agent: {} attached at {}: {}", r.gpu, BdfText(r.host_bdf), *line);
  return *line;
}

PoolResult<Done> ProxyBackend::Detach(const AttachRequest& r) {
  auto it = bridges_.find(r.fabric);
  if (it == bridges_.end() || !it->second.bdfs.contains(r.host_bdf)) return Done{};
  std::set<uint16_t> want = it->second.bdfs;
  want.erase(r.host_bdf);
  const uint64_t node = it->second.node_id;
  PoolResult<Done> reopened = Reopen(r.fabric, it->second.bridge_key, it->second, node, want);
  spdlog::info("agent: {} detached from {}", r.gpu, BdfText(r.host_bdf));
  if (!reopened.ok()) {
    // The GPU is gone from this host either way; the others of that bridge could not be
    // opened again (the next attach retries them).
    spdlog::warn("agent: after detaching {}: {}", r.gpu, reopened.error().message);
  }
  if (want.empty()) bridges_.erase(it);
  return Done{};
}

}  // namespace dxpu::manager
