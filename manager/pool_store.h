// pool_store.h - where the pool manager keeps its state. The manager holds the whole pool in
// memory and writes every change through a store as one batch, applied atomically (all or
// nothing) before the change is acted on or answered. A store needs only two operations:
// load everything, and apply a batch; a replicated store (a log of batches behind consensus)
// implements the same interface later. SqliteStore (sqlite_store.h) is the default.
#ifndef DXPU_MANAGER_POOL_STORE_H_
#define DXPU_MANAGER_POOL_STORE_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "manager/pool_error.h"
#include "manager/pool_model.h"

namespace dxpu::manager {

// One change. Put* inserts or replaces the row with the same key; Delete* removes it (a row
// that is not there is not an error).
struct PutBox {
  BoxRecord box;
};
struct PutGpu {
  GpuRecord gpu;  // key: (box, device)
};
struct PutHost {
  HostRecord host;  // key: id
};
struct PutAllocation {
  AllocationRecord allocation;  // key: id
};
struct PutLease {
  LeaseRecord lease;  // key: (box, device): a GPU has at most one lease
};
struct DeleteLease {
  std::string box;
  uint16_t device = 0;
};
struct DeleteGpu {
  std::string box;
  uint16_t device = 0;
};
struct DeleteBox {
  std::string id;  // its GPUs must have been deleted in the same or an earlier batch
};
struct DeleteHost {
  std::string id;
};
using StoreChange = std::variant<PutBox, PutGpu, PutHost, PutAllocation, PutLease, DeleteLease,
                                 DeleteGpu, DeleteBox, DeleteHost>;

// Changes applied together: all of them, or (on error) none.
struct StoreBatch {
  std::vector<StoreChange> changes;
  bool empty() const { return changes.empty(); }
};

class PoolStore {
 public:
  virtual ~PoolStore() = default;
  // Everything the store holds.
  virtual PoolResult<PoolSnapshot> Load() = 0;
  // Applies the batch in one transaction. On error nothing of it is applied. A lease for a GPU
  // that already has one from another allocation is refused (kConflict, "gpu-leased"): the
  // store itself keeps a GPU from being given twice.
  virtual PoolResult<Done> Apply(const StoreBatch& batch) = 0;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_POOL_STORE_H_
