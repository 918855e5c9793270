// demo_pool.cc - the demo's multi-host scene (demo_pool.h).
#include "demo_pool.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include "demo_bridge.h"
#include "manager/agent_service.h"
#include "manager/manager_service.h"
#include "manager/pool_audit.h"
#include "manager/proxy_backend.h"
#include "manager/rest_api.h"
#include "manager/sqlite_store.h"

namespace dxpu::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kGpusPerBox = 4;
constexpr int kWaitSeconds = 30;

// An HTTP server of this process on a loopback port of its own, served by a thread.
class LocalServer {
 public:
  LocalServer() = default;
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;
  ~LocalServer() { Stop(); }
  httplib::Server& server() { return server_; }
  // Binds a port: the URL, or "" if it could not. Routes go in before Serve.
  std::string Bind() {
    const int port = server_.bind_to_any_port("127.0.0.1");
    return port <= 0 ? "" : fmt::format("http://127.0.0.1:{}", port);
  }
  void Serve() {
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  void Stop() {
    if (!thread_.joinable()) return;
    server_.stop();
    thread_.join();
  }

 private:
  httplib::Server server_;
  std::thread thread_;
};

struct Agent {
  std::unique_ptr<LocalServer> http;
  std::unique_ptr<manager::AgentService> service;
};

struct Answer {
  int status = 0;
  json body;
};

class Scene {
 public:
  explicit Scene(std::string url) : url_(std::move(url)) {}

  std::optional<Answer> Call(const std::string& method, const std::string& path,
                             const json& body = nullptr) const {
    httplib::Client c(url_);
    c.set_read_timeout(std::chrono::seconds(kWaitSeconds + 5));
    httplib::Result r = method == "GET"    ? c.Get(path)
                        : method == "POST" ? c.Post(path, body.dump(), "application/json")
                                           : c.Delete(path);
    if (!r) return std::nullopt;
    return Answer{r->status, json::parse(r->body, nullptr, false)};
  }

  static bool WaitFor(const std::function<bool()>& done) {
    const auto end = Clock::now() + std::chrono::seconds(kWaitSeconds);
    while (Clock::now() < end) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
  }

  // "box-a/0 box-b/0 box-a/1"
  static std::string GpusOf(const json& allocation) {
    std::string out;
    for (const json& g : allocation["gpus"]) {
      out += (out.empty() ? "" : " ") + g["gpu"].get<std::string>();
    }
    return out;
  }

  // The audit after a step: "" when every invariant holds and every part answered.
  std::string Audit() const {
    manager::PoolResult<manager::PoolAudit> a = manager::AuditPool(url_);
    if (!a.ok()) return a.error().message;
    std::string out;
    for (const std::string& p : a.value().problems) out += (out.empty() ? "" : "; ") + p;
    for (const std::string& u : a.value().unreachable) {
      out += (out.empty() ? "unreachable: " : "; unreachable: ") + u;
    }
    return out;
  }

  // A host asks for GPUs and waits for them: the allocation's ID ("" if refused or failed).
  std::string Take(const std::string& host, int count, const std::string& policy,
                   bool expect_refusal = false) {
    PoolSceneStep step;
    step.what = fmt::format("{} asks for {} GPUs ({})", host, count, policy);
    const auto start = Clock::now();
    std::optional<Answer> a = Call("POST", fmt::format("/v1/allocations?wait={}", kWaitSeconds),
                                   json{{"host", host}, {"count", count}, {"policy", policy}});
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    std::string id;
    if (!a) {
      step.outcome = "the manager did not answer";
    } else if (a->status >= 400 || !a->body.is_object()) {
      step.outcome = fmt::format("refused ({}): {}", a->status,
                                 a->body.is_object() ? a->body.value("message", "") : "?");
      step.ok = expect_refusal && a->status == 409;
    } else {
      id = a->body.value("id", "");
      step.outcome = fmt::format("{} {} in {:.0f} ms: {}", id, a->body.value("state", "?"), ms,
                                 GpusOf(a->body));
      step.ok = !expect_refusal && a->body.value("state", "") == "active";
    }
    Record(std::move(step));
    return id;
  }

  void GiveBack(const std::string& host, const std::string& id) {
    PoolSceneStep step;
    step.what = fmt::format("{} gives {} back", host, id);
    const auto start = Clock::now();
    std::optional<Answer> a =
        Call("DELETE", fmt::format("/v1/allocations/{}?wait={}", id, kWaitSeconds));
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!a) {
      step.outcome = "the manager did not answer";
    } else {
      step.ok = a->status == 200 && a->body.value("state", "") == "released";
      step.outcome = step.ok ? fmt::format(
                                   "released in {:.0f} ms: detached, reset and scrubbed "
                                   "by their bridges, back in the pool",
                                   ms)
                             : a->body.dump();
    }
    Record(std::move(step));
  }

  void Record(PoolSceneStep step) {
    if (const std::string problems = Audit(); !problems.empty()) {
      step.ok = false;
      step.outcome += "; AUDIT: " + problems;
    }
    std::fprintf(stderr, "      %-30s %s\n", step.what.c_str(), step.outcome.c_str());
    steps.push_back(std::move(step));
  }

  std::vector<PoolSceneStep> steps;

 private:
  std::string url_;
};

}  // namespace

bool PoolScene::ok() const {
  return error.empty() && !steps.empty() &&
         std::all_of(steps.begin(), steps.end(), [](const PoolSceneStep& s) { return s.ok; });
}

PoolScene RunPoolScene(const fs::path& dir) {
  PoolScene result;
  // Two boxes.
  std::vector<std::unique_ptr<DemoBridge>> boxes;
  // The manager's management key, made for the demo; both boxes trust it.
  const auto signer = std::make_shared<bridge::ManagementSigner>(
      firmware::GenerateKeyPair().secret_key, bridge::WallClockEpoch());
  for (const char* name : {"box-a", "box-b"}) {
    DemoBridgeOptions bo;
    bo.signer = signer;
    bo.link = "udp";
    bo.profiles.assign(kGpusPerBox, "dxgpu");
    bo.memory_bytes = 64ull << 20;
    bo.dir = dir / name;
    std::error_code ec;
    fs::create_directories(bo.dir, ec);
    Result<std::unique_ptr<DemoBridge>> box = DemoBridge::Start(bo);
    if (!box.ok()) {
      result.error = fmt::format("{}: {}", name, box.error().message);
      return result;
    }
    boxes.push_back(std::move(box).value());
  }
  // The manager.
  manager::PoolResult<std::unique_ptr<manager::SqliteStore>> store =
      manager::SqliteStore::Open((dir / "pool.db").string());
  if (!store.ok()) {
    result.error = store.error().message;
    return result;
  }
  manager::ServiceOptions so;
  so.signer = signer;
  so.pool.probe_interval_ns = 200 * manager::kMillisecond;
  manager::PoolResult<std::unique_ptr<manager::ManagerService>> service =
      manager::ManagerService::Start(std::move(store).value(), so);
  if (!service.ok()) {
    result.error = service.error().message;
    return result;
  }
  manager::ServiceSlot slot(std::shared_ptr<manager::ManagerService>(std::move(service).value()));
  LocalServer api;
  const std::string url = api.Bind();
  if (url.empty()) {
    result.error = "the manager's API cannot listen on loopback";
    return result;
  }
  manager::RestOptions rest;
  rest.bridge_socket_dir = dir.string();  // the boxes' management sockets are in it
  manager::InstallRestApi(api.server(), slot, rest);
  api.Serve();
  // Three hosts' agents.
  std::vector<Agent> agents;
  for (int h = 1; h <= 3; ++h) {
    Agent a;
    a.http = std::make_unique<LocalServer>();
    manager::AgentOptions ao;
    ao.id = fmt::format("h{}", h);
    ao.node_id = 0xa0 + static_cast<uint64_t>(h);
    ao.manager = url;
    ao.heartbeat_ms = 1000;
    ao.advertise = a.http->Bind();
    if (ao.advertise.empty()) {
      result.error = "an agent's API cannot listen on loopback";
      return result;
    }
    a.service =
        std::make_unique<manager::AgentService>(ao, std::make_unique<manager::ProxyBackend>());
    a.service->InstallRoutes(a.http->server());
    a.http->Serve();
    a.service->StartRegistration();
    agents.push_back(std::move(a));
  }

  Scene scene(url);
  for (size_t i = 0; i < boxes.size(); ++i) {
    const std::string id = i == 0 ? "box-a" : "box-b";
    std::optional<Answer> a = scene.Call(
        "POST", "/v1/boxes",
        json{{"id", id}, {"management", boxes[i]->management()}, {"fabric", boxes[i]->fabric()}});
    if (!a || a->status != 201) {
      result.error = fmt::format("adding {}: {}", id, a ? a->body.dump() : "no answer");
      return result;
    }
  }
  const bool ready = Scene::WaitFor([&] {
    std::optional<Answer> s = scene.Call("GET", "/v1/status");
    return s && s->body["hosts"] == 3 && s->body["gpus_free"] == 2 * kGpusPerBox;
  });
  if (!ready) {
    result.error = "the boxes' GPUs and the hosts did not all show up in the pool";
    return result;
  }
  const std::string h1 = scene.Take("h1", 3, "spread");
  const std::string h2 = scene.Take("h2", 4, "pack");
  scene.Take("h3", 3, "pack", /*expect_refusal=*/true);
  if (!h1.empty()) scene.GiveBack("h1", h1);
  const std::string h3 = scene.Take("h3", 3, "pack");
  // The scene ends with everything given back.
  if (!h2.empty()) scene.GiveBack("h2", h2);
  if (!h3.empty()) scene.GiveBack("h3", h3);
  result.steps = std::move(scene.steps);

  for (Agent& a : agents) a.http->Stop();
  agents.clear();
  api.Stop();
  slot.Standby(manager::ServingState{});  // stops the manager before its bridges go
  for (auto& b : boxes) b->Stop();
  return result;
}

}  // namespace dxpu::cli
