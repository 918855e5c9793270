// rest_api.h - the pool manager's REST/JSON API on an HTTP server (docs/manager.md "The API"):
// boxes, GPUs, hosts, allocations, status, health. Every answer is JSON; every error is
// {"error": name, "message": sentence} with the HTTP status of its kind.
#ifndef DXPU_MANAGER_REST_API_H_
#define DXPU_MANAGER_REST_API_H_

#include "manager/manager_service.h"

namespace httplib {
class Server;
}

namespace dxpu::manager {

// Installs the routes on `server`; `service` must outlive it.
void InstallRestApi(httplib::Server& server, ManagerService& service);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_REST_API_H_
