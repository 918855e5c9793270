// service_slot.cc - the manager the API serves from, and whether it leads (service_slot.h).
#include "manager/service_slot.h"

#include <fmt/format.h>

namespace dxpu::manager {

ServiceSlot::ServiceSlot(std::shared_ptr<ManagerService> service) : service_(std::move(service)) {
  state_.leading = true;
}

std::shared_ptr<ManagerService> ServiceSlot::Current() const {
  std::lock_guard lock(mu_);
  return service_;
}

std::optional<PoolError> ServiceSlot::Serving() const {
  std::lock_guard lock(mu_);
  if (state_.leading && service_) return std::nullopt;
  std::string message;
  if (!state_.leader_url.empty()) {
    message = fmt::format(
        "this manager (replica {}) is a standby; the leader is replica {} at "
        "{}: send the request there",
        state_.replica, state_.leader_replica, state_.leader_url);
  } else {
    message = fmt::format(
        "this manager (replica {}) does not lead and no leader is known ({}); "
        "try again shortly",
        state_.replica, state_.reason);
  }
  return PoolError{ErrorKind::kUnavailable, "not-leader", std::move(message)};
}

ServingState ServiceSlot::State() const {
  std::lock_guard lock(mu_);
  return state_;
}

void ServiceSlot::Lead(std::shared_ptr<ManagerService> service, ServingState state) {
  std::shared_ptr<ManagerService> old;
  {
    std::lock_guard lock(mu_);
    old = std::move(service_);
    service_ = std::move(service);
    state_ = std::move(state);
    state_.leading = true;
  }
  if (old) old->Stop();
}

void ServiceSlot::Standby(ServingState state) {
  std::shared_ptr<ManagerService> old;
  {
    std::lock_guard lock(mu_);
    old = service_;  // kept for requests already past the check
    state_ = std::move(state);
    state_.leading = false;
  }
  if (old) old->Stop();
}

}  // namespace dxpu::manager
