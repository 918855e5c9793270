// bridge_under_attack.cc - see bridge_under_attack.h.
#include "bridge_under_attack.h"

#include <spdlog/fmt/fmt.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "crypto/fabric_keys.h"
#include "host/proxy_port.h"

namespace dxpu::test::attack {

namespace fs = std::filesystem;

BridgeUnderAttack::BridgeUnderAttack(BridgeUnderAttackOptions options)
    : options_(std::move(options)) {
  static std::atomic<int> instances{0};
  dir_ = fs::temp_directory_path() /
         fmt::format("dxpu-attack-{}-{}", getpid(), instances.fetch_add(1));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  fabric_port_ = FreePort(SOCK_DGRAM);
  metrics_port_ = FreePort(SOCK_STREAM);
  management_path_ = FreshSocketPath("attack-mgmt");
  const std::string key_base = (dir_ / "bridge").string();
  const auto written = crypto::WriteFabricKeyFiles(key_base, keys_.bridge);
  if (!written.ok()) setup_error_ = written.error().message;
  const auto host = [](uint64_t node, const crypto::KeyPair& k) {
    return fmt::format(R"({{"node": "{:#x}", "key": "{}"}})", node, crypto::KeyHex(k.pub));
  };
  std::string devices;
  for (int i = 1; i <= 2; ++i) {
    devices += fmt::format(R"({}{{"profile": "dxgpu", "box_bdf": "0{}:00.0", "memory": "{}MiB"}})",
                           i == 1 ? "" : ", ", i, kGpuMemory >> 20);
  }
  const std::string config = fmt::format(
      R"({{"node_id": "0xb0c5",
  "links": [{{"type": "udp", "listen": "127.0.0.1:{}"}}],
  "management": {{"unix": "{}", "trusted_keys": ["{}"]}},
  "metrics": {{"listen": "127.0.0.1:{}"}},
  "devices": [{}],
  "limits": {{"link_down": "{}"}},
  "identity": {{"key": "{}.key", "hosts": [{}, {}, {}],
               "hellos_per_second": {}, "hello_burst": {}}}}})",
      fabric_port_, management_path_, management_key_.PublicHex(), metrics_port_, devices,
      options_.link_down, key_base, host(kVictimNode, keys_.victim),
      host(kTenantNode, keys_.tenant), host(kLateNode, keys_.late), options_.hellos_per_second,
      options_.hello_burst);
  process_ = std::make_unique<BridgeProcess>(config);
}

BridgeUnderAttack::~BridgeUnderAttack() {
  process_.reset();
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

std::string BridgeUnderAttack::Start() {
  if (!setup_error_.empty()) return setup_error_;
  if (!process_->Start(options_.args)) return "cannot start dxpu-bridge";
  if (!WaitForPath(management_path_)) return "dxpu-bridge did not come up:\n" + process_->LogTail();
  for (int i = 0; i < 200; ++i) {
    if (!Metrics().empty()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "no metrics from dxpu-bridge:\n" + process_->LogTail();
}

link::LinkAddress BridgeUnderAttack::fabric() const {
  return *link::LinkAddress::FromIp("127.0.0.1", fabric_port_);
}

bridge::ManagementClient BridgeUnderAttack::Manager() const {
  return bridge::ManagementClient(link::LinkAddress::Unix(management_path_), 1000, 3,
                                  management_key_.signer);
}

std::string BridgeUnderAttack::Lend(uint16_t device, uint64_t node) const {
  const bridge::ManagementClient manager = Manager();
  bridge::ManagementReply r = manager.Assign(device, kHostBdf, node);
  if (!r.ok()) return "assign: " + r.Problem();
  for (const host::HostDmaGrant& g : host::HostDmaGrants()) {
    r = manager.Grant(device, g.base, g.base, g.size);
    if (!r.ok()) return "grant: " + r.Problem();
  }
  return "";
}

std::string BridgeUnderAttack::Metrics() const { return HttpGet(metrics_port_, "/metrics"); }

double BridgeUnderAttack::Metric(const std::string& series) const {
  std::istringstream in(Metrics());
  for (std::string line; std::getline(in, line);) {
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 &&
        line[series.size()] == ' ')
      return std::strtod(line.c_str() + series.size() + 1, nullptr);
  }
  return -1;
}

double BridgeUnderAttack::SessionCounter(uint64_t node, const std::string& counter) const {
  return Metric(fmt::format("dxpu_bridge_session_{}{{node=\"{:#x}\"}}", counter, node));
}

double BridgeUnderAttack::HellosRefused(const std::string& reason) const {
  return Metric("dxpu_bridge_hellos_unauthenticated_total{reason=\"" + reason + "\"}");
}

long BridgeUnderAttack::RssKiB() const {
  std::ifstream in(fmt::format("/proc/{}/status", process_->pid()));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

}  // namespace dxpu::test::attack
