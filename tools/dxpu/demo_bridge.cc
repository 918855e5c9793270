// demo_bridge.cc - the GPU box of `dxpu demo` (demo_bridge.h).
#include "demo_bridge.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <spdlog/fmt/fmt.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "bridge-fw/management_client.h"
#include "gpu/device_profile.h"
#include "link/memory_link.h"
#include "link/udp_link.h"
#include "link/unique_fd.h"
#include "link/unix_dgram_link.h"

namespace dxpu::cli {
namespace {

// A UDP port nothing uses right now on loopback (bound and released).
uint16_t FreeUdpPort() {
  link::UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  if (!fd.valid() || bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    return 0;
  return ntohs(sa.sin_port);
}

}  // namespace

Result<std::unique_ptr<DemoBridge>> DemoBridge::Start(const DemoBridgeOptions& options) {
  std::unique_ptr<DemoBridge> b(new DemoBridge());
  b->options_ = options;
  bridge::BridgeConfig config;
  config.node_id = 0xb0c5;
  config.limits.link_down_ns = options.link_down_ns;
  config.limits.completion_timeout_ns = options.completion_timeout_ns;
  for (size_t i = 0; i < options.profiles.size(); ++i) {
    std::optional<gpu::DeviceProfile> p = gpu::FindProfile(options.profiles[i]);
    if (!p) return Error{"bad-profile", "no GPU profile named " + options.profiles[i]};
    config.devices.push_back({*p, static_cast<uint16_t>((i + 1) << 8), options.memory_bytes});
  }
  for (bridge::DeviceConfig d : options.devices) {
    d.box_bdf = static_cast<uint16_t>((config.devices.size() + 1) << 8);
    config.devices.push_back(std::move(d));
  }
  b->management_path_ = (options.dir / "bridge.mgmt").string();
  config.management.address = link::LinkAddress::Unix(b->management_path_);
  // Signed management (docs/protocol.md 15.8): a key made now unless the caller brings one.
  b->signer_ = options.signer;
  if (!b->signer_) {
    b->signer_ = std::make_shared<bridge::ManagementSigner>(firmware::GenerateKeyPair().secret_key,
                                                            bridge::WallClockEpoch());
  }
  config.management.trusted_keys.push_back(b->signer_->public_key());

  bridge::DaemonEmbedding embedding;
  embedding.handle_signals = false;
  embedding.plane = options.plane;
  embedding.busy_poll_ns = options.busy_poll_ns;
  if (options.link == "udp") {
    const uint16_t port = FreeUdpPort();
    if (port == 0) return Error{"socket", "no free UDP port on loopback"};
    bridge::LinkConfig lc;
    lc.type = bridge::LinkType::kUdp;
    lc.listen = *link::LinkAddress::FromIp("127.0.0.1", port);
    config.links.push_back(lc);
    b->host_peer_ = lc.listen;
    b->where_ = fmt::format("udp 127.0.0.1:{}", port);
    b->fabric_ = fmt::format("udp:127.0.0.1:{}", port);
  } else if (options.link == "unix") {
    const std::string bridge_sock = (options.dir / "bridge.dxfp").string();
    b->host_socket_ = (options.dir / "host.dxfp").string();
    bridge::LinkConfig lc;
    lc.type = bridge::LinkType::kUnix;
    lc.path = bridge_sock;
    lc.peer = b->host_socket_;
    lc.mac = link::MacAddress{0x02, 0, 0, 0, 0xb0, 0xc5};
    config.links.push_back(lc);
    // Ethernet in datagrams: frames go to the bridge's MAC, through its socket.
    b->bridge_socket_ = bridge_sock;
    b->host_peer_ = link::LinkAddress::Mac(*lc.mac);
    b->where_ = "unix " + bridge_sock;
  } else if (options.link == "mem") {
    link::MemoryLink::PairResult pair = link::MemoryLink::Pair(4096);
    if (!pair.ok()) return Error{"link", "in-memory link: " + pair.error.message()};
    embedding.links.push_back(std::move(pair.a));
    b->host_end_ = std::move(pair.b);
    b->where_ = "mem";
  } else {
    return Error{"bad-link", "--link must be udp, unix or mem, not " + options.link};
  }

  std::string error;
  b->daemon_ = bridge::BridgeDaemon::Create(config, &error, std::move(embedding));
  if (b->daemon_ == nullptr) return Error{"bridge", error};
  b->thread_ = std::thread([d = b->daemon_.get()] {
    pthread_setname_np(pthread_self(), "dxpu-bridge");  // what top -H and perf show
    d->Run();
  });
  return b;
}

DemoBridge::~DemoBridge() {
  Stop();
  if (!host_socket_.empty()) unlink(host_socket_.c_str());
}

void DemoBridge::Stop() {
  if (!thread_.joinable()) return;
  daemon_->Stop();
  thread_.join();
}

dxgpu::Expected<std::unique_ptr<dxgpu::Port>> DemoBridge::OpenHostPort(
    size_t n, uint64_t node, const host::RealTimeOptions& realtime) {
  Result<host::BridgeAttachment> lent = Lend(n, node);
  if (!lent.ok()) return dxgpu::Status{dxgpu::ErrorCode::kUnavailable, lent.error().message};
  host::ProxyPortOptions po;
  po.node_id = node;
  dxfp_session_config_defaults(&po.session);
  po.session.link_down_ns = options_.link_down_ns;
  // The host waits for a read at least as long as the bridge waits for its device.
  po.request_timeout_ns = std::max(po.request_timeout_ns, options_.completion_timeout_ns);
  po.realtime = realtime;
  po.bridges.push_back(std::move(lent.value()));
  return host::OpenProxyPort(std::move(po));
}

Result<host::BridgeAttachment> DemoBridge::Lend(size_t n, uint64_t node) {
  const size_t held = options_.profiles.size() + options_.devices.size();
  if (n > held) return Error{"bad-count", fmt::format("the box has {} devices, not {}", held, n)};
  const bridge::ManagementClient manager(link::LinkAddress::Unix(management_path_), 1000, 3,
                                         signer_);
  host::BridgeAttachment a;
  for (size_t i = 0; i < n; ++i) {
    const auto device = static_cast<uint16_t>(i);
    const auto bdf = static_cast<uint16_t>((i + 1) << 8);
    bridge::ManagementReply r = manager.Assign(device, bdf, node);
    if (!r.ok()) return Error{"assign", fmt::format("device {}: {}", i, r.Problem())};
    for (const host::HostDmaGrant& g : host::HostDmaGrants()) {
      r = manager.Grant(device, g.base, g.base, g.size);
      if (!r.ok()) return Error{"grant", fmt::format("device {}: {}", i, r.Problem())};
    }
    a.host_bdfs.push_back(bdf);
  }
  a.name = where_;
  a.peer = host_peer_;
  if (options_.link == "udp") {
    auto l = link::UdpLink::Open("127.0.0.1", 0);
    if (!l.ok()) return Error{"link", "udp: " + l.error.message()};
    a.link = std::move(l.link);
  } else if (options_.link == "unix") {
    link::UnixDgramLink::Options o;
    o.local_path = host_socket_;
    o.remote_path = bridge_socket_;
    o.mac = link::MacAddress{0x02, 0, 0, 0, 0x40, 0x57};
    unlink(host_socket_.c_str());
    auto l = link::UnixDgramLink::Open(o);
    if (!l.ok()) return Error{"link", "unix: " + l.error.message()};
    a.link = std::move(l.link);
  } else {
    if (host_end_ == nullptr) return Error{"link", "the in-memory link is already lent"};
    a.link = std::move(host_end_);
  }
  return a;
}

}  // namespace dxpu::cli
