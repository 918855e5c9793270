// daemon_test.cc - the real dxpu-bridge process: started from a configuration file on
// loopback, driven through its management socket, reached by a host over UDP, scraped on its
// metrics endpoint, stopped with SIGTERM (every host hears CLOSE, exit status 0).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bridge-fw/management_client.h"
#include "bridge_process.h"
#include "core/dxpu_mgmt.h"
#include "fabric/link_driver.h"
#include "gpu/device_profile.h"
#include "link/udp_link.h"
#include "link/unix_dgram_link.h"
#include "link_host.h"
#include "management_keys.h"
#include "test_host.h"

namespace dxpu::test {
namespace {

namespace fs = std::filesystem;

using Daemon = BridgeProcess;

TEST(BridgeDaemon, ServesHostsManagementAndMetricsThenShutsDownCleanly) {
  const uint16_t dxfp_port = FreePort(SOCK_DGRAM);
  const uint16_t metrics_port = FreePort(SOCK_STREAM);
  const std::string mgmt = FreshSocketPath("bridge-test-mgmt");
  const TestManagementKey key = MakeTestManagementKey();
  const std::string text = R"({
    "node_id": "0xb0c5",
    "links": [{"type": "udp", "listen": "127.0.0.1:)" +
                           std::to_string(dxfp_port) + R"("}],
    "management": {"unix": ")" +
                           mgmt + R"(", "trusted_keys": [")" + key.PublicHex() + R"("]},
    "metrics": {"listen": "127.0.0.1:)" +
                           std::to_string(metrics_port) + R"("},
    "devices": [{"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "16MiB"},
                {"profile": "a100-40g", "box_bdf": "02:00.0", "memory": "16MiB"}],
    "limits": {"link_down": "2s"}
  })";
  Daemon daemon(text);
  ASSERT_TRUE(daemon.Start());
  ASSERT_TRUE(WaitForPath(mgmt)) << "the daemon did not come up";
  EXPECT_EQ(fs::status(mgmt).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);

  const bridge::ManagementClient manager(link::LinkAddress::Unix(mgmt), 1000, 3, key.signer);
  EXPECT_TRUE(manager.Assign(1, 0x0100, 0xa1).ok());

  LinkHost h(0xa1, link::UdpLink::Open("127.0.0.1", 0).link,
             *link::LinkAddress::FromIp("127.0.0.1", dxfp_port));
  ASSERT_TRUE(h.ok());
  const gpu::DeviceProfile a100 = *gpu::FindProfile("a100-40g");
  EXPECT_EQ(h.ConnectAndReadIds(0x0100), a100.vendor_id | (uint32_t{a100.device_id} << 16));

  const bridge::ManagementReply reply = manager.Status();
  ASSERT_TRUE(reply.ok()) << reply.Problem();
  const dxpu_mgmt_msg& s = reply.msg;
  EXPECT_EQ(s.body.status_report.device_count, 2);
  EXPECT_EQ(s.body.status_report.host_count, 1);
  EXPECT_FALSE(bridge::DecodeInventory(reply).has_value());  // a STATUS answer is none

  // INVENTORY: the bridge's node ID, and each device's profile as configured.
  const bridge::ManagementReply inventory_reply = manager.Inventory();
  ASSERT_TRUE(inventory_reply.ok()) << inventory_reply.Problem();
  std::string why;
  const std::optional<bridge::BridgeInventory> inventory =
      bridge::DecodeInventory(inventory_reply, &why);
  ASSERT_TRUE(inventory.has_value()) << why;
  EXPECT_EQ(inventory->node_id, 0xb0c5U);
  ASSERT_EQ(inventory->devices.size(), 2U);
  EXPECT_EQ(inventory->devices[0].profile, "dxgpu");
  EXPECT_EQ(inventory->devices[0].box_bdf, 0x0100);
  EXPECT_EQ(inventory->devices[1].device, 1);
  EXPECT_EQ(inventory->devices[1].profile, "a100-40g");
  EXPECT_EQ(inventory->devices[1].box_bdf, 0x0200);
  EXPECT_EQ(inventory->devices[1].vendor, a100.vendor_id);
  EXPECT_EQ(inventory->devices[1].device_id, a100.device_id);
  EXPECT_EQ(inventory->devices[1].memory_bytes, uint64_t{16} << 20);

  const std::string metrics = HttpGet(metrics_port, "/metrics");
  EXPECT_NE(metrics.find("200 OK"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("dxpu_bridge_sessions_opened_total 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("dxpu_bridge_device_assigned{device=\"1\""), std::string::npos) << metrics;

  EXPECT_EQ(daemon.Terminate(), 0);
  // The host heard CLOSE: its session went down at once, not by timeout.
  EXPECT_TRUE(h.RunUntil([&] { return h.host().down(); }, 500));
  EXPECT_FALSE(fs::exists(mgmt));
}

// The link QEMU's -netdev dgram speaks: AF_UNIX datagrams carrying Ethernet frames.
TEST(BridgeDaemon, ServesAHostOverAnAfUnixLink) {
  const std::string base = "/tmp/dxpu-bridge-test-" + std::to_string(getpid());
  const std::string bridge_sock = base + ".dxfp", host_sock = base + ".host";
  const std::string mgmt = base + ".mgmt2";
  const TestManagementKey key = MakeTestManagementKey();
  const std::string text = R"({
    "node_id": "0xb0c6",
    "links": [{"type": "unix", "path": ")" +
                           bridge_sock + R"(", "peer": ")" + host_sock +
                           R"(", "mac": "02:00:00:00:00:b0"}],
    "management": {"unix": ")" +
                           mgmt + R"(", "trusted_keys": [")" + key.PublicHex() + R"("]},
    "devices": [{"profile": "h100-80g", "box_bdf": "01:00.0", "memory": "16MiB"}],
    "limits": {"link_down": "2s"},
    "log": {"format": "json"}
  })";
  Daemon daemon(text);
  ASSERT_TRUE(daemon.Start());
  ASSERT_TRUE(WaitForPath(mgmt)) << "the daemon did not come up";
  const bridge::ManagementReply assigned =
      bridge::ManagementClient(link::LinkAddress::Unix(mgmt), 1000, 3, key.signer)
          .Assign(0, 0x0200, 0xa2);
  ASSERT_TRUE(assigned.ok()) << assigned.Problem();

  link::UnixDgramLink::Options o;
  o.local_path = host_sock;
  o.remote_path = bridge_sock;
  o.mac = {0x02, 0, 0, 0, 0, 0x0a};
  auto host_link = link::UnixDgramLink::Open(o);
  ASSERT_TRUE(host_link.ok()) << host_link.error.message();
  LinkHost h(0xa2, std::move(host_link.link), link::LinkAddress::Mac({0x02, 0, 0, 0, 0, 0xb0}));
  const gpu::DeviceProfile h100 = *gpu::FindProfile("h100-80g");
  EXPECT_EQ(h.ConnectAndReadIds(0x0200), h100.vendor_id | (uint32_t{h100.device_id} << 16));
  EXPECT_EQ(daemon.Terminate(), 0);
  EXPECT_TRUE(h.RunUntil([&] { return h.host().down(); }, 500));
}

// Issue 32 item 3: a bridge that trusts a management key takes state-changing requests only
// signed by it, from the newest epoch, each once; read-only ones from anyone. Every refusal
// is answered with its reason and counted in the metrics.
TEST(BridgeDaemon, StateChangingRequestsMustBeSignedFreshAndFromTheNewestEpoch) {
  const uint16_t dxfp_port = FreePort(SOCK_DGRAM);
  const uint16_t metrics_port = FreePort(SOCK_STREAM);
  const std::string mgmt = FreshSocketPath("bridge-test-auth");
  const TestManagementKey key = MakeTestManagementKey(1000);
  const TestManagementKey stranger = MakeTestManagementKey(1000);
  const std::string text = R"({"node_id": "0xb0c7",
    "links": [{"type": "udp", "listen": "127.0.0.1:)" +
                           std::to_string(dxfp_port) + R"("}],
    "management": {"unix": ")" +
                           mgmt + R"(", "trusted_keys": [")" + key.PublicHex() +
                           R"("]},
    "metrics": {"listen": "127.0.0.1:)" +
                           std::to_string(metrics_port) + R"("},
    "devices": [{"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "16MiB"},
                {"profile": "dxgpu", "box_bdf": "02:00.0", "memory": "16MiB"}]})";
  Daemon daemon(text);
  ASSERT_TRUE(daemon.Start());
  ASSERT_TRUE(WaitForPath(mgmt)) << daemon.LogTail();
  const link::LinkAddress at = link::LinkAddress::Unix(mgmt);

  // Unsigned: a STATUS is answered, an ASSIGN refused; so is one signed by an unknown key, and
  // one whose signature does not match its bytes.
  const bridge::ManagementClient anyone(at, 1000, 1);
  EXPECT_TRUE(anyone.Status().ok());
  EXPECT_EQ(anyone.Assign(0, 0x0100, 0xa1).msg.status, DXPU_MGMT_UNAUTHENTICATED);
  EXPECT_EQ(
      bridge::ManagementClient(at, 1000, 1, stranger.signer).Assign(0, 0x0100, 0xa1).msg.status,
      DXPU_MGMT_UNAUTHENTICATED);
  std::vector<uint8_t> forged = SignedAssign(*key.signer, 0, 0xa1);
  forged[DXPU_MGMT_HDR_SIZE + 8] ^= 0x01;  // another node, under the manager's signature
  EXPECT_EQ(SendManagementDatagram(mgmt, forged), DXPU_MGMT_UNAUTHENTICATED);

  // Signed by the trusted key: done. The same datagram again (a capture replayed): refused.
  const std::vector<uint8_t> assign = SignedAssign(*key.signer, 0, 0xa1);
  EXPECT_EQ(SendManagementDatagram(mgmt, assign), DXPU_MGMT_OK);
  EXPECT_EQ(SendManagementDatagram(mgmt, assign), DXPU_MGMT_REPLAYED);

  // A DMA window of 2^63 bytes from address 0 is refused, signed or not.
  const bridge::ManagementClient manager(at, 1000, 3, key.signer);
  EXPECT_EQ(manager.Grant(0, 0, 0, uint64_t{1} << 63).msg.status, DXPU_MGMT_BAD_ARGUMENT);
  EXPECT_TRUE(manager.Grant(0, 1ull << 32, 1ull << 32, 1ull << 20).ok());

  // A restarted manager (a newer epoch) fences out the old one: the old one's next request,
  // and its earlier ones replayed, are refused as stale.
  const std::shared_ptr<bridge::ManagementSigner> newer = key.AtEpoch(2000);
  EXPECT_TRUE(bridge::ManagementClient(at, 1000, 3, newer).Release(0).ok());
  EXPECT_EQ(manager.Assign(1, 0x0200, 0xa1).msg.status, DXPU_MGMT_STALE_EPOCH);
  EXPECT_EQ(SendManagementDatagram(mgmt, assign), DXPU_MGMT_STALE_EPOCH);
  const bridge::ManagementReply status = anyone.Status();
  ASSERT_TRUE(status.ok());
  dxpu_mgmt_device_entry e{};
  ASSERT_TRUE(dxpu_mgmt_status_entry(&status.msg.body.status_report, 1, &e));
  EXPECT_EQ(e.state, DXPU_MGMT_DEV_FREE) << "a stale manager's ASSIGN took effect";

  const std::string metrics = HttpGet(metrics_port, "/metrics");
  for (const char* line : {"dxpu_bridge_management_auth_refused_total{reason=\"unsigned\"} 1",
                           "dxpu_bridge_management_auth_refused_total{reason=\"unknown-key\"} 1",
                           "dxpu_bridge_management_auth_refused_total{reason=\"bad-signature\"} 1",
                           "dxpu_bridge_management_auth_refused_total{reason=\"replayed\"} 1",
                           "dxpu_bridge_management_auth_refused_total{reason=\"stale-epoch\"} 2"})
    EXPECT_NE(metrics.find(line), std::string::npos) << line << "\n" << metrics;
  EXPECT_NE(daemon.LogTail().find("refused assign request"), std::string::npos);
  EXPECT_EQ(daemon.Terminate(), 0);
}

TEST(BridgeDaemon, RefusesABadConfigurationNamingTheField) {
  Daemon daemon(R"({"node_id": "0x1", "links": [{"type": "udp", "listen": "127.0.0.1:1"}],
                   "management": {"listen": "127.0.0.1:1"},
                   "devices": [{"profile": "no-such-gpu", "box_bdf": "01:00.0"}]})");
  // Its stdout and stderr, through a pipe.
  std::array<int, 2> pipe_fds{};
  ASSERT_EQ(pipe(pipe_fds.data()), 0);
  const std::string config = (daemon.dir() / "bridge.json").string();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    execl(DXPU_BRIDGE_BIN, DXPU_BRIDGE_BIN, "--check", "--config", config.c_str(), nullptr);
    _exit(127);
  }
  close(pipe_fds[1]);
  std::string out;
  std::array<char, 4096> buf{};
  for (ssize_t n = 0; (n = read(pipe_fds[0], buf.data(), buf.size())) > 0;)
    out.append(buf.data(), static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;
  EXPECT_NE(out.find("devices[0].profile"), std::string::npos) << out;
}

// A second bridge on addresses the first holds exits 1 naming the address and what to do, and
// the first keeps serving (issue 29: every daemon refuses a port it cannot own).
TEST(BridgeDaemon, SecondBridgeOnTakenAddressesRefusesToStart) {
  const uint16_t dxfp_port = FreePort(SOCK_DGRAM);
  const std::string mgmt = FreshSocketPath("bridge-test-taken");
  const std::string text = R"({"node_id": "0xb0c6",
    "links": [{"type": "udp", "listen": "127.0.0.1:)" +
                           std::to_string(dxfp_port) + R"("}],
    "management": {"unix": ")" +
                           mgmt + R"("},
    "devices": [{"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "16MiB"}]})";
  Daemon first(text);
  ASSERT_TRUE(first.Start());
  const bridge::ManagementClient manager(link::LinkAddress::Unix(mgmt));
  bridge::ManagementReply status;
  for (int i = 0; i < 50 && !(status = manager.Status()).ok(); ++i) usleep(100 * 1000);
  ASSERT_TRUE(status.ok()) << first.LogTail();

  Daemon second(text);
  ASSERT_TRUE(second.Start());
  for (int i = 0; i < 50 && second.Alive(); ++i) usleep(100 * 1000);
  ASSERT_FALSE(second.Alive()) << "a second bridge started on the first's addresses";
  const std::string log = second.LogTail();
  EXPECT_NE(log.find("Address already in use"), std::string::npos) << log;
  EXPECT_NE(log.find("127.0.0.1:" + std::to_string(dxfp_port)), std::string::npos) << log;
  EXPECT_NE(log.find("a second dxpu-bridge on this machine?"), std::string::npos) << log;
  EXPECT_NE(log.find("other addresses in"), std::string::npos) << log;

  EXPECT_TRUE(manager.Status().ok()) << "the first bridge stopped answering";

  // The same with only the management socket's path shared: the second bridge must not take
  // the first's socket file over (it removed it as "stale" and bound its own).
  const uint16_t other_port = FreePort(SOCK_DGRAM);
  std::string same_socket = text;
  same_socket.replace(same_socket.find(std::to_string(dxfp_port)), std::to_string(dxfp_port).size(),
                      std::to_string(other_port));
  Daemon third(same_socket);
  ASSERT_TRUE(third.Start());
  for (int i = 0; i < 50 && third.Alive(); ++i) usleep(100 * 1000);
  ASSERT_FALSE(third.Alive()) << "a second bridge took the first's management socket";
  const std::string third_log = third.LogTail();
  EXPECT_NE(third_log.find("management unix:" + mgmt), std::string::npos) << third_log;
  EXPECT_NE(third_log.find("ddress already in use"), std::string::npos) << third_log;
  const bridge::ManagementReply inventory = manager.Inventory();
  ASSERT_TRUE(inventory.ok()) << "the first bridge lost its management socket";
  EXPECT_EQ(bridge::DecodeInventory(inventory)->node_id, 0xb0c6U);

  // A socket file nobody serves any more (the first bridge killed) is stale and taken over.
  first.Kill();
  ASSERT_TRUE(fs::exists(mgmt));
  ASSERT_TRUE(third.Start());
  ASSERT_TRUE(WaitForPath(mgmt));
  bridge::ManagementReply after;
  for (int i = 0; i < 50 && !(after = manager.Status()).ok(); ++i) usleep(100 * 1000);
  EXPECT_TRUE(after.ok()) << third.LogTail();
  EXPECT_EQ(third.Terminate(), 0);
}

}  // namespace
}  // namespace dxpu::test
