// access.h - who a request comes from and what that identity may do (issue 32 item 3;
// docs/manager.md "TLS and roles"). The identity is the subject CN of the client certificate
// the TLS server verified against the pool's CA:
//   "operator"   everything: boxes, hosts, any allocation;
//   "reader"     GET only;
//   "host:NAME"  the tenant host NAME: registers itself, requests allocations for itself, sees
//                and releases its own allocations only (and its own host record);
//   "manager"    the pool manager, as the agents see it (the agents' attach and detach);
// any other CN: 403 for every request. On a plain HTTP server (loopback only, or
// --insecure-plaintext) every request is "anonymous" with the operator role.
#ifndef DXPU_MANAGER_ACCESS_H_
#define DXPU_MANAGER_ACCESS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "manager/pool_error.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace dxpu::manager {

enum class Role : uint8_t { kNone, kOperator, kReader, kHost, kManager };

struct Identity {
  std::string name;  // "operator", "host:h1", "anonymous", or the unknown CN as it came
  Role role = Role::kNone;
  std::string host;  // kHost: the host's name
};

// The identity a certificate's CN names (kNone for a CN of no role).
Identity IdentityFromCommonName(std::string_view cn);
// Who sent `req` (above).
Identity IdentityOf(const httplib::Request& req);

// What the manager's REST API refuses `who` by method and path alone (403), before any handler;
// the handlers check what depends on the pool (whose allocation it is).
std::optional<PoolError> ManagerRouteRefusal(const Identity& who, std::string_view method,
                                             std::string_view path);
// What an agent's API refuses `who`: attach and detach are the manager's and the operator's,
// GETs also a reader's.
std::optional<PoolError> AgentRouteRefusal(const Identity& who, std::string_view method,
                                           std::string_view path);
// 403 "not-yours": `who` (a host) asked for what belongs to another host.
PoolError NotYours(const Identity& who, const std::string& what);

using RouteRule =
    std::function<std::optional<PoolError>(const Identity&, std::string_view, std::string_view)>;
// Refuses on `server`, before routing, what `rule` refuses, with the error's JSON; counts each
// refusal in *refused and calls `refused_hook` (may be empty) after the answer is set. A
// request the rule admits is then given to `admitted` (may be empty), which may answer it
// itself (returns true: not routed), e.g. a standby manager sending the client to its leader.
void InstallAccessGate(
    httplib::Server& server, RouteRule rule, std::atomic<uint64_t>* refused,
    std::function<void(const httplib::Request&, const httplib::Response&)> refused_hook = {},
    std::function<bool(const httplib::Request&, httplib::Response&)> admitted = {});

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_ACCESS_H_
