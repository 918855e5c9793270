// agent_service.cc - the host agent (agent_service.h).
#include "manager/agent_service.h"

#include <httplib.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <utility>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "bridge-fw/bridge_config.h"
#include "crypto/fabric_keys.h"
#include "manager/access.h"
#include "manager/pool_json.h"

namespace dxpu::manager {

namespace {

using nlohmann::json;

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(2) + "\n", "application/json");
}

void Fail(httplib::Response& res, const PoolError& e) {
  Reply(res, HttpStatusOf(e.kind), ToJson(e));
}

PoolError Bad(std::string message) {
  return PoolError{ErrorKind::kBadRequest, "bad-body", std::move(message)};
}

PoolResult<AttachRequest> AttachRequestFromJson(std::string_view body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Bad("the body must be a JSON object");
  AttachRequest r;
  for (auto [key, out] : {std::pair{"gpu", &r.gpu}, std::pair{"box", &r.box},
                          std::pair{"fabric", &r.fabric}, std::pair{"allocation", &r.allocation}}) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_string()) return Bad(fmt::format("'{}' must be a string", key));
    *out = it->get<std::string>();
  }
  auto device = j.find("device");
  if (device == j.end() || !device->is_number_unsigned() || device->get<uint64_t>() > 0xffff)
    return Bad("'device' must be 0 to 65535");
  r.device = device->get<uint16_t>();
  auto bdf = j.find("host_bdf");
  std::optional<uint16_t> parsed;
  if (bdf != j.end() && bdf->is_string()) parsed = bridge::ParseBdf(bdf->get<std::string>());
  if (!parsed) return Bad("'host_bdf' must be a BDF such as \"01:00.0\"");
  r.host_bdf = *parsed;
  auto node = j.find("node_id");
  if (node == j.end() || !node->is_string()) return Bad("'node_id' must be a \"0x...\" string");
  try {
    r.node_id = std::stoull(node->get<std::string>(), nullptr, 0);
  } catch (const std::exception&) {
    return Bad("'node_id' must be a \"0x...\" string");
  }
  if (auto key = j.find("bridge_key"); key != j.end()) {
    if (!key->is_string()) return Bad("'bridge_key' must be a string");
    const std::string text = key->get<std::string>();
    if (!text.empty()) {
      crypto::KeyResult<crypto::Key> bridge_key = crypto::ParseFabricPublicKey(text);
      if (!bridge_key.ok()) return Bad("'bridge_key': " + bridge_key.error().message);
      r.bridge_key = crypto::KeyHex(bridge_key.value());
    }
  }
  return r;
}

std::string NewBootId() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

}  // namespace

AgentService::AgentService(AgentOptions options, std::unique_ptr<AttachBackend> backend)
    : options_(std::move(options)),
      managers_(options_.manager),
      backend_(std::move(backend)),
      boot_id_(NewBootId()) {}

AgentService::~AgentService() {
  {
    std::lock_guard lock(state_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (registration_.joinable()) registration_.join();
}

bool AgentService::registered() const {
  std::lock_guard lock(state_);
  return registered_;
}

void AgentService::InstallRoutes(httplib::Server& server) {
  InstallAccessGate(server, AgentRouteRefusal, &forbidden_);
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server.Get("/v1/devices", [this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(calls_);
    json out = json::array();
    for (const auto& [gpu, line] : attached_) out.push_back({{"gpu", gpu}, {"attached", line}});
    Reply(res, 200,
          {{"id", options_.id},
           {"node_id", fmt::format("{:#x}", options_.node_id)},
           {"mode", backend_->mode()},
           {"boot_id", boot_id_},
           {"forbidden", forbidden_.load(std::memory_order_relaxed)},
           {"devices", out}});
  });
  auto call = [this](bool attach) {
    return [this, attach](const httplib::Request& req, httplib::Response& res) {
      PoolResult<AttachRequest> r = AttachRequestFromJson(req.body);
      if (!r.ok()) return Fail(res, r.error());
      if (r.value().node_id != options_.node_id) {
        return Fail(res, PoolError{ErrorKind::kConflict, "wrong-node",
                                   fmt::format("this host is node {:#x}, not {:#x}",
                                               options_.node_id, r.value().node_id)});
      }
      std::lock_guard lock(calls_);
      if (attach) {
        PoolResult<std::string> line = backend_->Attach(r.value());
        if (!line.ok()) return Fail(res, line.error());
        attached_[r.value().gpu] = line.value();
        MaybeCrash(r.value().gpu);
        return Reply(res, 200, {{"gpu", r.value().gpu}, {"attached", line.value()}});
      }
      PoolResult<Done> done = backend_->Detach(r.value());
      if (!done.ok()) return Fail(res, done.error());
      attached_.erase(r.value().gpu);
      MaybeCrash(r.value().gpu);
      Reply(res, 200, {{"gpu", r.value().gpu}, {"detached", true}});
    };
  };
  server.Post("/v1/attach", call(true));
  server.Post("/v1/detach", call(false));
  server.set_payload_max_length(size_t{16} * 1024);
}

void AgentService::MaybeCrash(const std::string& gpu) {
  if (options_.crash_call == 0 || ++calls_done_ != options_.crash_call) return;
  spdlog::warn("crash test: exiting after call {} ({}) took effect, before answering", calls_done_,
               gpu);
  spdlog::default_logger()->flush();
  _exit(137);
}

AgentService::Registration AgentService::Register(std::string* why) {
  const json body = {{"id", options_.id},
                     {"node_id", fmt::format("{:#x}", options_.node_id)},
                     {"agent", options_.advertise},
                     {"mode", backend_->mode()},
                     {"boot_id", boot_id_},
                     {"heartbeat_ms", options_.heartbeat_ms},
                     {"fabric_key", options_.fabric_key}};
  // Each manager it knows once, following a standby to the leader it names.
  for (size_t asked = 0; asked <= managers_.size(); ++asked) {
    const std::string url = managers_.Current();
    const std::unique_ptr<httplib::Client> client = MakeClient(url, options_.tls, "manager");
    client->set_connection_timeout(std::chrono::seconds(2));
    client->set_read_timeout(std::chrono::seconds(5));
    httplib::Result res = client->Post("/v1/hosts", body.dump(), "application/json");
    if (!res) {
      *why = fmt::format("no answer from the manager at {} ({})", url,
                         httplib::to_string(res.error()));
      managers_.Next();
      continue;
    }
    if (res->status == 200) return Registration::kOk;
    if (const std::string leader = LeaderNamedBy(res->status, res->body); !leader.empty()) {
      *why = fmt::format("the manager at {} is a standby; its leader is {}", url, leader);
      managers_.Follow(leader);
      continue;
    }
    // The manager's {"error", "message"}, on one line; anything else: its status alone.
    const json j = json::parse(res->body, nullptr, false);
    std::string reason = fmt::format("HTTP {}", res->status);
    if (j.is_object() && j.contains("error") && j["error"].is_string() && j.contains("message") &&
        j["message"].is_string()) {
      reason = j["error"].get<std::string>() + ": " + j["message"].get<std::string>();
    }
    for (char& c : reason) {
      if (c == '\n' || c == '\r') c = ' ';
    }
    *why = fmt::format("the manager at {} refused to register host '{}' (node {:#x}): {}", url,
                       options_.id, options_.node_id, reason);
    // 5xx: the manager cannot now (its store, no leader); 4xx: it never will like this.
    if (res->status < 500) return Registration::kRefused;
    managers_.Next();
  }
  return Registration::kNoAnswer;
}

void AgentService::StartRegistration() {
  registration_ = std::thread([this] { RegistrationLoop(); });
}

void AgentService::RegistrationLoop() {
  std::unique_lock lock(state_);
  int retry_ms = options_.retry_ms;
  bool ever = false;
  while (!stopping_) {
    lock.unlock();
    std::string why;
    const Registration r = Register(&why);
    lock.lock();
    if (r == Registration::kRefused) {
      registered_ = false;
      spdlog::error("agent: {}", why);
      if (options_.on_refused) options_.on_refused(why);
      return;
    }
    const bool ok = r == Registration::kOk;
    if (ok && !registered_) {
      spdlog::info(
          "agent: registered{} as host '{}' (node {:#x}, {} mode, boot {}) with the "
          "manager at {}",
          ever ? " again" : "", options_.id, options_.node_id, backend_->mode(), boot_id_,
          managers_.Current());
      ever = true;
    }
    int wait_ms = options_.heartbeat_ms;
    if (ok) {
      retry_ms = options_.retry_ms;
    } else {
      spdlog::warn("agent: {}; trying again in {:g} s", why, retry_ms / 1000.0);
      wait_ms = retry_ms;
      retry_ms = std::min(retry_ms * 2, std::max(options_.retry_max_ms, options_.retry_ms));
    }
    registered_ = ok;
    stop_cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [this] { return stopping_; });
  }
}

}  // namespace dxpu::manager
