// pool_process_test.cc - the pool manager with real processes on loopback: two dxpu-bridge
// daemons (2 GPUs each), dxpu-manager (SQLite, REST API) and two dxpu-agents attaching
// through the userspace host proxy. The scene (h1 takes 2 GPUs spread over both boxes and
// gives them back, h2 takes 3) runs without faults, then with the manager killed at every step
// of attach and release (before and after it records the step), with an agent killed after
// each of its calls took effect, with a bridge killed after each ownership change took effect,
// and with a bridge killed and restarted while its GPUs are lent. Each run ends with
// the invariants checked against the bridges themselves (management STATUS) and the agents.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bridge-fw/management_client.h"
#include "bridge_process.h"
#include "child_process.h"
#include "flashed_bridge.h"
#include "management_keys.h"
#include "manager/pool_audit.h"
#include "pool_bridge_config.h"

namespace dxpu::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A daemon as a child process; the name is for people reading the test.
class Daemon : public ChildProcess {
 public:
  Daemon(std::string /*name*/, std::vector<std::string> argv, std::filesystem::path log)
      : ChildProcess(std::move(argv), std::move(log)) {}
};

struct Answer {
  int status = 0;
  json body;
};

class ProcessPool {
 public:
  struct Box {
    std::string id;
    uint16_t udp = 0, mgmt = 0;
    std::unique_ptr<BridgeProcess> process;  // the bridge, started directly; or
    // the bridge as in the field: its flash, and dxpu-boot running the flash's dxpu-bridge.
    std::unique_ptr<firmware::testing::FlashedBridge> flashed;
    std::unique_ptr<ChildProcess> boot;
  };
  // How box-a's bridge runs: started directly, or from a flash under dxpu-boot.
  enum class BoxA { kProcess, kFlashed };
  struct Host {
    std::string id;
    uint64_t node = 0;
    uint16_t port = 0;
    std::string crash;
    std::unique_ptr<Daemon> agent;
  };
  explicit ProcessPool(const std::string& manager_crash = "", const std::string& agent_crash = "",
                       const std::string& bridge_crash = "", BoxA box_a = BoxA::kProcess) {
    char tmpl[] = "/tmp/dxpu-pool-proc-XXXXXX";
    dir_ = mkdtemp(tmpl);
    manager_key_file_ = manager_key_.WriteFiles((dir_ / "manager").string());
    operator_key_file_ = operator_key_.WriteFiles((dir_ / "operator").string());
    for (int b = 0; b < 2; ++b) {
      Box box;
      box.id = b == 0 ? "box-a" : "box-b";
      box.udp = FreePort(SOCK_DGRAM);
      box.mgmt = FreePort(SOCK_DGRAM);
      const std::string config = PoolBridgeConfig(
          0xb0b0 + b, box.udp, box.mgmt, {manager_key_.PublicHex(), operator_key_.PublicHex()});
      if (b == 0 && box_a == BoxA::kFlashed) {
        box.flashed =
            std::make_unique<firmware::testing::FlashedBridge>((dir_ / box.id).string(), config);
        box.boot = box.flashed->Boot();
      } else {
        box.process = std::make_unique<BridgeProcess>(config);
        EXPECT_TRUE(box.process->Start(b == 0 ? bridge_crash : "")) << box.id;
      }
      boxes_.push_back(std::move(box));
    }
    manager_port_ = FreePort(SOCK_STREAM);
    manager_url_ = fmt::format("http://127.0.0.1:{}", manager_port_);
    manager_ =
        std::make_unique<Daemon>("dxpu-manager", ManagerArgs(manager_crash), dir_ / "manager.log");
    manager_->Start();
    EXPECT_TRUE(WaitUp(manager_url_)) << Log(manager_->log());
    for (int h = 0; h < 2; ++h) {
      Host host;
      host.id = h == 0 ? "h1" : "h2";
      host.node = 0xa1 + h;
      host.port = FreePort(SOCK_STREAM);
      host.crash = h == 0 ? agent_crash : "";
      host.agent = std::make_unique<Daemon>("dxpu-agent", AgentArgs(host, host.crash),
                                            dir_ / (host.id + ".log"));
      host.agent->Start();
      hosts_.push_back(std::move(host));
    }
    for (const Box& b : boxes_) {
      // The manager adds a box only once it has checked what its bridge holds: a bridge still
      // booting (under dxpu-boot) is 409 bridge-unreachable until it answers.
      std::optional<Answer> a;
      EXPECT_TRUE(WaitFor([&] {
        a = Call("POST", "/v1/boxes",
                 json{{"id", b.id},
                      {"management", fmt::format("127.0.0.1:{}", b.mgmt)},
                      {"fabric", fmt::format("udp:127.0.0.1:{}", b.udp)}});
        return !a || a->status != 409 || a->body["error"] != "bridge-unreachable";
      }));
      EXPECT_TRUE(a && a->status == 201) << b.id << (a ? a->body.dump() : "");
    }
    // Both hosts registered and all 4 GPUs known.
    EXPECT_TRUE(WaitFor([&] {
      std::optional<Answer> s = Call("GET", "/v1/status");
      return s && s->body["hosts"] == 2 && s->body["gpus_free"] == 4;
    })) << Log(manager_->log());
  }

  ~ProcessPool() {
    for (Host& h : hosts_) h.agent->Kill();
    manager_->Kill();
    if (::testing::Test::HasFailure()) PrintLogTails();
    boxes_.clear();
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir_);
  }

  // What an operator signs its requests to the pool's bridges with.
  std::shared_ptr<bridge::ManagementSigner> operator_signer() const { return operator_key_.signer; }
  const std::string& operator_key_file() const { return operator_key_file_; }

  // After a failure: the end of every daemon's log (the whole logs stay in dir_).
  void PrintLogTails() const {
    std::cerr << "--- logs in " << dir_.string() << '\n';
    for (const Box& b : boxes_) {
      std::cerr << "--- " << b.id << ":\n"
                << (b.process ? b.process->LogTail(3000) : b.flashed->BootLog()) << '\n';
    }
    std::cerr << "--- dxpu-manager:\n" << manager_->LogTail(3000) << '\n';
    for (const Host& h : hosts_)
      std::cerr << "--- dxpu-agent " << h.id << ":\n" << h.agent->LogTail(3000) << '\n';
  }

  std::vector<std::string> ManagerArgs(const std::string& crash) const {
    std::vector<std::string> a = {DXPU_MANAGER_BIN,
                                  "--port",
                                  std::to_string(manager_port_),
                                  "--db",
                                  (dir_ / "pool.db").string(),
                                  "--probe-interval",
                                  "200ms",
                                  "--detach-timeout",
                                  "5s",
                                  "--attach-timeout",
                                  "60s",
                                  "--management-key",
                                  manager_key_file_};
    if (!crash.empty()) {
      a.emplace_back("--crash-at");
      a.push_back(crash);
    }
    return a;
  }
  // h1's agent is started with today's spellings, h2's with the old ones (--id, --heartbeat-ms),
  // which stay accepted as aliases.
  std::vector<std::string> AgentArgs(const Host& h, const std::string& crash) const {
    const bool old = h.id == "h2";
    std::vector<std::string> a = {DXPU_AGENT_BIN,
                                  old ? "--id" : "--host",
                                  h.id,
                                  "--node-id",
                                  fmt::format("{:#x}", h.node),
                                  "--port",
                                  std::to_string(h.port),
                                  "--manager",
                                  manager_url_,
                                  "--mode",
                                  "userspace",
                                  old ? "--heartbeat-ms" : "--heartbeat",
                                  old ? "1000" : "1s"};
    if (!crash.empty()) {
      a.emplace_back("--crash-after-call");
      a.push_back(crash);
    }
    return a;
  }

  // One API call to the manager; nullopt when it does not answer.
  std::optional<Answer> Call(const std::string& method, const std::string& path,
                             const json& body = nullptr) {
    return CallUrl(manager_url_, method, path, body);
  }
  static std::optional<Answer> CallUrl(const std::string& url, const std::string& method,
                                       const std::string& path, const json& body = nullptr) {
    httplib::Client c(url);
    c.set_connection_timeout(std::chrono::seconds(1));
    c.set_read_timeout(std::chrono::seconds(10));
    httplib::Result r = method == "GET"    ? c.Get(path)
                        : method == "POST" ? c.Post(path, body.dump(), "application/json")
                                           : c.Delete(path);
    if (!r) return std::nullopt;
    Answer a;
    a.status = r->status;
    a.body = json::parse(r->body, nullptr, false);
    return a;
  }

  static bool WaitUp(const std::string& url) {
    return WaitFor([&] { return CallUrl(url, "GET", "/healthz").has_value(); });
  }
  static bool WaitFor(const std::function<bool()>& done, int seconds = 30) {
    const auto end = Clock::now() + std::chrono::seconds(seconds);
    while (Clock::now() < end) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
  }
  static std::string Log(const std::filesystem::path& p) { return FileTail(p); }

  // What a supervisor does: a manager, agent or bridge that died (a crash hook) starts again,
  // without the hook.
  void Supervise() {
    for (Box& b : boxes_) {
      if (b.process && !b.process->Alive()) {
        crashes_++;
        b.process->Start();
      }
    }
    if (!manager_->Alive()) {
      crashes_++;
      manager_->SetArgs(ManagerArgs(""));
      manager_->Start();
      WaitUp(manager_url_);
    }
    for (Host& h : hosts_) {
      if (!h.agent->Alive()) {
        crashes_++;
        h.agent->SetArgs(AgentArgs(h, ""));
        h.agent->Start();
      }
    }
  }

  // POSTs an allocation; retried with the same idempotency key across a manager crash.
  std::string Allocate(const std::string& host, int count, const std::string& policy) {
    const json body = {{"host", host},
                       {"count", count},
                       {"policy", policy},
                       {"request_key", fmt::format("{}-{}-{}", host, count, ++keys_)}};
    std::string id;
    WaitFor([&] {
      Supervise();
      std::optional<Answer> a = Call("POST", "/v1/allocations", body);
      if (a && (a->status == 202 || a->status == 200 || a->status == 201))
        id = a->body["id"].get<std::string>();
      return !id.empty();
    });
    return id;
  }
  void Release(const std::string& id) {
    WaitFor([&] {
      Supervise();
      std::optional<Answer> a = Call("DELETE", "/v1/allocations/" + id);
      return a && (a->status == 202 || a->status == 200 || a->status == 409);
    });
  }
  // Waits for the allocation's state, restarting what crashed meanwhile.
  bool WaitState(const std::string& id, const std::string& state) {
    return WaitFor(
        [&] {
          Supervise();
          std::optional<Answer> a = Call("GET", "/v1/allocations/" + id + "?wait=1");
          return a && a->status == 200 && a->body["state"] == state;
        },
        60);
  }
  // Waits until nothing is in progress and every active allocation's GPUs are attached.
  bool WaitSettled() {
    return WaitFor(
        [&] {
          Supervise();
          std::optional<Answer> s = Call("GET", "/v1/status");
          if (!s || s->body["allocations_in_progress"] != 0) return false;
          std::optional<Answer> all = Call("GET", "/v1/allocations");
          if (!all) return false;
          for (const json& a : all->body) {
            for (const json& g : a["gpus"]) {
              if (g["step"] != "attached") return false;
            }
          }
          return true;
        },
        60);
  }

  // Waits until the manager counts every box healthy again (a restarted bridge is healthy once
  // the manager has heard from it, which may come after an allocation it served was released).
  bool WaitBoxesHealthy() {
    return WaitFor([&] {
      std::optional<Answer> s = Call("GET", "/v1/status");
      return s && s->body["boxes_healthy"] == s->body["boxes"];
    });
  }

  // The invariants, against the bridges and the agents themselves (manager/pool_audit.h).
  void Check(const std::string& when) {
    SCOPED_TRACE(when);
    manager::PoolResult<manager::PoolAudit> audit = manager::AuditPool(manager_url_);
    ASSERT_TRUE(audit.ok()) << audit.error().message;
    for (const std::string& p : audit.value().problems) ADD_FAILURE() << p;
    for (const std::string& u : audit.value().unreachable) ADD_FAILURE() << "unreachable: " << u;
    EXPECT_EQ(audit.value().gpus, 4u);
    std::optional<Answer> s = Call("GET", "/v1/status");
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->body["gpus"], 4);
    EXPECT_EQ(s->body["gpus_free"], audit.value().free) << "a GPU left the pool";
  }

  // h1 takes 2 spread over both boxes and gives them back; h2 takes 3.
  void Scene() {
    const std::string a1 = Allocate("h1", 2, "spread");
    ASSERT_FALSE(a1.empty());
    ASSERT_TRUE(WaitState(a1, "active")) << Log(manager_->log());
    ASSERT_TRUE(WaitSettled());
    Check("h1 holds 2");
    Release(a1);
    ASSERT_TRUE(WaitState(a1, "released")) << Log(manager_->log());
    const std::string a2 = Allocate("h2", 3, "pack");
    ASSERT_FALSE(a2.empty());
    ASSERT_TRUE(WaitState(a2, "active")) << Log(manager_->log());
    ASSERT_TRUE(WaitSettled());
    Check("h2 holds 3");
  }

  Box& box(size_t i) { return boxes_[i]; }
  Host& host(size_t i) { return hosts_[i]; }
  const std::filesystem::path& dir() const { return dir_; }
  const std::string& url() const { return manager_url_; }
  int crashes() const { return crashes_; }

 private:
  std::filesystem::path dir_;
  // The manager signs its bridge requests with its key; the tests act as an operator with
  // another (docs/protocol.md 15.8). Each bridge trusts both.
  TestManagementKey manager_key_ = MakeTestManagementKey();
  TestManagementKey operator_key_ = MakeTestManagementKey();
  std::string manager_key_file_, operator_key_file_;
  std::vector<Box> boxes_;
  std::vector<Host> hosts_;
  uint16_t manager_port_ = 0;
  std::string manager_url_;
  std::unique_ptr<Daemon> manager_;
  int keys_ = 0;
  int crashes_ = 0;
};

TEST(PoolProcessTest, SceneAndBadRequestsWithRealProcesses) {
  ProcessPool pool;
  pool.Scene();
  // Bad input: a clear error with a fitting status, and the pool unchanged.
  const std::optional<Answer> before = pool.Call("GET", "/v1/allocations");
  ASSERT_TRUE(before.has_value());
  struct Bad {
    std::string method, path;
    json body;
    int status;
    std::string error;
  };
  const std::vector<Bad> bad = {
      {"POST", "/v1/allocations", {{"host", "nobody"}, {"count", 1}}, 404, "unknown-host"},
      {"POST", "/v1/allocations", {{"host", "h1"}, {"count", 2}}, 409, "insufficient-gpus"},
      {"POST", "/v1/allocations", {{"host", "h1"}, {"count", 9}}, 409, "exceeds-pool"},
      {"POST", "/v1/allocations", {{"host", "h1"}, {"count", 0}}, 400, "bad-count"},
      {"POST", "/v1/allocations", {{"host", "h1"}, {"count", "1"}}, 400, "bad-body"},
      {"POST", "/v1/allocations", {{"host", "h1"}, {"count", 1}, {"extra", 1}}, 400, "bad-body"},
      {"POST", "/v1/allocations", {{"host", "h1"}, {"count", 1}, {"policy", "x"}}, 400, "bad-body"},
      {"POST",
       "/v1/allocations",
       {{"host", "h1"}, {"count", 1}, {"policy", "prefer"}, {"box", "box-z"}},
       404,
       "unknown-box"},
      {"POST", "/v1/allocations", json::array({1, 2}), 400, "bad-body"},
      {"DELETE", "/v1/allocations/alloc-1", nullptr, 409, "already-released"},
      {"DELETE", "/v1/allocations/alloc-99", nullptr, 404, "unknown-allocation"},
      {"DELETE", "/v1/allocations/x", nullptr, 404, "unknown-allocation"},
      {"POST",
       "/v1/hosts",
       {{"id", "h9"},
        {"node_id", "0xa1"},
        {"agent", "http://x:1"},
        {"mode", "userspace"},
        {"boot_id", "b"}},
       409,
       "node-id-taken"},
      {"POST",
       "/v1/boxes",
       {{"id", "../etc"}, {"management", "x"}, {"fabric", "y"}},
       400,
       "bad-name"},
      {"GET", "/v1/nothing", nullptr, 404, "no-such-path"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.method + " " + b.path + " " + b.body.dump());
    std::optional<Answer> a = pool.Call(b.method, b.path, b.body);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->status, b.status);
    EXPECT_EQ(a->body["error"], b.error) << a->body.dump();
    EXPECT_FALSE(a->body.value("message", "").empty());
  }
  // A body that is not JSON at all, and one past the size limit.
  httplib::Client c(pool.url());
  httplib::Result r = c.Post("/v1/allocations", R"({"host": "h1", "count")", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("not JSON"), std::string::npos) << r->body;
  r = c.Post("/v1/allocations", std::string(size_t{100} * 1024, ' '), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  const std::optional<Answer> after = pool.Call("GET", "/v1/allocations");
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(before->body, after->body) << "a refused request changed the pool";
  pool.Check("after the bad requests");

  // An operator assigns the free GPU behind the manager's back: the audit sees it, and the
  // manager's next probe finds the orphan and releases it at its bridge.
  std::optional<Answer> free_gpus = pool.Call("GET", "/v1/gpus?state=free");
  ASSERT_TRUE(free_gpus && free_gpus->body.size() == 1u);
  const json& gpu = free_gpus->body[0];
  const size_t box = gpu["box"] == "box-a" ? 0 : 1;
  const bridge::ManagementClient operator_cli(
      *link::LinkAddress::FromIp("127.0.0.1", pool.box(box).mgmt), 1000, 3, pool.operator_signer());
  ASSERT_TRUE(operator_cli.Assign(gpu["device"].get<uint16_t>(), 0x0900, 0x77).ok());
  manager::PoolResult<manager::PoolAudit> audit = manager::AuditPool(pool.url());
  ASSERT_TRUE(audit.ok());
  if (audit.value().problems.empty()) {
    // The manager's probe can come first (a busy sanitizer run): then it has released the
    // orphan already, which the audit no longer sees.
    std::optional<Answer> s = pool.Call("GET", "/v1/status");
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->body["counters"]["orphans_released"], 1)
        << "the audit saw no orphan, and the manager released none";
  } else {
    ASSERT_EQ(audit.value().problems.size(), 1u);
    EXPECT_NE(audit.value().problems[0].find("with no lease"), std::string::npos)
        << audit.value().problems[0];
  }
  ASSERT_TRUE(ProcessPool::WaitFor([&] {
    std::optional<Answer> s = pool.Call("GET", "/v1/status");
    return s && s->body["counters"]["orphans_released"] == 1 && s->body["gpus_free"] == 1;
  }));
  pool.Check("after the orphan was released");
}

// A second daemon on a port another one holds exits non-zero and says why (cpp-httplib's
// default SO_REUSEPORT let a second dxpu-manager start on the first one's port, and the kernel
// spread the API's connections over both: a split brain of the pool); the first goes on.
TEST(PoolProcessTest, SecondDaemonOnATakenPortRefusesToStart) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("dxpu-taken-port-{}", getpid());
  std::filesystem::create_directories(dir);
  const uint16_t manager_port = FreePort(SOCK_STREAM);
  const uint16_t agent_port = FreePort(SOCK_STREAM);
  const std::string manager_url = fmt::format("http://127.0.0.1:{}", manager_port);
  const auto manager = [&](const std::string& name) {
    return std::make_unique<Daemon>(
        name,
        std::vector<std::string>{DXPU_MANAGER_BIN, "--port", std::to_string(manager_port), "--db",
                                 (dir / (name + ".db")).string()},
        dir / (name + ".log"));
  };
  const auto agent = [&](const std::string& name, uint16_t port) {
    return std::make_unique<Daemon>(
        name,
        std::vector<std::string>{DXPU_AGENT_BIN, "--host", name, "--node-id", "0xa1", "--port",
                                 std::to_string(port), "--manager", manager_url, "--mode",
                                 "userspace"},
        dir / (name + ".log"));
  };
  const auto refused = [](Daemon& d, const std::string& what) {
    d.Start();
    const std::optional<int> status = d.Wait(15000);
    ASSERT_TRUE(status.has_value()) << what << ": still running on a taken port";
    EXPECT_EQ(*status, 1) << what;
    const std::string log = d.LogTail();
    EXPECT_NE(log.find("cannot listen on 127.0.0.1:"), std::string::npos) << what << ": " << log;
    EXPECT_NE(log.find("Address already in use"), std::string::npos) << what << ": " << log;
  };

  std::unique_ptr<Daemon> first = manager("manager-a");
  first->Start();
  ASSERT_TRUE(ProcessPool::WaitUp(manager_url)) << first->LogTail();
  std::unique_ptr<Daemon> second = manager("manager-b");
  refused(*second, "a second dxpu-manager on the first one's port");
  std::unique_ptr<Daemon> host = agent("h1", agent_port);
  host->Start();
  ASSERT_TRUE(ProcessPool::WaitUp(fmt::format("http://127.0.0.1:{}", agent_port)))
      << host->LogTail();
  std::unique_ptr<Daemon> twin = agent("h2", agent_port);
  refused(*twin, "a second dxpu-agent on the first one's port");
  std::unique_ptr<Daemon> squatter = agent("h3", manager_port);
  refused(*squatter, "a dxpu-agent on the manager's port");
  // The first of each still answers, every time.
  for (int i = 0; i < 8; ++i) {
    std::optional<Answer> s = ProcessPool::CallUrl(manager_url, "GET", "/v1/status");
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->status, 200);
  }
  EXPECT_TRUE(first->Alive());
  EXPECT_TRUE(host->Alive());
  host->Kill();
  first->Kill();
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

// A second dxpu-manager on another port but the same database is refused (two managers on one
// pool would each drive the bridges from their own view); the first keeps answering. Its lock
// is a flock(2) the kernel drops when the holder dies: once the first is killed, a manager on
// that database starts.
TEST(PoolProcessTest, SecondManagerOnTheSameDatabaseRefusesToStart) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("dxpu-taken-db-{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "pool.db").string();
  const auto manager = [&](const std::string& name, uint16_t port) {
    return std::make_unique<Daemon>(
        name,
        std::vector<std::string>{DXPU_MANAGER_BIN, "--port", std::to_string(port), "--db", db},
        dir / (name + ".log"));
  };
  const uint16_t port_a = FreePort(SOCK_STREAM);
  const std::string url_a = fmt::format("http://127.0.0.1:{}", port_a);
  std::unique_ptr<Daemon> first = manager("manager-a", port_a);
  first->Start();
  ASSERT_TRUE(ProcessPool::WaitUp(url_a)) << first->LogTail();
  const uint16_t port_b = FreePort(SOCK_STREAM);
  std::unique_ptr<Daemon> second = manager("manager-b", port_b);
  second->Start();
  const std::optional<int> status = second->Wait(15000);
  ASSERT_TRUE(status.has_value()) << "a second dxpu-manager runs on the first one's database";
  EXPECT_EQ(*status, 1);
  const std::string log = second->LogTail();
  EXPECT_NE(log.find(fmt::format("another dxpu-manager holds {} (pid ", db)), std::string::npos)
      << log;
  EXPECT_NE(log.find("stop it or use another --db"), std::string::npos) << log;
  EXPECT_FALSE(ProcessPool::CallUrl(fmt::format("http://127.0.0.1:{}", port_b), "GET", "/healthz"))
      << "the refused manager serves its port";
  for (int i = 0; i < 4; ++i) {
    std::optional<Answer> s = ProcessPool::CallUrl(url_a, "GET", "/v1/status");
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->status, 200);
  }
  EXPECT_TRUE(first->Alive());
  // The holder dies (SIGKILL: nothing cleaned up): its lock goes with it.
  first->Kill();
  // (--listen HOST:PORT is the port too.)
  auto third = std::make_unique<Daemon>(
      "manager-c",
      std::vector<std::string>{DXPU_MANAGER_BIN, "--listen", fmt::format("127.0.0.1:{}", port_b),
                               "--db", db},
      dir / "manager-c.log");
  third->Start();
  EXPECT_TRUE(ProcessPool::WaitUp(fmt::format("http://127.0.0.1:{}", port_b))) << third->LogTail();
  third->Kill();
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

// A configuration a daemon cannot honour is refused at start (exit 1), with the problem and the
// fix, instead of a daemon that runs and cannot do its job.
TEST(PoolProcessTest, DaemonsRefuseAConfigurationTheyCannotHonour) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("dxpu-bad-config-{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string port = std::to_string(FreePort(SOCK_STREAM));
  struct Case {
    std::vector<std::string> argv;
    std::vector<std::string> said;
  };
  const std::string db = (dir / "pool.db").string();
  const std::vector<Case> cases = {
      {{DXPU_MANAGER_BIN, "--port", port, "--db", (dir / "missing" / "pool.db").string()},
       {"the directory", "does not exist", "create it or give another --db"}},
      {{DXPU_MANAGER_BIN, "--port", port, "--db", dir.string()}, {"is a directory"}},
      {{DXPU_MANAGER_BIN, "--listen", "127.0.0.1:x", "--db", db},
       {"--listen wants HOST:PORT or an address"}},
      {{DXPU_MANAGER_BIN, "--listen", "127.0.0.1:" + port, "--port", "1", "--db", db},
       {"give the port once"}},
      {{DXPU_AGENT_BIN, "--host", "h1", "--node-id", "0xa1", "--port", port, "--listen",
        "127.0.0.1:17491:1", "--mode", "userspace"},
       {"--listen wants HOST:PORT or an address"}},
      {{DXPU_AGENT_BIN, "--host", "h1", "--node-id", "0xa1", "--port", port, "--advertise",
        "10.0.0.21", "--mode", "userspace"},
       {"--advertise", "http://"}},
      {{DXPU_AGENT_BIN, "--host", "h1", "--node-id", "0xa1", "--port", port, "--manager",
        "http://10.0.0.5:x", "--mode", "userspace"},
       {"--manager", "http://"}},
      {{DXPU_AGENT_BIN, "--host", "h1", "--node-id", "0xa1", "--port", port, "--listen", "0.0.0.0",
        "--mode", "userspace"},
       {"--advertise", "0.0.0.0"}},
  };
  int n = 0;
  for (const Case& c : cases) {
    std::string line;
    for (const std::string& a : c.argv) line += a + " ";
    SCOPED_TRACE(line);
    Daemon d("bad", c.argv, dir / fmt::format("bad-{}.log", n++));
    d.Start();
    const std::optional<int> status = d.Wait(15000);
    ASSERT_TRUE(status.has_value()) << "still running with a configuration it cannot honour";
    EXPECT_EQ(*status, 1);
    const std::string log = d.LogTail();
    for (const std::string& s : c.said) EXPECT_NE(log.find(s), std::string::npos) << log;
  }
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

// The operator's first hour with a host whose agent died (the agents' heartbeat is 1 s, so
// a host is dead after 3 s): `hosts` says which is dead; an allocation for it is refused at
// once, with the reason, and no GPU changes owner; the audit checks everything else and lists
// its agent as unreachable; its release does not wait out the detach timeout; the host cannot
// be removed while it holds GPUs, and can after; a new agent on its node ID is then fine, and
// one on a node ID another host holds exits 1 with one line naming that host and the fix.
TEST(PoolProcessTest, DeadAgentIsSaidRefusedReleasedAtOnceAndRemovable) {
  ProcessPool pool;
  const auto hosts = [&] {
    std::map<std::string, json> out;
    std::optional<Answer> a = pool.Call("GET", "/v1/hosts");
    EXPECT_TRUE(a && a->status == 200);
    if (a) {
      for (const json& h : a->body) out[h["id"]] = h;
    }
    return out;
  };
  for (const auto& [id, h] : hosts()) {
    EXPECT_EQ(h["liveness"], "alive") << id;
    EXPECT_TRUE(h["alive"].get<bool>()) << id;
    EXPECT_EQ(h["heartbeat_ms"], 1000) << id;
    EXPECT_LT(h["last_seen_ago_ms"].get<uint64_t>(), 3000u) << id;
  }
  const std::string held = pool.Allocate("h2", 1, "pack");
  ASSERT_TRUE(pool.WaitState(held, "active"));
  ASSERT_TRUE(pool.WaitSettled());

  pool.host(1).agent->Kill();  // h2's agent; nothing restarts it (no Supervise from here on)
  ASSERT_TRUE(ProcessPool::WaitFor([&] { return hosts()["h2"]["liveness"] == "dead"; }, 10));
  EXPECT_EQ(hosts()["h1"]["liveness"], "alive");
  {
    ChildProcess cli({DXPU_CLI_BIN, "pool", "hosts", "--manager", pool.url(), "--timeout", "5"},
                     pool.dir() / "hosts.log");
    cli.Start();
    ASSERT_EQ(cli.Wait(15000), 0) << cli.LogTail();
    const std::string out = cli.LogTail();
    EXPECT_NE(out.find("liveness"), std::string::npos) << out;
    EXPECT_NE(out.find("dead"), std::string::npos) << out;
    EXPECT_NE(out.find("alive"), std::string::npos) << out;
  }

  // A new allocation for the dead host: refused at once, and no GPU changed owner.
  const std::optional<Answer> gpus_before = pool.Call("GET", "/v1/gpus");
  const auto sent = Clock::now();
  std::optional<Answer> refused =
      pool.Call("POST", "/v1/allocations", json{{"host", "h2"}, {"count", 1}});
  ASSERT_TRUE(refused.has_value());
  EXPECT_LT(Clock::now() - sent, std::chrono::seconds(2));
  EXPECT_EQ(refused->status, 409);
  EXPECT_EQ(refused->body["error"], "host-dead") << refused->body.dump();
  const std::string why = refused->body.value("message", "");
  EXPECT_NE(why.find("host h2's agent was last seen"), std::string::npos) << why;
  EXPECT_NE(why.find("start dxpu-agent on h2 or pick another host"), std::string::npos) << why;
  EXPECT_EQ(pool.Call("GET", "/v1/gpus")->body, gpus_before->body) << "a GPU changed owner";

  // The audit checks what answers and names what does not.
  manager::PoolResult<manager::PoolAudit> audit = manager::AuditPool(pool.url());
  ASSERT_TRUE(audit.ok()) << audit.error().message;
  EXPECT_TRUE(audit.value().problems.empty()) << audit.value().problems[0];
  EXPECT_EQ(audit.value().gpus, 4u) << "every bridge was audited";
  ASSERT_EQ(audit.value().unreachable.size(), 1u);
  EXPECT_NE(audit.value().unreachable[0].find("host h2's agent"), std::string::npos)
      << audit.value().unreachable[0];
  EXPECT_FALSE(audit.value().consistent());

  // Not removable while it holds a GPU; the refusal names the allocation.
  std::optional<Answer> in_use = pool.Call("DELETE", "/v1/hosts/h2");
  ASSERT_TRUE(in_use.has_value());
  EXPECT_EQ(in_use->status, 409);
  EXPECT_EQ(in_use->body["error"], "host-in-use");
  EXPECT_NE(in_use->body.value("message", "").find(held), std::string::npos) << in_use->body;

  // Its release does not wait for a detach from a dead agent (the detach timeout is 5 s).
  {
    const auto start = Clock::now();
    ChildProcess cli(
        {DXPU_CLI_BIN, "pool", "release", held, "--manager", pool.url(), "--wait", "30s"},
        pool.dir() / "release.log");
    cli.Start();
    ASSERT_EQ(cli.Wait(30000), 0) << cli.LogTail();
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(4)) << cli.LogTail();
    EXPECT_NE(cli.LogTail().find("released"), std::string::npos) << cli.LogTail();
  }
  std::optional<Answer> removed = pool.Call("DELETE", "/v1/hosts/h2");
  ASSERT_TRUE(removed.has_value());
  EXPECT_EQ(removed->status, 200) << removed->body;
  EXPECT_FALSE(hosts().contains("h2"));
  std::optional<Answer> unknown =
      pool.Call("POST", "/v1/allocations", json{{"host", "h2"}, {"count", 1}});
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(unknown->body["error"], "unknown-host");
  EXPECT_NE(unknown->body.value("message", "").find("registered: h1 (see `dxpu pool hosts`)"),
            std::string::npos)
      << unknown->body;
  EXPECT_NE(unknown->body.value("message", "").find("dxpu-agent --host h2 --node-id"),
            std::string::npos)
      << unknown->body;

  // An agent on h1's node ID: exit 1, one line naming h1 and the fix.
  Daemon twin(
      "twin",
      {DXPU_AGENT_BIN, "--host", "h3", "--node-id", "0xa1", "--port",
       std::to_string(FreePort(SOCK_STREAM)), "--manager", pool.url(), "--mode", "userspace"},
      pool.dir() / "twin.log");
  twin.Start();
  const std::optional<int> status = twin.Wait(15000);
  ASSERT_TRUE(status.has_value()) << "an agent on a taken node ID runs on: " << twin.LogTail();
  EXPECT_EQ(*status, 1);
  const std::string log = twin.LogTail();
  EXPECT_NE(log.find("node-id-taken: node ID 0xa1 is host h1's"), std::string::npos) << log;
  EXPECT_NE(log.find("dxpu pool remove-host h1"), std::string::npos) << log;
  size_t refusals = 0;
  for (size_t at = log.find("refused"); at != std::string::npos; at = log.find("refused", at + 1))
    ++refusals;
  EXPECT_EQ(refusals, 1u) << log;
  EXPECT_EQ(log.find("\"error\""), std::string::npos) << "the manager's JSON dumped: " << log;
  // h1 is untouched by all of this.
  EXPECT_EQ(hosts()["h1"]["liveness"], "alive");
}

// A release that waits says what for, also when stderr is no terminal (a log, CI): box-a's
// bridge is down while h1 gives back a GPU on it, so its scrub cannot happen; `dxpu pool
// release --wait 7s` prints a plain line every 5 s naming the bridge and the GPU, and ends with
// exit 1 (timeout: it goes on). The bridge back, the release finishes.
TEST(PoolProcessTest, ReleaseSaysWhatItWaitsFor) {
  ProcessPool pool;
  const std::string a = pool.Allocate("h1", 2, "spread");
  ASSERT_TRUE(pool.WaitState(a, "active"));
  ASSERT_TRUE(pool.WaitSettled());
  pool.box(0).process->Kill();
  ChildProcess cli({DXPU_CLI_BIN, "pool", "release", a, "--manager", pool.url(), "--wait", "7s"},
                   pool.dir() / "release.log");
  cli.Start();
  EXPECT_EQ(cli.Wait(30000), 1) << cli.LogTail();
  const std::string log = cli.LogTail();
  EXPECT_NE(log.find(fmt::format("release {}: waiting for box box-a's bridge to reset and scrub "
                                 "box-a/",
                                 a)),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("(5 s)"), std::string::npos) << log;
  EXPECT_NE(log.find("still releasing after 7s"), std::string::npos) << log;
  ASSERT_TRUE(pool.box(0).process->Start());
  ASSERT_TRUE(pool.WaitState(a, "released"));
  ASSERT_TRUE(pool.WaitBoxesHealthy());
  pool.Check("released once box-a was back");
}

// An agent whose manager does not answer keeps asking, less and less often, one line each time
// (not the manager's answer dumped every 500 ms).
TEST(PoolProcessTest, AgentWithoutAManagerRetriesWithBackoff) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("dxpu-no-manager-{}", getpid());
  std::filesystem::create_directories(dir);
  Daemon agent("h1",
               {DXPU_AGENT_BIN, "--host", "h1", "--node-id", "0xa1", "--port",
                std::to_string(FreePort(SOCK_STREAM)), "--manager",
                fmt::format("http://127.0.0.1:{}", FreePort(SOCK_STREAM)), "--mode", "userspace"},
               dir / "h1.log");
  agent.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_TRUE(agent.Alive()) << "an absent manager is worth waiting for";
  agent.Kill();
  const std::string log = agent.LogTail();
  for (const char* next : {"trying again in 0.5 s", "trying again in 1 s"})
    EXPECT_NE(log.find(next), std::string::npos) << log;
  size_t lines = 0;
  for (size_t at = log.find("no answer from the manager"); at != std::string::npos;
       at = log.find("no answer from the manager", at + 1))
    ++lines;
  EXPECT_GE(lines, 2u) << log;
  EXPECT_LE(lines, 4u) << "not backing off: " << log;
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

// The manager killed at each step of attach and release: before it records the step's result
// (the step took effect; the restarted manager asks again) and after (it goes on from there).
TEST(PoolProcessTest, ManagerKilledAtEveryStepRecovers) {
  // The scene's lease steps: h1's 2 GPUs assigned and attached (4), detached and released (4),
  // h2's 3 assigned and attached (6).
  for (const char* when : {"before", "after"}) {
    for (int step = 1; step <= 14; ++step) {
      const std::string crash = fmt::format("{}:{}", when, step);
      SCOPED_TRACE("--crash-at " + crash);
      ProcessPool pool(crash);
      pool.Scene();
      EXPECT_EQ(pool.crashes(), 1) << "the manager was to crash once";
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// h1's agent killed after each of its calls took effect (attach, attach, detach, detach),
// before it answered; restarted, it registers with a new boot ID and is attached again.
TEST(PoolProcessTest, AgentKilledAfterEveryCallRecovers) {
  for (int call = 1; call <= 4; ++call) {
    SCOPED_TRACE("agent crash after call " + std::to_string(call));
    ProcessPool pool("", std::to_string(call));
    pool.Scene();
    EXPECT_EQ(pool.crashes(), 1) << "the agent was to crash once";
    if (::testing::Test::HasFailure()) return;
  }
}

// box-a's bridge killed after each ownership change of the scene took effect (ASSIGN of h1's
// GPU, RELEASE of it, the two ASSIGNs of h2's), before it answered: restarted with no owners,
// it is assigned again (or released again) by the manager, and the hosts attach again.
TEST(PoolProcessTest, BridgeKilledAfterEveryOwnershipChangeRecovers) {
  for (int change = 1; change <= 4; ++change) {
    SCOPED_TRACE("box-a crashes after ownership change " + std::to_string(change));
    ProcessPool pool("", "", "--crash-after-ownership-change=" + std::to_string(change));
    pool.Scene();
    EXPECT_EQ(pool.crashes(), 1) << "box-a was to crash once";
    if (::testing::Test::HasFailure()) return;
  }
}

// A bridge killed and started again while its GPUs are lent: it comes back with no owners; the
// manager assigns them again and the host attaches them again; the allocation stays active.
TEST(PoolProcessTest, BridgeRestartKeepsTheHostsGpus) {
  ProcessPool pool;
  const std::string a = pool.Allocate("h1", 2, "spread");
  ASSERT_TRUE(pool.WaitState(a, "active"));
  ASSERT_TRUE(pool.WaitSettled());
  pool.box(0).process->Kill();
  ASSERT_TRUE(pool.box(0).process->Start());
  // The probe notices, the manager assigns again, the agent attaches again.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(pool.WaitSettled());
  ASSERT_TRUE(ProcessPool::WaitFor([&] {
    std::optional<Answer> s = pool.Call("GET", "/v1/status");
    return s && s->body["counters"]["bridge_restarts_seen"].get<int>() >= 1;
  }));
  ASSERT_TRUE(pool.WaitSettled());
  pool.Check("after box-a restarted");
  std::optional<Answer> alloc = pool.Call("GET", "/v1/allocations/" + a);
  ASSERT_TRUE(alloc.has_value());
  EXPECT_EQ(alloc->body["state"], "active");
  pool.Release(a);
  ASSERT_TRUE(pool.WaitState(a, "released"));
  pool.Check("released");
}

// A firmware update of box-a (its bridge run from a flash by dxpu-boot) while h1 holds a GPU on
// it: `dxpu flash push` writes v2, the bridge reboots into it, the probe sees the GPU free, the
// manager assigns it again and the agent attaches it again: the allocation stays active.
TEST(PoolProcessTest, FirmwareUpdateKeepsTheHostsGpus) {
  ProcessPool pool("", "", "", ProcessPool::BoxA::kFlashed);
  const std::string a = pool.Allocate("h1", 2, "spread");
  ASSERT_TRUE(pool.WaitState(a, "active"));
  ASSERT_TRUE(pool.WaitSettled());
  pool.Check("before the update");
  ProcessPool::Box& box = pool.box(0);
  const firmware::FirmwareVersion v2 = firmware::FirmwareVersion::Of(1, 1, 0);
  const std::string image = box.flashed->ImageFile("v2.img", box.flashed->Image(v2));
  ChildProcess push(
      {DXPU_CLI_BIN, "flash", "push", image, "--bridge", fmt::format("127.0.0.1:{}", box.mgmt),
       "--json", "--key", pool.operator_key_file()},
      box.flashed->path("push.log"));
  push.Start();
  ASSERT_EQ(push.Wait(120'000), 0) << push.LogTail() << box.flashed->BootLog();
  ASSERT_TRUE(ProcessPool::WaitFor([&] {
    std::optional<Answer> s = pool.Call("GET", "/v1/status");
    return s && s->body["counters"]["bridge_restarts_seen"].get<int>() >= 1;
  }));
  ASSERT_TRUE(pool.WaitSettled());
  pool.Check("after box-a's update");
  std::optional<Answer> alloc = pool.Call("GET", "/v1/allocations/" + a);
  ASSERT_TRUE(alloc.has_value());
  EXPECT_EQ(alloc->body["state"], "active");
  // The bridge runs v2; its health check marks it good.
  const bridge::ManagementClient client(*link::LinkAddress::FromIp("127.0.0.1", box.mgmt), 300, 2);
  ASSERT_TRUE(ProcessPool::WaitFor([&] {
    const auto r = bridge::DecodeFwReport(client.FwStatus());
    return r && r->running_version == v2.packed && r->trial_slot == DXPU_MGMT_FW_NO_SLOT;
  }));
  pool.Release(a);
  ASSERT_TRUE(pool.WaitState(a, "released"));
  pool.Check("released");
}

}  // namespace
}  // namespace dxpu::test
