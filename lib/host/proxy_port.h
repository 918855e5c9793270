// proxy_port.h - the dxpu port: GPUs borrowed from bridges, reached through the userspace host
// proxy over DxFP sessions (one per bridge, any number of bridges). The controller (the demo,
// the pool manager, an operator with `dxpu bridge`) first assigns each device to this host's
// node ID at a host BDF and grants it DMA to the host's DMA range and MSI range
// (HostDmaGrants below); this port then connects, attaches the devices and serves them.
#ifndef DXPU_LIB_HOST_PROXY_PORT_H_
#define DXPU_LIB_HOST_PROXY_PORT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dxfp_session.h"
#include "crypto/sodium_crypto_ops.h"
#include "dxgpu/port.h"
#include "host/realtime_host.h"
#include "link/link.h"

namespace dxpu::host {

struct BridgeAttachment {
  std::string name;  // how messages name the bridge: "udp:127.0.0.1:17480"
  std::unique_ptr<link::Link> link;
  link::LinkAddress peer;
  std::vector<uint16_t> host_bdfs;  // the devices the bridge presents to this host
  // The bridge's public key: the session is authenticated and sealed (ProxyPortOptions::key
  // set too). nullopt: a plaintext session.
  std::optional<crypto::Key> public_key;
};

struct ProxyPortOptions {
  uint64_t node_id = 1;  // the identity the bridges assigned the devices to
  std::vector<BridgeAttachment> bridges;
  // This host's key pair: sessions to bridges whose public key is given are authenticated.
  std::optional<crypto::KeyPair> key;
  // Session parameters; node ID, role and IDs are set by the port. Zero max_frame: defaults.
  dxfp_session_config session{};
  uint64_t connect_timeout_ns = 3'000'000'000;
  uint64_t request_timeout_ns = 1'000'000'000;  // configuration and MMIO reads
  // How the proxy's threads wait for frames (busy polling, who receives).
  RealTimeOptions realtime{};
};

// A DMA window a controller grants every device it gives this host: [base, base + size)
// identity-mapped. The host's DMA range (pinned buffers), its MSI range, and its 64-bit BAR
// window (peer to peer into devices behind other bridges, which the host proxy routes).
struct HostDmaGrant {
  uint64_t base = 0;
  uint64_t size = 0;
};
std::vector<HostDmaGrant> HostDmaGrants();

// Opens the port: connects to every bridge, attaches every device. Errors name the bridge and
// device and say why (no answer, not assigned to this host, ...).
dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenProxyPort(ProxyPortOptions options);

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_PROXY_PORT_H_
