// bridge_config.h - the bridge daemon's configuration file (docs/bridge-config.md): JSON
// parsed and validated into a plain struct. Every error names the JSON path and says why
// ("devices[1].box_bdf: '01:00' is not a BDF (bus:dev.fn)"); unknown and duplicate keys are
// errors; everything optional has a documented default.
#ifndef DXPU_BRIDGE_FW_BRIDGE_CONFIG_H_
#define DXPU_BRIDGE_FW_BRIDGE_CONFIG_H_

#include <spdlog/common.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bridge-fw/device_kinds.h"
#include "gpu/device_profile.h"
#include "link/link_address.h"

namespace dxpu::bridge {

// How a link carries DxFP (docs/protocol.md, section 4.1).
enum class LinkType : uint8_t {
  kUdp,     // UDP over IPv4 or IPv6
  kUnix,    // AF_UNIX datagrams in QEMU's -netdev dgram framing
  kPacket,  // raw Ethernet (AF_PACKET) on an interface
};
std::string_view LinkTypeName(LinkType type);  // "udp", "unix", "packet"

// One of the links the bridge listens on for hosts' DxFP sessions.
struct LinkConfig {
  LinkType type = LinkType::kUdp;
  link::LinkAddress listen;             // kUdp: the IP address and port bound
  std::string path;                     // kUnix: the socket path bound
  std::string peer;                     // kUnix: where datagrams go; "": back to the sender
  std::string interface;                // kPacket: the network interface
  std::optional<link::MacAddress> mac;  // kUnix, kPacket: source MAC; nullopt: the link's
  std::optional<uint32_t> mtu;          // nullopt: 1500 (udp, unix), the interface's (packet)
};

// The management socket (docs/protocol.md, section 15): UDP on an IP address and port, or
// an AF_UNIX datagram socket (LinkAddress::Unix) the daemon creates with mode 0600.
struct ManagementConfig {
  link::LinkAddress address;
  // Read-only requests are unauthenticated: an address other than loopback needs this set.
  bool allow_remote = false;
  // The Ed25519 public keys (the manager's, an operator's) whose signatures the bridge accepts
  // on requests that change its state (docs/protocol.md 15.8). None: every such request is
  // refused, unless insecure_unsigned.
  std::vector<std::array<uint8_t, 32>> trusted_keys;
  // Accept unsigned state-changing requests from whoever reaches the socket (a lab, a test);
  // signed ones are still verified and fenced.
  bool insecure_unsigned = false;
};

// The Prometheus metrics endpoint (HTTP on TCP).
struct MetricsConfig {
  link::LinkAddress listen;
};

// A device in the box.
struct DeviceConfig {
  gpu::DeviceProfile profile;  // kGpu: the built-in profile the key "profile" names
  uint16_t box_bdf = 0;        // its Bus/Device/Function on the box's PCIe
  uint64_t memory_bytes = 0;   // kGpu: device memory; 0: the profile's
  DeviceKind kind = DeviceKind::kGpu;
  VirtioBlkSettings blk = {};      // kVirtioBlk
  VirtioGpuSettings display = {};  // kVirtioGpu
};

struct LimitsConfig {
  uint16_t max_hosts = 64;                      // hosts with a session at once
  uint16_t box_tags = 256;                      // tags the bridge uses toward the devices (10-bit)
  uint16_t max_pending_per_host = 64;           // of those, the most one host may hold
  uint64_t completion_timeout_ns = 50'000'000;  // a device's answer to a host's request
  uint64_t tag_quarantine_ns = 100'000'000;     // a timed-out tag rests before reuse
  uint64_t link_down_ns = 20'000'000;           // a session without progress goes down
};

// Host authentication (docs/bridge-config.md "identity", docs/protocol.md 4.12).
struct IdentityHost {
  uint64_t node_id = 0;
  std::array<uint8_t, 32> public_key{};
};
struct IdentityConfig {
  std::string key_path;  // the bridge's secret key file (dxpu keygen); read at start
  std::vector<IdentityHost> hosts;
  uint32_t hellos_per_second = 20;
  uint32_t hello_burst = 40;
  uint32_t handshakes_per_second = 100;  // beyond it (all sources), HELLOs need a cookie
};

enum class LogFormat : uint8_t { kText, kJson };

struct LogConfig {
  spdlog::level::level_enum level = spdlog::level::info;
  LogFormat format = LogFormat::kText;
};

struct BridgeConfig {
  uint64_t node_id = 0;  // the bridge's identity in HELLO; non-zero
  std::vector<LinkConfig> links;
  ManagementConfig management;
  std::optional<MetricsConfig> metrics;  // nullopt: no metrics endpoint
  std::vector<DeviceConfig> devices;
  LimitsConfig limits;
  LogConfig log;
  std::optional<IdentityConfig> identity;  // nullopt: plaintext sessions (a warning at start)
};

// A configuration, or every error found (the JSON path, a colon, why).
struct BridgeConfigResult {
  std::optional<BridgeConfig> config;
  std::vector<std::string> errors;

  bool ok() const { return config.has_value(); }
};

// JSON text (comments allowed) -> a validated configuration.
BridgeConfigResult ParseBridgeConfig(std::string_view text);
// The same, from a file; a file that cannot be read is one error naming it.
BridgeConfigResult LoadBridgeConfig(const std::string& path);

// The value parsers the configuration uses, for the tools that take the same notations.

// "01:00.0" (bus:device.function, hexadecimal, as lspci prints it) -> bus << 8 | dev << 3 | fn.
std::optional<uint16_t> ParseBdf(std::string_view text);
// "256MiB", "1.5GiB", "4096B": a number and one of B, KiB, MiB, GiB, a whole number of bytes.
std::optional<uint64_t> ParseByteSize(std::string_view text);
// "127.0.0.1:9480", "[::1]:17480", "[fe80::1%eth0]:17480": a numeric address and a port
// 1..65535.
std::optional<link::LinkAddress> ParseIpPort(std::string_view text);
// "02:00:00:00:00:01".
std::optional<link::MacAddress> ParseMac(std::string_view text);

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_BRIDGE_CONFIG_H_
