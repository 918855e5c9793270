// demo_bridge.h - the GPU box of `dxpu demo`: the dxpu-bridge daemon's own code (BridgeDaemon)
// running in a thread of this process with model GPUs, reached over UDP on loopback, AF_UNIX
// datagrams (as QEMU speaks them) or an in-memory link, and driven as an operator would drive
// it: assignments and DMA grants through its real management socket.
#ifndef DXPU_TOOLS_DXPU_DEMO_BRIDGE_H_
#define DXPU_TOOLS_DXPU_DEMO_BRIDGE_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bridge-fw/bridge_daemon.h"
#include "bridge-fw/management_auth.h"
#include "host/proxy_port.h"
#include "result.h"

namespace dxpu::cli {

struct DemoBridgeOptions {
  std::string link = "udp";  // udp | unix | mem
  std::vector<std::string> profiles;
  // Functions of other kinds (virtio), after the GPUs; their box BDFs are set here.
  std::vector<bridge::DeviceConfig> devices;
  uint64_t memory_bytes = 0;  // per GPU; 0: the profile's
  std::filesystem::path dir;  // where the sockets go
  uint64_t link_down_ns = 1'000'000'000;
  uint64_t completion_timeout_ns = 50'000'000;  // the bridge's, for a host's requests
  // The bridge's data plane (rtl-sim/datapath_choice.h); default: the golden model.
  bridge::DataPlane plane;
  // Busy polling in the bridge's loop (DaemonEmbedding::busy_poll_ns); 0: it sleeps.
  uint64_t busy_poll_ns = 0;
  // The management key the bridge trusts (the demo pool's manager's); null: a key pair made
  // at start, which Lend() signs with. The demo runs no bridge unsigned.
  std::shared_ptr<bridge::ManagementSigner> signer;
};

class DemoBridge {
 public:
  static Result<std::unique_ptr<DemoBridge>> Start(const DemoBridgeOptions& options);
  DemoBridge(const DemoBridge&) = delete;
  DemoBridge& operator=(const DemoBridge&) = delete;
  ~DemoBridge();

  // Assigns devices [0, n) (the GPUs, then `devices`) to `node` at host BDFs (i+1):00.0 and
  // grants each the host's DMA and MSI ranges; the attachment a host opens its dxpu port with.
  Result<host::BridgeAttachment> Lend(size_t n, uint64_t node);
  // Lends devices [0, n) to `node` and opens that host's dxpu port on them (sessions with the
  // bridge's link-down time; the host proxy's threads as `realtime` says).
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenHostPort(
      size_t n, uint64_t node, const host::RealTimeOptions& realtime = {});
  // "udp 127.0.0.1:40123", "unix /tmp/...", "mem".
  const std::string& where() const { return where_; }
  // Its management socket ("unix:PATH") and, over UDP, where hosts reach it ("udp:IP:PORT"),
  // as the pool manager names them.
  std::string management() const { return "unix:" + management_path_; }
  const std::string& fabric() const { return fabric_; }
  void Stop();

 private:
  DemoBridge() = default;

  DemoBridgeOptions options_;
  std::unique_ptr<bridge::BridgeDaemon> daemon_;
  std::thread thread_;
  std::string where_;
  std::string fabric_;
  std::string management_path_;
  std::shared_ptr<bridge::ManagementSigner> signer_;  // what Lend() signs with
  std::unique_ptr<link::Link> host_end_;              // mem: the host's end of the in-memory pair
  link::LinkAddress host_peer_;
  std::string host_socket_;    // unix: the host's socket path
  std::string bridge_socket_;  // unix: the bridge's
};

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_DEMO_BRIDGE_H_
