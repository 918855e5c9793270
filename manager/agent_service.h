// agent_service.h - the host agent (dxpu-agent): registers the host with its manager (and again
// every heartbeat, so a manager that lost it learns it again; a new boot ID each start tells the
// manager that what this host had attached is gone), and serves the manager's attach and
// detach calls through a backend (docs/manager.md "The agent's API"). Calls are run one at a
// time: hot-plug on one host is serial anyway, and the backends keep per-bridge state.
#ifndef DXPU_MANAGER_AGENT_SERVICE_H_
#define DXPU_MANAGER_AGENT_SERVICE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "manager/agent_backend.h"
#include "manager/leader_redirect.h"
#include "manager/tls.h"

namespace httplib {
class Server;
}

namespace dxpu::manager {

struct AgentOptions {
  std::string id;        // the host's name in the pool
  uint64_t node_id = 0;  // its DxFP node ID
  // The manager's API, or its replicas' (comma-separated): a standby's answer sends the agent
  // to the leader (leader_redirect.h).
  std::string manager;    // "http://127.0.0.1:17490"
  std::string advertise;  // the URL the manager calls this agent at
  // This host's certificate (CN host:NAME) towards an https:// manager and the pool's CA.
  TlsFiles tls;
  int heartbeat_ms = 10'000;
  // This host's fabric public key (64 hex digits), sent with every registration: the manager
  // sets it on the bridges whose GPUs the host gets. "": none. A new one is a rotation.
  std::string fabric_key;
  // Registration retries while the manager does not answer: retry_ms, doubling up to
  // retry_max_ms, one log line each.
  int retry_ms = 500;
  int retry_max_ms = 10'000;
  // The manager refused the registration (a 4xx: the node ID is another host's, a bad name):
  // retrying cannot help. Called once, from the registration thread, with one line saying why
  // and what to do; the daemon exits 1. Registration stops.
  std::function<void(const std::string&)> on_refused;
  // Crash tests only: the process exits (status 137) after its crash_call-th attach or detach
  // took effect, before answering. 0: never.
  uint64_t crash_call = 0;
};

class AgentService {
 public:
  AgentService(AgentOptions options, std::unique_ptr<AttachBackend> backend);
  ~AgentService();
  AgentService(const AgentService&) = delete;
  AgentService& operator=(const AgentService&) = delete;

  void InstallRoutes(httplib::Server& server);
  // Starts registering with the manager (a thread), with a fresh boot ID.
  void StartRegistration();
  const std::string& boot_id() const { return boot_id_; }
  bool registered() const;

 private:
  enum class Registration { kOk, kNoAnswer, kRefused };
  void RegistrationLoop();
  // One registration; *why: the one line saying what went wrong.
  Registration Register(std::string* why);
  void MaybeCrash(const std::string& gpu);

  AgentOptions options_;
  ManagerUrls managers_;  // the registration thread's alone
  std::unique_ptr<AttachBackend> backend_;
  std::string boot_id_;
  std::mutex calls_;                             // one attach or detach at a time
  std::map<std::string, std::string> attached_;  // gpu -> what the backend said
  uint64_t calls_done_ = 0;
  std::atomic<uint64_t> forbidden_{0};  // requests refused for their identity (403)
  mutable std::mutex state_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool registered_ = false;
  std::thread registration_;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_AGENT_SERVICE_H_
