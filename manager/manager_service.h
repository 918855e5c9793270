// manager_service.h - the pool manager in real time: the sans-IO core behind a mutex, a
// reconciler thread that takes its due steps at each deadline, and worker threads that run
// them over real sockets (a bridge's management socket, an agent's HTTP API) and hand the
// results back. The REST API calls in through With(). Time is the wall clock (ns since the
// epoch), so the deadlines the store keeps mean the same after a restart.
#ifndef DXPU_MANAGER_MANAGER_SERVICE_H_
#define DXPU_MANAGER_MANAGER_SERVICE_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "bridge-fw/management_auth.h"
#include "manager/pool_manager.h"
#include "manager/pool_store.h"
#include "manager/tls.h"

namespace dxpu::manager {

struct ServiceOptions {
  ManagerOptions pool;
  unsigned workers = 8;         // steps run at once
  int bridge_timeout_ms = 500;  // per management request attempt
  int bridge_attempts = 3;
  int agent_timeout_ms = 15'000;  // an attach reads the device's whole configuration space
  // Signs the requests that change a bridge's state (docs/protocol.md 15.8): the manager's key
  // and its epoch. Null: they go unsigned, and a bridge that trusts a key refuses them.
  std::shared_ptr<bridge::ManagementSigner> signer;
  // The manager's certificate towards https:// agents, and the pool's CA that signed theirs.
  TlsFiles tls;
  // Asked before each step is started: false once this manager may no longer act (a replica
  // whose term may have ended by its own clock: replica.h); the step is then not taken. Empty:
  // always.
  std::function<bool()> may_act;
  // Crash tests only: the process exits (status 137, nothing cleaned up) at the crash_step-th
  // lease step (probes not counted), before or after the manager records its result. 0: never.
  uint64_t crash_step = 0;
  bool crash_after_record = false;
};

// Runs one step for real: bridge steps over the management socket, agent steps over HTTP.
ActionResult RunActionOverNetwork(const Action& action, const ServiceOptions& options);

class ManagerService {
 public:
  static PoolResult<std::unique_ptr<ManagerService>> Start(std::unique_ptr<PoolStore> store,
                                                           ServiceOptions options);
  ~ManagerService();
  ManagerService(const ManagerService&) = delete;
  ManagerService& operator=(const ManagerService&) = delete;

  // Runs f(manager, now) under the lock, then wakes the reconciler (f may have made work).
  template <typename F>
  auto With(F&& f) {
    std::unique_lock lock(mu_);
    struct Wake {
      std::condition_variable& cv;
      ~Wake() { cv.notify_all(); }
    } wake{cv_};
    return f(*manager_, Now());
  }

  // Waits (up to timeout_ms) until pred(manager) holds, checking after every change.
  bool WaitFor(const std::function<bool(const PoolManager&)>& pred, int timeout_ms);

  // Stops the reconciler and the workers (a step in progress finishes first); the pool in
  // memory stays readable through With(). The destructor stops it too. Idempotent.
  void Stop();

  static uint64_t Now();
  // Probes `box`'s bridge now (INVENTORY and STATUS), outside the pool's lock: what AddBox
  // must know before it adopts the bridge.
  ActionResult ProbeBridge(const BoxRecord& box) const;

 private:
  ManagerService(std::unique_ptr<PoolStore> store, ServiceOptions options);
  void ReconcileLoop();
  void WorkerLoop();
  [[noreturn]] void CrashForTest(const Action& a, const char* when);

  ServiceOptions options_;
  std::unique_ptr<PoolStore> store_;
  std::unique_ptr<PoolManager> manager_;
  std::mutex mu_;
  std::condition_variable cv_;       // the reconciler and WaitFor: something changed
  std::condition_variable work_cv_;  // workers: a step is queued
  std::deque<Action> queue_;
  uint64_t lease_steps_done_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_MANAGER_SERVICE_H_
