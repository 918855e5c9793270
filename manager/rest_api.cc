// rest_api.cc - the pool manager's REST/JSON API (rest_api.h).
#include "manager/rest_api.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include "manager/pool_json.h"

namespace dxpu::manager {

namespace {

using nlohmann::json;

constexpr const char* kJson = "application/json";
constexpr int kMaxWaitSeconds = 300;

void Reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(2) + "\n", kJson);
}

void Fail(httplib::Response& res, const PoolError& e) {
  Reply(res, HttpStatusOf(e.kind), ToJson(e));
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
std::optional<AllocationState> AnswerAllocation(ManagerService& service, uint64_t id, int wait_s,
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

PoolResult<uint64_t> AllocationId(const httplib::Request& req) {
  const std::string name = req.matches[1];
  std::optional<uint64_t> id = AllocationIdNamed(name);
  if (!id) {
    return PoolError{ErrorKind::kNotFound, "unknown-allocation",
                     fmt::format("'{}' is not an allocation name (alloc-N)", name)};
  }
  return *id;
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

void InstallPoolRoutes(httplib::Server& server, ManagerService& service) {
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server.Get("/v1/status", [&service](const httplib::Request&, httplib::Response& res) {
    json j = service.With([](PoolManager& m, uint64_t) {
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
                       {"orphans_released", c.orphans_released}};
      return s;
    });
    Reply(res, 200, j);
  });

  server.Get("/v1/boxes", [&service](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200,
          service.With([](PoolManager& m, uint64_t) { return ArrayOf<BoxRecord>(m.Boxes()); }));
  });
  server.Post("/v1/boxes", [&service](const httplib::Request& req, httplib::Response& res) {
    PoolResult<BoxRecord> box = BoxFromJson(req.body);
    if (!box.ok()) return Fail(res, box.error());
    bool existed = false;
    PoolResult<BoxRecord> added = service.With([&](PoolManager& m, uint64_t now) {
      existed = m.HasBox(box.value().id);
      return m.AddBox(std::move(box).value(), now);
    });
    if (!added.ok()) return Fail(res, added.error());
    Reply(res, existed ? 200 : 201, ToJson(added.value()));  // 200: its addresses updated
  });
  server.Delete(R"(/v1/boxes/([^/]+))", [&service](const httplib::Request& req,
                                                   httplib::Response& res) {
    const std::string id = req.matches[1];
    PoolResult<Done> done = service.With([&](PoolManager& m, uint64_t) { return m.RemoveBox(id); });
    if (!done.ok()) return Fail(res, done.error());
    Reply(res, 200, json{{"removed", id}});
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

  server.Get("/v1/hosts", [&service](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, service.With([](PoolManager& m, uint64_t now) {
      json out = json::array();
      for (const HostRecord& h : m.Hosts()) out.push_back(HostJson(m, h, now));
      return out;
    }));
  });
  server.Get(
      R"(/v1/hosts/([^/]+))", [&service](const httplib::Request& req, httplib::Response& res) {
        const std::string id = req.matches[1];
        PoolResult<json> h = service.With([&](PoolManager& m, uint64_t now) -> PoolResult<json> {
          PoolResult<HostRecord> host = m.Host(id);
          if (!host.ok()) return host.error();
          return HostJson(m, host.value(), now);
        });
        if (!h.ok()) return Fail(res, h.error());
        Reply(res, 200, h.value());
      });
  server.Delete(R"(/v1/hosts/([^/]+))",
                [&service](const httplib::Request& req, httplib::Response& res) {
                  const std::string id = req.matches[1];
                  PoolResult<HostRecord> removed =
                      service.With([&](PoolManager& m, uint64_t) { return m.RemoveHost(id); });
                  if (!removed.ok()) return Fail(res, removed.error());
                  Reply(res, 200, json{{"removed", id}});
                });
  server.Post("/v1/hosts", [&service](const httplib::Request& req, httplib::Response& res) {
    PoolResult<HostRecord> host = HostFromJson(req.body);
    if (!host.ok()) return Fail(res, host.error());
    PoolResult<HostRecord> added = service.With(
        [&](PoolManager& m, uint64_t now) { return m.RegisterHost(std::move(host).value(), now); });
    if (!added.ok()) return Fail(res, added.error());
    Reply(res, 200, ToJson(added.value()));
  });
}

void InstallAllocationRoutes(httplib::Server& server, ManagerService& service) {
  server.Get("/v1/allocations", [&service](const httplib::Request&, httplib::Response& res) {
    Reply(res, 200, service.With([](PoolManager& m, uint64_t) {
      return ArrayOf<AllocationView>(m.Allocations());
    }));
  });
  server.Post("/v1/allocations", [&service](const httplib::Request& req, httplib::Response& res) {
    PoolResult<int> wait = WaitSeconds(req);
    if (!wait.ok()) return Fail(res, wait.error());
    PoolResult<AllocationRequest> request = AllocationRequestFromJson(req.body);
    if (!request.ok()) return Fail(res, request.error());
    PoolResult<AllocationView> made = service.With(
        [&](PoolManager& m, uint64_t now) { return m.Allocate(request.value(), now); });
    if (!made.ok()) return Fail(res, made.error());
    res.set_header("Location", "/v1/allocations/" + AllocationName(made.value().record.id));
    // Made and active within the wait: 201; failed: 200 (its state and error say why); still
    // attaching: 202.
    if (AnswerAllocation(service, made.value().record.id, wait.value(), res) ==
        AllocationState::kActive)
      res.status = 201;
  });
  server.Get(R"(/v1/allocations/([^/]+))",
             [&service](const httplib::Request& req, httplib::Response& res) {
               PoolResult<int> wait = WaitSeconds(req);
               if (!wait.ok()) return Fail(res, wait.error());
               PoolResult<uint64_t> id = AllocationId(req);
               if (!id.ok()) return Fail(res, id.error());
               AnswerAllocation(service, id.value(), wait.value(), res);
             });
  server.Delete(R"(/v1/allocations/([^/]+))", [&service](const httplib::Request& req,
                                                         httplib::Response& res) {
    PoolResult<int> wait = WaitSeconds(req);
    if (!wait.ok()) return Fail(res, wait.error());
    PoolResult<uint64_t> id = AllocationId(req);
    if (!id.ok()) return Fail(res, id.error());
    PoolResult<AllocationView> released =
        service.With([&](PoolManager& m, uint64_t now) { return m.Release(id.value(), now); });
    if (!released.ok()) return Fail(res, released.error());
    AnswerAllocation(service, id.value(), wait.value(), res);
  });
}

}  // namespace

void InstallRestApi(httplib::Server& server, ManagerService& service) {
  InstallPoolRoutes(server, service);
  InstallAllocationRoutes(server, service);
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
