// bridge_config.cc - the bridge daemon's configuration file: JSON to BridgeConfig.
#include "bridge-fw/bridge_config.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include <dxpu/mgmt.h>
#include <nlohmann/json.hpp>

#include "bridge-fw/firmware/signing.h"
#include "core/dxfp_session.h"
#include "crypto/fabric_keys.h"
#include "sim/units.h"

namespace dxpu::bridge {

std::string_view LinkTypeName(LinkType type) {
  switch (type) {
    case LinkType::kUdp:
      return "udp";
    case LinkType::kUnix:
      return "unix";
    case LinkType::kPacket:
      return "packet";
  }
  return "unknown";
}

namespace {

using nlohmann::json;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Two hexadecimal digits at text[at], or -1.
int HexByte(std::string_view text, size_t at) {
  if (at + 2 > text.size()) return -1;
  const int hi = HexDigit(text[at]);
  const int lo = HexDigit(text[at + 1]);
  return hi < 0 || lo < 0 ? -1 : hi << 4 | lo;
}

// Decimal digits only, below 2^64.
std::optional<uint64_t> ParseDecimal(std::string_view text) {
  if (text.empty() || text.size() > 20) return std::nullopt;
  unsigned __int128 v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(v);
}

// "0x" and 1..16 hexadecimal digits, or decimal digits.
std::optional<uint64_t> ParseNodeId(std::string_view text) {
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    const std::string_view digits = text.substr(2);
    if (digits.size() > 16) return std::nullopt;
    uint64_t v = 0;
    for (const char c : digits) {
      const int d = HexDigit(c);
      if (d < 0) return std::nullopt;
      v = v << 4 | static_cast<uint64_t>(d);
    }
    return v;
  }
  return ParseDecimal(text);
}

bool IsLoopback(const link::LinkAddress& a) {
  if (!a.is_ip()) return false;
  const link::IpEndpoint& ip = a.ip();
  if (ip.family == AF_INET) return ip.addr[0] == 127;
  static constexpr std::array<uint8_t, 16> kV6Loopback = {0, 0, 0, 0, 0, 0, 0, 0,
                                                          0, 0, 0, 0, 0, 0, 0, 1};
  return ip.addr == kV6Loopback;
}

std::string Join(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::string At(std::string_view path, size_t index) { return fmt::format("{}[{}]", path, index); }

// A value as an error message quotes it: strings in single quotes, the rest as JSON.
std::string Quote(const json& v) {
  return v.is_string() ? fmt::format("'{}'", v.get<std::string>()) : v.dump();
}

// Finds duplicate object keys while nlohmann::json parses (it would keep the last silently),
// tracking where in the document the parser is.
class DuplicateKeyFinder {
 public:
  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        NextElement();
        stack_.push_back({event == json::parse_event_t::array_start, 0, false, {}, {}});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack_.empty()) stack_.pop_back();
        break;
      case json::parse_event_t::key:
        if (!stack_.empty() && parsed.is_string()) {
          Frame& top = stack_.back();
          top.key = parsed.get<std::string>();
          if (!top.keys.insert(top.key).second) {
            errors_.push_back(fmt::format("{}: duplicate key", Path()));
          }
        }
        break;
      case json::parse_event_t::value:
        NextElement();
        break;
    }
    return true;
  }

  std::vector<std::string> TakeErrors() { return std::move(errors_); }

 private:
  struct Frame {
    bool array;
    size_t index;  // arrays: the element being parsed
    bool started;  // arrays: an element has begun
    std::string key;
    std::set<std::string> keys;
  };

  void NextElement() {
    if (stack_.empty() || !stack_.back().array) return;
    Frame& top = stack_.back();
    if (top.started) ++top.index;
    top.started = true;
  }

  std::string Path() const {
    std::string path;
    for (const Frame& f : stack_) path = f.array ? At(path, f.index) : Join(path, f.key);
    return path;
  }

  std::vector<Frame> stack_;
  std::vector<std::string> errors_;
};

// Reads the document into a BridgeConfig, collecting every error.
class Reader {
 public:
  BridgeConfigResult Read(const json& root);

 private:
  void Error(std::string_view path, std::string_view why) {
    errors_.push_back(fmt::format("{}: {}", path, why));
  }

  // Reports keys not in `allowed`; false if v is not an object.
  bool Object(const json& v, std::string_view path,
              std::initializer_list<std::string_view> allowed);
  static const json* Find(const json& obj, std::string_view key);
  const json* Required(const json& obj, std::string_view path, std::string_view key);

  std::optional<std::string> String(const json& v, std::string_view path);
  std::optional<uint64_t> Unsigned(const json& v, std::string_view path, uint64_t lo, uint64_t hi);
  std::optional<bool> Bool(const json& v, std::string_view path);
  // A size string ("256MiB"), non-zero.
  std::optional<uint64_t> Size(const json& v, std::string_view path);
  std::optional<uint64_t> Duration(const json& v, std::string_view path);
  std::optional<link::LinkAddress> IpPort(const json& v, std::string_view path);
  std::optional<std::string> SocketPath(const json& v, std::string_view path);

  void ReadNodeId(const json& root, BridgeConfig* c);
  void ReadLinks(const json& root, BridgeConfig* c);
  std::optional<LinkConfig> ReadLink(const json& v, std::string_view path);
  void ReadLinkOptions(const json& v, std::string_view path, LinkConfig* l);
  void ReadManagement(const json& root, BridgeConfig* c);
  void ReadManagementTrust(const json& m, BridgeConfig* c);
  void ReadMetrics(const json& root, BridgeConfig* c);
  void ReadDevices(const json& root, BridgeConfig* c);
  void ReadGpuDevice(const json& v, const std::string& path, DeviceConfig* d);
  void ReadVirtioBlk(const json& v, const std::string& path, DeviceConfig* d,
                     std::map<std::string, size_t>* backings, size_t index);
  void ReadVirtioGpu(const json& v, const std::string& path, DeviceConfig* d);
  void ReadLimits(const json& root, BridgeConfig* c);
  void ReadLog(const json& root, BridgeConfig* c);
  void ReadIdentity(const json& root, BridgeConfig* c);
  std::optional<IdentityHost> ReadIdentityHost(const json& v, std::string_view path);
  // Two parts may not use one address: links and the management socket.
  void CheckAddressesUnique(const BridgeConfig& c);

  std::vector<std::string> errors_;
};

bool Reader::Object(const json& v, std::string_view path,
                    std::initializer_list<std::string_view> allowed) {
  if (!v.is_object()) {
    Error(path.empty() ? "(top level)" : path,
          fmt::format("expected an object, got {}", v.type_name()));
    return false;
  }
  for (const auto& [key, value] : v.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      Error(Join(path, key), fmt::format("unknown key (expected {})", fmt::join(allowed, ", ")));
    }
  }
  return true;
}

const json* Reader::Find(const json& obj, std::string_view key) {
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

const json* Reader::Required(const json& obj, std::string_view path, std::string_view key) {
  const json* v = Find(obj, key);
  if (v == nullptr) Error(Join(path, key), "missing (required)");
  return v;
}

std::optional<std::string> Reader::String(const json& v, std::string_view path) {
  if (!v.is_string()) {
    Error(path, fmt::format("expected a string, got {} {}", v.type_name(), v.dump()));
    return std::nullopt;
  }
  return v.get<std::string>();
}

std::optional<uint64_t> Reader::Unsigned(const json& v, std::string_view path, uint64_t lo,
                                         uint64_t hi) {
  if (!v.is_number_integer()) {
    Error(path, fmt::format("expected an integer, got {} {}", v.type_name(), Quote(v)));
    return std::nullopt;
  }
  if (v.is_number_unsigned()) {
    const auto n = v.get<uint64_t>();
    if (n >= lo && n <= hi) return n;
  }
  Error(path, fmt::format("{} is not in {}..{}", v.dump(), lo, hi));
  return std::nullopt;
}

std::optional<uint64_t> Reader::Size(const json& v, std::string_view path) {
  const auto text = String(v, path);
  if (!text) return std::nullopt;
  const auto bytes = ParseByteSize(*text);
  if (!bytes) {
    Error(path, fmt::format("'{}' is not a size (a number and B, KiB, MiB or GiB)", *text));
    return std::nullopt;
  }
  if (*bytes == 0) {
    Error(path, "must be non-zero");
    return std::nullopt;
  }
  return bytes;
}

std::optional<bool> Reader::Bool(const json& v, std::string_view path) {
  if (!v.is_boolean()) {
    Error(path, fmt::format("expected true or false, got {} {}", v.type_name(), Quote(v)));
    return std::nullopt;
  }
  return v.get<bool>();
}

std::optional<uint64_t> Reader::Duration(const json& v, std::string_view path) {
  const auto text = String(v, path);
  if (!text) return std::nullopt;
  const sim::Quantity q = sim::ParseDuration(*text);
  if (!q.ok()) Error(path, q.error);
  return q.value;
}

std::optional<link::LinkAddress> Reader::IpPort(const json& v, std::string_view path) {
  const auto text = String(v, path);
  if (!text) return std::nullopt;
  auto a = ParseIpPort(*text);
  if (!a) {
    Error(path, fmt::format("'{}' is not an IP address and port (192.0.2.1:17480, [::1]:17480; "
                            "port 1..65535)",
                            *text));
  }
  return a;
}

std::optional<std::string> Reader::SocketPath(const json& v, std::string_view path) {
  auto text = String(v, path);
  // sun_path holds 108 bytes with the terminating NUL.
  if (text && (text->empty() || text->size() > 107)) {
    Error(path, fmt::format("'{}' is not a socket path (1..107 bytes)", *text));
    return std::nullopt;
  }
  return text;
}

void Reader::ReadNodeId(const json& root, BridgeConfig* c) {
  const json* v = Required(root, "", "node_id");
  if (v == nullptr) return;
  std::optional<uint64_t> id;
  if (v->is_string()) {
    id = ParseNodeId(v->get<std::string>());
    if (!id) {
      Error("node_id", fmt::format("{} is not a 64-bit number (\"0x00000000b0b00001\" or decimal)",
                                   Quote(*v)));
      return;
    }
  } else if (v->is_number_unsigned()) {
    id = v->get<uint64_t>();
  } else {
    Error("node_id", fmt::format("expected a string or an unsigned integer, got {} {}",
                                 v->type_name(), Quote(*v)));
    return;
  }
  if (*id == 0) {
    Error("node_id", "must be non-zero");
    return;
  }
  c->node_id = *id;
}

void Reader::ReadLinkOptions(const json& v, std::string_view path, LinkConfig* l) {
  if (const json* mtu = Find(v, "mtu")) {
    if (auto n = Unsigned(*mtu, Join(path, "mtu"), 576, 65535)) l->mtu = static_cast<uint32_t>(*n);
  }
  if (l->type == LinkType::kUdp) return;
  if (const json* mac = Find(v, "mac")) {
    if (auto text = String(*mac, Join(path, "mac"))) {
      l->mac = ParseMac(*text);
      if (!l->mac) {
        Error(Join(path, "mac"),
              fmt::format("'{}' is not a MAC address (02:00:00:00:00:01)", *text));
      }
    }
  }
}

std::optional<LinkConfig> Reader::ReadLink(const json& v, std::string_view path) {
  if (!v.is_object()) {
    Error(path, fmt::format("expected an object, got {}", v.type_name()));
    return std::nullopt;
  }
  const json* type_v = Required(v, path, "type");
  const auto type = type_v != nullptr ? String(*type_v, Join(path, "type")) : std::nullopt;
  if (!type) return std::nullopt;
  LinkConfig l;
  if (*type == "udp") {
    l.type = LinkType::kUdp;
    Object(v, path, {"type", "listen", "mtu"});
    if (const json* listen = Required(v, path, "listen")) {
      if (auto a = IpPort(*listen, Join(path, "listen"))) l.listen = *a;
    }
  } else if (*type == "unix") {
    l.type = LinkType::kUnix;
    Object(v, path, {"type", "path", "peer", "mac", "mtu"});
    if (const json* p = Required(v, path, "path")) {
      if (auto text = SocketPath(*p, Join(path, "path"))) l.path = *text;
    }
    // A QEMU dgram netdev is point to point: frames go to its one socket.
    if (const json* peer = Required(v, path, "peer")) {
      if (auto text = SocketPath(*peer, Join(path, "peer"))) l.peer = *text;
    }
  } else if (*type == "packet") {
    l.type = LinkType::kPacket;
    Object(v, path, {"type", "interface", "mac", "mtu"});
    if (const json* iface = Required(v, path, "interface")) {
      if (auto text = String(*iface, Join(path, "interface"))) {
        // IFNAMSIZ is 16 with the terminating NUL.
        if (text->empty() || text->size() > 15 || text->find('/') != std::string::npos) {
          Error(Join(path, "interface"), fmt::format("'{}' is not an interface name", *text));
        } else {
          l.interface = *text;
        }
      }
    }
  } else {
    Error(Join(path, "type"), fmt::format("'{}' is not a link type (udp, unix, packet)", *type));
    return std::nullopt;
  }
  ReadLinkOptions(v, path, &l);
  return l;
}

void Reader::ReadLinks(const json& root, BridgeConfig* c) {
  const json* links = Required(root, "", "links");
  if (links == nullptr) return;
  if (!links->is_array()) {
    Error("links", fmt::format("expected an array, got {}", links->type_name()));
    return;
  }
  if (links->empty()) Error("links", "at least one link is needed");
  for (size_t i = 0; i < links->size(); ++i) {
    if (auto l = ReadLink((*links)[i], At("links", i))) c->links.push_back(std::move(*l));
  }
}

// A public key: 64 hex digits, or a public key file's line ("DXPU-FW-PUBLIC-KEY-V1 <hex>").
void Reader::ReadManagementTrust(const json& m, BridgeConfig* c) {
  if (const json* insecure = Find(m, "insecure_unsigned")) {
    if (auto b = Bool(*insecure, "management.insecure_unsigned"))
      c->management.insecure_unsigned = *b;
  }
  const json* keys = Find(m, "trusted_keys");
  if (keys == nullptr) return;
  if (!keys->is_array()) {
    Error("management.trusted_keys", "must be an array of public keys (64 hex digits each)");
    return;
  }
  constexpr std::string_view kPrefix = "DXPU-FW-PUBLIC-KEY-V1 ";
  for (size_t i = 0; i < keys->size(); ++i) {
    const std::string path = At("management.trusted_keys", i);
    std::optional<std::string> text = String((*keys)[i], path);
    if (!text) continue;
    std::string_view hex = *text;
    if (hex.starts_with(kPrefix)) hex.remove_prefix(kPrefix.size());
    std::array<uint8_t, 32> key{};
    if (!firmware::ParseHex(hex, key)) {
      Error(path, "not a public key: 64 hexadecimal digits, or a .pub file's line");
      continue;
    }
    if (std::find(c->management.trusted_keys.begin(), c->management.trusted_keys.end(), key) !=
        c->management.trusted_keys.end()) {
      Error(path, "the same key twice");
      continue;
    }
    c->management.trusted_keys.push_back(key);
  }
}

void Reader::ReadManagement(const json& root, BridgeConfig* c) {
  c->management.address =
      *link::LinkAddress::FromIp("127.0.0.1", static_cast<uint16_t>(DXPU_MGMT_UDP_PORT));
  const json* m = Find(root, "management");
  if (m == nullptr ||
      !Object(*m, "management",
              {"listen", "unix", "allow_remote", "trusted_keys", "insecure_unsigned"}))
    return;
  ReadManagementTrust(*m, c);
  const json* listen = Find(*m, "listen");
  const json* unix_path = Find(*m, "unix");
  if ((listen == nullptr) == (unix_path == nullptr)) {
    Error("management", "give exactly one of listen (UDP) and unix (an AF_UNIX socket path)");
    return;
  }
  if (const json* allow = Find(*m, "allow_remote")) {
    if (auto b = Bool(*allow, "management.allow_remote")) c->management.allow_remote = *b;
  }
  if (listen != nullptr) {
    auto a = IpPort(*listen, "management.listen");
    if (!a) return;
    if (!IsLoopback(*a) && !c->management.allow_remote) {
      Error("management.listen",
            fmt::format("'{}' is not a loopback address, and the management socket is not "
                        "authenticated (set management.allow_remote to accept that)",
                        listen->get<std::string>()));
    }
    c->management.address = *a;
  } else if (auto text = SocketPath(*unix_path, "management.unix")) {
    c->management.address = link::LinkAddress::Unix(*text);
  }
}

std::optional<IdentityHost> Reader::ReadIdentityHost(const json& v, std::string_view path) {
  if (!Object(v, path, {"node", "key"})) return std::nullopt;
  const json* node = Required(v, path, "node");
  const json* key = Required(v, path, "key");
  if (node == nullptr || key == nullptr) return std::nullopt;
  IdentityHost h;
  const auto node_text = String(*node, Join(path, "node"));
  std::optional<uint64_t> id;
  if (node_text) id = ParseNodeId(*node_text);
  if (node_text && (!id || *id == 0))
    Error(Join(path, "node"), fmt::format("{} is not a non-zero 64-bit node ID", Quote(*node)));
  const auto key_text = String(*key, Join(path, "key"));
  if (key_text) {
    crypto::KeyResult<crypto::Key> k = crypto::ParseFabricPublicKey(*key_text);
    if (!k.ok()) {
      Error(Join(path, "key"), k.error().message);
    } else {
      h.public_key = k.value();
    }
  }
  if (!id || !key_text) return std::nullopt;
  h.node_id = *id;
  return h;
}

void Reader::ReadIdentity(const json& root, BridgeConfig* c) {
  const json* v = Find(root, "identity");
  if (v == nullptr ||
      !Object(*v, "identity",
              {"key", "hosts", "hellos_per_second", "hello_burst", "handshakes_per_second"}))
    return;
  IdentityConfig id;
  if (const json* key = Required(*v, "identity", "key")) {
    if (auto text = String(*key, "identity.key")) id.key_path = *text;
  }
  if (const json* rate = Find(*v, "hellos_per_second")) {
    if (auto n = Unsigned(*rate, "identity.hellos_per_second", 1, 100000))
      id.hellos_per_second = static_cast<uint32_t>(*n);
  }
  if (const json* burst = Find(*v, "hello_burst")) {
    if (auto n = Unsigned(*burst, "identity.hello_burst", 1, 100000))
      id.hello_burst = static_cast<uint32_t>(*n);
  }
  if (const json* load = Find(*v, "handshakes_per_second")) {
    if (auto n = Unsigned(*load, "identity.handshakes_per_second", 1, 100000))
      id.handshakes_per_second = static_cast<uint32_t>(*n);
  }
  // Without hosts (or with only some), the pool manager provisions them (HOST_KEY_SET).
  const json* hosts = Find(*v, "hosts");
  if (hosts == nullptr) {
    c->identity = std::move(id);
    return;
  }
  if (!hosts->is_array()) {
    Error("identity.hosts", R"(must be an array of {"node": ..., "key": ...})");
    return;
  }
  for (size_t i = 0; i < hosts->size(); ++i) {
    const std::string path = At("identity.hosts", i);
    auto h = ReadIdentityHost((*hosts)[i], path);
    if (!h) continue;
    for (const IdentityHost& other : id.hosts) {
      if (other.public_key == h->public_key) Error(path, "the same key is listed twice");
      if (other.node_id == h->node_id) Error(path, "the same node is listed twice");
    }
    id.hosts.push_back(*h);
  }
  c->identity = std::move(id);
}

void Reader::ReadMetrics(const json& root, BridgeConfig* c) {
  const json* m = Find(root, "metrics");
  if (m == nullptr || !Object(*m, "metrics", {"listen"})) return;
  const json* listen = Required(*m, "metrics", "listen");
  if (listen == nullptr) return;
  if (auto a = IpPort(*listen, "metrics.listen")) c->metrics = MetricsConfig{*a};
}

void Reader::ReadDevices(const json& root, BridgeConfig* c) {
  const json* devices = Required(root, "", "devices");
  if (devices == nullptr) return;
  if (!devices->is_array()) {
    Error("devices", fmt::format("expected an array, got {}", devices->type_name()));
    return;
  }
  if (devices->empty()) Error("devices", "at least one device is needed");
  // What one INVENTORY response reports (fewer than a STATUS response).
  constexpr size_t kMaxDevices =
      std::min<size_t>(DXPU_MGMT_STATUS_MAX_DEVICES, DXPU_MGMT_INVENTORY_MAX_DEVICES);
  if (devices->size() > kMaxDevices) {
    Error("devices", fmt::format("{} devices: at most {} (what one INVENTORY response reports)",
                                 devices->size(), kMaxDevices));
  }
  std::map<uint16_t, size_t> bdfs;         // box BDF -> the device that has it
  std::map<std::string, size_t> backings;  // a disk's backing file -> the device that has it
  for (size_t i = 0; i < devices->size(); ++i) {
    const std::string path = At("devices", i);
    const json& v = (*devices)[i];
    DeviceConfig d;
    if (const json* k = Find(v, "kind")) {
      if (auto name = String(*k, Join(path, "kind"))) {
        if (auto kind = ParseDeviceKind(*name)) {
          d.kind = *kind;
        } else {
          Error(Join(path, "kind"),
                fmt::format("'{}' is not a device kind (gpu, virtio-blk, virtio-gpu)", *name));
          continue;
        }
      }
    }
    bool known_keys = false;
    switch (d.kind) {
      case DeviceKind::kGpu:
        known_keys = Object(v, path, {"kind", "profile", "box_bdf", "memory"});
        break;
      case DeviceKind::kVirtioBlk:
        known_keys = Object(v, path, {"kind", "box_bdf", "backing", "size", "queues", "release"});
        break;
      case DeviceKind::kVirtioGpu:
        known_keys = Object(v, path, {"kind", "box_bdf", "display"});
        break;
    }
    if (!known_keys) continue;
    if (d.kind == DeviceKind::kGpu) ReadGpuDevice(v, path, &d);
    if (d.kind == DeviceKind::kVirtioBlk) ReadVirtioBlk(v, path, &d, &backings, i);
    if (d.kind == DeviceKind::kVirtioGpu) ReadVirtioGpu(v, path, &d);
    if (const json* b = Required(v, path, "box_bdf")) {
      if (auto text = String(*b, Join(path, "box_bdf"))) {
        if (auto bdf = ParseBdf(*text)) {
          const auto [it, fresh] = bdfs.emplace(*bdf, i);
          if (!fresh) {
            Error(Join(path, "box_bdf"),
                  fmt::format("'{}' is also devices[{}]'s", *text, it->second));
          }
          d.box_bdf = *bdf;
        } else {
          Error(Join(path, "box_bdf"), fmt::format("'{}' is not a BDF (bus:dev.fn)", *text));
        }
      }
    }
    c->devices.push_back(std::move(d));
  }
}

void Reader::ReadGpuDevice(const json& v, const std::string& path, DeviceConfig* d) {
  if (const json* p = Required(v, path, "profile")) {
    if (auto name = String(*p, Join(path, "profile"))) {
      if (auto profile = gpu::FindProfile(*name)) {
        d->profile = std::move(*profile);
      } else {
        Error(Join(path, "profile"), fmt::format("'{}' is not a known profile ({})", *name,
                                                 fmt::join(gpu::ProfileNames(), ", ")));
      }
    }
  }
  if (const json* m = Find(v, "memory")) {
    if (auto bytes = Size(*m, Join(path, "memory"))) d->memory_bytes = *bytes;
  }
}

void Reader::ReadVirtioBlk(const json& v, const std::string& path, DeviceConfig* d,
                           std::map<std::string, size_t>* backings, size_t index) {
  if (const json* b = Required(v, path, "backing")) {
    if (auto file = String(*b, Join(path, "backing"))) {
      if (file->empty() || file->front() != '/') {
        Error(Join(path, "backing"), fmt::format("'{}' is not an absolute path", *file));
      } else {
        const auto [it, fresh] = backings->emplace(*file, index);
        if (!fresh) {
          Error(Join(path, "backing"),
                fmt::format("'{}' is also devices[{}]'s backing file", *file, it->second));
        }
        d->blk.backing = *file;
      }
    }
  }
  if (const json* s = Required(v, path, "size")) {
    if (auto bytes = Size(*s, Join(path, "size"))) {
      if (*bytes % 512 != 0) {
        Error(Join(path, "size"),
              fmt::format("{} bytes is not a whole number of 512-byte sectors", *bytes));
      } else {
        d->blk.size_bytes = *bytes;
      }
    }
  }
  if (const json* q = Find(v, "queues")) {
    if (auto n = Unsigned(*q, Join(path, "queues"), 1, 64))
      d->blk.queues = static_cast<uint16_t>(*n);
  }
  if (const json* r = Find(v, "release")) {
    if (auto policy = String(*r, Join(path, "release"))) {
      if (*policy == "keep") {
        d->blk.release = DiskReleasePolicy::kKeep;
      } else if (*policy == "zero") {
        d->blk.release = DiskReleasePolicy::kZero;
      } else {
        Error(Join(path, "release"), fmt::format("'{}' is neither keep nor zero", *policy));
      }
    }
  }
}

void Reader::ReadVirtioGpu(const json& v, const std::string& path, DeviceConfig* d) {
  const json* m = Find(v, "display");
  if (m == nullptr) return;
  const auto text = String(*m, Join(path, "display"));
  if (!text) return;
  const std::optional<VirtioGpuSettings> size = ParseDisplaySize(*text);
  if (!size) {
    Error(Join(path, "display"), fmt::format("'{}' is not WIDTHxHEIGHT with each 16..4095", *text));
    return;
  }
  d->display = *size;
}

void Reader::ReadLimits(const json& root, BridgeConfig* c) {
  const json* l = Find(root, "limits");
  if (l == nullptr || !Object(*l, "limits",
                              {"max_hosts", "box_tags", "max_pending_per_host",
                               "completion_timeout", "tag_quarantine", "link_down"})) {
    return;
  }
  LimitsConfig& out = c->limits;
  if (const json* v = Find(*l, "max_hosts")) {
    if (auto n = Unsigned(*v, "limits.max_hosts", 1, 65534))
      out.max_hosts = static_cast<uint16_t>(*n);
  }
  if (const json* v = Find(*l, "box_tags")) {
    if (auto n = Unsigned(*v, "limits.box_tags", 1, 1024)) out.box_tags = static_cast<uint16_t>(*n);
  }
  if (const json* v = Find(*l, "max_pending_per_host")) {
    if (auto n = Unsigned(*v, "limits.max_pending_per_host", 1, 1024)) {
      out.max_pending_per_host = static_cast<uint16_t>(*n);
    }
  }
  if (out.max_pending_per_host > out.box_tags) {
    Error("limits.max_pending_per_host", fmt::format("{} is more than limits.box_tags ({})",
                                                     out.max_pending_per_host, out.box_tags));
  }
  if (const json* v = Find(*l, "completion_timeout")) {
    if (auto d = Duration(*v, "limits.completion_timeout")) {
      if (*d == 0) {
        Error("limits.completion_timeout", "must be non-zero");
      } else {
        out.completion_timeout_ns = *d;
      }
    }
  }
  if (const json* v = Find(*l, "tag_quarantine")) {
    if (auto d = Duration(*v, "limits.tag_quarantine")) out.tag_quarantine_ns = *d;
  }
  if (const json* v = Find(*l, "link_down")) {
    if (auto d = Duration(*v, "limits.link_down")) {
      // The session's rule (docs/protocol.md 4.9): more than the keepalive interval and at
      // least twice the largest RTO, so that a path that heals is retried before giving up.
      dxfp_session_config s{};
      dxfp_session_config_defaults(&s);
      const uint64_t least = std::max(s.keepalive_ns + 1, 2 * s.max_rto_ns);
      if (*d < least) {
        Error("limits.link_down",
              fmt::format("'{}' is too short: at least {} (twice the session's largest RTO, "
                          "more than its keepalive)",
                          v->get<std::string>(), sim::FormatDuration(least)));
      } else {
        out.link_down_ns = *d;
      }
    }
  }
}

void Reader::ReadLog(const json& root, BridgeConfig* c) {
  const json* l = Find(root, "log");
  if (l == nullptr || !Object(*l, "log", {"level", "format"})) return;
  if (const json* v = Find(*l, "level")) {
    if (auto text = String(*v, "log.level")) {
      static constexpr std::array<std::pair<std::string_view, spdlog::level::level_enum>, 7>
          kLevels = {{{"trace", spdlog::level::trace},
                      {"debug", spdlog::level::debug},
                      {"info", spdlog::level::info},
                      {"warn", spdlog::level::warn},
                      {"error", spdlog::level::err},
                      {"critical", spdlog::level::critical},
                      {"off", spdlog::level::off}}};
      const auto* it = std::find_if(kLevels.begin(), kLevels.end(),
                                    [&](const auto& p) { return p.first == *text; });
      if (it == kLevels.end()) {
        Error("log.level", fmt::format("'{}' is not a level (trace, debug, info, warn, error, "
                                       "critical, off)",
                                       *text));
      } else {
        c->log.level = it->second;
      }
    }
  }
  if (const json* v = Find(*l, "format")) {
    if (auto text = String(*v, "log.format")) {
      if (*text == "text") {
        c->log.format = LogFormat::kText;
      } else if (*text == "json") {
        c->log.format = LogFormat::kJson;
      } else {
        Error("log.format", fmt::format("'{}' is not a format (text, json)", *text));
      }
    }
  }
}

void Reader::CheckAddressesUnique(const BridgeConfig& c) {
  // What each address is used by, as a path; UDP ports, socket paths and interfaces.
  std::map<std::string, std::string> used;
  auto claim = [&](const std::string& what, const std::string& path, const std::string& shown) {
    const auto [it, fresh] = used.emplace(what, path);
    if (!fresh) Error(path, fmt::format("'{}' is also {}'s", shown, it->second));
  };
  for (size_t i = 0; i < c.links.size(); ++i) {
    const LinkConfig& l = c.links[i];
    const std::string path = At("links", i);
    switch (l.type) {
      case LinkType::kUdp:
        claim("udp " + l.listen.ToString(), Join(path, "listen"), l.listen.ToString());
        break;
      case LinkType::kUnix:
        claim("unix " + l.path, Join(path, "path"), l.path);
        break;
      case LinkType::kPacket:
        claim("packet " + l.interface, Join(path, "interface"), l.interface);
        break;
    }
  }
  const link::LinkAddress& m = c.management.address;
  if (m.is_ip()) {
    claim("udp " + m.ToString(), "management.listen", m.ToString());
  } else if (m.is_unix()) {
    claim("unix " + m.unix_path(), "management.unix", m.unix_path());
  }
}

BridgeConfigResult Reader::Read(const json& root) {
  BridgeConfigResult r;
  if (!Object(
          root, "",
          {"node_id", "links", "management", "metrics", "devices", "limits", "log", "identity"})) {
    r.errors = std::move(errors_);
    return r;
  }
  BridgeConfig c;
  ReadNodeId(root, &c);
  ReadLinks(root, &c);
  ReadManagement(root, &c);
  ReadMetrics(root, &c);
  ReadDevices(root, &c);
  ReadLimits(root, &c);
  ReadLog(root, &c);
  ReadIdentity(root, &c);
  if (errors_.empty()) CheckAddressesUnique(c);
  r.errors = std::move(errors_);
  if (r.errors.empty()) r.config = std::move(c);
  return r;
}

}  // namespace

std::optional<uint16_t> ParseBdf(std::string_view text) {
  if (text.size() != 7 || text[2] != ':' || text[5] != '.') return std::nullopt;
  const int bus = HexByte(text, 0);
  const int dev = HexByte(text, 3);
  const int fn = text[6] - '0';
  if (bus < 0 || dev < 0 || dev > 0x1f || fn < 0 || fn > 7) return std::nullopt;
  return static_cast<uint16_t>(bus << 8 | dev << 3 | fn);
}

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  static constexpr std::array<std::pair<std::string_view, uint64_t>, 4> kUnits = {
      {{"GiB", uint64_t{1} << 30},
       {"MiB", uint64_t{1} << 20},
       {"KiB", uint64_t{1} << 10},
       {"B", 1}}};
  size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  const std::string_view number = text.substr(0, i);
  const std::string_view unit = text.substr(i);
  const auto* u =
      std::find_if(kUnits.begin(), kUnits.end(), [&](const auto& p) { return p.first == unit; });
  if (u == kUnits.end() || number.empty() || number.front() == '.' || number.back() == '.') {
    return std::nullopt;
  }
  unsigned __int128 mantissa = 0;
  unsigned __int128 divisor = 1;
  bool seen_point = false;
  size_t digits = 0;
  for (const char c : number) {
    if (c == '.') {
      if (seen_point) return std::nullopt;
      seen_point = true;
      continue;
    }
    if (++digits > 20) return std::nullopt;  // keeps mantissa * 2^30 within 128 bits
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    if (seen_point) divisor *= 10;
  }
  const unsigned __int128 scaled = mantissa * u->second;
  if (scaled % divisor != 0 || scaled / divisor > UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(scaled / divisor);
}

std::optional<link::LinkAddress> ParseIpPort(std::string_view text) {
  std::string_view ip;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    ip = text.substr(1, close - 1);
    port = text.substr(close + 2);
    if (ip.find(':') == std::string_view::npos) return std::nullopt;  // brackets: IPv6 only
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    ip = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (ip.find(':') != std::string_view::npos) return std::nullopt;  // IPv6 needs brackets
  }
  const auto p = port.size() <= 5 ? ParseDecimal(port) : std::nullopt;
  if (!p || *p == 0 || *p > 65535) return std::nullopt;
  return link::LinkAddress::FromIp(ip, static_cast<uint16_t>(*p));
}

std::optional<link::MacAddress> ParseMac(std::string_view text) {
  if (text.size() != 17) return std::nullopt;
  link::MacAddress mac{};
  for (size_t i = 0; i < mac.size(); ++i) {
    const int b = HexByte(text, 3 * i);
    if (b < 0 || (i < 5 && text[3 * i + 2] != ':')) return std::nullopt;
    mac[i] = static_cast<uint8_t>(b);
  }
  return mac;
}

BridgeConfigResult ParseBridgeConfig(std::string_view text) {
  DuplicateKeyFinder duplicates;
  json root;
  try {
    root = json::parse(text.begin(), text.end(), std::ref(duplicates),
                       /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {
    // Every exception the parser throws, not only parse_error: a number too large for a double
    // ("1e999") is out_of_range.406 (found by fuzzing, docs/fuzzing.md).
    // "[json.exception.parse_error.101] parse error at line 2, column 3: ..." without the tag.
    std::string what = e.what();
    const size_t tag_end = what.find("] ");
    if (what.starts_with("[json.exception") && tag_end != std::string::npos) {
      what.erase(0, tag_end + 2);
    }
    BridgeConfigResult r;
    r.errors.push_back(std::move(what));
    return r;
  }
  std::vector<std::string> dup_errors = duplicates.TakeErrors();
  BridgeConfigResult r = Reader().Read(root);
  if (!dup_errors.empty()) {
    r.config.reset();
    r.errors.insert(r.errors.begin(), dup_errors.begin(), dup_errors.end());
  }
  return r;
}

BridgeConfigResult LoadBridgeConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    BridgeConfigResult r;
    r.errors.push_back(fmt::format("{}: cannot open: {}", path,
                                   std::error_code(errno, std::generic_category()).message()));
    return r;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    BridgeConfigResult r;
    r.errors.push_back(fmt::format("{}: cannot read", path));
    return r;
  }
  return ParseBridgeConfig(text.str());
}

}  // namespace dxpu::bridge
