// etcd_cluster.h - a real etcd cluster on loopback for the tests (Debian's etcd-server, installed
// by tools/bootstrap): N members, each a child process with its own data directory and ports,
// which a test can kill (-9, as a crash) and start again from its data (quorum lost, regained).
#ifndef DXPU_TESTS_MANAGER_ETCD_CLUSTER_H_
#define DXPU_TESTS_MANAGER_ETCD_CLUSTER_H_

#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bridge_process.h"
#include "child_process.h"
#include "manager/etcd_client.h"

namespace dxpu::test {

inline constexpr const char* kEtcdBin = "/usr/bin/etcd";

class EtcdCluster {
 public:
  struct Member {
    std::string name;
    uint16_t client_port = 0;
    uint16_t peer_port = 0;
    std::unique_ptr<ChildProcess> process;
    std::string url() const { return fmt::format("http://127.0.0.1:{}", client_port); }
  };

  // Starts `members` members; Healthy() says when they serve.
  EtcdCluster(const std::filesystem::path& dir, int members) : dir_(dir) {
    std::vector<std::string> peers;
    for (int i = 0; i < members; ++i) {
      Member m;
      m.name = fmt::format("etcd{}", i);
      m.client_port = FreePort(SOCK_STREAM);
      m.peer_port = FreePort(SOCK_STREAM);
      peers.push_back(fmt::format("{}=http://127.0.0.1:{}", m.name, m.peer_port));
      members_.push_back(std::move(m));
    }
    initial_cluster_ = fmt::format("{}", fmt::join(peers, ","));
    for (size_t i = 0; i < members_.size(); ++i) Start(i);
  }
  ~EtcdCluster() {
    for (Member& m : members_) m.process->Kill();
  }
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // (Re)starts member i from its data directory.
  void Start(size_t i) {
    Member& m = members_[i];
    const std::string peer = fmt::format("http://127.0.0.1:{}", m.peer_port);
    m.process = std::make_unique<ChildProcess>(
        std::vector<std::string>{kEtcdBin, "--name", m.name, "--data-dir", (dir_ / m.name).string(),
                                 "--listen-client-urls", m.url(), "--advertise-client-urls",
                                 m.url(), "--listen-peer-urls", peer,
                                 "--initial-advertise-peer-urls", peer, "--initial-cluster",
                                 initial_cluster_, "--initial-cluster-state", "new",
                                 "--initial-cluster-token", dir_.filename().string(),
                                 // Loopback: elections in a few hundred ms, not seconds.
                                 "--heartbeat-interval", "50", "--election-timeout", "500",
                                 "--logger", "zap", "--log-level", "warn"},
        dir_ / (m.name + ".log"));
    m.process->Start();
  }
  void Kill(size_t i) { members_[i].process->Kill(); }

  std::vector<std::string> Endpoints() const {
    std::vector<std::string> urls;
    for (const Member& m : members_) urls.push_back(m.url());
    return urls;
  }
  std::string EndpointList() const { return fmt::format("{}", fmt::join(Endpoints(), ",")); }
  const std::vector<Member>& members() const { return members_; }

  // Waits until the cluster takes a write (a leader and a quorum), up to timeout.
  bool Healthy(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const {
    manager::EtcdClient client({Endpoints(), {}, 1000});
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      manager::PoolResult<manager::EtcdTxnResult> t =
          client.Txn({}, {manager::EtcdOp{manager::EtcdOp::Kind::kPut, "/health", "ok", 0}}, {});
      if (t.ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  std::string LogTails() const {
    std::string all;
    for (const Member& m : members_) all += "--- " + m.name + ":\n" + m.process->LogTail(1500);
    return all;
  }

 private:
  std::filesystem::path dir_;
  std::string initial_cluster_;
  std::vector<Member> members_;
};

}  // namespace dxpu::test

#endif  // DXPU_TESTS_MANAGER_ETCD_CLUSTER_H_
