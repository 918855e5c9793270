// rest_api.h - the pool manager's REST/JSON API on an HTTP server (docs/manager.md "The API"):
// boxes, GPUs, hosts, allocations, status, health. Every answer is JSON; every error is
// {"error": name, "message": sentence} with the HTTP status of its kind.
#ifndef DXPU_MANAGER_REST_API_H_
#define DXPU_MANAGER_REST_API_H_

#include <string>

#include "manager/addresses.h"
#include "manager/audit_log.h"
#include "manager/service_slot.h"

namespace httplib {
class Server;
}

namespace dxpu::manager {

struct RestOptions {
  // Where a box's unix: management socket may be (addresses.h).
  std::string bridge_socket_dir = kDefaultBridgeSocketDir;
  // Where every change and refused change is recorded; null: nowhere (tests of the core).
  AuditLog* audit = nullptr;
};

// Installs the routes on `server`; `service` must outlive it. While `service` does not lead
// (a standby replica), every route but GET /healthz and GET /v1/leader answers 503
// "not-leader" with the leader's URL.
void InstallRestApi(httplib::Server& server, ServiceSlot& service, const RestOptions& options = {});

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_REST_API_H_
