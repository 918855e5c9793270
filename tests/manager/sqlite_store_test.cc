// SqliteStore (manager/sqlite_store.h) on real files in a fresh temporary directory per test:
// every record type round trip (u64 >= 2^63, empty strings), batch atomicity, the one-lease-per-
// GPU rule, reopen and a crash without close (a forked child), files it must refuse (random
// bytes, a newer schema, another application's database), corrupt rows written behind its back,
// a busy database; and the pool model's names (manager/pool_model.h) and HTTP statuses.
#include "manager/sqlite_store.h"

#include <gtest/gtest.h>
#include <spdlog/fmt/fmt.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "manager/pool_error.h"
#include "manager/pool_model.h"
#include "manager/pool_store.h"

namespace dxpu::manager {
namespace {

constexpr uint64_t kBig = uint64_t{1} << 63;  // stored as a negative INTEGER
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// ---- The pool model's names -------------------------------------------------------------

TEST(PoolModelNames, PolicyNamesRoundTrip) {
  for (const Policy p : {Policy::kPack, Policy::kSpread, Policy::kPrefer}) {
    EXPECT_EQ(PolicyNamed(PolicyName(p)), p) << PolicyName(p);
  }
  EXPECT_EQ(PolicyName(Policy::kPack), "pack");
  EXPECT_EQ(PolicyName(Policy::kSpread), "spread");
  EXPECT_EQ(PolicyName(Policy::kPrefer), "prefer");
  for (const std::string_view bad : {"", "Pack", "PACK", "pack ", "packs", "any"}) {
    EXPECT_FALSE(PolicyNamed(bad).has_value()) << bad;
  }
}

TEST(PoolModelNames, AllocationStateNamesRoundTrip) {
  const std::vector<std::pair<AllocationState, std::string_view>> all = {
      {AllocationState::kAttaching, "attaching"},
      {AllocationState::kActive, "active"},
      {AllocationState::kReleasing, "releasing"},
      {AllocationState::kReleased, "released"},
      {AllocationState::kFailed, "failed"}};
  for (const auto& [state, name] : all) {
    EXPECT_EQ(AllocationStateName(state), name);
    EXPECT_EQ(AllocationStateNamed(name), state) << name;
  }
  for (const std::string_view bad : {"", "Active", "attach", "released\n"}) {
    EXPECT_FALSE(AllocationStateNamed(bad).has_value()) << bad;
  }
}

TEST(PoolModelNames, LeaseStepNamesRoundTrip) {
  const std::vector<std::pair<LeaseStep, std::string_view>> all = {
      {LeaseStep::kReserved, "reserved"},
      {LeaseStep::kAssigned, "assigned"},
      {LeaseStep::kAttached, "attached"},
      {LeaseStep::kDetaching, "detaching"},
      {LeaseStep::kScrubbing, "scrubbing"}};
  for (const auto& [step, name] : all) {
    EXPECT_EQ(LeaseStepName(step), name);
    EXPECT_EQ(LeaseStepNamed(name), step) << name;
  }
  for (const std::string_view bad : {"", "Reserved", "scrub", "active"}) {
    EXPECT_FALSE(LeaseStepNamed(bad).has_value()) << bad;
  }
}

TEST(PoolModelNames, AllocationNamesRoundTrip) {
  EXPECT_EQ(AllocationName(17), "alloc-17");
  EXPECT_EQ(AllocationName(kMax), "alloc-18446744073709551615");
  for (const uint64_t id : {uint64_t{1}, uint64_t{9}, uint64_t{10}, uint64_t{17}, kBig, kMax}) {
    EXPECT_EQ(AllocationIdNamed(AllocationName(id)), id) << id;
  }
}

TEST(PoolModelNames, AllocationIdNamedRejectsEverythingElse) {
  for (const std::string_view bad :
       {"", "alloc-", "alloc-0", "alloc-00", "alloc-01", "alloc-x", "alloc-1x", "alloc- 1",
        "alloc-+1", "alloc--1", "alloc-1 ", " alloc-1", "alloc_1", "ALLOC-1", "Alloc-1", "alloc1",
        "17", "alloc-18446744073709551616", "alloc-99999999999999999999999"}) {
    EXPECT_FALSE(AllocationIdNamed(bad).has_value()) << '"' << bad << '"';
  }
  EXPECT_FALSE(AllocationIdNamed(std::string_view("alloc-1\0", 8)).has_value());
}

TEST(PoolModelNames, GpuName) {
  EXPECT_EQ(GpuName("box-a", 3), "box-a/3");
  EXPECT_EQ(GpuName("b", 65535), "b/65535");
}

TEST(PoolModelNames, ValidName) {
  const std::string longest(63, 'a');
  for (const std::string_view good :
       {std::string_view("a"), std::string_view("Z"), std::string_view("0"), std::string_view("_x"),
        std::string_view("box-a"), std::string_view("host.rack1_b-9"), std::string_view("a."),
        std::string_view("a-"), std::string_view(longest)}) {
    EXPECT_TRUE(ValidName(good)) << good;
  }
  const std::string too_long(64, 'a');
  for (const std::string_view bad :
       {std::string_view(""), std::string_view("."), std::string_view("-"),
        std::string_view(".hidden"), std::string_view("-opt"), std::string_view("a/b"),
        std::string_view("a b"), std::string_view("a:b"), std::string_view("caf\xc3\xa9"),
        std::string_view("a\0b", 3), std::string_view(too_long)}) {
    EXPECT_FALSE(ValidName(bad)) << bad;
  }
}

TEST(PoolErrors, HttpStatusOfEachKind) {
  EXPECT_EQ(HttpStatusOf(ErrorKind::kBadRequest), 400);
  EXPECT_EQ(HttpStatusOf(ErrorKind::kNotFound), 404);
  EXPECT_EQ(HttpStatusOf(ErrorKind::kConflict), 409);
  EXPECT_EQ(HttpStatusOf(ErrorKind::kUnavailable), 503);
  EXPECT_EQ(HttpStatusOf(ErrorKind::kInternal), 500);
}

// ---- Helpers ----------------------------------------------------------------------------

// Every field of a snapshot, one record a line, so that snapshots compare with EXPECT_EQ and a
// difference shows as text.
std::string Dump(const PoolSnapshot& s) {
  std::string out;
  for (const BoxRecord& b : s.boxes) {
    out += fmt::format("box [{}] [{}] [{}] {} {} [{}]\n", b.id, b.management, b.fabric, b.healthy,
                       b.last_seen_ns, b.fabric_key);
  }
  for (const GpuRecord& g : s.gpus) {
    out +=
        fmt::format("gpu [{}] {} {} [{}] {}\n", g.box, g.device, g.box_bdf, g.profile, g.present);
  }
  for (const HostRecord& h : s.hosts) {
    out += fmt::format("host [{}] {} [{}] [{}] [{}] {} [{}]\n", h.id, h.node_id, h.agent, h.mode,
                       h.boot_id, h.registered_ns, h.fabric_key);
  }
  for (const AllocationRecord& a : s.allocations) {
    out += fmt::format("allocation {} [{}] {} {} [{}] [{}] [{}] {} [{}] {} {}\n", a.id, a.host,
                       a.count, PolicyName(a.policy), a.profile, a.prefer_box, a.request_key,
                       AllocationStateName(a.state), a.error, a.created_ns, a.updated_ns);
  }
  for (const LeaseRecord& l : s.leases) {
    out += fmt::format("lease {} [{}] {} [{}] {} {} {}\n", l.allocation, l.box, l.device, l.host,
                       l.host_bdf, LeaseStepName(l.step), l.updated_ns);
  }
  return out;
}

StoreBatch BatchOf(std::vector<StoreChange> changes) { return StoreBatch{std::move(changes)}; }

// A Put of each record, last first.
template <typename Put, typename Record>
void AppendReversed(StoreBatch& batch, const std::vector<Record>& records) {
  std::for_each(records.rbegin(), records.rend(),
                [&](const Record& record) { batch.changes.emplace_back(Put{record}); });
}

BoxRecord Box(std::string id) {
  return BoxRecord{std::move(id),       "udp:127.0.0.1:7000", "udp:127.0.0.1:7001", true, 5,
                   std::string(64, 'b')};
}
GpuRecord Gpu(std::string box, uint16_t device) {
  return GpuRecord{std::move(box), device, static_cast<uint16_t>(0x100 + device), "dxgpu", true};
}
HostRecord Host(std::string id, uint64_t node_id) {
  return HostRecord{
      std::move(id),       node_id, "http://127.0.0.1:9000", "userspace", "boot-1", 7, 0,
      std::string(64, 'a')};
}
AllocationRecord Allocation(uint64_t id, std::string host) {
  AllocationRecord a;
  a.id = id;
  a.host = std::move(host);
  a.count = 1;
  a.state = AllocationState::kAttaching;
  return a;
}
LeaseRecord Lease(uint64_t allocation, std::string box, uint16_t device, std::string host,
                  uint16_t host_bdf) {
  return LeaseRecord{allocation, std::move(box),       device, std::move(host),
                     host_bdf,   LeaseStep::kReserved, 9};
}

// A second connection to the store's file, as the sqlite3 shell or another process would have.
class RawDatabase {
 public:
  explicit RawDatabase(const std::string& path) {
    sqlite3* raw = nullptr;
    rc_ = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    db_.reset(raw);
  }
  bool ok() const { return rc_ == SQLITE_OK; }

  // "" on success, else SQLite's message.
  std::string Exec(const std::string& sql) {
    if (sqlite3_exec(db_.get(), sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK) return "";
    return sqlite3_errmsg(db_.get());
  }

  // The first column of the first row as text; nullopt on error or no row.
  std::optional<std::string> Text(const std::string& sql) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
      return std::nullopt;
    }
    const std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> statement(raw,
                                                                               sqlite3_finalize);
    if (sqlite3_step(raw) != SQLITE_ROW) return std::nullopt;
    const unsigned char* text = sqlite3_column_text(raw, 0);
    return std::string(text != nullptr ? reinterpret_cast<const char*>(text) : "");
  }

 private:
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db_{nullptr, sqlite3_close};
  int rc_ = SQLITE_OK;
};

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "sqlite-store-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    path_ = (dir_ / "pool.db").string();
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  std::unique_ptr<SqliteStore> OpenStore(SqliteSync sync = SqliteSync::kNormal) {
    PoolResult<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path_, sync);
    EXPECT_TRUE(store.ok()) << store.error().name << ": " << store.error().message;
    if (!store.ok()) return nullptr;
    return std::move(store).value();
  }

  static PoolSnapshot LoadOrDie(SqliteStore& store) {
    PoolResult<PoolSnapshot> snapshot = store.Load();
    EXPECT_TRUE(snapshot.ok()) << snapshot.error().name << ": " << snapshot.error().message;
    return snapshot.ok() ? std::move(snapshot).value() : PoolSnapshot{};
  }

  static void ApplyOrDie(SqliteStore& store, const StoreBatch& batch) {
    PoolResult<Done> applied = store.Apply(batch);
    ASSERT_TRUE(applied.ok()) << applied.error().name << ": " << applied.error().message;
  }

  // Box box-a with GPUs 0..3, host h1, allocation 1 holding a lease of box-a/0.
  static StoreBatch BasicPool() {
    return BatchOf({PutBox{Box("box-a")}, PutGpu{Gpu("box-a", 0)}, PutGpu{Gpu("box-a", 1)},
                    PutGpu{Gpu("box-a", 2)}, PutGpu{Gpu("box-a", 3)}, PutHost{Host("h1", 11)},
                    PutAllocation{Allocation(1, "h1")}, PutAllocation{Allocation(2, "h1")},
                    PutLease{Lease(1, "box-a", 0, "h1", 0x0a00)}});
  }

  std::filesystem::path dir_;
  std::string path_;
};

// ---- Round trips --------------------------------------------------------------------------

TEST_F(SqliteStoreTest, EveryRecordTypeRoundTrips) {
  PoolSnapshot want;
  want.boxes = {
      BoxRecord{"a", "", "", false, 0, ""},
      BoxRecord{"b.box", "unix:/run/b", "02:00:00:00:00:01", true, kMax, std::string(64, 'c')}};
  want.gpus = {GpuRecord{"a", 0, 0, "", false}, GpuRecord{"a", 65535, 65535, "dxgpu-1g", true},
               GpuRecord{"b.box", 7, 0x0300, "p", true}};
  want.hosts = {HostRecord{"h1", kMax, "", "", "", 0, 0, ""},
                HostRecord{"h2", kBig, "http://10.0.0.2:9000", "kernel", "3f2a", kBig + 5, 0,
                           std::string(64, 'd')}};
  AllocationRecord empty_fields;  // every string "", every number 0
  empty_fields.id = 1;
  AllocationRecord full;
  full.id = kMax;
  full.host = "h2";
  full.count = std::numeric_limits<uint32_t>::max();
  full.policy = Policy::kPrefer;
  full.profile = "dxgpu-1g";
  full.prefer_box = "b.box";
  full.request_key = "key \"quoted\" 'single' \xe2\x9c\x93";
  full.state = AllocationState::kFailed;
  full.error = "bridge b.box did not answer\nline two";
  full.created_ns = kBig;
  full.updated_ns = kMax;
  AllocationRecord spread = Allocation(kBig, "h1");
  spread.policy = Policy::kSpread;
  spread.state = AllocationState::kReleasing;
  spread.request_key = "k2";
  AllocationRecord active = Allocation(kBig - 1, "h1");
  active.state = AllocationState::kActive;
  AllocationRecord released = Allocation(2, "h1");
  released.state = AllocationState::kReleased;
  want.allocations = {empty_fields, released, active, spread, full};  // unsigned order
  LeaseRecord l1 = Lease(kMax, "a", 0, "h2", 0);
  l1.step = LeaseStep::kScrubbing;
  l1.updated_ns = kMax;
  LeaseRecord l2 = Lease(kMax, "a", 65535, "h2", 65535);
  l2.step = LeaseStep::kAttached;
  LeaseRecord l3 = Lease(kBig, "b.box", 7, "h1", 0x0100);
  l3.step = LeaseStep::kDetaching;
  want.leases = {l1, l2, l3};

  // Applied in an order other than the primary keys' (parents before children).
  StoreBatch batch;
  AppendReversed<PutBox>(batch, want.boxes);
  AppendReversed<PutGpu>(batch, want.gpus);
  AppendReversed<PutHost>(batch, want.hosts);
  AppendReversed<PutAllocation>(batch, want.allocations);
  AppendReversed<PutLease>(batch, want.leases);
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ApplyOrDie(*store, batch);
  EXPECT_EQ(Dump(LoadOrDie(*store)), Dump(want));

  // The remaining lease steps, by updating a lease in place.
  for (const LeaseStep step : {LeaseStep::kReserved, LeaseStep::kAssigned}) {
    want.leases[2].step = step;
    ApplyOrDie(*store, BatchOf({PutLease{want.leases[2]}}));
    EXPECT_EQ(Dump(LoadOrDie(*store)), Dump(want)) << LeaseStepName(step);
  }

  // Readable with the sqlite3 shell: enumerations by name, u64 as the same bits.
  RawDatabase raw(path_);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw.Text("SELECT policy || ' ' || state FROM allocations WHERE id = -1"),
            "prefer failed");
  EXPECT_EQ(raw.Text("SELECT step FROM leases WHERE box = 'a' AND device = 0"), "scrubbing");
  EXPECT_EQ(raw.Text("SELECT node_id FROM hosts WHERE id = 'h2'"), "-9223372036854775808");
  EXPECT_EQ(raw.Text("SELECT typeof(management) FROM boxes WHERE id = 'a'"), "text");  // not NULL
}

TEST_F(SqliteStoreTest, PutReplacesAndDeleteRemoves) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ApplyOrDie(*store, BasicPool());
  PoolSnapshot want = LoadOrDie(*store);
  ASSERT_EQ(want.gpus.size(), 4u);

  BoxRecord box = Box("box-a");
  box.healthy = false;
  box.management = "unix:/run/dxpu-bridge.sock";
  HostRecord host = Host("h1", 12);
  host.boot_id = "boot-2";
  AllocationRecord allocation = Allocation(1, "h1");
  allocation.state = AllocationState::kActive;
  LeaseRecord lease = Lease(1, "box-a", 0, "h1", 0x0b00);  // same allocation: an update
  lease.step = LeaseStep::kAttached;
  ApplyOrDie(*store,
             BatchOf({PutBox{box}, PutHost{host}, PutAllocation{allocation}, PutLease{lease}}));
  want.boxes[0] = box;
  want.hosts[0] = host;
  want.allocations[0] = allocation;
  want.leases[0] = lease;
  EXPECT_EQ(Dump(LoadOrDie(*store)), Dump(want));

  // Deleting: a lease, then its GPU; rows that are not there are fine.
  ApplyOrDie(*store, BatchOf({DeleteLease{"box-a", 0}, DeleteGpu{"box-a", 0},
                              DeleteLease{"box-a", 0}, DeleteGpu{"box-z", 9},
                              DeleteBox{"no-such-box"}, DeleteHost{"no-such-host"}}));
  want.leases.clear();
  want.gpus.erase(want.gpus.begin());
  EXPECT_EQ(Dump(LoadOrDie(*store)), Dump(want));

  // A box with its GPUs in one batch, children first; a host.
  ApplyOrDie(*store, BatchOf({DeleteGpu{"box-a", 1}, DeleteGpu{"box-a", 2}, DeleteGpu{"box-a", 3},
                              DeleteBox{"box-a"}, DeleteHost{"h1"}}));
  want.boxes.clear();
  want.gpus.clear();
  want.hosts.clear();
  EXPECT_EQ(Dump(LoadOrDie(*store)), Dump(want));
}

TEST_F(SqliteStoreTest, EmptyBatchDoesNothing) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ApplyOrDie(*store, StoreBatch{});
  EXPECT_EQ(Dump(LoadOrDie(*store)), "");
  ApplyOrDie(*store, BasicPool());
  const std::string before = Dump(LoadOrDie(*store));
  ApplyOrDie(*store, StoreBatch{});
  EXPECT_EQ(Dump(LoadOrDie(*store)), before);
}

// ---- Atomicity and constraints ----------------------------------------------------------

TEST_F(SqliteStoreTest, ABatchWithABadThirdChangeAppliesNothing) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ApplyOrDie(*store, BasicPool());
  const std::string before = Dump(LoadOrDie(*store));

  AllocationRecord keyed = Allocation(3, "h1");
  keyed.request_key = "retry-me";
  ApplyOrDie(*store, BatchOf({PutAllocation{keyed}}));
  const std::string with_keyed = Dump(LoadOrDie(*store));
  AllocationRecord same_key = Allocation(4, "h1");
  same_key.request_key = "retry-me";

  struct Case {
    std::string what;
    StoreChange third;
  };
  const std::vector<Case> cases = {
      {"a lease of a GPU that is not there", PutLease{Lease(2, "box-a", 9, "h1", 0x0c00)}},
      {"a lease for an allocation that is not there",
       PutLease{Lease(77, "box-a", 1, "h1", 0x0c00)}},
      {"a host_bdf the host already has", PutLease{Lease(2, "box-a", 1, "h1", 0x0a00)}},
      {"a second host with the same node_id", PutHost{Host("h9", 11)}},
      {"a GPU of a box that is not there", PutGpu{Gpu("box-z", 0)}},
      {"a box that still has GPUs", DeleteBox{"box-a"}},
      {"a GPU that still has a lease", DeleteGpu{"box-a", 0}},
      {"a request key another allocation has", PutAllocation{same_key}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    BoxRecord changed_box = Box("box-a");
    changed_box.healthy = false;
    const StoreBatch batch = BatchOf(
        {PutBox{Box("box-new")}, PutBox{changed_box}, c.third, PutHost{Host("h-after", 99)}});
    PoolResult<Done> applied = store->Apply(batch);
    ASSERT_FALSE(applied.ok());
    EXPECT_EQ(applied.error().kind, ErrorKind::kConflict);
    EXPECT_EQ(applied.error().name, "store-constraint");
    EXPECT_NE(applied.error().message.find("change 3 of 4"), std::string::npos)
        << applied.error().message;
    EXPECT_NE(applied.error().message.find("constraint failed"), std::string::npos)
        << applied.error().message;
    EXPECT_EQ(Dump(LoadOrDie(*store)), with_keyed);
  }
  // The store still works after the refusals.
  ApplyOrDie(*store, BatchOf({PutBox{Box("box-new")}}));
  EXPECT_NE(Dump(LoadOrDie(*store)), before);
}

TEST_F(SqliteStoreTest, ALeaseOfAGpuLeasedToAnotherAllocationIsRefused) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ApplyOrDie(*store, BasicPool());
  const std::string before = Dump(LoadOrDie(*store));

  PoolResult<Done> applied = store->Apply(BatchOf({PutLease{Lease(2, "box-a", 0, "h1", 0x0c00)}}));
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.error().kind, ErrorKind::kConflict);
  EXPECT_EQ(applied.error().name, "gpu-leased");
  for (const char* part : {"box-a/0", "alloc-1", "alloc-2"}) {
    EXPECT_NE(applied.error().message.find(part), std::string::npos) << applied.error().message;
  }
  EXPECT_EQ(Dump(LoadOrDie(*store)), before);

  // Also when the first lease is earlier in the same batch: the whole batch goes.
  applied = store->Apply(BatchOf({PutLease{Lease(1, "box-a", 1, "h1", 0x0d00)},
                                  PutLease{Lease(2, "box-a", 1, "h1", 0x0e00)}}));
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.error().name, "gpu-leased");
  EXPECT_EQ(Dump(LoadOrDie(*store)), before);

  // Once the lease has ended the GPU can be leased again.
  ApplyOrDie(*store,
             BatchOf({DeleteLease{"box-a", 0}, PutLease{Lease(2, "box-a", 0, "h1", 0x0a00)}}));
  const PoolSnapshot after = LoadOrDie(*store);
  ASSERT_EQ(after.leases.size(), 1u);
  EXPECT_EQ(after.leases[0].allocation, 2u);
}

// ---- Persistence --------------------------------------------------------------------------

TEST_F(SqliteStoreTest, PersistsAcrossCloseAndReopenInWalMode) {
  std::string written;
  {
    auto store = OpenStore(SqliteSync::kFull);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->path(), path_);
    ApplyOrDie(*store, BasicPool());
    written = Dump(LoadOrDie(*store));
    RawDatabase raw(path_);
    ASSERT_TRUE(raw.ok());
    EXPECT_EQ(raw.Text("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(raw.Text("SELECT value FROM meta WHERE key = 'schema_version'"), "2");
  }
  ASSERT_FALSE(written.empty());
  auto reopened = OpenStore();
  ASSERT_NE(reopened, nullptr);
  EXPECT_EQ(Dump(LoadOrDie(*reopened)), written);
}

TEST_F(SqliteStoreTest, KeepsEveryCommittedBatchWhenTheProcessDiesWithoutClosing) {
  constexpr int kBatches = 25;
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    PoolResult<std::unique_ptr<SqliteStore>> opened = SqliteStore::Open(path_);
    if (!opened.ok()) _exit(1);
    // Deliberately never destroyed: the process ends with the database open.
    SqliteStore* store = std::move(opened).value().release();
    for (int i = 0; i < kBatches; ++i) {
      const std::string box = fmt::format("box-{:02}", i);
      if (!store->Apply(BatchOf({PutBox{Box(box)}, PutGpu{Gpu(box, 0)}})).ok()) _exit(2);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  // The batches are in the write-ahead log, never checkpointed into the database file.
  std::error_code error;
  EXPECT_GT(std::filesystem::file_size(path_ + "-wal", error), 0u) << error.message();

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const PoolSnapshot loaded = LoadOrDie(*store);
  ASSERT_EQ(loaded.boxes.size(), static_cast<size_t>(kBatches));
  ASSERT_EQ(loaded.gpus.size(), static_cast<size_t>(kBatches));
  EXPECT_EQ(loaded.boxes.front().id, "box-00");
  EXPECT_EQ(loaded.boxes.back().id, fmt::format("box-{:02}", kBatches - 1));
}

// ---- Files it refuses ---------------------------------------------------------------------

TEST_F(SqliteStoreTest, RefusesAFileOfRandomBytes) {
  {
    std::mt19937 random(42);  // NOLINT(cert-msc32-c,cert-msc51-cpp): fixed, reproducible
    std::ofstream out(path_, std::ios::binary);
    for (int i = 0; i < 8192; ++i) out.put(static_cast<char>(random()));
  }
  PoolResult<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(store.error().name, "store-not-database");
  EXPECT_NE(store.error().message.find(path_), std::string::npos) << store.error().message;
  EXPECT_EQ(std::filesystem::file_size(path_), 8192u);  // left as it was
}

TEST_F(SqliteStoreTest, RefusesANewerSchemaVersion) {
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ApplyOrDie(*store, BasicPool());
  }
  {
    RawDatabase raw(path_);
    ASSERT_TRUE(raw.ok());
    ASSERT_EQ(raw.Exec("UPDATE meta SET value = 99 WHERE key = 'schema_version'"), "");
  }
  PoolResult<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(store.error().name, "store-schema");
  EXPECT_NE(store.error().message.find("99"), std::string::npos) << store.error().message;
  EXPECT_NE(store.error().message.find("version 2"), std::string::npos) << store.error().message;
  EXPECT_NE(store.error().message.find(path_), std::string::npos) << store.error().message;
}

// A store of schema version 1 (before fabric keys) is migrated: its rows kept, no keys.
TEST_F(SqliteStoreTest, MigratesSchemaVersion1) {
  std::string before;
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ApplyOrDie(*store, BasicPool());
  }
  {
    RawDatabase raw(path_);
    ASSERT_TRUE(raw.ok());
    ASSERT_EQ(raw.Exec("ALTER TABLE boxes DROP COLUMN fabric_key; ALTER TABLE hosts DROP COLUMN "
                       "fabric_key; UPDATE meta SET value = 1 WHERE key = 'schema_version'"),
              "");
  }
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  const PoolSnapshot loaded = LoadOrDie(*store);
  ASSERT_EQ(loaded.boxes.size(), 1u);
  EXPECT_EQ(loaded.boxes[0].fabric_key, "");
  EXPECT_EQ(loaded.boxes[0].management, "udp:127.0.0.1:7000");
  ASSERT_EQ(loaded.hosts.size(), 1u);
  EXPECT_EQ(loaded.hosts[0].fabric_key, "");
  EXPECT_EQ(loaded.hosts[0].node_id, 11u);
  EXPECT_EQ(loaded.leases.size(), 1u);
  ApplyOrDie(*store, BatchOf({PutHost{Host("h1", 11)}}));  // a key written after the migration
  EXPECT_EQ(LoadOrDie(*store).hosts[0].fabric_key, std::string(64, 'a'));
  RawDatabase raw(path_);
  EXPECT_EQ(raw.Text("SELECT value FROM meta WHERE key = 'schema_version'"), "2");
}

TEST_F(SqliteStoreTest, RefusesAnotherApplicationsDatabase) {
  {
    RawDatabase raw(path_);
    ASSERT_TRUE(raw.ok());
    ASSERT_EQ(raw.Exec("CREATE TABLE boxes(x); INSERT INTO boxes VALUES(1)"), "");
  }
  PoolResult<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().name, "store-schema");
  RawDatabase raw(path_);
  EXPECT_EQ(raw.Text("SELECT count(*) FROM sqlite_master"), "1");  // nothing created
}

TEST_F(SqliteStoreTest, RefusesADatabaseWithoutWal) {
  PoolResult<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(":memory:");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(store.error().name, "store-journal");
  EXPECT_NE(store.error().message.find("memory"), std::string::npos) << store.error().message;
}

TEST_F(SqliteStoreTest, APathThatCannotBeCreatedIsUnavailable) {
  const std::string path = (dir_ / "no-such-dir" / "pool.db").string();
  PoolResult<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(store.error().name, "store-unavailable");
  EXPECT_NE(store.error().message.find(path), std::string::npos) << store.error().message;
}

// ---- Rows written behind its back -------------------------------------------------------

TEST_F(SqliteStoreTest, ARowLoadCannotReadIsCorruptNotACrash) {
  {
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    ApplyOrDie(*store, BasicPool());
  }
  struct Case {
    std::string sql;                      // breaks one row
    std::vector<std::string> in_message;  // the table, the row, what is wrong
  };
  const std::vector<Case> cases = {
      {"UPDATE allocations SET policy = 'bogus' WHERE id = 2",
       {"allocations", "alloc-2", "policy", "bogus"}},
      {"UPDATE allocations SET state = 'ACTIVE' WHERE id = 1",
       {"allocations", "alloc-1", "state", "ACTIVE"}},
      {"UPDATE leases SET step = '' WHERE device = 0", {"leases", "box-a/0", "step"}},
      {"UPDATE gpus SET device = 70000 WHERE device = 3",
       {"gpus", "box-a/70000", "device", "out of range"}},
      {"UPDATE boxes SET healthy = 2", {"boxes", "box-a", "healthy"}},
      {"UPDATE allocations SET count = -1 WHERE id = 1", {"allocations", "alloc-1", "count"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sql);
    ASSERT_TRUE(std::filesystem::copy_file(path_, path_ + ".broken",
                                           std::filesystem::copy_options::overwrite_existing));
    const std::string broken = path_ + ".broken";
    {
      RawDatabase raw(broken);
      ASSERT_TRUE(raw.ok());
      ASSERT_EQ(raw.Exec(c.sql), "");
    }
    PoolResult<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(broken);
    ASSERT_TRUE(store.ok()) << store.error().message;
    PoolResult<PoolSnapshot> loaded = store.value()->Load();
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().kind, ErrorKind::kUnavailable);
    EXPECT_EQ(loaded.error().name, "store-corrupt");
    for (const std::string& part : c.in_message) {
      EXPECT_NE(loaded.error().message.find(part), std::string::npos)
          << part << " in " << loaded.error().message;
    }
    // The failed load ended its read transaction: a batch still applies.
    ApplyOrDie(*store.value(), BatchOf({PutBox{Box("box-c")}}));
    store.value().reset();
    std::filesystem::remove(broken + "-wal");
    std::filesystem::remove(broken + "-shm");
  }
}

// ---- A busy database ----------------------------------------------------------------------

TEST_F(SqliteStoreTest, AWriterHoldingTheDatabaseMakesApplyUnavailable) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ApplyOrDie(*store, BasicPool());
  const std::string before = Dump(LoadOrDie(*store));
  RawDatabase other(path_);
  ASSERT_TRUE(other.ok());
  ASSERT_EQ(other.Exec("BEGIN IMMEDIATE"), "");
  PoolResult<Done> applied = store->Apply(BatchOf({PutBox{Box("box-b")}}));  // waits 5 s
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.error().kind, ErrorKind::kUnavailable);
  EXPECT_EQ(applied.error().name, "store-unavailable");
  EXPECT_EQ(Dump(LoadOrDie(*store)), before);  // readers are not blocked by the writer (WAL)
  ASSERT_EQ(other.Exec("ROLLBACK"), "");
  ApplyOrDie(*store, BatchOf({PutBox{Box("box-b")}}));
  EXPECT_EQ(LoadOrDie(*store).boxes.size(), 2u);
}

}  // namespace
}  // namespace dxpu::manager
