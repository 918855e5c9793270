// rest_api.cc - the pool manager's REST/JSON API (rest_api.h).
#include "manager/rest_api.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include "manager/access.h"
#include "manager/pool_json.h"

#include <spdlog/spdlog.h>

namespace dxpu::manager {

namespace {

using nlohmann::json;

constexpr const char* kJson = "application/json";
constexpr int kMaxWaitSeconds = 300;

// What the routes share: the options (their own copy: the caller's may go before the server
// stops) and the count of requests refused for their identity (403), in /v1/status.
struct RestContext {
  RestOptions options;
  mutable std::atomic<uint64_t> forbidden{0};
};
using Context = std::shared_ptr<const RestContext>;

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(2) + "\n", kJson);
}

void Fail(httplib::Response& res, const PoolError& e) {
  Reply(res, HttpStatusOf(e.kind), ToJson(e));
}

// Fail, counting a refusal for the identity.
void Refuse(const Context& o, httplib::Response& res, const PoolError& e) {
  if (e.kind == ErrorKind::kForbidden) o->forbidden.fetch_add(1, std::memory_order_relaxed);
  Fail(res, e);
}

// For a host: its own allocation `id`, else 403 (404 when there is none); nothing for others.
std::optional<PoolError> RefuseOthersAllocation(ServiceSlot& service, const Identity& who,
                                                uint64_t id) {
  if (who.role != Role::kHost) return std::nullopt;
  PoolResult<std::string> host =
      service.With([id](PoolManager& m, uint64_t) -> PoolResult<std::string> {
        PoolResult<AllocationView> v = m.Allocation(id);
        if (!v.ok()) return v.error();
        return v.value().record.host;
      });
  if (!host.ok()) return host.error();
  if (host.value() != who.host) return NotYours(who, AllocationName(id));
  return std::nullopt;
}

// For a host: 403 unless `host` is itself.
std::optional<PoolError> RefuseOtherHost(const Identity& who, const std::string& host) {
  if (who.role != Role::kHost || host == who.host) return std::nullopt;
  return NotYours(who, "host " + host);
}

// ?wait=SECONDS: how long to wait for an allocation to finish what it does (0: not at all).
PoolResult<int> WaitSeconds(const httplib::Request& req) {
  if (!req.has_param("wait")) return 0;
  const std::string v = req.get_param_value("wait");
  int s = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
  if (ec != std::errc() || end != v.data() + v.size() || s < 0 || s > kMaxWaitSeconds) {
    return PoolError{ErrorKind::kBadRequest, "bad-wait",
                     fmt::format("wait must be 0 to {} seconds", kMaxWaitSeconds)};
  }
  return s;
}

bool Finished(AllocationState s) {
  return s == AllocationState::kActive || s == AllocationState::kReleased ||
         s == AllocationState::kFailed;
}

// Answers the allocation, after waiting (when asked) for it to become active, released or
// failed. 200 when it has, 202 while it is still on its way. Its state, if there is one.
std::optional<AllocationState> AnswerAllocation(ServiceSlot& service, uint64_t id, int wait_s,
                                                httplib::Response& res) {
  if (wait_s > 0) {
    service.WaitFor(
        [id](const PoolManager& m) {
          PoolResult<AllocationView> v = m.Allocation(id);
          return !v.ok() || Finished(v.value().record.state);
        },
        wait_s * 1000);
  }
  PoolResult<AllocationView> v =
      service.With([id](PoolManager& m, uint64_t) { return m.Allocation(id); });
  if (!v.ok()) {
    Fail(res, v.error());
    return std::nullopt;
  }
  Reply(res, Finished(v.value().record.state) ? 200 : 202, ToJson(v.value()));
  return v.value().record.state;
}

json LeaderJson(const ServingState& s) {
  json j = {{"role", s.leading ? "leader" : "standby"}, {"replica", s.replica}};
  if (s.leading) {
    j["term"] = s.term;
    j["epoch"] = s.epoch;
  } else {
    j["reason"] = s.reason;
  }
  if (!s.leader_url.empty()) j["leader"] = {{"replica", s.leader_replica}, {"url", s.leader_url}};
  return j;
}

// A standby answers only /healthz and /v1/leader; anything else is sent to the leader: 503
// "not-leader" with the leader's URL when it is known ("leader": {"replica", "url"}).
bool AnsweredAsStandby(const ServiceSlot& service, const httplib::Request& req,
                       httplib::Response& res) {
  if (req.method == "GET" && (req.path == "/healthz" || req.path == "/v1/leader")) return false;
  const std::optional<PoolError> no = service.Serving();
  if (!no) return false;
  json body = ToJson(*no);
  const ServingState state = service.State();
  if (!state.leader_url.empty())
    body["leader"] = {{"replica", state.leader_replica}, {"url", state.leader_url}};
  Reply(res, HttpStatusOf(no->kind), body);
  return true;
}

PoolResult<uint64_t> AllocationId(const httplib::Request& req) {
  const std::string name = req.matches[1];
  std::optional<uint64_t> id = AllocationIdNamed(name);
  if (!id) {
    return PoolError{ErrorKind::kNotFound, "unknown-allocation",
                     fmt::format("'{}' is not an allocation name (alloc-N)", name)};
  }
  return *id;
}

// The allocation a request's path names and its ?wait=, once the identity may have it.
struct AllocationTarget {
  uint64_t id = 0;
  int wait_s = 0;
};
PoolResult<AllocationTarget> TargetOf(ServiceSlot& service, const httplib::Request& req) {
  PoolResult<int> wait = WaitSeconds(req);
  if (!wait.ok()) return wait.error();
  PoolResult<uint64_t> id = AllocationId(req);
  if (!id.ok()) return id.error();
  if (std::optional<PoolError> no = RefuseOthersAllocation(service, IdentityOf(req), id.value()))
    return *no;
  return AllocationTarget{id.value(), wait.value()};
}

template <typename T, typename Views>
json ArrayOf(const Views& views) {
  json out = json::array();
  for (const T& v : views) out.push_back(ToJson(v));
  return out;
}

// A host as the API shows it: its record and its agent's liveness (docs/manager.md).
json HostJson(const PoolManager& m, const HostRecord& h, uint64_t now) {
  json j = ToJson(h);
  const HostLiveness live = m.Liveness(h, now);
  j["last_seen_ns"] = live.last_seen_ns;
  j["last_seen_ago_ms"] = now > live.last_seen_ns ? (now - live.last_seen_ns) / 1'000'000 : 0;
  j["heartbeat_ms"] = h.heartbeat_ns / 1'000'000;
  j["alive"] = live.alive;
  j["liveness"] = !live.known ? "unknown" : live.alive ? "alive" : "dead";
  return j;
}

// Records a request that changes (or tried to change) the pool once its handler has answered,
// whichever way it returned.
class AuditScope {
 public:
  AuditScope(const RestOptions& options, const httplib::Request& req, const httplib::Response& res)
      : options_(options), req_(req), res_(res) {}
  AuditScope(const AuditScope&) = delete;
  AuditScope& operator=(const AuditScope&) = delete;
  ~AuditScope() {
    if (options_.audit == nullptr || skip) return;
    try {
      Record();
    } catch (const std::exception& e) {  // out of memory: the answer still goes out
      std::fprintf(stderr, "audit log: %s\n", e.what());
    }
  }

  json detail = json::object();
  bool skip = false;  // nothing changed and nothing was refused (an agent's heartbeat)

 private:
  void Record() {
    AuditEntry e;
    e.who = IdentityOf(req_).name;
    e.from = fmt::format("{}:{}", req_.remote_addr, req_.remote_port);
    e.what = req_.method + " " + req_.path;
    e.detail = std::move(detail);
    e.status = res_.status;
    e.result = "ok";
    if (res_.status >= 400) {
      const json body = json::parse(res_.body, nullptr, false);
      e.result = body.is_object() && body.contains("error") && body["error"].is_string()
                     ? body["error"].get<std::string>()
                     : fmt::format("HTTP {}", res_.status);
    }
    options_.audit->Record(e);
  }

  const RestOptions& options_;
  const httplib::Request& req_;
  const httplib::Response& res_;
};

PoolError BadAddress(std::string message) {
  return PoolError{ErrorKind::kBadRequest, "bad-address", std::move(message)};
}

// A box's addresses, before the manager ever sends anything to them.
std::optional<PoolError> CheckBoxAddresses(const BoxRecord& box, const RestOptions& options) {
  if (std::optional<PoolError> bad = BadBoxName(box.id)) return bad;  // said first
  for (const std::string& problem :
       {CheckManagementAddress(box.management, options.bridge_socket_dir),
        CheckFabricAddress(box.fabric)}) {
    if (!problem.empty()) return BadAddress(problem);
  }
  return std::nullopt;
}

PoolError BridgeUnreachable(const BoxRecord& box, const std::string& why) {
  return PoolError{
      ErrorKind::kConflict, "bridge-unreachable",
      fmt::format("box {}'s bridge does not answer at {} ({}), so what it holds cannot be "
                  "checked; nothing was changed. Add it once it answers, or with \"adopt\": "
                  "\"reset\" (dxpu pool add-box --adopt reset) to have whatever it holds for "
                  "others reset and scrubbed when it does",
                  box.id, box.management, why)};
}

// Adding a box adopts its bridge: what it holds without a lease here is then released (reset
// and scrubbed). Refused when the bridge is another box's, or holds assignments this pool did
// not make and the operator did not confirm ("adopt": "reset").
std::optional<PoolError> RefuseAdoption(const BoxRecord& box,
                                        const PoolManager::ForeignState& foreign, bool adopt) {
  if (!foreign.other_box.empty()) {
    return PoolError{ErrorKind::kConflict, "bridge-taken",
                     fmt::format("box {}'s bridge is at management {} or fabric {} already: one "
                                 "bridge is one box; nothing was changed (to rename it, remove "
                                 "box {} first)",
                                 foreign.other_box, box.management, box.fabric, foreign.other_box)};
  }
  if (foreign.devices.empty() || adopt) return std::nullopt;
  return PoolError{
      ErrorKind::kConflict, "foreign-assignments",
      fmt::format("the bridge at {} holds assignments this pool did not make: {}; nothing was "
                  "changed. Adding it as box {} would reset and scrub those GPUs (their hosts "
                  "lose them): to do that, add it with \"adopt\": \"reset\" (dxpu pool "
                  "add-box --adopt reset)",
                  box.management, fmt::join(foreign.devices, "; "), box.id)};
}

void InstallBoxRoutes(httplib::Server& server, ServiceSlot& service, const Context& o) {
  server.Get("/v1/boxes", [&service](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200,
          service.With([](PoolManager& m, uint64_t) { return ArrayOf<BoxRecord>(m.Boxes()); }));
  });
  server.Post("/v1/boxes", [&service, o](const httplib::Request& req, httplib::Response& res) {
    const RestOptions& options = o->options;
    AuditScope audit(options, req, res);
    PoolResult<AddBoxRequest> request = AddBoxRequestFromJson(req.body);
    if (!request.ok()) return Fail(res, request.error());
    const BoxRecord& box = request.value().box;
    const bool adopt = request.value().adopt_reset;
    audit.detail = {{"box", box.id},
                    {"management", box.management},
                    {"fabric", box.fabric},
                    {"adopt", adopt ? "reset" : ""}};
    if (std::optional<PoolError> bad = CheckBoxAddresses(box, options)) return Fail(res, *bad);
    const ActionResult probe = service.ProbeBridge(box);  // outside the pool's lock
    const bool answered = probe.outcome == ActionOutcome::kDone;
    if (!answered && !adopt) return Fail(res, BridgeUnreachable(box, probe.error));
    bool existed = false;
    std::vector<std::string> adopted;
    PoolResult<BoxRecord> added =
        service.With([&](PoolManager& m, uint64_t now) -> PoolResult<BoxRecord> {
          const PoolManager::ForeignState foreign =
              m.ForeignStateOf(box, answered ? probe.devices : std::vector<ProbedDevice>{});
          if (std::optional<PoolError> refused = RefuseAdoption(box, foreign, adopt))
            return *refused;
          adopted = foreign.devices;
          existed = m.HasBox(box.id);
          return m.AddBox(box, now);
        });
    if (!added.ok()) return Fail(res, added.error());
    audit.detail["adopted"] = adopted;
    if (!adopted.empty()) {
      spdlog::warn(
          "box {} adopted by {} (\"adopt\": \"reset\"): its bridge's GPUs held for others "
          "are reset and scrubbed: {}",
          box.id, IdentityOf(req).name, fmt::join(adopted, "; "));
    }
    Reply(res, existed ? 200 : 201, ToJson(added.value()));  // 200: its addresses updated
  });
  server.Delete(R"(/v1/boxes/([^/]+))", [&service, o](const httplib::Request& req,
                                                      httplib::Response& res) {
    const RestOptions& options = o->options;
    AuditScope audit(options, req, res);
    const std::string id = req.matches[1];
    audit.detail = {{"box", id}};
    PoolResult<Done> done = service.With([&](PoolManager& m, uint64_t) { return m.RemoveBox(id); });
    if (!done.ok()) return Fail(res, done.error());
    Reply(res, 200, json{{"removed", id}});
  });
}

void InstallPoolRoutes(httplib::Server& server, ServiceSlot& service, const Context& o) {
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server.Get("/v1/leader", [&service](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, LeaderJson(service.State()));
  });
  server.Get("/v1/status", [&service, o](const httplib::Request&, httplib::Response& res) {
    json j = service.With([&o](PoolManager& m, uint64_t) {
      json s = ToJson(m.Summary());
      const ManagerCounters& c = m.counters();
      s["counters"] = {{"allocations", c.allocations},
                       {"releases", c.releases},
                       {"refusals", c.refusals},
                       {"actions_started", c.actions_started},
                       {"actions_failed", c.actions_failed},
                       {"store_errors", c.store_errors},
                       {"attach_timeouts", c.attach_timeouts},
                       {"detach_timeouts", c.detach_timeouts},
                       {"bridge_restarts_seen", c.bridge_restarts_seen},
                       {"agent_restarts_seen", c.agent_restarts_seen},
                       {"orphans_released", c.orphans_released},
                       {"forbidden", o->forbidden.load(std::memory_order_relaxed)}};
      return s;
    });
    Reply(res, 200, j);
  });

  server.Get("/v1/gpus", [&service](const httplib::Request& req, httplib::Response& res) {
    const std::string state = req.get_param_value("state");
    const std::string box = req.get_param_value("box");
    Reply(res, 200, service.With([&](PoolManager& m, uint64_t) {
      json out = json::array();
      for (const GpuView& g : m.Gpus()) {
        json j = ToJson(g);
        if (!state.empty() && j["state"] != state) continue;
        if (!box.empty() && g.gpu.box != box) continue;
        out.push_back(std::move(j));
      }
      return out;
    }));
  });

  server.Get("/v1/hosts", [&service](const httplib::Request& req, httplib::Response& res) {
    const Identity who = IdentityOf(req);
    Reply(res, 200, service.With([&who](PoolManager& m, uint64_t now) {
      json out = json::array();
      for (const HostRecord& h : m.Hosts()) {
        if (!RefuseOtherHost(who, h.id)) out.push_back(HostJson(m, h, now));
      }
      return out;
    }));
  });
  server.Get(
      R"(/v1/hosts/([^/]+))", [&service, o](const httplib::Request& req, httplib::Response& res) {
        const std::string id = req.matches[1];
        if (std::optional<PoolError> no = RefuseOtherHost(IdentityOf(req), id))
          return Refuse(o, res, *no);
        PoolResult<json> h = service.With([&](PoolManager& m, uint64_t now) -> PoolResult<json> {
          PoolResult<HostRecord> host = m.Host(id);
          if (!host.ok()) return host.error();
          return HostJson(m, host.value(), now);
        });
        if (!h.ok()) return Fail(res, h.error());
        Reply(res, 200, h.value());
      });
  server.Delete(R"(/v1/hosts/([^/]+))",
                [&service, o](const httplib::Request& req, httplib::Response& res) {
                  const RestOptions& options = o->options;
                  AuditScope audit(options, req, res);
                  const std::string id = req.matches[1];
                  audit.detail = {{"host", id}};
                  PoolResult<HostRecord> removed =
                      service.With([&](PoolManager& m, uint64_t) { return m.RemoveHost(id); });
                  if (!removed.ok()) return Fail(res, removed.error());
                  Reply(res, 200, json{{"removed", id}});
                });
  server.Post("/v1/hosts", [&service, o](const httplib::Request& req, httplib::Response& res) {
    const RestOptions& options = o->options;
    AuditScope audit(options, req, res);
    PoolResult<HostRecord> host = HostFromJson(req.body);
    if (!host.ok()) return Fail(res, host.error());
    if (std::optional<PoolError> no = RefuseOtherHost(IdentityOf(req), host.value().id))
      return Refuse(o, res, *no);
    audit.detail = {{"host", host.value().id},
                    {"node_id", fmt::format("{:#x}", host.value().node_id)},
                    {"agent", host.value().agent},
                    {"boot_id", host.value().boot_id}};
    if (const std::string problem = CheckAgentUrl(host.value().agent); !problem.empty()) {
      return Fail(res, BadAddress(problem));
    }
    PoolResult<HostRecord> added = service.With([&](PoolManager& m, uint64_t now) {
      // A heartbeat that changes nothing is not audited.
      PoolResult<HostRecord> before = m.Host(host.value().id);
      audit.skip = before.ok() && before.value().boot_id == host.value().boot_id &&
                   before.value().agent == host.value().agent &&
                   before.value().node_id == host.value().node_id &&
                   before.value().mode == host.value().mode;
      return m.RegisterHost(std::move(host).value(), now);
    });
    if (!added.ok()) {
      audit.skip = false;
      return Fail(res, added.error());
    }
    Reply(res, 200, ToJson(added.value()));
  });
}

void InstallAllocationRoutes(httplib::Server& server, ServiceSlot& service, const Context& o) {
  server.Get("/v1/allocations", [&service](const httplib::Request& req, httplib::Response& res) {
    const Identity who = IdentityOf(req);
    Reply(res, 200, service.With([&who](PoolManager& m, uint64_t) {
      json out = json::array();
      for (const AllocationView& v : m.Allocations()) {
        if (!RefuseOtherHost(who, v.record.host)) out.push_back(ToJson(v));
      }
      return out;
    }));
  });
  server.Post("/v1/allocations", [&service, o](const httplib::Request& req,
                                               httplib::Response& res) {
    const RestOptions& options = o->options;
    AuditScope audit(options, req, res);
    PoolResult<int> wait = WaitSeconds(req);
    if (!wait.ok()) return Fail(res, wait.error());
    PoolResult<AllocationRequest> request = AllocationRequestFromJson(req.body);
    if (!request.ok()) return Fail(res, request.error());
    audit.detail = {{"host", request.value().host}, {"count", request.value().count}};
    const Identity who = IdentityOf(req);
    if (std::optional<PoolError> no = RefuseOtherHost(who, request.value().host))
      return Refuse(o, res, *no);
    PoolResult<AllocationView> made =
        service.With([&](PoolManager& m, uint64_t now) -> PoolResult<AllocationView> {
          // An idempotency key answers the allocation it made: only its own host's.
          const std::string& key = request.value().request_key;
          for (const AllocationView& v : m.Allocations()) {
            if (!key.empty() && v.record.request_key == key && RefuseOtherHost(who, v.record.host))
              return NotYours(who, AllocationName(v.record.id));
          }
          return m.Allocate(request.value(), now);
        });
    if (!made.ok()) return Refuse(o, res, made.error());
    audit.detail["allocation"] = AllocationName(made.value().record.id);
    res.set_header("Location", "/v1/allocations/" + AllocationName(made.value().record.id));
    // Made and active within the wait: 201; failed: 200 (its state and error say why); still
    // attaching: 202.
    if (AnswerAllocation(service, made.value().record.id, wait.value(), res) ==
        AllocationState::kActive)
      res.status = 201;
  });
  server.Get(R"(/v1/allocations/([^/]+))",
             [&service, o](const httplib::Request& req, httplib::Response& res) {
               PoolResult<AllocationTarget> target = TargetOf(service, req);
               if (!target.ok()) return Refuse(o, res, target.error());
               AnswerAllocation(service, target.value().id, target.value().wait_s, res);
             });
  server.Delete(R"(/v1/allocations/([^/]+))", [&service, o](const httplib::Request& req,
                                                            httplib::Response& res) {
    const RestOptions& options = o->options;
    AuditScope audit(options, req, res);
    audit.detail = {{"allocation", std::string(req.matches[1])}};
    PoolResult<AllocationTarget> target = TargetOf(service, req);
    if (!target.ok()) return Refuse(o, res, target.error());
    const uint64_t id = target.value().id;
    PoolResult<AllocationView> released =
        service.With([id](PoolManager& m, uint64_t now) { return m.Release(id, now); });
    if (!released.ok()) return Fail(res, released.error());
    AnswerAllocation(service, id, target.value().wait_s, res);
  });
}

}  // namespace

void InstallRestApi(httplib::Server& server, ServiceSlot& service, const RestOptions& options) {
  auto context = std::make_shared<RestContext>();
  context->options = options;
  const Context o = context;
  // Refused for the identity alone (403) before any route; a refused change is audited too.
  InstallAccessGate(
      server, ManagerRouteRefusal, &context->forbidden,
      [o](const httplib::Request& req, const httplib::Response& res) {
        if (req.method != "GET") {
          const AuditScope audit(o->options, req, res);  // recorded as it goes
        }
      },
      [&service](const httplib::Request& req, httplib::Response& res) {
        return AnsweredAsStandby(service, req, res);
      });
  InstallPoolRoutes(server, service, o);
  InstallBoxRoutes(server, service, o);
  InstallAllocationRoutes(server, service, o);
  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const PoolError e{res.status == 404 ? ErrorKind::kNotFound : ErrorKind::kBadRequest,
                      res.status == 404 ? "no-such-path" : "bad-request",
                      fmt::format("HTTP {}", res.status)};
    res.set_content(ToJson(e).dump(2) + "\n", kJson);
  });
  server.set_payload_max_length(size_t{64} * 1024);
}

}  // namespace dxpu::manager
