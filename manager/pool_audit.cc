// pool_audit.cc - the pool checked from outside (pool_audit.h).
#include "manager/pool_audit.h"

#include <httplib.h>

#include <map>
#include <memory>
#include <optional>
#include <set>

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include "manager/bridge_steps.h"
#include "manager/pool_json.h"

namespace dxpu::manager {

namespace {

using nlohmann::json;

PoolResult<json> Get(const std::string& url, const std::string& path, const TlsFiles& tls) {
  const std::unique_ptr<httplib::Client> c = MakeClient(url, tls);
  c->set_connection_timeout(std::chrono::seconds(2));
  c->set_read_timeout(std::chrono::seconds(10));
  httplib::Result r = c->Get(path);
  if (!r || r->status != 200) {
    return PoolError{ErrorKind::kUnavailable, "no-answer",
                     fmt::format("GET {}{}: {}", url, path,
                                 r ? fmt::format("HTTP {}", r->status)
                                   : fmt::format("no answer ({})", httplib::to_string(r.error())))};
  }
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded()) {
    return PoolError{ErrorKind::kUnavailable, "bad-answer",
                     fmt::format("GET {}{}: not JSON", url, path)};
  }
  return j;
}

PoolResult<PoolAudit> AuditPoolOrThrow(const std::string& manager_url, const TlsFiles& tls);

}  // namespace

PoolResult<PoolAudit> AuditPool(const std::string& manager_url, const TlsFiles& tls) {
  try {
    return AuditPoolOrThrow(manager_url, tls);
  } catch (const nlohmann::json::exception& e) {
    return PoolError{
        ErrorKind::kUnavailable, "bad-answer",
        fmt::format("the manager at {} answered JSON of another shape: {}", manager_url, e.what())};
  }
}

namespace {

PoolResult<PoolAudit> AuditPoolOrThrow(const std::string& manager_url, const TlsFiles& tls) {
  PoolResult<json> allocations = Get(manager_url, "/v1/allocations", tls);
  if (!allocations.ok()) return allocations.error();
  PoolResult<json> boxes = Get(manager_url, "/v1/boxes", tls);
  if (!boxes.ok()) return boxes.error();
  PoolResult<json> hosts = Get(manager_url, "/v1/hosts", tls);
  if (!hosts.ok()) return hosts.error();
  PoolAudit audit;
  auto problem = [&](std::string p) { audit.problems.push_back(std::move(p)); };

  std::map<std::string, json> leases;  // gpu -> lease
  for (const json& a : allocations.value()) {
    for (const json& g : a["gpus"]) {
      const std::string gpu = g["gpu"];
      if (leases.contains(gpu)) problem(fmt::format("{} is leased twice", gpu));
      leases[gpu] = g;
      if (a["state"] == "active" && g["step"] != "attached")
        problem(fmt::format("{} of active {} is {}", gpu, a["id"].get<std::string>(),
                            g["step"].get<std::string>()));
    }
    if (a["state"] == "active" && a["gpus"].size() != a["count"].get<size_t>())
      problem(fmt::format("active {} holds {} of its {} GPUs", a["id"].get<std::string>(),
                          a["gpus"].size(), a["count"].get<size_t>()));
    if ((a["state"] == "released" || a["state"] == "failed") && !a["gpus"].empty())
      problem(fmt::format("{} {} still holds GPUs", a["state"].get<std::string>(),
                          a["id"].get<std::string>()));
  }
  std::map<std::string, json> host_of;
  for (const json& h : hosts.value()) host_of[h["id"]] = h;

  for (const json& b : boxes.value()) {
    const std::string box = b["id"];
    dxpu_mgmt_msg request{};
    request.type = DXPU_MGMT_STATUS;
    const bridge::ManagementReply status = SocketExchange(b["management"], 500, 3)(request);
    dxpu_mgmt_msg m{};
    if (!status.ok() ||
        dxpu_mgmt_decode(status.bytes.data(), status.bytes.size(), &m) != DXPU_MGMT_ERR_OK) {
      audit.unreachable.push_back(fmt::format(
          "box {} (management {}): STATUS: {}", box, b.value("management", std::string()),
          status.ok() ? std::string("a malformed answer") : status.Problem()));
      continue;
    }
    for (size_t i = 0; i < m.body.status_report.device_count; ++i) {
      dxpu_mgmt_device_entry e{};
      if (!dxpu_mgmt_status_entry(&m.body.status_report, i, &e)) continue;
      audit.gpus++;
      const std::string gpu = GpuName(box, e.device);
      auto l = leases.find(gpu);
      if (l == leases.end()) {
        audit.free++;
        if (e.owner != 0)
          problem(
              fmt::format("{} is owned by node {:#x} on its bridge with no lease", gpu, e.owner));
        continue;
      }
      audit.leased++;
      const json& lease = l->second;
      if (lease["step"] != "assigned" && lease["step"] != "attached") continue;
      const json& host = host_of[lease["host"].get<std::string>()];
      const std::string node = host.value("node_id", "");
      if (fmt::format("{:#x}", e.owner) != node || BdfText(e.host_bdf) != lease["host_bdf"])
        problem(fmt::format("{} is {}'s at {} but its bridge says node {:#x} at {}", gpu,
                            lease["host"].get<std::string>(), lease["host_bdf"].get<std::string>(),
                            e.owner, BdfText(e.host_bdf)));
    }
  }
  for (const auto& [id, host] : host_of) {
    const std::string agent = host.value("agent", std::string());
    PoolResult<json> devices = Get(agent, "/v1/devices", tls);
    if (devices.ok() && !(devices.value().is_object() && devices.value().contains("devices") &&
                          devices.value()["devices"].is_array())) {
      devices = PoolError{ErrorKind::kUnavailable, "bad-answer",
                          fmt::format("GET {}/v1/devices: not a list of devices", agent)};
    }
    if (!devices.ok()) {
      audit.unreachable.push_back(
          fmt::format("host {}'s agent ({}): {}", id, agent, devices.error().message));
      continue;
    }
    std::set<std::string> held;
    for (const json& d : devices.value()["devices"]) {
      if (d.is_object() && d.contains("gpu") && d["gpu"].is_string()) held.insert(d["gpu"]);
    }
    for (const auto& [gpu, lease] : leases) {
      if (lease["host"] == id && lease["step"] == "attached" && !held.contains(gpu))
        problem(fmt::format("{} is attached to {} but its agent does not hold it", gpu, id));
    }
    for (const std::string& gpu : held) {
      auto l = leases.find(gpu);
      if (l == leases.end() || l->second["host"] != id)
        problem(fmt::format("{}'s agent holds {}, which is not leased to it", id, gpu));
    }
  }
  return audit;
}

}  // namespace
}  // namespace dxpu::manager
