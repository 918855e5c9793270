// dxpu_port_tests.cc - the runtime's API tests through DxPU: the userspace host proxy, DxFP
// over UDP on loopback, and a real dxpu-bridge process (started once per test process) whose
// GPU is assigned to this host and granted its DMA ranges through the management socket.
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "bridge-fw/management_client.h"
#include "bridge_process.h"
#include "host/proxy_port.h"
#include "link/udp_link.h"
#include "management_keys.h"
#include "runtime_fixture.h"

namespace dxpu::dxgpu::test {
namespace {

// Two hosts, each borrowing one GPU: a test that opens a second runtime while the first is
// open gets the other host (a host has one host proxy, so one session per bridge).
constexpr uint64_t kNodes[2] = {0xd6, 0xd7};

struct SharedBridge {
  std::unique_ptr<dxpu::test::BridgeProcess> process;
  uint16_t port = 0;
  std::string error;
};

// The bridge every test of this process borrows its GPU from; each port is a new session of
// the same host, which keeps its assignment.
SharedBridge& Bridge() {
  static SharedBridge b = [] {
    SharedBridge s;
    s.port = dxpu::test::FreePort(SOCK_DGRAM);
    const std::string mgmt = dxpu::test::FreshSocketPath("dxgpu-test-mgmt");
    const dxpu::test::TestManagementKey key = dxpu::test::MakeTestManagementKey();
    s.process = std::make_unique<dxpu::test::BridgeProcess>(
        R"({"node_id": "0xb2", "links": [{"type": "udp", "listen": "127.0.0.1:)" +
        std::to_string(s.port) + R"("}], "management": {"unix": ")" + mgmt +
        R"(", "trusted_keys": [")" + key.PublicHex() +
        R"("]}, "devices": [{"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "1GiB"},
                        {"profile": "dxgpu", "box_bdf": "02:00.0", "memory": "1GiB"}],
           "limits": {"link_down": "2s"}})");
    if (!s.process->Start() || !dxpu::test::WaitForPath(mgmt)) {
      s.error = "the bridge did not start";
      return s;
    }
    const bridge::ManagementClient manager(link::LinkAddress::Unix(mgmt), 1000, 3, key.signer);
    for (uint16_t dev = 0; dev < 2; ++dev) {
      bridge::ManagementReply r = manager.Assign(dev, 0x0100, kNodes[dev]);
      if (!r.ok()) s.error = "assign: " + r.Problem();
      for (const host::HostDmaGrant& g : host::HostDmaGrants()) {
        r = manager.Grant(dev, g.base, g.base, g.size);
        if (!r.ok()) s.error = "grant: " + r.Problem();
      }
    }
    return s;
  }();
  return b;
}

Expected<std::unique_ptr<Port>> OpenThroughBridge(const host::RealTimeOptions& realtime) {
  SharedBridge& b = Bridge();
  if (!b.error.empty()) return Status{ErrorCode::kUnavailable, b.error};
  static int opened = 0;
  host::ProxyPortOptions o;
  o.node_id = kNodes[opened++ % 2];
  dxfp_session_config_defaults(&o.session);
  o.session.link_down_ns = 2'000'000'000;  // busy sanitizer builds on two cores
  // An MMIO read (the runtime polling STATUS) goes to the box behind the completions of the
  // GPU's DMA reads of host memory, up to a 4 MiB copy's worth: under a sanitizer on two busy
  // cores that took over the default second once in CI (a read answered UR after the timeout).
  o.request_timeout_ns = 10'000'000'000;
  o.realtime = realtime;
  host::BridgeAttachment a;
  a.name = "udp:127.0.0.1:" + std::to_string(b.port);
  a.link = link::UdpLink::Open("127.0.0.1", 0).link;
  a.peer = *link::LinkAddress::FromIp("127.0.0.1", b.port);
  a.host_bdfs = {0x0100};
  o.bridges.push_back(std::move(a));
  return host::OpenProxyPort(std::move(o));
}

PortFactory DxpuPortFactory() {
  return {.name = "dxpu", .open = [] { return OpenThroughBridge({}); }, .options = {}};
}

// The host proxy's threads busy-polling (realtime_host.h): the waiting caller spins on the link
// and receives, the worker keeps off it meanwhile and spins when no caller waits.
PortFactory DxpuBusyPollPortFactory() {
  return {.name = "dxpu_busy_poll",
          .open = [] { return OpenThroughBridge({.busy_poll_ns = 200'000}); },
          .options = {}};
}

INSTANTIATE_TEST_SUITE_P(Dxpu, RuntimeTest, ::testing::Values(DxpuPortFactory()), PortFactoryName);
INSTANTIATE_TEST_SUITE_P(DxpuBusyPoll, RuntimeTest, ::testing::Values(DxpuBusyPollPortFactory()),
                         PortFactoryName);

}  // namespace
}  // namespace dxpu::dxgpu::test
