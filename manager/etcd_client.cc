// etcd_client.cc - the etcd v3 JSON gateway calls (etcd_client.h).
#include "manager/etcd_client.h"

#include <httplib.h>

#include <charconv>
#include <chrono>
#include <memory>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/util/base64.h"

namespace dxpu::manager {

namespace {

using nlohmann::json;

constexpr int64_t kPageKeys = 1000;  // keys per range answer: well under etcd's message limit

// gRPC status codes etcd answers with that mean "another member may do it".
constexpr int kGrpcDeadlineExceeded = 4;
constexpr int kGrpcUnavailable = 14;

PoolError BadAnswer(const std::string& what) {
  return PoolError{ErrorKind::kUnavailable, "etcd-bad-answer",
                   fmt::format("etcd answered something that is not its API: {}", what)};
}

// The JSON gateway writes 64-bit integers as strings and leaves out zeros.
bool ReadInt(const json& j, const char* name, int64_t* out) {
  *out = 0;
  const auto it = j.find(name);
  if (it == j.end()) return true;
  if (it->is_number_integer()) {
    *out = it->get<int64_t>();
    return true;
  }
  if (!it->is_string()) return false;
  const std::string& s = it->get_ref<const std::string&>();
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool ReadBytes(const json& j, const char* name, std::string* out) {
  out->clear();
  const auto it = j.find(name);
  if (it == j.end()) return true;
  if (!it->is_string()) return false;
  std::optional<std::string> bytes = util::Base64Decode(it->get_ref<const std::string&>());
  if (!bytes) return false;
  *out = std::move(*bytes);
  return true;
}

std::optional<EtcdKv> ReadKv(const json& j) {
  EtcdKv kv;
  if (!j.is_object() || !ReadBytes(j, "key", &kv.key) || !ReadBytes(j, "value", &kv.value) ||
      !ReadInt(j, "create_revision", &kv.create_revision) ||
      !ReadInt(j, "mod_revision", &kv.mod_revision) || !ReadInt(j, "lease", &kv.lease)) {
    return std::nullopt;
  }
  return kv;
}

PoolResult<json> Parse(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return BadAnswer("not a JSON object");
  return j;
}

int64_t HeaderRevision(const json& j) {
  int64_t revision = 0;
  if (const auto h = j.find("header"); h != j.end() && h->is_object())
    ReadInt(*h, "revision", &revision);
  return revision;
}

json CompareJson(const EtcdCompare& c) {
  json j = {{"key", util::Base64Encode(c.key)}, {"result", "EQUAL"}};
  switch (c.target) {
    case EtcdCompare::Target::kCreate:
      j["target"] = "CREATE";
      j["create_revision"] = std::to_string(c.revision);
      break;
    case EtcdCompare::Target::kMod:
      j["target"] = "MOD";
      j["mod_revision"] = std::to_string(c.revision);
      break;
    case EtcdCompare::Target::kValue:
      j["target"] = "VALUE";
      j["value"] = util::Base64Encode(c.value);
      break;
  }
  return j;
}

json OpJson(const EtcdOp& op) {
  switch (op.kind) {
    case EtcdOp::Kind::kPut: {
      json put = {{"key", util::Base64Encode(op.key)}, {"value", util::Base64Encode(op.value)}};
      if (op.lease != 0) put["lease"] = std::to_string(op.lease);
      return {{"request_put", put}};
    }
    case EtcdOp::Kind::kDelete:
      return {{"request_delete_range", {{"key", util::Base64Encode(op.key)}}}};
    case EtcdOp::Kind::kGet:
      break;
  }
  return {{"request_range", {{"key", util::Base64Encode(op.key)}}}};
}

}  // namespace

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<uint8_t>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  std::string every_key(1, '\0');
  return every_key;
}

EtcdClient::EtcdClient(EtcdClientOptions options)
    : options_(std::move(options)), clients_(options_.endpoints.size()) {}

EtcdClient::~EtcdClient() = default;

httplib::Client* EtcdClient::ClientFor(size_t member) {
  std::unique_ptr<httplib::Client>& c = clients_[member];
  if (!c) {
    c = MakeClient(options_.endpoints[member], options_.tls);
    if (!c) return nullptr;
    const auto timeout = std::chrono::milliseconds(options_.timeout_ms);
    c->set_connection_timeout(timeout);
    c->set_read_timeout(timeout);
    c->set_write_timeout(timeout);
    c->set_keep_alive(true);   // one connection per member, kept: no connect per call
    c->set_tcp_nodelay(true);  // a request is headers then body: no Nagle wait between
  }
  return c.get();
}

PoolResult<Done> EtcdClient::DeletePrefix(const std::string& prefix) {
  const json req = {{"key", util::Base64Encode(prefix)},
                    {"range_end", util::Base64Encode(PrefixEnd(prefix))}};
  PoolResult<std::string> body = Post("/v3/kv/deleterange", req.dump());
  if (!body.ok()) return body.error();
  return Done{};
}

PoolResult<std::string> EtcdClient::Post(const std::string& path, const std::string& body) {
  std::lock_guard lock(mu_);
  std::vector<std::string> said;
  const size_t n = options_.endpoints.size();
  for (size_t tried = 0; tried < n; ++tried) {
    const size_t at = (current_ + tried) % n;
    const std::string& url = options_.endpoints[at];
    httplib::Client* client = ClientFor(at);
    if (client == nullptr) {
      said.push_back(fmt::format("{}: not a usable URL", url));
      continue;
    }
    const httplib::Result res = client->Post(path, body, "application/json");
    if (!res) {
      said.push_back(fmt::format("{}: {}", url, httplib::to_string(res.error())));
      clients_[at].reset();  // a new connection next time
      continue;
    }
    if (res->status == 200) {
      current_ = at;
      return res->body;
    }
    const json e = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
    const std::string message = e.is_object() && e.contains("message") && e["message"].is_string()
                                    ? e["message"].get<std::string>()
                                    : fmt::format("HTTP {}", res->status);
    const int code = e.is_object() && e.contains("code") && e["code"].is_number_integer()
                         ? e["code"].get<int>()
                         : 0;
    said.push_back(fmt::format("{}: {}", url, message));
    if (code == kGrpcUnavailable || code == kGrpcDeadlineExceeded || res->status >= 500) continue;
    // The request itself is refused (too many operations, too large, a bad argument): every
    // member would say the same.
    return PoolError{ErrorKind::kInternal, "etcd-refused",
                     fmt::format("etcd refused {}: {}", path, message)};
  }
  return PoolError{ErrorKind::kUnavailable, "etcd-unavailable",
                   fmt::format("no etcd member answered {} ({}); without a quorum etcd takes no "
                               "write",
                               path, fmt::join(said, "; "))};
}

PoolResult<std::vector<EtcdKv>> EtcdClient::RangePage(const std::string& key,
                                                      const std::string& end, int64_t revision,
                                                      int64_t limit, bool* more,
                                                      int64_t* at_revision) {
  json req = {{"key", util::Base64Encode(key)}};
  if (!end.empty()) req["range_end"] = util::Base64Encode(end);
  if (limit > 0) req["limit"] = std::to_string(limit);
  if (revision > 0) req["revision"] = std::to_string(revision);
  PoolResult<std::string> body = Post("/v3/kv/range", req.dump());
  if (!body.ok()) return body.error();
  PoolResult<json> j = Parse(body.value());
  if (!j.ok()) return j.error();
  std::vector<EtcdKv> kvs;
  if (const auto it = j.value().find("kvs"); it != j.value().end()) {
    if (!it->is_array()) return BadAnswer("range: kvs is not an array");
    for (const json& e : *it) {
      std::optional<EtcdKv> kv = ReadKv(e);
      if (!kv) return BadAnswer("range: a key-value that cannot be read");
      kvs.push_back(std::move(*kv));
    }
  }
  *more = j.value().value("more", false);
  *at_revision = HeaderRevision(j.value());
  return kvs;
}

PoolResult<std::vector<EtcdKv>> EtcdClient::ReadPrefix(const std::string& prefix,
                                                       int64_t* revision) {
  std::vector<EtcdKv> all;
  const std::string end = PrefixEnd(prefix);
  std::string from = prefix;
  int64_t at = 0;  // every page at the first page's revision: one consistent view
  while (true) {
    bool more = false;
    int64_t page_revision = 0;
    PoolResult<std::vector<EtcdKv>> page =
        RangePage(from, end, at, kPageKeys, &more, &page_revision);
    if (!page.ok()) return page.error();
    if (at == 0) at = page_revision;
    if (page.value().empty()) break;
    from = page.value().back().key + std::string(1, '\0');
    for (EtcdKv& kv : page.value()) all.push_back(std::move(kv));
    if (!more) break;
  }
  *revision = at;
  return all;
}

PoolResult<std::optional<EtcdKv>> EtcdClient::Get(const std::string& key) {
  bool more = false;
  int64_t revision = 0;
  PoolResult<std::vector<EtcdKv>> kvs = RangePage(key, "", 0, 0, &more, &revision);
  if (!kvs.ok()) return kvs.error();
  if (kvs.value().empty()) return std::optional<EtcdKv>{};
  return std::optional<EtcdKv>{std::move(kvs.value().front())};
}

PoolResult<EtcdTxnResult> EtcdClient::Txn(const std::vector<EtcdCompare>& compares,
                                          const std::vector<EtcdOp>& success,
                                          const std::vector<EtcdOp>& failure) {
  json req = {{"compare", json::array()}, {"success", json::array()}, {"failure", json::array()}};
  for (const EtcdCompare& c : compares) req["compare"].push_back(CompareJson(c));
  for (const EtcdOp& op : success) req["success"].push_back(OpJson(op));
  for (const EtcdOp& op : failure) req["failure"].push_back(OpJson(op));
  PoolResult<std::string> body = Post("/v3/kv/txn", req.dump());
  if (!body.ok()) return body.error();
  PoolResult<json> j = Parse(body.value());
  if (!j.ok()) return j.error();
  EtcdTxnResult result;
  result.succeeded = j.value().value("succeeded", false);
  result.revision = HeaderRevision(j.value());
  if (const auto it = j.value().find("responses"); it != j.value().end()) {
    if (!it->is_array()) return BadAnswer("txn: responses is not an array");
    for (const json& r : *it) {
      const auto range = r.find("response_range");
      if (range == r.end()) continue;
      std::optional<EtcdKv> kv;
      if (const auto kvs = range->find("kvs"); kvs != range->end()) {
        if (!kvs->is_array() || kvs->empty()) return BadAnswer("txn: a range without kvs");
        kv = ReadKv(kvs->front());
        if (!kv) return BadAnswer("txn: a key-value that cannot be read");
      }
      result.reads.push_back(std::move(kv));
    }
  }
  return result;
}

PoolResult<int64_t> EtcdClient::GrantLease(int64_t ttl_s) {
  PoolResult<std::string> body =
      Post("/v3/lease/grant", json{{"TTL", std::to_string(ttl_s)}}.dump());
  if (!body.ok()) return body.error();
  PoolResult<json> j = Parse(body.value());
  if (!j.ok()) return j.error();
  int64_t id = 0;
  if (!ReadInt(j.value(), "ID", &id) || id == 0) return BadAnswer("lease grant: no ID");
  return id;
}

PoolResult<int64_t> EtcdClient::KeepAlive(int64_t lease) {
  PoolResult<std::string> body =
      Post("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}.dump());
  if (!body.ok()) return body.error();
  PoolResult<json> j = Parse(body.value());
  if (!j.ok()) return j.error();
  const auto result = j.value().find("result");
  if (result == j.value().end() || !result->is_object()) return BadAnswer("keepalive: no result");
  int64_t ttl = 0;
  if (!ReadInt(*result, "TTL", &ttl)) return BadAnswer("keepalive: TTL is not a number");
  return ttl;
}

PoolResult<Done> EtcdClient::Revoke(int64_t lease) {
  PoolResult<std::string> body =
      Post("/v3/lease/revoke", json{{"ID", std::to_string(lease)}}.dump());
  if (!body.ok()) return body.error();
  return Done{};
}

}  // namespace dxpu::manager
