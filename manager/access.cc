// access.cc - identities and roles of the pool's APIs (access.h).
#include "manager/access.h"

#include <httplib.h>

#include <utility>

#include <spdlog/fmt/fmt.h>

#include "manager/pool_json.h"
#include "manager/tls.h"

namespace dxpu::manager {

namespace {

constexpr std::string_view kHostPrefix = "host:";

// A host's name as pool_manager.cc accepts it: 1-63 of A-Z a-z 0-9 . _ -
bool IsHostName(std::string_view name) {
  return !name.empty() && name.size() <= 63 &&
         name.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
             std::string_view::npos;
}

PoolError Forbidden(const Identity& who, std::string_view method, std::string_view path,
                    std::string_view why) {
  return PoolError{ErrorKind::kForbidden, "forbidden",
                   fmt::format("{} may not {} {}: {}", who.name.empty() ? "(no name)" : who.name,
                               method, path, why)};
}

// The paths a host may use; what is its own is checked by the handlers.
bool HostMayUse(std::string_view method, std::string_view path) {
  if (method == "GET") {
    return path == "/healthz" || path == "/v1/leader" || path == "/v1/status" ||
           path == "/v1/allocations" || path.starts_with("/v1/allocations/") ||
           path == "/v1/hosts" || path.starts_with("/v1/hosts/");
  }
  if (method == "POST") return path == "/v1/allocations" || path == "/v1/hosts";
  if (method == "DELETE") return path.starts_with("/v1/allocations/");
  return false;
}

}  // namespace

Identity IdentityFromCommonName(std::string_view cn) {
  Identity who{std::string(cn), Role::kNone, ""};
  if (cn == "operator") {
    who.role = Role::kOperator;
  } else if (cn == "reader") {
    who.role = Role::kReader;
  } else if (cn == "manager") {
    who.role = Role::kManager;
  } else if (cn.starts_with(kHostPrefix) && IsHostName(cn.substr(kHostPrefix.size()))) {
    who.role = Role::kHost;
    who.host = std::string(cn.substr(kHostPrefix.size()));
  }
  return who;
}

Identity IdentityOf(const httplib::Request& req) {
  if (!OverTls(req)) return Identity{"anonymous", Role::kOperator, ""};
  return IdentityFromCommonName(PeerCommonName(req));
}

std::optional<PoolError> ManagerRouteRefusal(const Identity& who, std::string_view method,
                                             std::string_view path) {
  switch (who.role) {
    case Role::kOperator:
      return std::nullopt;
    case Role::kReader:
      if (method == "GET") return std::nullopt;
      return Forbidden(who, method, path, "the reader role only reads (GET)");
    case Role::kHost:
      if (HostMayUse(method, path)) return std::nullopt;
      return Forbidden(who, method, path,
                       "a host sees and releases its own allocations and registers itself; "
                       "boxes, GPUs and other hosts are the operator's");
    case Role::kManager:
    case Role::kNone:
      break;
  }
  return Forbidden(who, method, path,
                   "no role of this pool (the certificate's CN must be operator, reader or "
                   "host:NAME)");
}

std::optional<PoolError> AgentRouteRefusal(const Identity& who, std::string_view method,
                                           std::string_view path) {
  if (who.role == Role::kManager || who.role == Role::kOperator) return std::nullopt;
  if (who.role == Role::kReader && method == "GET") return std::nullopt;
  return Forbidden(who, method, path,
                   "an agent takes attach and detach from the manager (CN manager) and the "
                   "operator alone, reads also from a reader");
}

PoolError NotYours(const Identity& who, const std::string& what) {
  return PoolError{
      ErrorKind::kForbidden, "not-yours",
      fmt::format("{} is not host {}'s: a host sees and changes only its own", what, who.host)};
}

void InstallAccessGate(
    httplib::Server& server, RouteRule rule, std::atomic<uint64_t>* refused,
    std::function<void(const httplib::Request&, const httplib::Response&)> refused_hook,
    std::function<bool(const httplib::Request&, httplib::Response&)> admitted) {
  server.set_pre_routing_handler(
      [rule = std::move(rule), refused, hook = std::move(refused_hook),
       admitted = std::move(admitted)](const httplib::Request& req, httplib::Response& res) {
        const std::optional<PoolError> no = rule(IdentityOf(req), req.method, req.path);
        if (!no) {
          return admitted && admitted(req, res) ? httplib::Server::HandlerResponse::Handled
                                                : httplib::Server::HandlerResponse::Unhandled;
        }
        res.status = HttpStatusOf(no->kind);
        res.set_content(ToJson(*no).dump(2) + "\n", "application/json");
        refused->fetch_add(1, std::memory_order_relaxed);
        if (hook) hook(req, res);
        return httplib::Server::HandlerResponse::Handled;
      });
}

}  // namespace dxpu::manager
