// pool_json.cc - the REST API's JSON (pool_json.h).
#include "manager/pool_json.h"

#include <charconv>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>

#include <spdlog/fmt/fmt.h>

namespace dxpu::manager {

namespace {

using nlohmann::json;

PoolError Bad(std::string message) {
  return PoolError{ErrorKind::kBadRequest, "bad-body", std::move(message)};
}

// The body as a JSON object whose keys are all in `known`.
PoolResult<json> ObjectOf(std::string_view body, std::initializer_list<std::string_view> known) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("the body is not JSON");
  if (!j.is_object()) return Bad("the body must be a JSON object");
  const std::set<std::string_view> allowed(known);
  for (const auto& [key, value] : j.items()) {
    if (!allowed.contains(key)) return Bad(fmt::format("unknown field '{}'", key));
  }
  return j;
}

PoolResult<std::string> StringField(const json& j, const char* key, bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) return Bad(fmt::format("'{}' is required", key));
    return std::string();
  }
  if (!it->is_string()) return Bad(fmt::format("'{}' must be a string", key));
  std::string s = it->get<std::string>();
  if (s.size() > 1024) return Bad(fmt::format("'{}' is longer than 1024 bytes", key));
  return s;
}

// A u64 as a JSON number or as a "0x..." / decimal string (node IDs are often written in hex).
PoolResult<uint64_t> U64Field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return Bad(fmt::format("'{}' is required", key));
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_string()) {
    const std::string s = it->get<std::string>();
    std::string_view digits = s;
    int base = 10;
    if (digits.starts_with("0x") || digits.starts_with("0X")) {
      digits.remove_prefix(2);
      base = 16;
    }
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
    if (!digits.empty() && ec == std::errc() && end == digits.data() + digits.size()) return v;
  }
  return Bad(fmt::format("'{}' must be an unsigned number (or a \"0x...\" string)", key));
}

}  // namespace

std::string BdfText(uint16_t bdf) {
  return fmt::format("{:02x}:{:02x}.{}", bdf >> 8, (bdf >> 3) & 0x1f, bdf & 7);
}

json ToJson(const BoxRecord& box) {
  return {
      {"id", box.id},           {"management", box.management},     {"fabric", box.fabric},
      {"healthy", box.healthy}, {"last_seen_ns", box.last_seen_ns}, {"fabric_key", box.fabric_key}};
}

json ToJson(const LeaseRecord& lease) {
  return {{"gpu", GpuName(lease.box, lease.device)},
          {"box", lease.box},
          {"device", lease.device},
          {"host", lease.host},
          {"host_bdf", BdfText(lease.host_bdf)},
          {"allocation", AllocationName(lease.allocation)},
          {"step", LeaseStepName(lease.step)}};
}

json ToJson(const GpuView& gpu) {
  json j = {{"gpu", GpuName(gpu.gpu.box, gpu.gpu.device)},
            {"box", gpu.gpu.box},
            {"device", gpu.gpu.device},
            {"box_bdf", BdfText(gpu.gpu.box_bdf)},
            {"profile", gpu.gpu.profile},
            {"present", gpu.gpu.present}};
  if (gpu.lease) {
    j["state"] = "leased";
    j["lease"] = ToJson(*gpu.lease);
  } else {
    j["state"] = gpu.allocatable ? "free" : "unavailable";
  }
  return j;
}

json ToJson(const HostRecord& host) {
  return {{"id", host.id},
          {"node_id", fmt::format("{:#x}", host.node_id)},
          {"agent", host.agent},
          {"mode", host.mode},
          {"boot_id", host.boot_id},
          {"registered_ns", host.registered_ns},
          {"fabric_key", host.fabric_key}};
}

json ToJson(const AllocationView& v) {
  const AllocationRecord& a = v.record;
  json gpus = json::array();
  for (const LeaseRecord& l : v.leases) gpus.push_back(ToJson(l));
  json j = {{"id", AllocationName(a.id)}, {"host", a.host},
            {"count", a.count},           {"policy", PolicyName(a.policy)},
            {"profile", a.profile},       {"state", AllocationStateName(a.state)},
            {"error", a.error},           {"created_ns", a.created_ns},
            {"updated_ns", a.updated_ns}, {"gpus", gpus}};
  if (a.policy == Policy::kPrefer) j["box"] = a.prefer_box;
  if (!a.request_key.empty()) j["request_key"] = a.request_key;
  return j;
}

json ToJson(const PoolSummary& s) {
  return {{"boxes", s.boxes},
          {"boxes_healthy", s.boxes_healthy},
          {"gpus", s.gpus},
          {"gpus_free", s.gpus_free},
          {"hosts", s.hosts},
          {"allocations_active", s.allocations_active},
          {"allocations_in_progress", s.allocations_in_progress},
          {"actions_in_flight", s.actions_in_flight}};
}

json ToJson(const PoolError& e) { return {{"error", e.name}, {"message", e.message}}; }

PoolResult<AddBoxRequest> AddBoxRequestFromJson(std::string_view body) {
  PoolResult<json> j = ObjectOf(body, {"id", "management", "fabric", "adopt"});
  if (!j.ok()) return j.error();
  AddBoxRequest request;
  PoolResult<std::string> adopt = StringField(j.value(), "adopt", false);
  if (!adopt.ok()) return adopt.error();
  if (!adopt.value().empty() && adopt.value() != "reset") {
    return Bad(
        "'adopt' can only be \"reset\": reset and scrub every GPU the bridge holds for "
        "others, which lose them");
  }
  request.adopt_reset = adopt.value() == "reset";
  BoxRecord& box = request.box;
  for (auto [key, out] : {std::pair{"id", &box.id}, std::pair{"management", &box.management},
                          std::pair{"fabric", &box.fabric}}) {
    PoolResult<std::string> s = StringField(j.value(), key, true);
    if (!s.ok()) return s.error();
    *out = std::move(s).value();
  }
  return request;
}

PoolResult<HostRecord> HostFromJson(std::string_view body) {
  PoolResult<json> j =
      ObjectOf(body, {"id", "node_id", "agent", "mode", "boot_id", "heartbeat_ms", "fabric_key"});
  if (!j.ok()) return j.error();
  HostRecord host;
  for (auto [key, out] : {std::pair{"id", &host.id}, std::pair{"agent", &host.agent},
                          std::pair{"mode", &host.mode}, std::pair{"boot_id", &host.boot_id}}) {
    PoolResult<std::string> s = StringField(j.value(), key, true);
    if (!s.ok()) return s.error();
    *out = std::move(s).value();
  }
  PoolResult<uint64_t> node = U64Field(j.value(), "node_id");
  if (!node.ok()) return node.error();
  host.node_id = node.value();
  // Its fabric public key (64 hex digits; RegisterHost checks it): optional.
  PoolResult<std::string> key = StringField(j.value(), "fabric_key", false);
  if (!key.ok()) return key.error();
  host.fabric_key = std::move(key).value();
  if (j.value().contains("heartbeat_ms")) {
    const json& hb = j.value()["heartbeat_ms"];
    if (!hb.is_number_unsigned() || hb.get<uint64_t>() == 0 || hb.get<uint64_t>() > 3'600'000)
      return Bad("'heartbeat_ms' must be 1 to 3600000");
    host.heartbeat_ns = hb.get<uint64_t>() * 1'000'000;
  }
  return host;
}

PoolResult<AllocationRequest> AllocationRequestFromJson(std::string_view body) {
  PoolResult<json> j = ObjectOf(body, {"host", "count", "policy", "profile", "box", "request_key"});
  if (!j.ok()) return j.error();
  AllocationRequest r;
  PoolResult<std::string> host = StringField(j.value(), "host", true);
  if (!host.ok()) return host.error();
  r.host = std::move(host).value();
  auto count = j.value().find("count");
  if (count == j.value().end()) return Bad("'count' is required");
  if (!count->is_number_unsigned() || count->get<uint64_t>() > UINT32_MAX)
    return Bad("'count' must be a positive whole number");
  r.count = count->get<uint32_t>();
  PoolResult<std::string> policy = StringField(j.value(), "policy", false);
  if (!policy.ok()) return policy.error();
  if (!policy.value().empty()) {
    std::optional<Policy> p = PolicyNamed(policy.value());
    if (!p)
      return Bad(fmt::format("'policy' must be pack, spread or prefer, not '{}'", policy.value()));
    r.policy = *p;
  }
  for (auto [key, out] : {std::pair{"profile", &r.profile}, std::pair{"box", &r.prefer_box},
                          std::pair{"request_key", &r.request_key}}) {
    PoolResult<std::string> s = StringField(j.value(), key, false);
    if (!s.ok()) return s.error();
    *out = std::move(s).value();
  }
  if (!r.prefer_box.empty() && policy.value().empty()) r.policy = Policy::kPrefer;
  if (r.policy == Policy::kPrefer && r.prefer_box.empty()) return Bad("policy prefer needs 'box'");
  if (r.policy != Policy::kPrefer && !r.prefer_box.empty())
    return Bad(fmt::format("'box' goes with policy prefer, not {}", PolicyName(r.policy)));
  return r;
}

}  // namespace dxpu::manager
