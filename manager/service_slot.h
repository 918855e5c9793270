// service_slot.h - the pool manager the REST API serves from, and whether this process may
// serve now. One manager on SQLite leads for its whole life; a replica on etcd (replica.h)
// leads only in its terms, and between them is a standby: it answers 503 "not-leader" naming
// the leader's URL, or saying why there is none (no quorum).
//
// A service whose term ended is stopped (no step is taken) but kept: a request that passed the
// leader check just before the term ended reads the pool as it was, and any change it makes is
// refused by the ended term's store. A new term's service replaces it.
#ifndef DXPU_MANAGER_SERVICE_SLOT_H_
#define DXPU_MANAGER_SERVICE_SLOT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "manager/manager_service.h"
#include "manager/pool_error.h"

namespace dxpu::manager {

// What GET /v1/leader says.
struct ServingState {
  bool leading = false;
  std::string replica;         // this process's replica name ("" on SQLite)
  std::string leader_replica;  // who leads, when known
  std::string leader_url;
  int64_t term = 0;    // the term's revision, when leading
  uint64_t epoch = 0;  // the term's management epoch, when leading
  std::string reason;  // why not leading: "standby", "no-quorum: ...", "starting"
};

class ServiceSlot {
 public:
  ServiceSlot() = default;
  // One manager for the process's life (SQLite).
  explicit ServiceSlot(std::shared_ptr<ManagerService> service);
  ServiceSlot(const ServiceSlot&) = delete;
  ServiceSlot& operator=(const ServiceSlot&) = delete;

  // The service's With, WaitFor and ProbeBridge. Only after Serving() said yes: there is a
  // service (possibly a stopped one) from then on.
  template <typename F>
  auto With(F&& f) {
    return Current()->With(std::forward<F>(f));
  }
  bool WaitFor(const std::function<bool(const PoolManager&)>& pred, int timeout_ms) {
    return Current()->WaitFor(pred, timeout_ms);
  }
  ActionResult ProbeBridge(const BoxRecord& box) const { return Current()->ProbeBridge(box); }

  // nullopt when this process leads; else the refusal to answer with (503 "not-leader").
  std::optional<PoolError> Serving() const;
  ServingState State() const;

  // A term begins: `service` serves from now on.
  void Lead(std::shared_ptr<ManagerService> service, ServingState state);
  // Not leading (the term ended, or never began): stops the term's service, if any.
  void Standby(ServingState state);

 private:
  std::shared_ptr<ManagerService> Current() const;

  mutable std::mutex mu_;
  std::shared_ptr<ManagerService> service_;
  ServingState state_;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_SERVICE_SLOT_H_
