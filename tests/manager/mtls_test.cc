// mtls_test.cc - the control plane over TLS with client certificates and roles (issue 32 item
// 3; docs/manager.md "TLS and roles"), with the real daemons on loopback: a dxpu-manager, the
// agents of two tenant hosts (h1, h2) and a dxpu-bridge with two GPUs. Every certificate is made
// here, at run time, by manager/pki.h (the code behind `dxpu pki`); none is in the repository.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bridge_process.h"
#include "child_process.h"
#include "daemon_test_util.h"
#include "management_keys.h"
#include "manager/pki.h"
#include "manager/tls.h"
#include "pool_bridge_config.h"

namespace dxpu::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The pool's CA in dir/pki, a stranger CA in dir/other, and the certificates of each identity.
class Pki {
 public:
  explicit Pki(const std::filesystem::path& dir) : dir_(dir / "pki"), other_(dir / "other") {
    EXPECT_EQ(manager::InitPoolCa(dir_.string(), 1), "");
    EXPECT_EQ(manager::InitPoolCa(other_.string(), 1), "");
    for (const char* cn : {"manager", "host:h1", "host:h2"}) Issue(dir_, cn, {"127.0.0.1"});
    for (const char* cn : {"operator", "reader", "nobody", "host:h3"}) Issue(dir_, cn, {});
    Issue(other_, "operator", {});
  }

  // The files of `cn`'s certificate from the pool's CA (or the stranger CA), the pool's CA to
  // verify servers with.
  manager::TlsFiles Of(const std::string& cn, bool stranger = false) const {
    const std::filesystem::path& d = stranger ? other_ : dir_;
    const std::string stem = (d / manager::CertificateStem(cn)).string();
    return manager::TlsFiles{stem + ".crt", stem + ".key", ca()};
  }
  std::string ca() const { return (dir_ / "ca.crt").string(); }
  std::string other_ca() const { return (other_ / "ca.crt").string(); }

 private:
  static void Issue(const std::filesystem::path& d, const std::string& cn,
                    const std::vector<std::string>& sans) {
    manager::IssuedFiles files;
    EXPECT_EQ(manager::IssuePoolCertificate(d.string(), cn, sans, 1, &files), "") << cn;
  }

  std::filesystem::path dir_, other_;
};

// A request with `tls` as the client's certificate; nullopt when no answer came (a refused
// handshake).
std::optional<Answer> Call(const std::string& url, const manager::TlsFiles& tls,
                           const std::string& method, const std::string& path,
                           const json& body = nullptr) {
  const std::unique_ptr<httplib::Client> c = manager::MakeClient(url, tls);
  c->set_connection_timeout(std::chrono::seconds(2));
  c->set_read_timeout(std::chrono::seconds(30));
  httplib::Result r = method == "GET"    ? c->Get(path)
                      : method == "POST" ? c->Post(path, body.dump(), "application/json")
                                         : c->Delete(path);
  if (!r) return std::nullopt;
  return Answer{r->status, json::parse(r->body, nullptr, false)};
}

// The manager, h1's and h2's agents, all over TLS, and a bridge with two GPUs.
class TlsPool {
 public:
  TlsPool() {
    char tmpl[] = "/tmp/dxpu-mtls-XXXXXX";
    dir_ = mkdtemp(tmpl);
    pki_ = std::make_unique<Pki>(dir_);
    manager_port_ = FreePort(SOCK_STREAM);
    manager_ = std::make_unique<ChildProcess>(
        Daemon(DXPU_MANAGER_BIN, "manager",
               {"--port", std::to_string(manager_port_), "--db", (dir_ / "pool.db").string(),
                "--bridge-socket-dir", (dir_ / "sockets").string(), "--probe-interval", "200ms",
                "--management-key", key_.WriteFiles((dir_ / "management").string())}),
        dir_ / "manager.log");
    manager_->Start();
    for (const auto& [host, node] : {std::pair{"h1", "0xa1"}, std::pair{"h2", "0xa2"}}) {
      agent_ports_.push_back(FreePort(SOCK_STREAM));
      agents_.push_back(std::make_unique<ChildProcess>(
          Daemon(DXPU_AGENT_BIN, fmt::format("host:{}", host),
                 {"--host", host, "--node-id", node, "--port", std::to_string(agent_ports_.back()),
                  "--manager", manager_url(), "--mode", "userspace", "--heartbeat", "1s"}),
          dir_ / fmt::format("agent-{}.log", host)));
      agents_.back()->Start();
    }
    EXPECT_TRUE(WaitFor([&] {
      const std::optional<Answer> h = Call(manager_url(), pki().Of("operator"), "GET", "/v1/hosts");
      return h && h->status == 200 && h->body.size() == 2;
    })) << Logs();
  }
  ~TlsPool() {
    for (auto& a : agents_) a->Kill();
    manager_->Kill();
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "%s\n", Logs().c_str());
    } else {
      std::filesystem::remove_all(dir_);
    }
  }

  // Adds a bridge with two GPUs as box-a (by the operator).
  void AddBox() {
    const uint16_t udp = FreePort(SOCK_DGRAM), mgmt = FreePort(SOCK_DGRAM);
    bridge_ =
        std::make_unique<BridgeProcess>(PoolBridgeConfig(0xb0b0, udp, mgmt, {key_.PublicHex()}));
    ASSERT_TRUE(bridge_->Start());
    const json box = {{"id", "box-a"},
                      {"management", fmt::format("udp:127.0.0.1:{}", mgmt)},
                      {"fabric", fmt::format("udp:127.0.0.1:{}", udp)}};
    std::optional<Answer> added;
    ASSERT_TRUE(WaitFor([&] {
      added = Call(manager_url(), pki().Of("operator"), "POST", "/v1/boxes", box);
      return added && added->status == 201;
    })) << (added ? added->body.dump() : "no answer");
  }

  std::string manager_url() const { return fmt::format("https://127.0.0.1:{}", manager_port_); }
  uint16_t manager_port() const { return manager_port_; }
  std::string agent_url(size_t i) const {
    return fmt::format("https://127.0.0.1:{}", agent_ports_.at(i));
  }
  const Pki& pki() const { return *pki_; }
  ChildProcess& manager() { return *manager_; }
  std::vector<json> AuditEntries() const {
    std::vector<json> out;
    std::ifstream in(dir_ / "pool.db.audit.jsonl");
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }

 private:
  std::vector<std::string> Daemon(const char* binary, const std::string& cn,
                                  std::vector<std::string> args) const {
    const manager::TlsFiles f = pki().Of(cn);
    args.insert(args.begin(), binary);
    args.insert(args.end(), {"--tls-cert", f.cert, "--tls-key", f.key, "--tls-ca", f.ca});
    return args;
  }
  std::string Logs() const {
    std::string out = "--- dxpu-manager:\n" + manager_->LogTail();
    for (const auto& a : agents_) out += "\n--- dxpu-agent:\n" + a->LogTail();
    if (bridge_) out += "\n--- dxpu-bridge:\n" + bridge_->LogTail();
    return out;
  }

  std::filesystem::path dir_;
  TestManagementKey key_ = MakeTestManagementKey();
  std::unique_ptr<Pki> pki_;
  uint16_t manager_port_ = 0;
  std::vector<uint16_t> agent_ports_;
  std::unique_ptr<ChildProcess> manager_;
  std::vector<std::unique_ptr<ChildProcess>> agents_;
  std::unique_ptr<BridgeProcess> bridge_;
};

// Without a client certificate, with one of another CA, or in plain HTTP, the manager and the
// agents answer nothing: the handshake is refused. The pool's certificates are answered.
TEST(Mtls, TheHandshakeRefusesClientsWithoutACertificateOfThePoolsCa) {
  TlsPool pool;
  for (const std::string& url : {pool.manager_url(), pool.agent_url(0)}) {
    SCOPED_TRACE(url);
    const manager::TlsFiles none{"", "", pool.pki().ca()};
    EXPECT_FALSE(Call(url, none, "GET", "/healthz").has_value());
    EXPECT_FALSE(Call(url, pool.pki().Of("operator", true), "GET", "/healthz").has_value());
    const std::string plain = "http://" + url.substr(std::string("https://").size());
    const std::optional<Answer> in_clear = Call(plain, {}, "GET", "/healthz");
    EXPECT_TRUE(!in_clear || in_clear->status != 200);
    const std::optional<Answer> ok = Call(url, pool.pki().Of("operator"), "GET", "/healthz");
    ASSERT_TRUE(ok.has_value());
    EXPECT_EQ(ok->status, 200);
  }
  // The client checks the server too: a CA that did not sign the manager's certificate.
  manager::TlsFiles wrong_ca = pool.pki().Of("operator");
  wrong_ca.ca = pool.pki().other_ca();
  EXPECT_FALSE(Call(pool.manager_url(), wrong_ca, "GET", "/healthz").has_value());
  EXPECT_GE(CountLines(pool.manager().log(), "TLS: refused the client certificate"), 1)
      << pool.manager().LogTail();
}

// A tenant host sees and releases only its own allocations, asks only for itself, and cannot
// use an agent's API; the manager's own calls to the agents (attach, detach) carry its
// certificate, which the agents verify. Every change is audited with the identity.
TEST(Mtls, AHostSeesAndReleasesOnlyItsOwnAllocations) {
  TlsPool pool;
  ASSERT_NO_FATAL_FAILURE(pool.AddBox());
  const std::string url = pool.manager_url();
  const manager::TlsFiles h1 = pool.pki().Of("host:h1"), h2 = pool.pki().Of("host:h2");
  auto allocate = [&](const manager::TlsFiles& who, const std::string& host) {
    return Call(url, who, "POST", "/v1/allocations?wait=30", {{"host", host}, {"count", 1}});
  };
  const std::optional<Answer> a1 = allocate(h1, "h1");
  ASSERT_TRUE(a1.has_value());
  ASSERT_EQ(a1->status, 201) << a1->body.dump();  // attached by h1's agent, called by the manager
  const std::string alloc1 = a1->body["id"];
  const std::optional<Answer> for_other = allocate(h2, "h1");
  ASSERT_TRUE(for_other.has_value());
  EXPECT_EQ(for_other->status, 403);
  EXPECT_EQ(for_other->body["error"], "not-yours");
  const std::optional<Answer> a2 = allocate(h2, "h2");
  ASSERT_TRUE(a2.has_value());
  ASSERT_EQ(a2->status, 201) << a2->body.dump();
  const std::string alloc2 = a2->body["id"];

  const std::optional<Answer> seen = Call(url, h1, "GET", "/v1/allocations");
  ASSERT_TRUE(seen.has_value());
  ASSERT_EQ(seen->body.size(), 1u) << seen->body.dump();
  EXPECT_EQ(seen->body[0]["id"], alloc1);
  const std::optional<Answer> hosts = Call(url, h1, "GET", "/v1/hosts");
  ASSERT_TRUE(hosts.has_value());
  ASSERT_EQ(hosts->body.size(), 1u);
  EXPECT_EQ(hosts->body[0]["id"], "h1");
  for (const auto& [method, path] : {std::pair{"GET", "/v1/allocations/" + alloc2},
                                     std::pair{"DELETE", "/v1/allocations/" + alloc2},
                                     std::pair{"GET", std::string("/v1/hosts/h2")}}) {
    const std::optional<Answer> a = Call(url, h1, method, path);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->status, 403) << method << " " << path;
    EXPECT_EQ(a->body["error"], "not-yours");
  }
  for (const auto& [method, path] :
       {std::pair{"GET", "/v1/boxes"}, std::pair{"GET", "/v1/gpus"},
        std::pair{"DELETE", "/v1/boxes/box-a"}, std::pair{"DELETE", "/v1/hosts/h2"}}) {
    const std::optional<Answer> a = Call(url, h1, method, path);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->status, 403) << method << " " << path;
    EXPECT_EQ(a->body["error"], "forbidden");
  }
  // h2's allocation is untouched; h1 releases its own.
  const std::optional<Answer> still = Call(url, h2, "GET", "/v1/allocations/" + alloc2);
  ASSERT_TRUE(still.has_value());
  EXPECT_EQ(still->body["state"], "active");
  const std::optional<Answer> released =
      Call(url, h1, "DELETE", "/v1/allocations/" + alloc1 + "?wait=30");
  ASSERT_TRUE(released.has_value());
  EXPECT_EQ(released->status, 200) << released->body.dump();
  EXPECT_EQ(released->body["state"], "released");

  // A tenant cannot drive another host's agent; a reader only reads it.
  const json attach = {
      {"gpu", "box-a/0"},      {"box", "box-a"},    {"fabric", "udp:127.0.0.1:9"}, {"device", 0},
      {"host_bdf", "01:00.0"}, {"node_id", "0xa1"}, {"allocation", alloc1}};
  const std::optional<Answer> driven = Call(pool.agent_url(0), h2, "POST", "/v1/attach", attach);
  ASSERT_TRUE(driven.has_value());
  EXPECT_EQ(driven->status, 403);
  const std::optional<Answer> read =
      Call(pool.agent_url(0), pool.pki().Of("reader"), "GET", "/v1/devices");
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->status, 200);
  EXPECT_EQ(read->body["forbidden"], 1);

  // The audit log names who did each change, and who was refused.
  int by_h1 = 0, refused_h2 = 0;
  for (const json& e : pool.AuditEntries()) {
    by_h1 += e["who"] == "host:h1" && e["result"] == "ok";
    refused_h2 += e["who"] == "host:h2" && e["status"] == 403;
  }
  EXPECT_EQ(by_h1, 3);  // its allocation, its release, its registration
  EXPECT_EQ(refused_h2, 1);
  const std::optional<Answer> status = Call(url, pool.pki().Of("reader"), "GET", "/v1/status");
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->body["counters"]["forbidden"], 8);
}

// A reader reads and changes nothing; a certificate of the pool's CA with a CN of no role gets
// 403 everywhere; the operator adds boxes. Each refused change is audited with its identity.
TEST(Mtls, AReaderOnlyReadsAndAnUnknownIdentityGetsNothing) {
  TlsPool pool;
  const std::string url = pool.manager_url();
  const manager::TlsFiles reader = pool.pki().Of("reader"), nobody = pool.pki().Of("nobody");
  const json box = {
      {"id", "box-x"}, {"management", "udp:127.0.0.1:9"}, {"fabric", "udp:127.0.0.1:9"}};
  const std::optional<Answer> boxes = Call(url, reader, "GET", "/v1/boxes");
  ASSERT_TRUE(boxes.has_value());
  EXPECT_EQ(boxes->status, 200);
  for (const auto& [method, path] :
       {std::pair{"POST", "/v1/boxes"}, std::pair{"DELETE", "/v1/allocations/alloc-1"},
        std::pair{"DELETE", "/v1/hosts/h1"}, std::pair{"POST", "/v1/allocations"}}) {
    const std::optional<Answer> a = Call(url, reader, method, path, box);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->status, 403) << method << " " << path;
  }
  for (const char* path : {"/healthz", "/v1/status", "/v1/allocations"}) {
    const std::optional<Answer> a = Call(url, nobody, "GET", path);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->status, 403) << path;
  }
  const std::optional<Answer> hosts = Call(url, pool.pki().Of("manager"), "GET", "/v1/hosts");
  ASSERT_TRUE(hosts.has_value());
  EXPECT_EQ(hosts->status, 403) << "the manager's certificate is no role on its own API";
  // The operator's change gets past the roles (the bridge there does not answer: 409).
  const std::optional<Answer> op = Call(url, pool.pki().Of("operator"), "POST", "/v1/boxes", box);
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->body["error"], "bridge-unreachable") << op->body.dump();
  int reader_refused = 0, operator_entries = 0;
  for (const json& e : pool.AuditEntries()) {
    reader_refused += e["who"] == "reader" && e["result"] == "forbidden";
    operator_entries += e["who"] == "operator" && e["what"] == "POST /v1/boxes";
  }
  EXPECT_EQ(reader_refused, 4);
  EXPECT_EQ(operator_entries, 1);
  EXPECT_GE(CountLines(pool.manager().log(), "by reader: HTTP 403"), 1) << pool.manager().LogTail();
}

// A host that registers another host's agent as its own gets nothing through it: the manager
// wants the agent of the host it calls (CN host:h3) and refuses h2's agent's certificate, so
// h2's agent is never asked to attach anything.
TEST(Mtls, TheManagerCallsOnlyTheAgentOfTheHostItNames) {
  TlsPool pool;
  ASSERT_NO_FATAL_FAILURE(pool.AddBox());
  const std::string url = pool.manager_url();
  const json h3 = {{"id", "h3"},          {"node_id", "0xa3"}, {"agent", pool.agent_url(1)},
                   {"mode", "userspace"}, {"boot_id", "b3"},   {"heartbeat_ms", 60'000}};
  const std::optional<Answer> registered =
      Call(url, pool.pki().Of("host:h3"), "POST", "/v1/hosts", h3);
  ASSERT_TRUE(registered.has_value());
  ASSERT_EQ(registered->status, 200) << registered->body.dump();
  const std::optional<Answer> a = Call(url, pool.pki().Of("host:h3"), "POST",
                                       "/v1/allocations?wait=2", {{"host", "h3"}, {"count", 1}});
  ASSERT_TRUE(a.has_value());
  EXPECT_NE(a->body["state"], "active") << a->body.dump();
  EXPECT_TRUE(WaitFor([&] {
    return CountLines(pool.manager().log(), "is CN 'host:h2', not 'host:h3'") >= 1;
  })) << pool.manager().LogTail();
  const std::optional<Answer> devices =
      Call(pool.agent_url(1), pool.pki().Of("operator"), "GET", "/v1/devices");
  ASSERT_TRUE(devices.has_value());
  EXPECT_EQ(devices->body["devices"].size(), 0u);
  EXPECT_EQ(CountLines(pool.manager().log().parent_path() / "agent-h2.log", "attach"), 0);
}

// dxpu pool over TLS: the certificate from the environment; one of another CA refused, saying
// what to check; a host's refused what is the operator's.
TEST(Mtls, DxpuPoolShowsItsCertificate) {
  TlsPool pool;
  struct Case {
    manager::TlsFiles tls;
    std::vector<std::string> args;
    int status;
    std::string says;
  };
  const std::vector<Case> cases = {
      {pool.pki().Of("reader"), {"status"}, 0, "boxes"},
      {pool.pki().Of("operator", true), {"status"}, 1, "--tls-cert a certificate of the pool's CA"},
      {pool.pki().Of("host:h1"), {"boxes"}, 1, "forbidden: host:h1 may not GET /v1/boxes"},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tls.cert);
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "DXPU_MANAGER=" + pool.manager_url(),
                                     "DXPU_TLS_CERT=" + c.tls.cert,
                                     "DXPU_TLS_KEY=" + c.tls.key,
                                     "DXPU_TLS_CA=" + pool.pki().ca(),
                                     DXPU_CLI_BIN,
                                     "pool"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    ChildProcess cli(argv, pool.manager().log().parent_path() / fmt::format("cli-{}.log", n++));
    cli.Start();
    EXPECT_EQ(cli.Wait(20'000), std::optional<int>(c.status));
    EXPECT_NE(cli.LogTail().find(c.says), std::string::npos) << cli.LogTail();
  }
}

// Connections that never start their handshake, or stop in the middle of it, are closed by
// the server within seconds (the handshake has the read timeout, 2 s) and hold no thread
// /healthz needs: a TLS port is no easier to starve than a plain one.
TEST(Mtls, StalledHandshakesDoNotStarveHealthz) {
  TlsPool pool;
  const uint16_t port = pool.manager_port();
  std::vector<link::UniqueFd> idle;
  for (int i = 0; i < 32; ++i) {
    idle.push_back(Connect(port));
    ASSERT_TRUE(idle.back().valid());
    if (i % 2 == 1) {  // half a ClientHello's record header: the handshake started, then stalls
      const unsigned char start[] = {0x16, 0x03, 0x01};
      ASSERT_EQ(::send(idle.back().get(), start, sizeof start, MSG_NOSIGNAL), 3);
    }
  }
  std::this_thread::sleep_for(milliseconds(300));  // every connection accepted
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    const std::optional<Answer> a =
        Call(pool.manager_url(), pool.pki().Of("reader"), "GET", "/healthz");
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->status, 200);
    EXPECT_LT(std::chrono::duration_cast<milliseconds>(Clock::now() - start).count(), 1000);
  }
  for (link::UniqueFd& fd : idle) EXPECT_TRUE(ClosedByServer(fd.get(), milliseconds(5000)));
}

// Without TLS a daemon serves loopback addresses only, unless told --insecure-plaintext.
TEST(Mtls, PlainHttpIsServedOnLoopbackOnly) {
  char tmpl[] = "/tmp/dxpu-mtls-XXXXXX";
  const std::filesystem::path dir = mkdtemp(tmpl);
  ChildProcess manager(
      {DXPU_MANAGER_BIN, "--listen", "0.0.0.0", "--port", "0", "--db", (dir / "pool.db").string()},
      dir / "manager.log");
  manager.Start();
  EXPECT_EQ(manager.Wait(10'000), std::optional<int>(1));
  EXPECT_EQ(CountLines(manager.log(), "is not a loopback address"), 1) << manager.LogTail();
  ChildProcess agent({DXPU_AGENT_BIN, "--host", "h1", "--node-id", "0xa1", "--listen", "0.0.0.0",
                      "--advertise", "http://127.0.0.1:9", "--mode", "userspace"},
                     dir / "agent.log");
  agent.Start();
  EXPECT_EQ(agent.Wait(10'000), std::optional<int>(1));
  EXPECT_EQ(CountLines(agent.log(), "is not a loopback address"), 1) << agent.LogTail();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dxpu::test
