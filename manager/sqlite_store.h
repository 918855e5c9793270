// sqlite_store.h - the pool manager's default store (pool_store.h): one SQLite database file in
// WAL mode, each batch one transaction. The enumerations are stored by their names
// (pool_model.h) and unsigned 64-bit values as the INTEGER with the same bits, so the file is
// readable with the sqlite3 command-line shell:
//
//   meta(key PRIMARY KEY, value)            schema_version = 1
//   boxes(id PRIMARY KEY, management, fabric, healthy, last_seen_ns)
//   gpus(box -> boxes, device, box_bdf, profile, present; PRIMARY KEY (box, device))
//   hosts(id PRIMARY KEY, node_id UNIQUE, agent, mode, boot_id, registered_ns)
//   allocations(id INTEGER PRIMARY KEY, host, count, policy, profile, prefer_box, request_key,
//               state, error, created_ns, updated_ns; request_key unique where not '')
//   leases(allocation -> allocations, box, device, host, host_bdf, step, updated_ns;
//          PRIMARY KEY (box, device) -> gpus; UNIQUE (host, host_bdf))
//
// Put* inserts the row or updates the one with the same key; a change that would break another
// constraint (a second host with the same node_id, a lease at a host_bdf the host already has,
// a lease of a GPU or allocation that is not there, deleting a box that still has GPUs) is
// refused as a whole batch with kConflict "store-constraint". Foreign keys are checked change by
// change, so a batch lists a parent's Put before its children's and a child's Delete before its
// parent's.
//
// Errors: kUnavailable "store-unavailable" (busy past the 5 s timeout, I/O, disk full),
// "store-not-database" (the file is not a SQLite database), "store-schema" (an unknown schema
// version, or another application's database), "store-journal" (WAL mode could not be set),
// "store-corrupt" (a row Load cannot read); kConflict "gpu-leased" and "store-constraint".
//
// Not thread-safe: one SqliteStore is used from one thread at a time (the manager serializes
// every Load and Apply). A second process may read the file meanwhile (WAL readers do not block
// the writer); a second writer makes Apply wait up to 5 s, then fail with "store-unavailable".
#ifndef DXPU_MANAGER_SQLITE_STORE_H_
#define DXPU_MANAGER_SQLITE_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "manager/pool_error.h"
#include "manager/pool_model.h"
#include "manager/pool_store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace dxpu::manager {

// PRAGMA synchronous. With WAL, kNormal loses no committed batch when the manager crashes but
// may lose the last ones when the machine loses power; kFull syncs the log at every commit.
enum class SqliteSync : uint8_t { kNormal, kFull };

class SqliteStore final : public PoolStore {
 public:
  // Opens the database at path, creating the file and the schema when absent.
  static PoolResult<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                       SqliteSync sync = SqliteSync::kNormal);

  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;
  SqliteStore(SqliteStore&&) = delete;
  SqliteStore& operator=(SqliteStore&&) = delete;
  ~SqliteStore() override;

  PoolResult<PoolSnapshot> Load() override;
  PoolResult<Done> Apply(const StoreBatch& batch) override;

  const std::string& path() const { return path_; }

  // The schema version this code writes and reads.
  static constexpr int64_t kSchemaVersion = 2;  // 2: fabric keys (1 is migrated)

  // Owners of the SQLite handles (sqlite3_close_v2, sqlite3_finalize).
  struct CloseDatabase {
    void operator()(sqlite3* db) const;
  };
  struct FinalizeStatement {
    void operator()(sqlite3_stmt* statement) const;
  };
  using Database = std::unique_ptr<sqlite3, CloseDatabase>;
  using Statement = std::unique_ptr<sqlite3_stmt, FinalizeStatement>;

 private:
  // Every statement the store runs, prepared once by Open.
  struct Statements {
    Statement begin_deferred;
    Statement begin_immediate;
    Statement commit;
    Statement put_box;
    Statement put_gpu;
    Statement put_host;
    Statement put_allocation;
    Statement lease_holder;  // the allocation of the lease of (box, device), if any
    Statement put_lease;
    Statement delete_lease;
    Statement delete_gpu;
    Statement delete_box;
    Statement delete_host;
    Statement select_boxes;
    Statement select_gpus;
    Statement select_hosts;
    Statement select_allocations;
    Statement select_leases;
  };
  class ChangeWriter;

  SqliteStore(std::string path, Database db, Statements statements);
  static PoolResult<Statements> PrepareStatements(sqlite3* db);

  std::string path_;
  Database db_;  // declared before statements_: the statements are finalized first
  Statements statements_;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_SQLITE_STORE_H_
