// manager_service.cc - the pool manager in real time (manager_service.h).
#include "manager/manager_service.h"

#include <httplib.h>

#include <unistd.h>

#include <chrono>
#include <string>
#include <utility>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "manager/bridge_steps.h"
#include "manager/pool_json.h"

namespace dxpu::manager {

namespace {

// An agent step: POST {agent}/v1/attach or /v1/detach (docs/manager.md "The agent's API").
ActionResult RunAgentAction(const Action& a, const ServiceOptions& options) {
  ActionResult r;
  r.id = a.id;
  const bool attach = a.kind == ActionKind::kAgentAttach;
  const nlohmann::json body = {{"gpu", GpuName(a.box.id, a.device)},
                               {"box", a.box.id},
                               {"fabric", a.box.fabric},
                               {"device", a.device},
                               {"host_bdf", BdfText(a.host_bdf)},
                               {"node_id", fmt::format("{:#x}", a.host.node_id)},
                               {"allocation", AllocationName(a.allocation)},
                               {"bridge_key", a.box.fabric_key}};
  const std::unique_ptr<httplib::Client> client =
      MakeClient(a.host.agent, options.tls, "host:" + a.host.id);  // h1's agent, no other
  const auto timeout = std::chrono::milliseconds(options.agent_timeout_ms);
  client->set_connection_timeout(std::chrono::seconds(2));
  client->set_read_timeout(timeout);
  client->set_write_timeout(timeout);
  const char* path = attach ? "/v1/attach" : "/v1/detach";
  httplib::Result res = client->Post(path, body.dump(), "application/json");
  if (!res) {
    r.outcome = ActionOutcome::kUnreachable;
    r.error = fmt::format("agent of {} at {}: {}", a.host.id, a.host.agent,
                          httplib::to_string(res.error()));
    return r;
  }
  if (res->status == 200) return r;
  r.outcome = ActionOutcome::kRefused;
  const nlohmann::json answer = nlohmann::json::parse(res->body, nullptr, false);
  std::string why = res->body.substr(0, 200);
  if (answer.is_object() && answer.contains("message") && answer["message"].is_string())
    why = answer["message"].get<std::string>();
  r.error = fmt::format("agent of {}: {} {}: {}", a.host.id, res->status, path, why);
  return r;
}

}  // namespace

ActionResult RunActionOverNetwork(const Action& action, const ServiceOptions& options) {
  if (action.kind == ActionKind::kAgentAttach || action.kind == ActionKind::kAgentDetach)
    return RunAgentAction(action, options);
  return RunBridgeAction(action, SocketExchange(action.box.management, options.bridge_timeout_ms,
                                                options.bridge_attempts, options.signer));
}

void ManagerService::CrashForTest(const Action& a, const char* when) {
  spdlog::warn("crash test: exiting at step {} ({} of {}) {}", lease_steps_done_,
               ActionKindName(a.kind), GpuName(a.box.id, a.device), when);
  spdlog::default_logger()->flush();
  _exit(137);
}

ActionResult ManagerService::ProbeBridge(const BoxRecord& box) const {
  Action a;
  a.kind = ActionKind::kBridgeProbe;
  a.box = box;
  return RunActionOverNetwork(a, options_);
}

uint64_t ManagerService::Now() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

ManagerService::ManagerService(std::unique_ptr<PoolStore> store, ServiceOptions options)
    : options_(std::move(options)), store_(std::move(store)) {}

PoolResult<std::unique_ptr<ManagerService>> ManagerService::Start(std::unique_ptr<PoolStore> store,
                                                                  ServiceOptions options) {
  std::unique_ptr<ManagerService> s(new ManagerService(std::move(store), std::move(options)));
  PoolResult<std::unique_ptr<PoolManager>> m =
      PoolManager::Open(*s->store_, s->options_.pool, Now());
  if (!m.ok()) return m.error();
  s->manager_ = std::move(m).value();
  s->threads_.emplace_back([p = s.get()] { p->ReconcileLoop(); });
  for (unsigned i = 0; i < std::max(1u, s->options_.workers); ++i)
    s->threads_.emplace_back([p = s.get()] { p->WorkerLoop(); });
  return s;
}

ManagerService::~ManagerService() { Stop(); }

void ManagerService::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  work_cv_.notify_all();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

void ManagerService::ReconcileLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    std::vector<Action> due = manager_->TakeActions(Now());
    for (Action& a : due) queue_.push_back(std::move(a));
    if (!due.empty()) work_cv_.notify_all();
    const uint64_t next = manager_->NextDeadline();
    const uint64_t now = Now();
    // Sleep to the next deadline, at most a second (the wall clock may jump).
    const uint64_t wait_ns = next <= now ? 0 : std::min<uint64_t>(next - now, kSecond);
    if (wait_ns > 0) cv_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
  }
}

void ManagerService::WorkerLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    work_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Action a = std::move(queue_.front());
    queue_.pop_front();
    if (options_.may_act && !options_.may_act()) {
      // A replica past its term: nothing more is asked of a bridge or an agent; the term's end
      // stops this service.
      spdlog::warn("not taking {} for {}: this manager's term may be over", ActionKindName(a.kind),
                   GpuName(a.box.id, a.device));
      continue;
    }
    lock.unlock();
    ActionResult r = RunActionOverNetwork(a, options_);
    lock.lock();
    if (stopping_) return;
    const bool lease_step = a.kind != ActionKind::kBridgeProbe;
    const bool crash =
        lease_step && options_.crash_step != 0 && ++lease_steps_done_ == options_.crash_step;
    if (crash && !options_.crash_after_record) CrashForTest(a, "before recording it");
    manager_->Complete(r, Now());
    if (crash) CrashForTest(a, "after recording it");
    cv_.notify_all();
  }
}

bool ManagerService::WaitFor(const std::function<bool(const PoolManager&)>& pred, int timeout_ms) {
  std::unique_lock lock(mu_);
  // A stopped service (its term over) answers at once with what it has.
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return stopping_ || pred(*manager_); });
}

}  // namespace dxpu::manager
