// sqlite_store.cc - SqliteStore: the pool manager's state in one SQLite database (WAL mode).
#include "manager/sqlite_store.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <array>
#include <bit>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace dxpu::manager {
namespace {

using Database = SqliteStore::Database;
using Statement = SqliteStore::Statement;

constexpr int kBusyTimeoutMs = 5000;

// Every column NOT NULL (an empty string is '', never NULL) and every table STRICT, so a value
// of the wrong type cannot get in through this code or the sqlite3 shell.
constexpr const char* kSchema = R"sql(
CREATE TABLE meta(
  key TEXT PRIMARY KEY NOT NULL,
  value ANY NOT NULL
) STRICT;
CREATE TABLE boxes(
  id TEXT PRIMARY KEY NOT NULL,
  management TEXT NOT NULL,
  fabric TEXT NOT NULL,
  healthy INTEGER NOT NULL,
  last_seen_ns INTEGER NOT NULL,
  fabric_key TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE TABLE gpus(
  box TEXT NOT NULL REFERENCES boxes(id),
  device INTEGER NOT NULL,
  box_bdf INTEGER NOT NULL,
  profile TEXT NOT NULL,
  present INTEGER NOT NULL,
  PRIMARY KEY(box, device)
) STRICT;
CREATE TABLE hosts(
  id TEXT PRIMARY KEY NOT NULL,
  node_id INTEGER NOT NULL UNIQUE,
  agent TEXT NOT NULL,
  mode TEXT NOT NULL,
  boot_id TEXT NOT NULL,
  registered_ns INTEGER NOT NULL,
  fabric_key TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE TABLE allocations(
  id INTEGER PRIMARY KEY NOT NULL,
  host TEXT NOT NULL,
  count INTEGER NOT NULL,
  policy TEXT NOT NULL,
  profile TEXT NOT NULL,
  prefer_box TEXT NOT NULL,
  request_key TEXT NOT NULL,
  state TEXT NOT NULL,
  error TEXT NOT NULL,
  created_ns INTEGER NOT NULL,
  updated_ns INTEGER NOT NULL
) STRICT;
CREATE UNIQUE INDEX allocations_request_key ON allocations(request_key) WHERE request_key <> '';
CREATE TABLE leases(
  allocation INTEGER NOT NULL REFERENCES allocations(id),
  box TEXT NOT NULL,
  device INTEGER NOT NULL,
  host TEXT NOT NULL,
  host_bdf INTEGER NOT NULL,
  step TEXT NOT NULL,
  updated_ns INTEGER NOT NULL,
  PRIMARY KEY(box, device),
  FOREIGN KEY(box, device) REFERENCES gpus(box, device),
  UNIQUE(host, host_bdf)
) STRICT;
CREATE INDEX leases_allocation ON leases(allocation);
)sql";

// From schema version 1 to 2: the fabric public keys of boxes (learned from their bridges) and
// hosts (from their registrations), '' for none (docs/manager.md "Fabric keys").
constexpr const char* kMigrateTo2 = R"sql(
ALTER TABLE boxes ADD COLUMN fabric_key TEXT NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN fabric_key TEXT NOT NULL DEFAULT '';
UPDATE meta SET value = 2 WHERE key = 'schema_version';
)sql";

// Put* update the row with the same key in place (an upsert): unlike INSERT OR REPLACE, a
// clash with another UNIQUE constraint is an error, not a silent delete of the other row.
constexpr std::string_view kPutBox = R"sql(
INSERT INTO boxes(id, management, fabric, healthy, last_seen_ns, fabric_key)
  VALUES(?1, ?2, ?3, ?4, ?5, ?6)
ON CONFLICT(id) DO UPDATE SET management = excluded.management, fabric = excluded.fabric,
  healthy = excluded.healthy, last_seen_ns = excluded.last_seen_ns,
  fabric_key = excluded.fabric_key)sql";
constexpr std::string_view kPutGpu = R"sql(
INSERT INTO gpus(box, device, box_bdf, profile, present) VALUES(?1, ?2, ?3, ?4, ?5)
ON CONFLICT(box, device) DO UPDATE SET box_bdf = excluded.box_bdf, profile = excluded.profile,
  present = excluded.present)sql";
constexpr std::string_view kPutHost = R"sql(
INSERT INTO hosts(id, node_id, agent, mode, boot_id, registered_ns, fabric_key)
  VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT(id) DO UPDATE SET node_id = excluded.node_id, agent = excluded.agent,
  mode = excluded.mode, boot_id = excluded.boot_id, registered_ns = excluded.registered_ns,
  fabric_key = excluded.fabric_key)sql";
constexpr std::string_view kPutAllocation = R"sql(
INSERT INTO allocations(id, host, count, policy, profile, prefer_box, request_key, state, error,
  created_ns, updated_ns) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
ON CONFLICT(id) DO UPDATE SET host = excluded.host, count = excluded.count,
  policy = excluded.policy, profile = excluded.profile, prefer_box = excluded.prefer_box,
  request_key = excluded.request_key, state = excluded.state, error = excluded.error,
  created_ns = excluded.created_ns, updated_ns = excluded.updated_ns)sql";
constexpr std::string_view kLeaseHolder =
    "SELECT allocation FROM leases WHERE box = ?1 AND device = ?2";
constexpr std::string_view kPutLease = R"sql(
INSERT INTO leases(allocation, box, device, host, host_bdf, step, updated_ns)
  VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)
ON CONFLICT(box, device) DO UPDATE SET allocation = excluded.allocation, host = excluded.host,
  host_bdf = excluded.host_bdf, step = excluded.step, updated_ns = excluded.updated_ns)sql";

// In primary key order; allocation IDs in unsigned order (those >= 2^63 are stored negative).
constexpr std::string_view kSelectBoxes =
    "SELECT id, management, fabric, healthy, last_seen_ns, fabric_key FROM boxes ORDER BY id";
constexpr std::string_view kSelectGpus =
    "SELECT box, device, box_bdf, profile, present FROM gpus ORDER BY box, device";
constexpr std::string_view kSelectHosts =
    "SELECT id, node_id, agent, mode, boot_id, registered_ns, fabric_key FROM hosts ORDER BY id";
constexpr std::string_view kSelectAllocations = R"sql(
SELECT id, host, count, policy, profile, prefer_box, request_key, state, error, created_ns,
  updated_ns FROM allocations ORDER BY id < 0, id)sql";
constexpr std::string_view kSelectLeases =
    "SELECT allocation, box, device, host, host_bdf, step, updated_ns FROM leases "
    "ORDER BY box, device";

int64_t ToSql(uint64_t value) { return std::bit_cast<int64_t>(value); }
uint64_t FromSql(int64_t value) { return std::bit_cast<uint64_t>(value); }

// The error for a failed SQLite call on db with result code rc, while doing `what`.
PoolError SqliteError(sqlite3* db, int rc, std::string_view what) {
  const std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string message = what.empty() ? detail : fmt::format("{}: {}", what, detail);
  switch (rc & 0xff) {  // the primary result code
    case SQLITE_CONSTRAINT:
      return {ErrorKind::kConflict, "store-constraint", std::move(message)};
    case SQLITE_NOTADB:
      return {ErrorKind::kUnavailable, "store-not-database", std::move(message)};
    case SQLITE_CORRUPT:
      return {ErrorKind::kUnavailable, "store-corrupt", std::move(message)};
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PROTOCOL:
    case SQLITE_NOMEM:
    case SQLITE_PERM:
    case SQLITE_NOLFS:
      return {ErrorKind::kUnavailable, "store-unavailable", std::move(message)};
    default:
      return {ErrorKind::kInternal, "store-error", std::move(message)};
  }
}

// The error for a row that Load cannot turn into a record.
PoolError CorruptRow(std::string_view table, std::string_view row, std::string_view problem) {
  return {ErrorKind::kUnavailable, "store-corrupt",
          fmt::format("table {} row {}: {}", table, row, problem)};
}

// Rolls back the transaction open on db (if one is) when the scope ends: an error anywhere
// between BEGIN and a successful COMMIT leaves nothing applied.
class RollbackUnlessCommitted {
 public:
  explicit RollbackUnlessCommitted(sqlite3* db) : db_(db) {}
  RollbackUnlessCommitted(const RollbackUnlessCommitted&) = delete;
  RollbackUnlessCommitted& operator=(const RollbackUnlessCommitted&) = delete;
  ~RollbackUnlessCommitted() {
    if (sqlite3_get_autocommit(db_) != 0) return;  // committed, or never begun
    const int rc = sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) spdlog::error("store: rollback failed: {}", sqlite3_errmsg(db_));
  }

 private:
  sqlite3* db_;
};

// One use of a prepared statement: binds its parameters in order, steps it, and when the scope
// ends resets it and clears its bindings for the next use.
class StatementRun {
 public:
  explicit StatementRun(sqlite3_stmt* statement) : statement_(statement) {}
  StatementRun(const StatementRun&) = delete;
  StatementRun& operator=(const StatementRun&) = delete;
  ~StatementRun() {
    sqlite3_reset(statement_);
    sqlite3_clear_bindings(statement_);
  }

  // The text must outlive the run (it is bound without a copy).
  StatementRun& Text(std::string_view text) {
    const char* data = text.data() != nullptr ? text.data() : "";  // "" is '', never NULL
    return Check(
        sqlite3_bind_text64(statement_, next_++, data, text.size(), SQLITE_STATIC, SQLITE_UTF8));
  }
  StatementRun& Int(int64_t value) { return Check(sqlite3_bind_int64(statement_, next_++, value)); }
  StatementRun& U64(uint64_t value) { return Int(ToSql(value)); }
  StatementRun& Bool(bool value) { return Int(value ? 1 : 0); }

  // sqlite3_step's result, or the first binding's error.
  int Step() { return bind_rc_ != SQLITE_OK ? bind_rc_ : sqlite3_step(statement_); }
  sqlite3_stmt* statement() const { return statement_; }

 private:
  StatementRun& Check(int rc) {
    if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
    return *this;
  }

  sqlite3_stmt* statement_;
  int next_ = 1;
  int bind_rc_ = SQLITE_OK;
};

// Reads the columns of the current row in order, checking each against what the schema says
// and remembering the first that is not.
class RowReader {
 public:
  explicit RowReader(sqlite3_stmt* statement) : statement_(statement) {}

  std::string Text() {
    const int column = next_++;
    if (!Expect(column, SQLITE_TEXT, "text")) return {};
    const unsigned char* text = sqlite3_column_text(statement_, column);
    const int size = sqlite3_column_bytes(statement_, column);
    if (text == nullptr) return {};
    return {reinterpret_cast<const char*>(text), static_cast<size_t>(size)};
  }

  int64_t Int() {
    const int column = next_++;
    if (!Expect(column, SQLITE_INTEGER, "an integer")) return 0;
    return sqlite3_column_int64(statement_, column);
  }

  uint64_t U64() { return FromSql(Int()); }

  // uint16_t or uint32_t.
  template <typename Unsigned>
  Unsigned Narrow() {
    const int column = next_;
    const int64_t value = Int();
    if (value < 0 || value > static_cast<int64_t>(std::numeric_limits<Unsigned>::max())) {
      Problem(column, fmt::format("{} is out of range", value));
      return 0;
    }
    return static_cast<Unsigned>(value);
  }

  bool Bool() {
    const int column = next_;
    const int64_t value = Int();
    if (value != 0 && value != 1) Problem(column, fmt::format("{} is not 0 or 1", value));
    return value == 1;
  }

  // An enumeration stored by its name; named is PolicyNamed, LeaseStepNamed, ...
  template <typename Enum>
  Enum Named(std::optional<Enum> (*named)(std::string_view)) {
    const int column = next_;
    const std::string name = Text();
    const std::optional<Enum> value = named(name);
    if (!value.has_value()) {
      Problem(column, fmt::format("unknown name \"{}\"", name));
      return Enum{};
    }
    return *value;
  }

  bool ok() const { return problem_.empty(); }
  const std::string& problem() const { return problem_; }

  // A column as text whatever its type, to name a row that did not read: only after reading.
  std::string Raw(int column) const {
    const unsigned char* text = sqlite3_column_text(statement_, column);
    return text != nullptr ? reinterpret_cast<const char*>(text) : "NULL";
  }

 private:
  bool Expect(int column, int type, std::string_view what) {
    if (sqlite3_column_type(statement_, column) == type) return true;
    Problem(column, fmt::format("not {}", what));
    return false;
  }

  void Problem(int column, std::string_view what) {
    if (!problem_.empty()) return;
    problem_ = fmt::format("column {}: {}", sqlite3_column_name(statement_, column), what);
  }

  sqlite3_stmt* statement_;
  int next_ = 0;
  std::string problem_;
};

PoolResult<BoxRecord> ReadBox(RowReader& row) {
  BoxRecord box;
  box.id = row.Text();
  box.management = row.Text();
  box.fabric = row.Text();
  box.healthy = row.Bool();
  box.last_seen_ns = row.U64();
  box.fabric_key = row.Text();
  if (!row.ok()) return CorruptRow("boxes", box.id, row.problem());
  return box;
}

PoolResult<GpuRecord> ReadGpu(RowReader& row) {
  GpuRecord gpu;
  gpu.box = row.Text();
  gpu.device = row.Narrow<uint16_t>();
  gpu.box_bdf = row.Narrow<uint16_t>();
  gpu.profile = row.Text();
  gpu.present = row.Bool();
  if (!row.ok()) return CorruptRow("gpus", row.Raw(0) + "/" + row.Raw(1), row.problem());
  return gpu;
}

PoolResult<HostRecord> ReadHost(RowReader& row) {
  HostRecord host;
  host.id = row.Text();
  host.node_id = row.U64();
  host.agent = row.Text();
  host.mode = row.Text();
  host.boot_id = row.Text();
  host.registered_ns = row.U64();
  host.fabric_key = row.Text();
  if (!row.ok()) return CorruptRow("hosts", host.id, row.problem());
  return host;
}

PoolResult<AllocationRecord> ReadAllocation(RowReader& row) {
  AllocationRecord allocation;
  allocation.id = row.U64();
  allocation.host = row.Text();
  allocation.count = row.Narrow<uint32_t>();
  allocation.policy = row.Named(PolicyNamed);
  allocation.profile = row.Text();
  allocation.prefer_box = row.Text();
  allocation.request_key = row.Text();
  allocation.state = row.Named(AllocationStateNamed);
  allocation.error = row.Text();
  allocation.created_ns = row.U64();
  allocation.updated_ns = row.U64();
  if (!row.ok()) return CorruptRow("allocations", AllocationName(allocation.id), row.problem());
  return allocation;
}

PoolResult<LeaseRecord> ReadLease(RowReader& row) {
  LeaseRecord lease;
  lease.allocation = row.U64();
  lease.box = row.Text();
  lease.device = row.Narrow<uint16_t>();
  lease.host = row.Text();
  lease.host_bdf = row.Narrow<uint16_t>();
  lease.step = row.Named(LeaseStepNamed);
  lease.updated_ns = row.U64();
  if (!row.ok()) return CorruptRow("leases", row.Raw(1) + "/" + row.Raw(2), row.problem());
  return lease;
}

// Appends every row the select returns to records, read by read_record.
template <typename Record>
PoolResult<Done> ReadTable(sqlite3* db, sqlite3_stmt* select,
                           PoolResult<Record> (*read_record)(RowReader&),
                           std::vector<Record>& records) {
  StatementRun run(select);
  for (;;) {
    const int rc = run.Step();
    if (rc == SQLITE_DONE) return Done{};
    if (rc != SQLITE_ROW) return SqliteError(db, rc, "loading");
    RowReader row(select);
    PoolResult<Record> record = read_record(row);
    if (!record.ok()) return record.error();
    records.push_back(std::move(record).value());
  }
}

// Runs a statement that returns no rows.
PoolResult<Done> RunToDone(sqlite3* db, StatementRun& run, std::string_view what) {
  const int rc = run.Step();
  if (rc != SQLITE_DONE) return SqliteError(db, rc, what);
  return Done{};
}

// Prepares one SQL statement to be run many times.
PoolResult<Statement> Prepare(sqlite3* db, std::string_view sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  Statement statement(raw);
  if (rc != SQLITE_OK) return SqliteError(db, rc, fmt::format("preparing \"{}\"", sql));
  return statement;
}

// The text of the first column of the first row sql returns ("" for no row or NULL), for the
// one-off statements of Open.
PoolResult<std::string> QueryText(sqlite3* db, std::string_view sql, std::string_view what) {
  PoolResult<Statement> statement = Prepare(db, sql);
  // Preparing reads the schema: a file that is not a database fails here.
  if (!statement.ok()) return SqliteError(db, sqlite3_extended_errcode(db), what);
  StatementRun run(statement.value().get());
  const int rc = run.Step();
  if (rc == SQLITE_DONE) return std::string();
  if (rc != SQLITE_ROW) return SqliteError(db, rc, what);
  const unsigned char* text = sqlite3_column_text(run.statement(), 0);
  return std::string(text != nullptr ? reinterpret_cast<const char*>(text) : "");
}

// Runs SQL without results (several statements are allowed).
PoolResult<Done> Execute(sqlite3* db, const char* sql, std::string_view what) {
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, rc, what);
  return Done{};
}

PoolResult<Database> OpenDatabase(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  Database db(raw);  // a handle comes back even when the open fails; it must be closed
  if (rc != SQLITE_OK) return SqliteError(db.get(), rc, fmt::format("opening pool store {}", path));
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), kBusyTimeoutMs);
  return db;
}

// WAL, foreign keys and the sync level; refuses a database that will not take them.
PoolResult<Done> SetPragmas(sqlite3* db, const std::string& path, SqliteSync sync) {
  const std::string where = fmt::format("pool store {}", path);
  PoolResult<std::string> journal =
      QueryText(db, "PRAGMA journal_mode=WAL", where + ": setting journal_mode=WAL");
  if (!journal.ok()) return journal.error();
  if (journal.value() != "wal") {
    return PoolError{ErrorKind::kUnavailable, "store-journal",
                     fmt::format("{}: journal_mode=WAL did not take (the journal mode is \"{}\"); "
                                 "the store needs a file on a local file system",
                                 where, journal.value())};
  }
  const char* synchronous =
      sync == SqliteSync::kFull ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL";
  if (auto set = Execute(db, synchronous, where + ": " + synchronous); !set.ok()) {
    return set.error();
  }
  if (auto set = Execute(db, "PRAGMA foreign_keys=ON", where); !set.ok()) return set.error();
  PoolResult<std::string> foreign_keys = QueryText(db, "PRAGMA foreign_keys", where);
  if (!foreign_keys.ok()) return foreign_keys.error();
  if (foreign_keys.value() != "1") {
    return PoolError{ErrorKind::kInternal, "store-error",
                     where + ": this SQLite library does not enforce foreign keys"};
  }
  return Done{};
}

// Within an open transaction: checks the schema version of a pool store, or creates the schema
// in an empty database.
PoolResult<Done> CheckOrCreateSchema(sqlite3* db, const std::string& path) {
  const std::string where = fmt::format("pool store {}", path);
  PoolResult<std::string> has_meta = QueryText(
      db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'", where);
  if (!has_meta.ok()) return has_meta.error();
  if (has_meta.value() == "1") {
    PoolResult<std::string> version =
        QueryText(db, "SELECT CAST(value AS TEXT) FROM meta WHERE key = 'schema_version'", where);
    if (!version.ok()) return version.error();
    if (version.value() == std::to_string(SqliteStore::kSchemaVersion)) return Done{};
    if (version.value() == "1") {  // the store of a manager before fabric keys
      if (auto migrated = Execute(db, kMigrateTo2, where + ": migrating to schema version 2");
          !migrated.ok())
        return migrated.error();
      spdlog::info("store: migrated {} from schema version 1 to 2 (fabric keys)", path);
      return Done{};
    }
    return PoolError{ErrorKind::kUnavailable, "store-schema",
                     fmt::format("{} has schema version \"{}\"; this manager reads version {}",
                                 where, version.value(), SqliteStore::kSchemaVersion)};
  }
  PoolResult<std::string> objects = QueryText(db, "SELECT count(*) FROM sqlite_master", where);
  if (!objects.ok()) return objects.error();
  if (objects.value() != "0") {
    return PoolError{ErrorKind::kUnavailable, "store-schema",
                     where +
                         " is a SQLite database with tables but no meta table: not a pool "
                         "store (schema version " +
                         std::to_string(SqliteStore::kSchemaVersion) + ")"};
  }
  if (auto created = Execute(db, kSchema, where + ": creating the schema"); !created.ok()) {
    return created.error();
  }
  const std::string set_version = fmt::format(
      "INSERT INTO meta(key, value) VALUES('schema_version', {})", SqliteStore::kSchemaVersion);
  if (auto set = Execute(db, set_version.c_str(), where); !set.ok()) return set.error();
  spdlog::info("store: created the schema (version {}) in {}", SqliteStore::kSchemaVersion, path);
  return Done{};
}

PoolResult<Done> EnsureSchema(sqlite3* db, const std::string& path) {
  const std::string where = fmt::format("pool store {}", path);
  RollbackUnlessCommitted rollback(db);
  if (auto began = Execute(db, "BEGIN IMMEDIATE", where); !began.ok()) return began.error();
  if (auto schema = CheckOrCreateSchema(db, path); !schema.ok()) return schema.error();
  return Execute(db, "COMMIT", where);
}

std::string DescribeChange(const StoreChange& change) {
  struct Describe {
    std::string operator()(const PutBox& c) const { return "put box " + c.box.id; }
    std::string operator()(const PutGpu& c) const {
      return "put gpu " + GpuName(c.gpu.box, c.gpu.device);
    }
    std::string operator()(const PutHost& c) const { return "put host " + c.host.id; }
    std::string operator()(const PutAllocation& c) const {
      return "put allocation " + AllocationName(c.allocation.id);
    }
    std::string operator()(const PutLease& c) const {
      return fmt::format("put lease of {} for {}", GpuName(c.lease.box, c.lease.device),
                         AllocationName(c.lease.allocation));
    }
    std::string operator()(const DeleteLease& c) const {
      return "delete lease of " + GpuName(c.box, c.device);
    }
    std::string operator()(const DeleteGpu& c) const {
      return "delete gpu " + GpuName(c.box, c.device);
    }
    std::string operator()(const DeleteBox& c) const { return "delete box " + c.id; }
    std::string operator()(const DeleteHost& c) const { return "delete host " + c.id; }
  };
  return std::visit(Describe{}, change);
}

PoolError InvalidRecord(std::string_view what) {
  return {ErrorKind::kInternal, "store-invalid-record",
          fmt::format("{} has an enumeration value outside its type", what)};
}

}  // namespace

void SqliteStore::CloseDatabase::operator()(sqlite3* db) const {
  // _v2: should a statement outlive the connection, closing waits for its finalization.
  if (sqlite3_close_v2(db) != SQLITE_OK) spdlog::error("store: close: {}", sqlite3_errmsg(db));
}

void SqliteStore::FinalizeStatement::operator()(sqlite3_stmt* statement) const {
  sqlite3_finalize(statement);
}

// Writes one change of a batch with its prepared statement (std::visit calls it).
class SqliteStore::ChangeWriter {
 public:
  ChangeWriter(sqlite3* db, const Statements& statements) : db_(db), s_(statements) {}

  PoolResult<Done> operator()(const PutBox& change) {
    const BoxRecord& box = change.box;
    StatementRun run(s_.put_box.get());
    run.Text(box.id).Text(box.management).Text(box.fabric).Bool(box.healthy);
    run.U64(box.last_seen_ns).Text(box.fabric_key);
    return RunToDone(db_, run, "");
  }

  PoolResult<Done> operator()(const PutGpu& change) {
    const GpuRecord& gpu = change.gpu;
    StatementRun run(s_.put_gpu.get());
    run.Text(gpu.box).Int(gpu.device).Int(gpu.box_bdf).Text(gpu.profile).Bool(gpu.present);
    return RunToDone(db_, run, "");
  }

  PoolResult<Done> operator()(const PutHost& change) {
    const HostRecord& host = change.host;
    StatementRun run(s_.put_host.get());
    run.Text(host.id).U64(host.node_id).Text(host.agent).Text(host.mode).Text(host.boot_id);
    run.U64(host.registered_ns).Text(host.fabric_key);
    return RunToDone(db_, run, "");
  }

  PoolResult<Done> operator()(const PutAllocation& change) {
    const AllocationRecord& a = change.allocation;
    const std::string_view policy = PolicyName(a.policy);
    const std::string_view state = AllocationStateName(a.state);
    if (policy.empty() || state.empty()) return InvalidRecord(AllocationName(a.id));
    StatementRun run(s_.put_allocation.get());
    run.U64(a.id).Text(a.host).Int(a.count).Text(policy).Text(a.profile).Text(a.prefer_box);
    run.Text(a.request_key).Text(state).Text(a.error).U64(a.created_ns).U64(a.updated_ns);
    return RunToDone(db_, run, "");
  }

  PoolResult<Done> operator()(const PutLease& change) {
    const LeaseRecord& lease = change.lease;
    const std::string_view step = LeaseStepName(lease.step);
    if (step.empty()) return InvalidRecord("the lease of " + GpuName(lease.box, lease.device));
    PoolResult<std::optional<uint64_t>> holder = LeaseHolder(lease.box, lease.device);
    if (!holder.ok()) return holder.error();
    if (holder.value().has_value() && *holder.value() != lease.allocation) {
      return PoolError{
          ErrorKind::kConflict, "gpu-leased",
          fmt::format("GPU {} is leased to {}, not {}", GpuName(lease.box, lease.device),
                      AllocationName(*holder.value()), AllocationName(lease.allocation))};
    }
    StatementRun run(s_.put_lease.get());
    run.U64(lease.allocation).Text(lease.box).Int(lease.device).Text(lease.host);
    run.Int(lease.host_bdf).Text(step).U64(lease.updated_ns);
    return RunToDone(db_, run, "");
  }

  PoolResult<Done> operator()(const DeleteLease& change) {
    return DeleteGpuRow(s_.delete_lease.get(), change.box, change.device);
  }
  PoolResult<Done> operator()(const DeleteGpu& change) {
    return DeleteGpuRow(s_.delete_gpu.get(), change.box, change.device);
  }
  PoolResult<Done> operator()(const DeleteBox& change) {
    StatementRun run(s_.delete_box.get());
    run.Text(change.id);
    return RunToDone(db_, run, "");
  }
  PoolResult<Done> operator()(const DeleteHost& change) {
    StatementRun run(s_.delete_host.get());
    run.Text(change.id);
    return RunToDone(db_, run, "");
  }

 private:
  // The allocation that holds the GPU's lease now, if any.
  PoolResult<std::optional<uint64_t>> LeaseHolder(std::string_view box, uint16_t device) {
    StatementRun run(s_.lease_holder.get());
    run.Text(box).Int(device);
    const int rc = run.Step();
    if (rc == SQLITE_DONE) return std::optional<uint64_t>();
    if (rc != SQLITE_ROW) return SqliteError(db_, rc, "");
    return std::optional<uint64_t>(FromSql(sqlite3_column_int64(run.statement(), 0)));
  }

  PoolResult<Done> DeleteGpuRow(sqlite3_stmt* statement, std::string_view box, uint16_t device) {
    StatementRun run(statement);
    run.Text(box).Int(device);
    return RunToDone(db_, run, "");
  }

  sqlite3* db_;
  const Statements& s_;
};

PoolResult<SqliteStore::Statements> SqliteStore::PrepareStatements(sqlite3* db) {
  Statements s;
  const std::array<std::pair<Statement*, std::string_view>, 18> all = {{
      {&s.begin_deferred, "BEGIN DEFERRED"},
      {&s.begin_immediate, "BEGIN IMMEDIATE"},
      {&s.commit, "COMMIT"},
      {&s.put_box, kPutBox},
      {&s.put_gpu, kPutGpu},
      {&s.put_host, kPutHost},
      {&s.put_allocation, kPutAllocation},
      {&s.lease_holder, kLeaseHolder},
      {&s.put_lease, kPutLease},
      {&s.delete_lease, "DELETE FROM leases WHERE box = ?1 AND device = ?2"},
      {&s.delete_gpu, "DELETE FROM gpus WHERE box = ?1 AND device = ?2"},
      {&s.delete_box, "DELETE FROM boxes WHERE id = ?1"},
      {&s.delete_host, "DELETE FROM hosts WHERE id = ?1"},
      {&s.select_boxes, kSelectBoxes},
      {&s.select_gpus, kSelectGpus},
      {&s.select_hosts, kSelectHosts},
      {&s.select_allocations, kSelectAllocations},
      {&s.select_leases, kSelectLeases},
  }};
  for (const auto& [statement, sql] : all) {
    PoolResult<Statement> prepared = Prepare(db, sql);
    if (!prepared.ok()) return prepared.error();
    *statement = std::move(prepared).value();
  }
  return s;
}

PoolResult<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                           SqliteSync sync) {
  PoolResult<Database> db = OpenDatabase(path);
  if (!db.ok()) return db.error();
  if (auto set = SetPragmas(db.value().get(), path, sync); !set.ok()) return set.error();
  if (auto schema = EnsureSchema(db.value().get(), path); !schema.ok()) return schema.error();
  PoolResult<Statements> statements = PrepareStatements(db.value().get());
  if (!statements.ok()) return statements.error();
  spdlog::info("store: opened {} (schema version {}, synchronous {})", path, kSchemaVersion,
               sync == SqliteSync::kFull ? "full" : "normal");
  return std::unique_ptr<SqliteStore>(
      new SqliteStore(path, std::move(db).value(), std::move(statements).value()));
}

SqliteStore::SqliteStore(std::string path, Database db, Statements statements)
    : path_(std::move(path)), db_(std::move(db)), statements_(std::move(statements)) {}

SqliteStore::~SqliteStore() = default;

PoolResult<PoolSnapshot> SqliteStore::Load() {
  sqlite3* db = db_.get();
  RollbackUnlessCommitted end_read(db);  // one read transaction: every table as of one moment
  StatementRun begin(statements_.begin_deferred.get());
  if (auto began = RunToDone(db, begin, "loading"); !began.ok()) return began.error();
  PoolSnapshot snapshot;
  PoolResult<Done> read = ReadTable(db, statements_.select_boxes.get(), ReadBox, snapshot.boxes);
  if (read.ok()) read = ReadTable(db, statements_.select_gpus.get(), ReadGpu, snapshot.gpus);
  if (read.ok()) read = ReadTable(db, statements_.select_hosts.get(), ReadHost, snapshot.hosts);
  if (read.ok()) {
    read =
        ReadTable(db, statements_.select_allocations.get(), ReadAllocation, snapshot.allocations);
  }
  if (read.ok()) read = ReadTable(db, statements_.select_leases.get(), ReadLease, snapshot.leases);
  if (!read.ok()) {
    spdlog::error("store: load of {} failed: {}", path_, read.error().message);
    return read.error();
  }
  StatementRun commit(statements_.commit.get());
  if (auto ended = RunToDone(db, commit, "loading"); !ended.ok()) return ended.error();
  return snapshot;
}

PoolResult<Done> SqliteStore::Apply(const StoreBatch& batch) {
  if (batch.empty()) return Done{};
  sqlite3* db = db_.get();
  RollbackUnlessCommitted rollback(db);
  StatementRun begin(statements_.begin_immediate.get());
  if (auto began = RunToDone(db, begin, "beginning a batch"); !began.ok()) return began.error();
  ChangeWriter writer(db, statements_);
  const size_t count = batch.changes.size();
  for (size_t i = 0; i < count; ++i) {
    PoolResult<Done> applied = std::visit(writer, batch.changes[i]);
    if (!applied.ok()) {
      PoolError error = applied.error();
      error.message = fmt::format("change {} of {} ({}): {}", i + 1, count,
                                  DescribeChange(batch.changes[i]), error.message);
      spdlog::warn("store: batch refused, nothing applied: {}", error.message);
      return error;
    }
  }
  StatementRun commit(statements_.commit.get());
  if (auto committed = RunToDone(db, commit, "committing a batch"); !committed.ok()) {
    spdlog::warn("store: batch not committed: {}", committed.error().message);
    return committed.error();
  }
  return Done{};
}

}  // namespace dxpu::manager
