// The bridge's configuration file (bridge-fw/bridge_config.h, docs/bridge-config.md): the
// full example, the defaults, the shipped bridge-fw/examples/bridge.json, every validation
// error with its JSON path, and the value notations (BDF, sizes, addresses, MACs).
#include "bridge-fw/bridge_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bridge-fw/golden_datapath.h"
#include "core/dxfp_session.h"

namespace dxpu::bridge {
namespace {

using nlohmann::json;

// The example of docs/bridge-config.md, every key given.
constexpr const char* kFullExample = R"({
  "node_id": "0x0000000000b0b001",
  "links": [
    {"type": "udp", "listen": "0.0.0.0:17480"},
    {"type": "udp", "listen": "[::1]:17480", "mtu": 9000},
    {"type": "unix", "path": "/run/dxpu/bridge.sock", "peer": "/run/dxpu/qemu.sock",
     "mac": "02:00:00:00:b0:01"},
    {"type": "packet", "interface": "eth1"}
  ],
  // The management socket is trusted: loopback or an AF_UNIX path.
  "management": {"listen": "127.0.0.1:17481"},
  "metrics": {"listen": "127.0.0.1:9480"},
  "devices": [
    {"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "256MiB"},
    {"profile": "a100-40g", "box_bdf": "02:00.0"}
  ],
  "limits": {"max_hosts": 64, "max_pending_per_host": 64, "completion_timeout": "50ms",
             "tag_quarantine": "100ms", "link_down": "1s"},
  "log": {"level": "info", "format": "text"}
})";

// The least a configuration must say.
json Minimal() {
  return json::parse(R"({
    "node_id": "0xb0b001",
    "links": [{"type": "udp", "listen": "127.0.0.1:17480"}],
    "devices": [{"profile": "dxgpu", "box_bdf": "01:00.0"}]
  })");
}

link::LinkAddress Ip(const char* ip, uint16_t port) { return *link::LinkAddress::FromIp(ip, port); }

std::string JoinErrors(const BridgeConfigResult& r) {
  std::string s;
  for (const auto& e : r.errors) s += e + "\n";
  return s;
}

// The errors of a document; the test fails if it parsed.
std::vector<std::string> Errors(const json& doc) {
  BridgeConfigResult r = ParseBridgeConfig(doc.dump());
  EXPECT_FALSE(r.ok()) << doc.dump();
  EXPECT_FALSE(r.errors.empty());
  return r.errors;
}

// The single error a document has.
std::string OneError(const json& doc) {
  const std::vector<std::string> errors = Errors(doc);
  EXPECT_EQ(errors.size(), 1u) << doc.dump();
  return errors.empty() ? "" : errors.front();
}

TEST(BridgeConfig, FullExample) {
  const BridgeConfigResult r = ParseBridgeConfig(kFullExample);
  ASSERT_TRUE(r.ok()) << JoinErrors(r);
  const BridgeConfig& c = *r.config;
  EXPECT_EQ(c.node_id, 0xb0b001u);

  ASSERT_EQ(c.links.size(), 4u);
  EXPECT_EQ(c.links[0].type, LinkType::kUdp);
  EXPECT_EQ(c.links[0].listen, Ip("0.0.0.0", 17480));
  EXPECT_FALSE(c.links[0].mtu.has_value());
  EXPECT_EQ(c.links[1].type, LinkType::kUdp);
  EXPECT_EQ(c.links[1].listen, Ip("::1", 17480));
  EXPECT_EQ(c.links[1].mtu, 9000u);
  EXPECT_EQ(c.links[2].type, LinkType::kUnix);
  EXPECT_EQ(c.links[2].path, "/run/dxpu/bridge.sock");
  EXPECT_EQ(c.links[2].peer, "/run/dxpu/qemu.sock");
  EXPECT_EQ(c.links[2].mac, (link::MacAddress{0x02, 0, 0, 0, 0xb0, 0x01}));
  EXPECT_EQ(c.links[3].type, LinkType::kPacket);
  EXPECT_EQ(c.links[3].interface, "eth1");
  EXPECT_FALSE(c.links[3].mac.has_value());

  EXPECT_EQ(c.management.address, Ip("127.0.0.1", 17481));
  EXPECT_FALSE(c.management.allow_remote);
  ASSERT_TRUE(c.metrics.has_value());
  EXPECT_EQ(c.metrics->listen, Ip("127.0.0.1", 9480));

  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].profile.name, "dxgpu");
  EXPECT_EQ(c.devices[0].box_bdf, 0x0100);
  EXPECT_EQ(c.devices[0].memory_bytes, 256u << 20);
  EXPECT_EQ(c.devices[1].profile, *gpu::FindProfile("a100-40g"));
  EXPECT_EQ(c.devices[1].box_bdf, 0x0200);
  EXPECT_EQ(c.devices[1].memory_bytes, 0u);  // the profile's

  EXPECT_EQ(c.limits.max_hosts, 64);
  EXPECT_EQ(c.limits.max_pending_per_host, 64);
  EXPECT_EQ(c.limits.completion_timeout_ns, 50'000'000u);
  EXPECT_EQ(c.limits.tag_quarantine_ns, 100'000'000u);
  EXPECT_EQ(c.limits.link_down_ns, 1'000'000'000u);
  EXPECT_EQ(c.log.level, spdlog::level::info);
  EXPECT_EQ(c.log.format, LogFormat::kText);
}

// The defaults are the data plane's and the DxFP session's own.
TEST(BridgeConfig, Defaults) {
  const BridgeConfigResult r = ParseBridgeConfig(Minimal().dump());
  ASSERT_TRUE(r.ok()) << JoinErrors(r);
  const BridgeConfig& c = *r.config;
  EXPECT_EQ(c.management.address, Ip("127.0.0.1", 17481));
  EXPECT_FALSE(c.management.allow_remote);
  EXPECT_FALSE(c.metrics.has_value());
  EXPECT_EQ(c.devices[0].memory_bytes, 0u);
  const GoldenDatapathConfig dp;
  EXPECT_EQ(c.limits.max_hosts, dp.host_slots);
  EXPECT_EQ(c.limits.box_tags, dp.box_tags);
  EXPECT_EQ(c.limits.max_pending_per_host, dp.max_pending_per_host);
  EXPECT_EQ(c.limits.completion_timeout_ns, dp.completion_timeout_ns);
  EXPECT_EQ(c.limits.tag_quarantine_ns, dp.tag_quarantine_ns);
  dxfp_session_config s{};
  dxfp_session_config_defaults(&s);
  EXPECT_EQ(c.limits.link_down_ns, s.link_down_ns);
  EXPECT_EQ(c.log.level, spdlog::level::info);
  EXPECT_EQ(c.log.format, LogFormat::kText);
}

TEST(BridgeConfig, OptionalValuesTakeEffect) {
  json doc = Minimal();
  doc["node_id"] = 12345;  // an integer works too
  doc["management"] = {{"unix", "/run/dxpu/mgmt.sock"}};
  doc["limits"] = {{"box_tags", 1024}, {"max_pending_per_host", 512}, {"tag_quarantine", "0ns"}};
  doc["log"] = {{"level", "debug"}, {"format", "json"}};
  doc["devices"][0]["memory"] = "1.5GiB";
  const BridgeConfigResult r = ParseBridgeConfig(doc.dump());
  ASSERT_TRUE(r.ok()) << JoinErrors(r);
  EXPECT_EQ(r.config->node_id, 12345u);
  EXPECT_EQ(r.config->management.address, link::LinkAddress::Unix("/run/dxpu/mgmt.sock"));
  EXPECT_EQ(r.config->limits.box_tags, 1024);
  EXPECT_EQ(r.config->limits.max_pending_per_host, 512);
  EXPECT_EQ(r.config->limits.tag_quarantine_ns, 0u);
  EXPECT_EQ(r.config->log.level, spdlog::level::debug);
  EXPECT_EQ(r.config->log.format, LogFormat::kJson);
  EXPECT_EQ(r.config->devices[0].memory_bytes, 3u << 29);

  // A remote management address, allowed explicitly.
  doc["management"] = {{"listen", "0.0.0.0:17481"}, {"allow_remote", true}};
  const BridgeConfigResult remote = ParseBridgeConfig(doc.dump());
  ASSERT_TRUE(remote.ok()) << JoinErrors(remote);
  EXPECT_TRUE(remote.config->management.allow_remote);
  EXPECT_EQ(remote.config->management.address, Ip("0.0.0.0", 17481));
}

// docs/protocol.md 15.8: the keys a bridge trusts with its state, and the lab switch.
TEST(BridgeConfig, ManagementTrustedKeysAndInsecureUnsigned) {
  const std::string hex = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
  json doc = Minimal();
  doc["management"] = {{"listen", "127.0.0.1:17481"},
                       {"trusted_keys", {hex, "DXPU-FW-PUBLIC-KEY-V1 " + std::string(64, 'A')}}};
  BridgeConfigResult r = ParseBridgeConfig(doc.dump());
  ASSERT_TRUE(r.ok()) << JoinErrors(r);
  ASSERT_EQ(r.config->management.trusted_keys.size(), 2u);
  EXPECT_EQ(r.config->management.trusted_keys[0][0], 0x3d);
  EXPECT_EQ(r.config->management.trusted_keys[0][31], 0x0c);
  EXPECT_EQ(r.config->management.trusted_keys[1][5], 0xaa);
  EXPECT_FALSE(r.config->management.insecure_unsigned);
  // The default: no key, not insecure (every state-changing request refused).
  r = ParseBridgeConfig(Minimal().dump());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.config->management.trusted_keys.empty());
  EXPECT_FALSE(r.config->management.insecure_unsigned);
  doc["management"] = {{"listen", "127.0.0.1:17481"}, {"insecure_unsigned", true}};
  r = ParseBridgeConfig(doc.dump());
  ASSERT_TRUE(r.ok()) << JoinErrors(r);
  EXPECT_TRUE(r.config->management.insecure_unsigned);

  const auto errors_of = [&](json management) {
    json d = Minimal();
    d["management"] = std::move(management);
    return JoinErrors(ParseBridgeConfig(d.dump()));
  };
  EXPECT_NE(errors_of({{"listen", "127.0.0.1:1"}, {"trusted_keys", hex}})
                .find("management.trusted_keys: must be an array"),
            std::string::npos);
  EXPECT_NE(errors_of({{"listen", "127.0.0.1:1"}, {"trusted_keys", {hex.substr(2)}}})
                .find("management.trusted_keys[0]: not a public key"),
            std::string::npos);
  EXPECT_NE(
      errors_of({{"listen", "127.0.0.1:1"}, {"trusted_keys", {"DXPU-FW-SECRET-KEY-V1 " + hex}}})
          .find("management.trusted_keys[0]: not a public key"),
      std::string::npos);
  EXPECT_NE(errors_of({{"listen", "127.0.0.1:1"}, {"trusted_keys", {hex, hex}}})
                .find("management.trusted_keys[1]: the same key twice"),
            std::string::npos);
  EXPECT_NE(errors_of({{"listen", "127.0.0.1:1"}, {"insecure_unsigned", "yes"}})
                .find("management.insecure_unsigned"),
            std::string::npos);
}

TEST(BridgeConfig, ShippedExampleParses) {
  const std::string path = std::string(DXPU_SOURCE_DIR) + "/bridge-fw/examples/bridge.json";
  const BridgeConfigResult r = LoadBridgeConfig(path);
  ASSERT_TRUE(r.ok()) << JoinErrors(r);
  const BridgeConfig& c = *r.config;
  ASSERT_EQ(c.links.size(), 1u);
  EXPECT_EQ(c.links[0].type, LinkType::kUdp);
  EXPECT_EQ(c.links[0].listen, Ip("127.0.0.1", 17480));
  EXPECT_EQ(c.management.address, Ip("127.0.0.1", 17481));
  // No key trusted until the operator names the manager's (README's recipe does).
  EXPECT_TRUE(c.management.trusted_keys.empty());
  EXPECT_FALSE(c.management.insecure_unsigned);
  ASSERT_TRUE(c.metrics.has_value());
  EXPECT_EQ(c.metrics->listen, Ip("127.0.0.1", 9480));
  ASSERT_EQ(c.devices.size(), 2u);
  for (const DeviceConfig& d : c.devices) EXPECT_EQ(d.profile.name, "dxgpu");
  EXPECT_NE(c.devices[0].box_bdf, c.devices[1].box_bdf);
}

// Every ```json block of docs/bridge-config.md is a valid configuration.
TEST(BridgeConfig, DocumentedExamplesParse) {
  std::ifstream in(std::string(DXPU_SOURCE_DIR) + "/docs/bridge-config.md");
  ASSERT_TRUE(in.good());
  std::string line;
  std::string block;
  bool inside = false;
  int blocks = 0;
  while (std::getline(in, line)) {
    if (!inside && line == "```json") {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      ++blocks;
      const BridgeConfigResult r = ParseBridgeConfig(block);
      EXPECT_TRUE(r.ok()) << "example " << blocks << ":\n" << JoinErrors(r);
    } else if (inside) {
      block += line + "\n";
    }
  }
  EXPECT_EQ(blocks, 2);
}

TEST(BridgeConfig, LoadFromFile) {
  const std::string missing = "/nonexistent/dxpu/bridge.json";
  const BridgeConfigResult r = LoadBridgeConfig(missing);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], missing + ": cannot open: No such file or directory");

  char tmpl[] = "/tmp/dxpu_bridge_config_XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    std::ofstream out(tmpl);
    out << kFullExample;
  }
  const BridgeConfigResult file = LoadBridgeConfig(tmpl);
  std::remove(tmpl);
  ASSERT_TRUE(file.ok()) << JoinErrors(file);
  EXPECT_EQ(file.config->devices.size(), 2u);
}

TEST(BridgeConfigErrors, SyntaxAndTopLevel) {
  BridgeConfigResult r = ParseBridgeConfig("{\"node_id\": \"0x1\",\n  \"links\": [}");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].rfind("parse error at line 2, column ", 0), 0u) << r.errors[0];
  r = ParseBridgeConfig("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(OneError(json::array()), "(top level): expected an object, got array");

  json doc = Minimal();
  doc["device"] = json::array();
  EXPECT_EQ(OneError(doc),
            "device: unknown key (expected node_id, links, management, metrics, devices, limits, "
            "log, identity)");
  for (const char* key : {"node_id", "links", "devices"}) {
    doc = Minimal();
    doc.erase(key);
    EXPECT_EQ(OneError(doc), std::string(key) + ": missing (required)");
  }
}

// A number no double holds is the parser's out_of_range, not parse_error: an error, not an
// exception out of ParseBridgeConfig (found by bridge_config_fuzz; tests/fuzz/corpus).
TEST(BridgeConfigErrors, NumberOutOfRange) {
  for (const char* text : {R"({"node_id": 1e999})", "1599.9E699", R"({"limits": [-1e400]})"}) {
    const BridgeConfigResult r = ParseBridgeConfig(text);
    ASSERT_FALSE(r.ok()) << text;
    ASSERT_EQ(r.errors.size(), 1u) << text;
    EXPECT_NE(r.errors[0].find("number overflow"), std::string::npos) << r.errors[0];
  }
}

TEST(BridgeConfigErrors, DuplicateKeys) {
  const std::string text = R"({
    "node_id": "0x1", "node_id": "0x2",
    "links": [{"type": "udp", "listen": "127.0.0.1:1"}],
    "devices": [{"profile": "dxgpu", "box_bdf": "01:00.0"},
                {"profile": "dxgpu", "box_bdf": "02:00.0", "box_bdf": "03:00.0"}],
    "limits": {"box_tags": 500, "box_tags": 600}
  })";
  const BridgeConfigResult r = ParseBridgeConfig(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors,
            (std::vector<std::string>{"node_id: duplicate key", "devices[1].box_bdf: duplicate key",
                                      "limits.box_tags: duplicate key"}));
}

TEST(BridgeConfigErrors, NodeId) {
  json doc = Minimal();
  for (const char* bad :
       {"0x", "0xg1", "0x12345678901234567", "b0b", "-1", "18446744073709551616"}) {
    doc["node_id"] = bad;
    EXPECT_EQ(OneError(doc), "node_id: '" + std::string(bad) +
                                 "' is not a 64-bit number (\"0x00000000b0b00001\" or decimal)");
  }
  doc["node_id"] = "0x0000000000000000";
  EXPECT_EQ(OneError(doc), "node_id: must be non-zero");
  doc["node_id"] = 0;
  EXPECT_EQ(OneError(doc), "node_id: must be non-zero");
  doc["node_id"] = -5;
  EXPECT_EQ(OneError(doc), "node_id: expected a string or an unsigned integer, got number -5");
  doc["node_id"] = "0xFFFFFFFFFFFFFFFF";
  const BridgeConfigResult r = ParseBridgeConfig(doc.dump());
  ASSERT_TRUE(r.ok()) << JoinErrors(r);
  EXPECT_EQ(r.config->node_id, UINT64_MAX);
}

TEST(BridgeConfigErrors, Links) {
  struct Case {
    json links;
    std::string error;
  };
  const std::vector<Case> cases = {
      {json::array(), "links: at least one link is needed"},
      {json::object(), "links: expected an array, got object"},
      {json::array({"udp"}), "links[0]: expected an object, got string"},
      {json::array({{{"listen", "127.0.0.1:1"}}}), "links[0].type: missing (required)"},
      {json::array({{{"type", "tcp"}}}),
       "links[0].type: 'tcp' is not a link type (udp, unix, packet)"},
      {json::array({{{"type", "udp"}}}), "links[0].listen: missing (required)"},
      {json::array({{{"type", "udp"}, {"listen", "127.0.0.1"}}}),
       "links[0].listen: '127.0.0.1' is not an IP address and port (192.0.2.1:17480, "
       "[::1]:17480; port 1..65535)"},
      {json::array({{{"type", "udp"}, {"listen", "127.0.0.1:0"}}}),
       "links[0].listen: '127.0.0.1:0' is not an IP address and port (192.0.2.1:17480, "
       "[::1]:17480; port 1..65535)"},
      {json::array({{{"type", "udp"}, {"listen", "127.0.0.1:65536"}}}),
       "links[0].listen: '127.0.0.1:65536' is not an IP address and port (192.0.2.1:17480, "
       "[::1]:17480; port 1..65535)"},
      {json::array({{{"type", "udp"}, {"listen", 17480}}}),
       "links[0].listen: expected a string, got number 17480"},
      {json::array({{{"type", "udp"}, {"listen", "127.0.0.1:1"}, {"path", "/x"}}}),
       "links[0].path: unknown key (expected type, listen, mtu)"},
      {json::array({{{"type", "udp"}, {"listen", "127.0.0.1:1"}, {"mtu", 100}}}),
       "links[0].mtu: 100 is not in 576..65535"},
      {json::array({{{"type", "udp"}, {"listen", "127.0.0.1:1"}, {"mtu", 1500.5}}}),
       "links[0].mtu: expected an integer, got number 1500.5"},
      {json::array({{{"type", "unix"}, {"peer", "/q"}}}), "links[0].path: missing (required)"},
      {json::array({{{"type", "unix"}, {"path", "/run/b.sock"}}}),
       "links[0].peer: missing (required)"},
      {json::array({{{"type", "unix"}, {"peer", "/q"}, {"path", ""}}}),
       "links[0].path: '' is not a socket path (1..107 bytes)"},
      {json::array({{{"type", "unix"}, {"peer", "/q"}, {"path", std::string(108, 'p')}}}),
       "links[0].path: '" + std::string(108, 'p') + "' is not a socket path (1..107 bytes)"},
      {json::array({{{"type", "unix"}, {"peer", "/q"}, {"path", "/a"}, {"mac", "02:00:00:00:00"}}}),
       "links[0].mac: '02:00:00:00:00' is not a MAC address (02:00:00:00:00:01)"},
      {json::array({{{"type", "unix"}, {"peer", "/q"}, {"path", "/a"}, {"interface", "eth0"}}}),
       "links[0].interface: unknown key (expected type, path, peer, mac, mtu)"},
      {json::array({{{"type", "packet"}}}), "links[0].interface: missing (required)"},
      {json::array({{{"type", "packet"}, {"interface", "a-very-long-name"}}}),
       "links[0].interface: 'a-very-long-name' is not an interface name"},
      {json::array({{{"type", "udp"}, {"listen", "127.0.0.1:1"}},
                    {{"type", "udp"}, {"listen", "127.0.0.1:1"}}}),
       "links[1].listen: '127.0.0.1:1' is also links[0].listen's"},
      {json::array({{{"type", "unix"}, {"peer", "/q"}, {"path", "/a"}},
                    {{"type", "unix"}, {"peer", "/q"}, {"path", "/a"}}}),
       "links[1].path: '/a' is also links[0].path's"},
      {json::array({{{"type", "packet"}, {"interface", "eth1"}},
                    {{"type", "packet"}, {"interface", "eth1"}}}),
       "links[1].interface: 'eth1' is also links[0].interface's"},
      {json::array({{{"type", "udp"}, {"listen", "127.0.0.1:17481"}}}),
       "management.listen: '127.0.0.1:17481' is also links[0].listen's"},
  };
  for (const Case& c : cases) {
    json doc = Minimal();
    doc["links"] = c.links;
    EXPECT_EQ(OneError(doc), c.error) << c.links.dump();
  }
}

TEST(BridgeConfigErrors, ManagementAndMetrics) {
  struct Case {
    const char* key;
    json value;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"management", json::object(),
       "management: give exactly one of listen (UDP) and unix (an AF_UNIX socket path)"},
      {"management",
       {{"listen", "127.0.0.1:1"}, {"unix", "/m"}},
       "management: give exactly one of listen (UDP) and unix (an AF_UNIX socket path)"},
      {"management",
       {{"listen", "192.0.2.1:17481"}},
       "management.listen: '192.0.2.1:17481' is not a loopback address, and the management "
       "socket is not authenticated (set management.allow_remote to accept that)"},
      {"management",
       {{"listen", "[::]:17481"}},
       "management.listen: '[::]:17481' is not a loopback address, and the management socket "
       "is not authenticated (set management.allow_remote to accept that)"},
      {"management",
       {{"listen", "[::1]:17481"}, {"allow_remote", "yes"}},
       "management.allow_remote: expected true or false, got string 'yes'"},
      {"management", {{"unix", ""}}, "management.unix: '' is not a socket path (1..107 bytes)"},
      {"management",
       {{"listen", "127.0.0.1:1"}, {"port", 1}},
       "management.port: unknown key (expected listen, unix, allow_remote, trusted_keys, "
       "insecure_unsigned)"},
      {"management", "127.0.0.1:17481", "management: expected an object, got string"},
      {"metrics", json::object(), "metrics.listen: missing (required)"},
      {"metrics",
       {{"listen", "localhost:9480"}},
       "metrics.listen: 'localhost:9480' is not an IP address and port (192.0.2.1:17480, "
       "[::1]:17480; port 1..65535)"},
      {"metrics",
       {{"listen", "[127.0.0.1]:9480"}},
       "metrics.listen: '[127.0.0.1]:9480' is not an IP address and port (192.0.2.1:17480, "
       "[::1]:17480; port 1..65535)"},
      {"metrics",
       {{"listen", "127.0.0.1:9480"}, {"path", "/metrics"}},
       "metrics.path: unknown key (expected listen)"},
  };
  for (const Case& c : cases) {
    json doc = Minimal();
    doc[c.key] = c.value;
    EXPECT_EQ(OneError(doc), c.error) << c.value.dump();
  }
  // The management socket on a unix link's path.
  json doc = Minimal();
  doc["links"].push_back({{"type", "unix"}, {"peer", "/q"}, {"path", "/run/b.sock"}});
  doc["management"] = {{"unix", "/run/b.sock"}};
  EXPECT_EQ(OneError(doc), "management.unix: '/run/b.sock' is also links[1].path's");
}

TEST(BridgeConfigErrors, Devices) {
  struct Case {
    json devices;
    std::string error;
  };
  const json ok = {{"profile", "dxgpu"}, {"box_bdf", "01:00.0"}};
  auto with = [&](const char* key, const json& v) {
    json d = ok;
    d[key] = v;
    return json::array({d});
  };
  const std::vector<Case> cases = {
      {json::array(), "devices: at least one device is needed"},
      {json::array({{{"box_bdf", "01:00.0"}}}), "devices[0].profile: missing (required)"},
      {json::array({{{"profile", "dxgpu"}}}), "devices[0].box_bdf: missing (required)"},
      {with("profile", "v100"),
       "devices[0].profile: 'v100' is not a known profile (dxgpu, a100-40g, h100-80g)"},
      {with("box_bdf", "01:00"), "devices[0].box_bdf: '01:00' is not a BDF (bus:dev.fn)"},
      {with("box_bdf", "01:20.0"), "devices[0].box_bdf: '01:20.0' is not a BDF (bus:dev.fn)"},
      {with("box_bdf", "01:00.8"), "devices[0].box_bdf: '01:00.8' is not a BDF (bus:dev.fn)"},
      {with("box_bdf", 256), "devices[0].box_bdf: expected a string, got number 256"},
      {with("memory", "256"),
       "devices[0].memory: '256' is not a size (a number and B, KiB, MiB or GiB)"},
      {with("memory", "256MB"),
       "devices[0].memory: '256MB' is not a size (a number and B, KiB, MiB or GiB)"},
      {with("memory", "0.5B"),
       "devices[0].memory: '0.5B' is not a size (a number and B, KiB, MiB or GiB)"},
      {with("memory", "0GiB"), "devices[0].memory: must be non-zero"},
      {with("bar0", "16MiB"),
       "devices[0].bar0: unknown key (expected kind, profile, box_bdf, memory)"},
      {with("kind", "nvme"),
       "devices[0].kind: 'nvme' is not a device kind (gpu, virtio-blk, virtio-gpu)"},
      {json::array({ok, ok}), "devices[1].box_bdf: '01:00.0' is also devices[0]'s"},
  };
  for (const Case& c : cases) {
    json doc = Minimal();
    doc["devices"] = c.devices;
    EXPECT_EQ(OneError(doc), c.error) << c.devices.dump();
  }
  // More devices than one INVENTORY response can report.
  json doc = Minimal();
  doc["devices"] = json::array();
  for (int i = 0; i < 1365; ++i) {
    char bdf[8];
    std::snprintf(bdf, sizeof bdf, "%02x:%02x.%x", i >> 5 & 0xff, i & 0x1f, 0);
    doc["devices"].push_back({{"profile", "dxgpu"}, {"box_bdf", bdf}});
  }
  const std::vector<std::string> errors = Errors(doc);
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0], "devices: 1365 devices: at most 1363 (what one INVENTORY response reports)");
}

TEST(BridgeConfig, VirtioDevicesBesideGpus) {
  json doc = Minimal();
  doc["devices"].push_back({{"kind", "virtio-blk"},
                            {"box_bdf", "02:00.0"},
                            {"backing", "/var/lib/dxpu/disk0.img"},
                            {"size", "64MiB"},
                            {"queues", 4},
                            {"release", "keep"}});
  doc["devices"].push_back({{"kind", "virtio-blk"},
                            {"box_bdf", "02:00.1"},
                            {"backing", "/var/lib/dxpu/disk1.img"},
                            {"size", "1GiB"}});
  doc["devices"].push_back(
      {{"kind", "virtio-gpu"}, {"box_bdf", "03:00.0"}, {"display", "800x600"}});
  doc["devices"].push_back({{"kind", "virtio-gpu"}, {"box_bdf", "04:00.0"}});
  const BridgeConfigResult r = ParseBridgeConfig(doc.dump());
  ASSERT_TRUE(r.ok()) << JoinErrors(r);
  const std::vector<DeviceConfig>& d = r.config->devices;
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].kind, DeviceKind::kGpu);
  EXPECT_EQ(d[1].kind, DeviceKind::kVirtioBlk);
  EXPECT_EQ(d[1].box_bdf, 0x0200);
  EXPECT_EQ(d[1].blk,
            (VirtioBlkSettings{"/var/lib/dxpu/disk0.img", 64u << 20, 4, DiskReleasePolicy::kKeep}));
  // Defaults: two queues, a released disk zeroed.
  EXPECT_EQ(d[2].blk, (VirtioBlkSettings{"/var/lib/dxpu/disk1.img", uint64_t{1} << 30, 2,
                                         DiskReleasePolicy::kZero}));
  EXPECT_EQ(d[3].kind, DeviceKind::kVirtioGpu);
  EXPECT_EQ(d[3].display, (VirtioGpuSettings{800, 600}));
  EXPECT_EQ(d[4].display, (VirtioGpuSettings{1024, 768}));
}

TEST(BridgeConfigErrors, VirtioDevices) {
  const json blk = {{"kind", "virtio-blk"},
                    {"box_bdf", "02:00.0"},
                    {"backing", "/srv/disk.img"},
                    {"size", "16MiB"}};
  auto blk_with = [&](const char* key, const json& v) {
    json d = blk;
    if (v.is_null())
      d.erase(key);
    else
      d[key] = v;
    return d;
  };
  const json gpu = {{"kind", "virtio-gpu"}, {"box_bdf", "03:00.0"}};
  auto gpu_with = [&](const char* key, const json& v) {
    json d = gpu;
    d[key] = v;
    return d;
  };
  struct Case {
    json device;
    std::string error;
  };
  const std::vector<Case> cases = {
      {blk_with("backing", nullptr), "devices[1].backing: missing (required)"},
      {blk_with("size", nullptr), "devices[1].size: missing (required)"},
      {blk_with("backing", "disk.img"), "devices[1].backing: 'disk.img' is not an absolute path"},
      {blk_with("size", "1000B"),
       "devices[1].size: 1000 bytes is not a whole number of 512-byte sectors"},
      {blk_with("size", "0MiB"), "devices[1].size: must be non-zero"},
      {blk_with("queues", 0), "devices[1].queues: 0 is not in 1..64"},
      {blk_with("release", "shred"), "devices[1].release: 'shred' is neither keep nor zero"},
      {blk_with("profile", "dxgpu"),
       "devices[1].profile: unknown key (expected kind, box_bdf, backing, size, queues, "
       "release)"},
      {gpu_with("display", "1024*768"),
       "devices[1].display: '1024*768' is not WIDTHxHEIGHT with each 16..4095"},
      {gpu_with("display", "8x8"),
       "devices[1].display: '8x8' is not WIDTHxHEIGHT with each 16..4095"},
      {gpu_with("memory", "1GiB"),
       "devices[1].memory: unknown key (expected kind, box_bdf, display)"},
  };
  for (const Case& c : cases) {
    json doc = Minimal();
    doc["devices"].push_back(c.device);
    EXPECT_EQ(OneError(doc), c.error) << c.device.dump();
  }
  // Two disks on one backing file.
  json doc = Minimal();
  doc["devices"].push_back(blk);
  doc["devices"].push_back(blk_with("box_bdf", "02:00.1"));
  EXPECT_EQ(OneError(doc), "devices[2].backing: '/srv/disk.img' is also devices[1]'s backing file");
}

TEST(BridgeConfigErrors, Limits) {
  struct Case {
    json limits;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{{"max_hosts", 0}}, "limits.max_hosts: 0 is not in 1..65534"},
      {{{"max_hosts", 65535}}, "limits.max_hosts: 65535 is not in 1..65534"},
      {{{"max_hosts", -1}}, "limits.max_hosts: -1 is not in 1..65534"},
      {{{"max_hosts", "64"}}, "limits.max_hosts: expected an integer, got string '64'"},
      {{{"box_tags", 1025}}, "limits.box_tags: 1025 is not in 1..1024"},
      {{{"max_pending_per_host", 0}}, "limits.max_pending_per_host: 0 is not in 1..1024"},
      {{{"box_tags", 32}}, "limits.max_pending_per_host: 64 is more than limits.box_tags (32)"},
      {{{"completion_timeout", "50"}},
       "limits.completion_timeout: '50' has no time unit (ns, us, ms or s)"},
      {{{"completion_timeout", "0ms"}}, "limits.completion_timeout: must be non-zero"},
      {{{"completion_timeout", 50}}, "limits.completion_timeout: expected a string, got number 50"},
      {{{"tag_quarantine", "1h"}},
       "limits.tag_quarantine: unknown time unit 'h' (ns, us, ms or s)"},
      {{{"link_down", "5ms"}},
       "limits.link_down: '5ms' is too short: at least 10ms (twice the session's largest RTO, "
       "more than its keepalive)"},
      {{{"keepalive", "1ms"}},
       "limits.keepalive: unknown key (expected max_hosts, box_tags, max_pending_per_host, "
       "completion_timeout, tag_quarantine, link_down)"},
  };
  for (const Case& c : cases) {
    json doc = Minimal();
    doc["limits"] = c.limits;
    EXPECT_EQ(OneError(doc), c.error) << c.limits.dump();
  }
  json doc = Minimal();
  doc["limits"] = {{"link_down", "10ms"}};
  EXPECT_TRUE(ParseBridgeConfig(doc.dump()).ok()) << "the shortest allowed";
}

TEST(BridgeConfigErrors, Log) {
  json doc = Minimal();
  doc["log"] = {{"level", "verbose"}};
  EXPECT_EQ(OneError(doc),
            "log.level: 'verbose' is not a level (trace, debug, info, warn, error, critical, off)");
  doc["log"] = {{"format", "xml"}};
  EXPECT_EQ(OneError(doc), "log.format: 'xml' is not a format (text, json)");
  doc["log"] = {{"file", "/var/log/b"}};
  EXPECT_EQ(OneError(doc), "log.file: unknown key (expected level, format)");
  for (const auto& [name, level] : std::vector<std::pair<std::string, spdlog::level::level_enum>>{
           {"trace", spdlog::level::trace},
           {"warn", spdlog::level::warn},
           {"error", spdlog::level::err},
           {"critical", spdlog::level::critical},
           {"off", spdlog::level::off}}) {
    doc["log"] = {{"level", name}};
    const BridgeConfigResult r = ParseBridgeConfig(doc.dump());
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(r.config->log.level, level) << name;
  }
}

TEST(BridgeConfig, IdentityListsHostKeysBoundToNodes) {
  json doc = Minimal();
  const std::string k1(64, 'a'), k2 = "DXPU-FABRIC-PUBLIC-KEY-V1 " + std::string(64, 'b');
  doc["identity"] = {{"key", "/etc/dxpu/bridge.key"},
                     {"hosts", {{{"node", "0x1111"}, {"key", k1}}, {{"node", "42"}, {"key", k2}}}},
                     {"hello_burst", 7}};
  const BridgeConfigResult r = ParseBridgeConfig(doc.dump());
  ASSERT_TRUE(r.ok()) << JoinErrors(r);
  ASSERT_TRUE(r.config->identity.has_value());
  const IdentityConfig& id = *r.config->identity;
  EXPECT_EQ(id.key_path, "/etc/dxpu/bridge.key");
  ASSERT_EQ(id.hosts.size(), 2u);
  EXPECT_EQ(id.hosts[0].node_id, 0x1111u);
  EXPECT_EQ(id.hosts[0].public_key[0], 0xaa);
  EXPECT_EQ(id.hosts[1].node_id, 42u);
  EXPECT_EQ(id.hosts[1].public_key[31], 0xbb);
  EXPECT_EQ(id.hello_burst, 7u);
  EXPECT_EQ(id.hellos_per_second, 20u);
  EXPECT_FALSE(ParseBridgeConfig(Minimal().dump()).config->identity.has_value());
  // Only a key: valid, the pool manager provisions the hosts (HOST_KEY_SET).
  doc["identity"] = {{"key", "/etc/dxpu/bridge.key"}};
  const BridgeConfigResult only_key = ParseBridgeConfig(doc.dump());
  ASSERT_TRUE(only_key.ok()) << JoinErrors(only_key);
  ASSERT_TRUE(only_key.config->identity.has_value());
  EXPECT_TRUE(only_key.config->identity->hosts.empty());
}

TEST(BridgeConfigErrors, Identity) {
  json doc = Minimal();
  const std::string k(64, 'c');
  doc["identity"] = {{"hosts", json::array()}};
  EXPECT_EQ(OneError(doc), "identity.key: missing (required)");
  doc["identity"] = {{"key", "/k"}, {"hosts", {{{"node", "0x0"}, {"key", k}}}}};
  EXPECT_EQ(OneError(doc), "identity.hosts[0].node: '0x0' is not a non-zero 64-bit node ID");
  doc["identity"] = {{"key", "/k"}, {"hosts", {{{"node", "1"}, {"key", "abcd"}}}}};
  EXPECT_EQ(
      OneError(doc),
      "identity.hosts[0].key: a public key is 64 hexadecimal digits (dxpu keygen writes one)");
  doc["identity"] = {{"key", "/k"},
                     {"hosts", {{{"node", "1"}, {"key", k}}, {{"node", "2"}, {"key", k}}}}};
  EXPECT_EQ(OneError(doc), "identity.hosts[1]: the same key is listed twice");
  doc["identity"] = {{"key", "/k"}, {"hosts", json::array()}, {"hello_burst", 0}};
  EXPECT_EQ(OneError(doc), "identity.hello_burst: 0 is not in 1..100000");
}

// Every error is reported, not just the first.
TEST(BridgeConfigErrors, AllErrorsAtOnce) {
  json doc = Minimal();
  doc["node_id"] = "0x0";
  doc["links"][0]["listen"] = "nowhere";
  doc["devices"][0]["box_bdf"] = "1:0.0";
  doc["log"] = {{"format", "yaml"}};
  EXPECT_EQ(Errors(doc),
            (std::vector<std::string>{
                "node_id: must be non-zero",
                "links[0].listen: 'nowhere' is not an IP address and port (192.0.2.1:17480, "
                "[::1]:17480; port 1..65535)",
                "devices[0].box_bdf: '1:0.0' is not a BDF (bus:dev.fn)",
                "log.format: 'yaml' is not a format (text, json)"}));
}

TEST(BridgeConfigValues, Bdf) {
  EXPECT_EQ(ParseBdf("00:00.0"), 0x0000);
  EXPECT_EQ(ParseBdf("01:00.0"), 0x0100);
  EXPECT_EQ(ParseBdf("ff:1f.7"), 0xffff);
  EXPECT_EQ(ParseBdf("3A:02.1"), 0x3a11);  // bus 0x3a, device 2, function 1
  for (const char* bad : {"", "01:00", "1:00.0", "01:0.0", "01:00.00", "0000:01:00.0", "01-00.0",
                          "01:00:0", "g1:00.0", "01:20.0", "01:00.8", "01:00.a"}) {
    EXPECT_FALSE(ParseBdf(bad).has_value()) << bad;
  }
}

TEST(BridgeConfigValues, ByteSize) {
  EXPECT_EQ(ParseByteSize("0B"), 0u);
  EXPECT_EQ(ParseByteSize("4096B"), 4096u);
  EXPECT_EQ(ParseByteSize("4KiB"), 4096u);
  EXPECT_EQ(ParseByteSize("256MiB"), 256u << 20);
  EXPECT_EQ(ParseByteSize("1.5GiB"), 3u << 29);
  EXPECT_EQ(ParseByteSize("0.5KiB"), 512u);
  EXPECT_EQ(ParseByteSize("17179869183GiB"), 17179869183ull << 30);  // just below 2^64
  for (const char* bad : {"", "B", "256", "256M", "256MB", "256mib", "1.5B", ".5GiB", "5.GiB",
                          "1..5GiB", "-1GiB", "1 GiB", "17179869184GiB", "1e3B"}) {
    EXPECT_FALSE(ParseByteSize(bad).has_value()) << bad;
  }
}

TEST(BridgeConfigValues, IpPort) {
  EXPECT_EQ(ParseIpPort("127.0.0.1:9480"), Ip("127.0.0.1", 9480));
  EXPECT_EQ(ParseIpPort("0.0.0.0:1"), Ip("0.0.0.0", 1));
  EXPECT_EQ(ParseIpPort("[::1]:65535"), Ip("::1", 65535));
  EXPECT_EQ(ParseIpPort("[2001:db8::1]:17480"), Ip("2001:db8::1", 17480));
  EXPECT_EQ(ParseIpPort("[fe80::1%2]:17480"), Ip("fe80::1%2", 17480));
  for (const char* bad : {"", ":80", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                          "127.0.0.1:-1", "127.0.0.1:08x", "::1:80", "[::1]80", "[::1]",
                          "[127.0.0.1]:80", "localhost:80", "256.0.0.1:80", "127.0.0.1:000080"}) {
    EXPECT_FALSE(ParseIpPort(bad).has_value()) << bad;
  }
}

TEST(BridgeConfigValues, Mac) {
  EXPECT_EQ(ParseMac("02:00:00:00:00:01"), (link::MacAddress{2, 0, 0, 0, 0, 1}));
  EXPECT_EQ(ParseMac("aa:BB:cc:DD:ee:FF"), (link::MacAddress{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}));
  for (const char* bad : {"", "02:00:00:00:00", "02:00:00:00:00:01:02", "02-00-00-00-00-01",
                          "0g:00:00:00:00:01", "2:00:00:00:00:001"}) {
    EXPECT_FALSE(ParseMac(bad).has_value()) << bad;
  }
}

TEST(BridgeConfig, LinkTypeNames) {
  EXPECT_EQ(LinkTypeName(LinkType::kUdp), "udp");
  EXPECT_EQ(LinkTypeName(LinkType::kUnix), "unix");
  EXPECT_EQ(LinkTypeName(LinkType::kPacket), "packet");
}

}  // namespace
}  // namespace dxpu::bridge
