// pool_json.h - the REST API's JSON (docs/manager.md "The API"): the pool's records as the API
// shows them, and request bodies read into requests. Bodies come from the network: anything
// malformed (not JSON, not an object, a missing or mistyped field, an unknown field, a value
// out of range) is a PoolError kBadRequest naming the field, never an exception.
#ifndef DXPU_MANAGER_POOL_JSON_H_
#define DXPU_MANAGER_POOL_JSON_H_

#include <string_view>

#include <nlohmann/json.hpp>

#include "manager/allocator.h"
#include "manager/pool_error.h"
#include "manager/pool_manager.h"
#include "manager/pool_model.h"

namespace dxpu::manager {

nlohmann::json ToJson(const BoxRecord& box);
nlohmann::json ToJson(const GpuView& gpu);
nlohmann::json ToJson(const HostRecord& host);
nlohmann::json ToJson(const LeaseRecord& lease);
nlohmann::json ToJson(const AllocationView& v);
nlohmann::json ToJson(const PoolSummary& s);
nlohmann::json ToJson(const PoolError& e);

// POST /v1/boxes: {"id", "management", "fabric", "adopt"?}: the box, and whether the operator
// confirms that what its bridge holds for others is to be reset and scrubbed ("adopt": "reset").
struct AddBoxRequest {
  BoxRecord box;
  bool adopt_reset = false;
};
PoolResult<AddBoxRequest> AddBoxRequestFromJson(std::string_view body);
// POST /v1/hosts: {"id", "node_id" (number or "0x..." string), "agent", "mode", "boot_id"}
PoolResult<HostRecord> HostFromJson(std::string_view body);
// POST /v1/allocations: {"host", "count", "policy"?, "profile"?, "box"?, "request_key"?}
PoolResult<AllocationRequest> AllocationRequestFromJson(std::string_view body);

// "01:00.0" <-> 0x0100
std::string BdfText(uint16_t bdf);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_POOL_JSON_H_
