// victim_host.cc - see victim_host.h.
#include "victim_host.h"

#include <chrono>
#include <vector>

#include "host/host_port.h"
#include "host/proxy_port.h"
#include "link/udp_link.h"

namespace dxpu::test::attack {

dxgpu::Expected<std::unique_ptr<dxgpu::Port>> VictimHost::OpenPort(uint64_t node,
                                                                   const crypto::KeyPair& key,
                                                                   const crypto::Key& bridge_key,
                                                                   uint16_t port,
                                                                   uint16_t* local_port) {
  host::ProxyPortOptions o;
  o.node_id = node;
  o.key = key;
  dxfp_session_config_defaults(&o.session);
  o.session.link_down_ns = 2'000'000'000;  // two busy cores: a descheduled process is not a loss
  o.request_timeout_ns = 10'000'000'000;
  host::BridgeAttachment a;
  a.name = "udp:127.0.0.1:" + std::to_string(port);
  auto l = link::UdpLink::Open("127.0.0.1", 0);
  if (!l.ok()) return dxgpu::Status{dxgpu::ErrorCode::kUnavailable, l.error.message()};
  if (local_port != nullptr) *local_port = l.link->local_address().ip().port;
  a.link = std::move(l.link);
  a.peer = *link::LinkAddress::FromIp("127.0.0.1", port);
  a.host_bdfs = {0x0100};
  a.public_key = bridge_key;
  o.bridges.push_back(std::move(a));
  return host::OpenProxyPort(std::move(o));
}

dxgpu::Expected<std::unique_ptr<VictimHost>> VictimHost::Open(uint64_t node,
                                                              const crypto::KeyPair& key,
                                                              const crypto::Key& bridge_key,
                                                              uint16_t port) {
  std::unique_ptr<VictimHost> v(new VictimHost());
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> opened =
      OpenPort(node, key, bridge_key, port, &v->local_port_);
  if (!opened.ok()) return opened.status();
  dxgpu::Expected<std::unique_ptr<dxgpu::Runtime>> rt =
      dxgpu::Runtime::Open(std::move(opened).value());
  if (!rt.ok()) return rt.status();
  v->runtime_ = std::move(rt).value();
  return v;
}

VictimHost::~VictimHost() { StopWorkload(); }

void VictimHost::StartWorkload() {
  stop_ = false;
  worker_ = std::thread([this] { Work(); });
}

bool VictimHost::WaitRounds(uint64_t more, int timeout_ms) const {
  const uint64_t target = rounds_.load() + more;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (rounds_.load() < target) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

WorkloadReport VictimHost::StopWorkload() {
  stop_ = true;
  if (worker_.joinable()) worker_.join();
  std::lock_guard<std::mutex> lock(mu_);
  report_.rounds = rounds_.load();
  return report_;
}

void VictimHost::Work() {
  constexpr uint64_t kN = 4096, kBytes = kN * sizeof(float);
  dxgpu::Runtime& rt = *runtime_;
  const auto fail = [this](const std::string& what, const dxgpu::Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    report_.error = what + ": " + s.message();
  };
  auto x = rt.Malloc(0, kBytes);
  auto y = rt.Malloc(0, kBytes);
  auto hx = rt.MallocHost(kBytes);
  auto hy = rt.MallocHost(kBytes);
  auto stream = rt.CreateStream(0);
  if (!x.ok() || !y.ok() || !hx.ok() || !hy.ok() || !stream.ok())
    return fail("setup", dxgpu::Status{dxgpu::ErrorCode::kOutOfMemory, "buffers"});
  auto* in = static_cast<float*>(*hx);
  auto* out = static_cast<float*>(*hy);
  for (uint64_t round = 1; !stop_; ++round) {
    for (uint64_t i = 0; i < kN; ++i) in[i] = static_cast<float>((round * 7 + i) % 4099);
    dxgpu::Status s = rt.MemcpyHtoDAsync(*stream, *x, in, kBytes);
    if (s.ok()) s = rt.LaunchMemset32(*stream, *y, 0, kN);
    if (s.ok()) s = rt.LaunchAxpy(*stream, kN, 3.0f, *x, *y);
    if (s.ok()) s = rt.MemcpyDtoHAsync(*stream, out, *y, kBytes);
    if (s.ok()) s = rt.SynchronizeStream(*stream);
    if (!s.ok()) return fail("round " + std::to_string(round), s);
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < kN; ++i) wrong += out[i] != 3.0f * in[i] ? 1 : 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      report_.wrong += wrong;
    }
    rounds_.fetch_add(1);
  }
}

HostSide VictimHost::Side() {
  HostSide side;
  auto* port = dynamic_cast<host::HostPort*>(&runtime_->port());
  if (port == nullptr) return side;
  port->driver().Run([&](host::HostProxy& proxy, uint64_t) {
    side.path = proxy.path(0);
    side.session = proxy.core(0).session.counters;
  });
  return side;
}

}  // namespace dxpu::test::attack
