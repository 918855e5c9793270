// replicas_test.cc - the pool manager replicated on etcd, with real processes on loopback: a
// three-member etcd cluster, three dxpu-manager replicas (--etcd), two dxpu-bridge daemons (two
// GPUs each) and two dxpu-agents that know all three replicas. Clients follow the leader as
// `dxpu pool` does (a standby's 503 names it). Checked:
//   - the leader killed -9 in the middle of a stream of allocations and releases: another
//     replica leads within the lease; every acknowledged allocation survives; nothing stays in
//     progress; no GPU is owned twice (the pool audited against the bridges themselves);
//   - the leader paused (SIGSTOP: to itself, a partition) while another takes over, then let
//     go: it finds its term over and stands by; its writes are refused and the pool stays whole;
//   - etcd losing quorum: the leader stops allocating and says why, every replica says it cannot
//     lead and why, and when quorum returns a replica leads again with nothing lost.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
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

#include "bridge_process.h"
#include "child_process.h"
#include "etcd_cluster.h"
#include "management_keys.h"
#include "manager/leader_redirect.h"
#include "manager/pool_audit.h"
#include "pool_bridge_config.h"

namespace dxpu::test {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct Answer {
  int status = 0;
  json body;
};

std::optional<Answer> CallUrl(const std::string& url, const std::string& method,
                              const std::string& path, const json& body = nullptr) {
  httplib::Client c(url);
  c.set_connection_timeout(seconds(1));
  c.set_read_timeout(seconds(15));
  httplib::Result r = method == "GET"    ? c.Get(path)
                      : method == "POST" ? c.Post(path, body.dump(), "application/json")
                                         : c.Delete(path);
  if (!r) return std::nullopt;
  return Answer{r->status, json::parse(r->body, nullptr, false)};
}

bool WaitFor(const std::function<bool()>& done, seconds limit = seconds(30)) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return done();
}

class ReplicatedPool {
 public:
  struct Replica {
    std::string name;
    uint16_t port = 0;
    std::unique_ptr<ChildProcess> process;
    bool paused = false;
    std::string url() const { return fmt::format("http://127.0.0.1:{}", port); }
  };

  ReplicatedPool() {
    char tmpl[] = "/tmp/dxpu-replicas-XXXXXX";
    dir_ = mkdtemp(tmpl);
    etcd_ = std::make_unique<EtcdCluster>(dir_ / "etcd", 3);
    EXPECT_TRUE(etcd_->Healthy()) << etcd_->LogTails();
    key_file_ = key_.WriteFiles((dir_ / "manager").string());
    for (int b = 0; b < 2; ++b) {
      const uint16_t udp = FreePort(SOCK_DGRAM);
      const uint16_t mgmt = FreePort(SOCK_DGRAM);
      boxes_.push_back({b == 0 ? "box-a" : "box-b", udp, mgmt,
                        std::make_unique<BridgeProcess>(
                            PoolBridgeConfig(0xb0b0 + b, udp, mgmt, {key_.PublicHex()}))});
      EXPECT_TRUE(boxes_.back().process->Start());
    }
    for (int r = 0; r < 3; ++r) {
      Replica rep;
      rep.name = fmt::format("m{}", r + 1);
      rep.port = FreePort(SOCK_STREAM);
      replicas_.push_back(std::move(rep));
    }
    std::vector<std::string> urls;
    for (Replica& r : replicas_) {
      urls.push_back(r.url());
      StartReplica(r);
    }
    manager_list_ = fmt::format("{}", fmt::join(urls, ","));
    urls_ = std::make_unique<manager::ManagerUrls>(manager_list_);
    for (int h = 0; h < 2; ++h) {
      const std::string id = h == 0 ? "h1" : "h2";
      agents_.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{DXPU_AGENT_BIN, "--host", id, "--node-id",
                                   fmt::format("{:#x}", 0xa1 + h), "--port",
                                   std::to_string(FreePort(SOCK_STREAM)), "--manager",
                                   manager_list_, "--mode", "userspace", "--heartbeat", "1s"},
          dir_ / (id + ".log")));
      agents_.back()->Start();
    }
    for (const Box& b : boxes_) {
      std::optional<Answer> a = Call("POST", "/v1/boxes",
                                     json{{"id", b.id},
                                          {"management", fmt::format("127.0.0.1:{}", b.mgmt)},
                                          {"fabric", fmt::format("udp:127.0.0.1:{}", b.udp)}});
      EXPECT_TRUE(a && a->status == 201) << b.id << (a ? a->body.dump() : "no answer");
    }
    EXPECT_TRUE(WaitFor([&] {
      std::optional<Answer> s = Call("GET", "/v1/status");
      return s && s->status == 200 && s->body["hosts"] == 2 && s->body["gpus_free"] == 4;
    }));
  }

  ~ReplicatedPool() {
    for (auto& a : agents_) a->Kill();
    for (Replica& r : replicas_) {
      if (r.paused) kill(r.process->pid(), SIGCONT);
      r.process->Kill();
    }
    boxes_.clear();
    if (::testing::Test::HasFailure()) {
      std::cerr << "--- logs in " << dir_.string() << '\n';
      for (Replica& r : replicas_)
        std::cerr << "--- replica " << r.name << ":\n" << r.process->LogTail(3000) << '\n';
      std::cerr << etcd_->LogTails() << '\n';
    }
    etcd_.reset();
    if (!::testing::Test::HasFailure() && std::getenv("DXPU_KEEP_LOGS") == nullptr)
      std::filesystem::remove_all(dir_);
  }

  void StartReplica(Replica& r) {
    r.process = std::make_unique<ChildProcess>(
        std::vector<std::string>{DXPU_MANAGER_BIN, "--port", std::to_string(r.port), "--etcd",
                                 etcd_->EndpointList(), "--etcd-prefix", "/pool", "--replica",
                                 r.name, "--leader-ttl", "2s", "--probe-interval", "200ms",
                                 "--detach-timeout", "5s", "--management-key", key_file_,
                                 "--audit-log", (dir_ / (r.name + ".audit.jsonl")).string()},
        dir_ / (r.name + ".log"));
    r.process->Start();
  }

  // One request to the pool, following the leader as `dxpu pool` does, until a replica that
  // leads answers (or `limit` passes): a standby's 503 names the leader; a replica that does
  // not answer, or knows no leader, sends the request to the next.
  std::optional<Answer> Call(const std::string& method, const std::string& path,
                             const json& body = nullptr, seconds limit = seconds(30)) {
    manager::ManagerUrls& urls = *urls_;  // starts at the last leader known
    std::optional<Answer> last;
    WaitFor(
        [&] {
          last = CallUrl(urls.Current(), method, path, body);
          if (!last) {
            urls.Next();
            return false;
          }
          const std::string leader = manager::LeaderNamedBy(last->status, last->body.dump());
          if (!leader.empty()) {
            urls.Follow(leader);
            return false;
          }
          if (last->status == 503 && last->body.value("error", "") == "not-leader") {
            urls.Next();
            return false;
          }
          return true;
        },
        limit);
    return last;
  }

  // The replica that says it leads, if exactly one does.
  Replica* Leader() {
    Replica* leader = nullptr;
    int leaders = 0;
    for (Replica& r : replicas_) {
      if (r.paused || !r.process->Alive()) continue;
      std::optional<Answer> a = CallUrl(r.url(), "GET", "/v1/leader");
      if (a && a->status == 200 && a->body["role"] == "leader") {
        leader = &r;
        ++leaders;
      }
    }
    return leaders == 1 ? leader : nullptr;
  }
  Replica* WaitLeader(const Replica* other_than = nullptr) {
    Replica* leader = nullptr;
    WaitFor([&] {
      leader = Leader();
      return leader != nullptr && leader != other_than;
    });
    if (leader == other_than) return nullptr;
    if (leader != nullptr) urls_->Follow(leader->url());
    return leader;
  }

  // An allocation of one GPU for `host`; its ID once a leader acknowledged it ("" if none did).
  // A GPU given back a moment ago may still be being scrubbed: asked again meanwhile.
  std::string Allocate(const std::string& host, const std::string& key) {
    std::string id;
    WaitFor([&] {
      std::optional<Answer> a =
          Call("POST", "/v1/allocations", json{{"host", host}, {"count", 1}, {"request_key", key}});
      if (a && (a->status == 200 || a->status == 201 || a->status == 202))
        id = a->body["id"].get<std::string>();
      return !id.empty() || !a || a->body.value("error", "") != "insufficient-gpus";
    });
    return id;
  }

  // Nothing in progress, every active allocation attached, and the pool as the bridges and the
  // agents themselves see it.
  void CheckSettledAndWhole(const std::string& when) {
    SCOPED_TRACE(when);
    EXPECT_TRUE(WaitFor(
        [&] {
          std::optional<Answer> s = Call("GET", "/v1/status");
          if (!s || s->status != 200 || s->body["allocations_in_progress"] != 0) return false;
          std::optional<Answer> all = Call("GET", "/v1/allocations");
          if (!all || all->status != 200) return false;
          for (const json& a : all->body) {
            for (const json& g : a["gpus"]) {
              if (g["step"] != "attached") return false;
            }
          }
          return true;
        },
        seconds(60)))
        << "allocations still in progress";
    Replica* leader = WaitLeader();
    ASSERT_NE(leader, nullptr);
    manager::PoolResult<manager::PoolAudit> audit = manager::AuditPool(leader->url());
    ASSERT_TRUE(audit.ok()) << audit.error().message;
    for (const std::string& p : audit.value().problems) ADD_FAILURE() << p;
    EXPECT_EQ(audit.value().gpus, 4u);
    // No GPU in two allocations that hold it.
    std::optional<Answer> all = Call("GET", "/v1/allocations");
    ASSERT_TRUE(all && all->status == 200);
    std::set<std::string> held;
    for (const json& a : all->body) {
      if (a["state"] != "active") continue;
      for (const json& g : a["gpus"])
        EXPECT_TRUE(held.insert(g["gpu"].get<std::string>()).second) << g.dump() << " twice";
    }
  }

  std::vector<Replica>& replicas() { return replicas_; }
  const std::filesystem::path& dir() const { return dir_; }
  EtcdCluster& etcd() { return *etcd_; }

 private:
  struct Box {
    std::string id;
    uint16_t udp = 0, mgmt = 0;
    std::unique_ptr<BridgeProcess> process;
  };
  std::filesystem::path dir_;
  std::unique_ptr<EtcdCluster> etcd_;
  TestManagementKey key_ = MakeTestManagementKey();
  std::string key_file_;
  std::vector<Box> boxes_;
  std::vector<Replica> replicas_;
  std::string manager_list_;
  // What the test's client knows: a paused replica accepts connections and answers nothing,
  // so a client that starts from it waits its whole timeout; this one starts from the leader.
  std::unique_ptr<manager::ManagerUrls> urls_;
  std::vector<std::unique_ptr<ChildProcess>> agents_;
};

TEST(Replicas, TheLeaderKilledDuringAStreamOfAllocationsLosesNothing) {
  ReplicatedPool pool;
  ReplicatedPool::Replica* first = pool.WaitLeader();
  ASSERT_NE(first, nullptr);
  // A stream: each host takes a GPU and gives the previous one back; the leader dies after the
  // fourth request; the stream goes on through the next leader.
  std::map<std::string, std::string> acknowledged;  // request key -> allocation ID
  std::map<std::string, std::string> released;
  std::map<std::string, std::string> held;  // host -> its allocation now
  for (int i = 0; i < 12; ++i) {
    const std::string host = i % 2 == 0 ? "h1" : "h2";
    const std::string key = fmt::format("{}-{}", host, i);
    if (i == 4) first->process->Kill();  // kill -9: no goodbye, the lease runs out
    const std::string id = pool.Allocate(host, key);
    ASSERT_FALSE(id.empty()) << "request " << key << " was never acknowledged";
    acknowledged[key] = id;
    if (held.contains(host)) {
      std::optional<Answer> r = pool.Call("DELETE", "/v1/allocations/" + held[host]);
      ASSERT_TRUE(r && (r->status == 200 || r->status == 202)) << (r ? r->body.dump() : "");
      released[held[host]] = host;
    }
    held[host] = id;
  }
  ReplicatedPool::Replica* next = pool.WaitLeader(first);
  ASSERT_NE(next, nullptr) << "no replica took over";
  pool.CheckSettledAndWhole("after the leader was killed");
  // `dxpu pool` given the dead replica first, then a standby: it reaches the leader.
  std::vector<std::string> order = {first->url()};
  for (ReplicatedPool::Replica& r : pool.replicas()) {
    if (&r != first && &r != next) order.push_back(r.url());
  }
  order.push_back(next->url());
  ChildProcess cli({DXPU_CLI_BIN, "pool", "status", "--json", "--manager",
                    fmt::format("{}", fmt::join(order, ","))},
                   pool.dir() / "cli.log");
  cli.Start();
  EXPECT_EQ(cli.Wait(20'000), std::optional<int>(0)) << cli.LogTail();
  EXPECT_NE(cli.LogTail().find("\"gpus\": 4"), std::string::npos) << cli.LogTail();
  // Every acknowledged allocation is there, in the state its last acknowledged request left it.
  for (const auto& [key, id] : acknowledged) {
    std::optional<Answer> a = pool.Call("GET", "/v1/allocations/" + id);
    ASSERT_TRUE(a && a->status == 200) << key << " -> " << id << " is lost";
    EXPECT_EQ(a->body["state"], released.contains(id) ? "released" : "active") << id;
    // The same request again is the same allocation (its key survived too).
    const std::string host = key.substr(0, 2);
    EXPECT_EQ(pool.Allocate(host, key), id) << key;
  }
}

TEST(Replicas, APausedLeaderFindsItsTermOverAndItsWritesRefused) {
  ReplicatedPool pool;
  ReplicatedPool::Replica* old = pool.WaitLeader();
  ASSERT_NE(old, nullptr);
  const std::string before = pool.Allocate("h1", "before");
  ASSERT_FALSE(before.empty());
  ASSERT_EQ(kill(old->process->pid(), SIGSTOP), 0);
  old->paused = true;
  ReplicatedPool::Replica* next = pool.WaitLeader(old);
  ASSERT_NE(next, nullptr) << "nobody took over from a paused leader";
  const std::string during = pool.Allocate("h2", "during");
  ASSERT_FALSE(during.empty());
  // The old leader wakes with its stale view: its term is over; it says so and stands by.
  ASSERT_EQ(kill(old->process->pid(), SIGCONT), 0);
  old->paused = false;
  EXPECT_TRUE(WaitFor([&] {
    std::optional<Answer> a = CallUrl(old->url(), "GET", "/v1/leader");
    return a && a->body["role"] == "standby" && a->body.contains("leader") &&
           a->body["leader"]["replica"] == next->name;
  })) << "the old leader did not stand down";
  // Straight to it, a change is refused and names the leader.
  std::optional<Answer> r =
      CallUrl(old->url(), "POST", "/v1/allocations", json{{"host", "h1"}, {"count", 1}});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body["error"], "not-leader");
  EXPECT_EQ(r->body["leader"]["url"], next->url());
  EXPECT_EQ(pool.Leader(), next);
  pool.CheckSettledAndWhole("after the paused leader came back");
  for (const std::string& id : {before, during}) {
    std::optional<Answer> a = pool.Call("GET", "/v1/allocations/" + id);
    ASSERT_TRUE(a && a->status == 200) << id;
    EXPECT_EQ(a->body["state"], "active") << id;
  }
}

TEST(Replicas, WithoutQuorumNoReplicaAllocatesAndEachSaysWhy) {
  ReplicatedPool pool;
  ReplicatedPool::Replica* leader = pool.WaitLeader();
  ASSERT_NE(leader, nullptr);
  const std::string before = pool.Allocate("h1", "before");
  ASSERT_FALSE(before.empty());
  pool.etcd().Kill(1);
  pool.etcd().Kill(2);
  // An allocation now is refused (not hung), saying why: the store cannot write, or (its term
  // ended meanwhile) the replica no longer leads.
  std::optional<Answer> refused =
      CallUrl(leader->url(), "POST", "/v1/allocations", json{{"host", "h2"}, {"count", 1}});
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 503) << refused->body.dump();
  const std::string why = refused->body.value("error", "");
  EXPECT_TRUE(why == "store-uncertain" || why == "not-leader") << refused->body.dump();
  // Soon no replica leads, and each says it is for want of quorum.
  EXPECT_TRUE(WaitFor([&] {
    for (ReplicatedPool::Replica& r : pool.replicas()) {
      std::optional<Answer> a = CallUrl(r.url(), "GET", "/v1/leader");
      if (!a || a->body["role"] != "standby" ||
          !a->body["reason"].get<std::string>().starts_with("no-quorum"))
        return false;
    }
    return true;
  })) << "a replica leads without quorum, or does not say why it cannot";
  pool.etcd().Start(1);
  pool.etcd().Start(2);
  ASSERT_TRUE(pool.etcd().Healthy()) << pool.etcd().LogTails();
  ASSERT_NE(pool.WaitLeader(), nullptr) << "no replica leads after quorum came back";
  // It was still attaching when quorum went: the new term finishes the attach.
  std::optional<Answer> a = pool.Call("GET", "/v1/allocations/" + before + "?wait=30");
  ASSERT_TRUE(a && (a->status == 200 || a->status == 202)) << before << " was lost";
  EXPECT_EQ(a->body["state"], "active") << a->body.dump();
  const std::string after = pool.Allocate("h2", "after");
  ASSERT_FALSE(after.empty());
  pool.CheckSettledAndWhole("after quorum came back");
}

}  // namespace
}  // namespace dxpu::test

namespace dxpu::test {
namespace {

// What an operator may get wrong: refused at start, saying why; and an etcd that nobody
// answers at: the replica runs, answers /healthz, and says it cannot lead and why.
TEST(Replicas, BadEtcdConfigurationsAreRefusedOrReported) {
  char tmpl[] = "/tmp/dxpu-replicas-bad-XXXXXX";
  const std::filesystem::path dir = mkdtemp(tmpl);
  const auto run = [&](std::vector<std::string> args) {
    args.insert(args.begin(), DXPU_MANAGER_BIN);
    args.insert(args.end(), {"--port", "0", "--audit-log", (dir / "audit.jsonl").string()});
    auto d = std::make_unique<ChildProcess>(args, dir / "bad.log");
    d->Start();
    return d;
  };
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--etcd", "ftp://127.0.0.1:2379"}, "is not an http:// or https:// URL"},
           {{"--etcd", ","}, "names no member"},
           {{"--etcd", "http://127.0.0.1:2379", "--db", (dir / "x.db").string()}, "not both"}}) {
    std::unique_ptr<ChildProcess> d = run(args);
    const std::optional<int> status = d->Wait(10000);
    ASSERT_TRUE(status.has_value()) << args[1] << ": still running";
    EXPECT_EQ(*status, 1) << args[1];
    EXPECT_NE(d->LogTail().find(says), std::string::npos) << d->LogTail();
  }
  const uint16_t nobody = FreePort(SOCK_STREAM);
  const uint16_t port = FreePort(SOCK_STREAM);
  ChildProcess replica({DXPU_MANAGER_BIN, "--port", std::to_string(port), "--etcd",
                        fmt::format("http://127.0.0.1:{}", nobody), "--replica", "lonely",
                        "--leader-ttl", "2s", "--audit-log", (dir / "audit.jsonl").string()},
                       dir / "lonely.log");
  replica.Start();
  const std::string url = fmt::format("http://127.0.0.1:{}", port);
  EXPECT_TRUE(WaitFor([&] {
    std::optional<Answer> a = CallUrl(url, "GET", "/v1/leader");
    return a && a->status == 200 && a->body["role"] == "standby" &&
           a->body["reason"].get<std::string>().starts_with("no-quorum") &&
           a->body["reason"].get<std::string>().find(std::to_string(nobody)) != std::string::npos;
  })) << replica.LogTail();
  std::optional<Answer> h = CallUrl(url, "GET", "/healthz");
  EXPECT_TRUE(h && h->status == 200);
  std::optional<Answer> s = CallUrl(url, "GET", "/v1/status");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->status, 503);
  EXPECT_EQ(s->body["error"], "not-leader");
  EXPECT_TRUE(replica.Alive());
  replica.Kill();
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dxpu::test
