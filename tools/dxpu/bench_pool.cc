// bench_pool.cc - `dxpu bench pool` (bench_pool.h).
#include "bench_pool.h"

#include <malloc.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bridge-fw/bridge_box.h"
#include "bridge-fw/management.h"
#include "command.h"
#include "core/dxpu_mgmt.h"
#include "gpu/device_profile.h"
#include "lib/sim/rng.h"
#include "manager/bridge_steps.h"
#include "manager/etcd_store.h"
#include "manager/leader_election.h"
#include "manager/leader_redirect.h"
#include "manager/pool_manager.h"
#include "manager/pool_store.h"
#include "manager/sqlite_store.h"
#include "progress.h"
#include "stats.h"

// Under AddressSanitizer the heap is its allocator's, which glibc's mallinfo2 does not see.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DXPU_BENCH_POOL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(DXPU_BENCH_POOL_ASAN)
#define DXPU_BENCH_POOL_ASAN 1
#endif
#ifdef DXPU_BENCH_POOL_ASAN
#if __has_include(<sanitizer/allocator_interface.h>)
#include <sanitizer/allocator_interface.h>
#else
// The sanitizer runtime's (sanitizer/allocator_interface.h), for a compiler without the header.
extern "C" size_t
__sanitizer_get_current_allocated_bytes();  // NOLINT(bugprone-reserved-identifier)
#endif
#endif

namespace dxpu::cli {
namespace {
// Named as well: a unity build shares one anonymous namespace among the bench commands.
namespace pool_bench {

namespace fs = std::filesystem;
using manager::Action;
using manager::ActionKind;
using manager::ActionOutcome;
using manager::ActionResult;
using manager::AllocationRequest;
using manager::AllocationState;
using manager::AllocationView;
using manager::BoxRecord;
using manager::Done;
using manager::GpuRef;
using manager::HostRecord;
using manager::LeaseRecord;
using manager::ManagerOptions;
using manager::PoolError;
using manager::PoolManager;
using manager::PoolResult;
using manager::PoolSnapshot;
using manager::PoolStore;
using manager::StoreBatch;
using Clock = std::chrono::steady_clock;

constexpr uint16_t kGpusPerBox = 8;
constexpr std::array<uint32_t, 4> kRequestSizes = {1, 2, 4, 8};  // drawn uniformly
constexpr uint64_t kStartNs = 1'000 * manager::kSecond;
// Each in-process step takes this much of the manager's (virtual) clock: the bench decides
// what the manager sees, so a run is the same on every machine, whatever its speed.
constexpr uint64_t kStepNs = 1'000;
// Probes run as a phase of their own (every box once), not every 2 s inside the other phases.
constexpr uint64_t kProbeIntervalNs = 3'600 * manager::kSecond;
// An allocation that has not reached the state waited for within this much of the manager's
// clock (an attach is retried until its 60 s deadline) has failed the bench.
constexpr uint64_t kGiveUpNs = 120 * manager::kSecond;
// Requests refused one after the other (too few hosts for the GPUs: each host's BDFs run out)
// before the bench gives up.
constexpr uint32_t kMaxRefusedInARow = 1'000;

struct PoolBenchOptions {
  std::string store = "sqlite";
  std::string etcd;  // --store etcd: the members' client URLs, comma-separated
  fs::path dir;      // this run's own directory (SQLite: its pool.db); set for each run
  uint32_t gpus = 10'000;
  uint32_t hosts = 2'000;
  uint64_t seed = 1;
  double occupancy = 0.7;
  std::optional<uint32_t> churn;  // releases in the churn phase; none: DefaultChurn
  std::vector<uint32_t> sizes;    // --sizes: pool sizes in GPUs, in any order (SizesOf sorts)
  bool growth = false;
  bool json = false;
};

// The churn's releases when --churn does not say: as many as the largest pool of the run
// (`gpus`) makes allocations to reach the held share, so that its holdings turn over about
// once; every size of a growth run makes as many, so that each has as many samples.
uint32_t DefaultChurn(const PoolBenchOptions& o, uint32_t gpus) {
  double mean_request = 0;
  for (uint32_t count : kRequestSizes) mean_request += count;
  mean_request /= kRequestSizes.size();
  return std::max<uint32_t>(1,
                            static_cast<uint32_t>(std::lround(o.occupancy * gpus / mean_request)));
}

// The bench's term in etcd: longer than any run (it renews nothing); its keys go at the end.
constexpr std::chrono::seconds kEtcdBenchLease{3600};

// The keys a run keeps in etcd: its own prefix, deleted when the run ends.
std::string EtcdBenchPrefix(const PoolBenchOptions& o) {
  return fmt::format("/dxpu-bench/{}/{}", getpid(), o.dir.filename().string());
}

// The pool in etcd under this run's prefix, written in a term of its own as a replica's would
// be (every write fenced on the leader key): won when the store is first made, taken over by
// the reopening.
PoolResult<std::unique_ptr<PoolStore>> MakeEtcdStore(const PoolBenchOptions& o) {
  if (o.etcd.empty()) {
    return PoolError{manager::ErrorKind::kBadRequest, "no-etcd",
                     "--store etcd needs --etcd: a running etcd's client URLs, e.g. "
                     "http://127.0.0.1:2379"};
  }
  auto etcd = std::make_shared<manager::EtcdClient>(
      manager::EtcdClientOptions{manager::SplitUrls(o.etcd), {}, 5000});
  const std::string prefix = EtcdBenchPrefix(o);
  manager::LeaderElection election(etcd,
                                   manager::ElectionOptions{prefix, "bench", "", kEtcdBenchLease});
  PoolResult<manager::LeaderElection::Outcome> won = election.Campaign(1);
  if (!won.ok()) return won.error();
  manager::EtcdTerm term = won.value().term;
  if (!won.value().won) {  // this run's own term, from when the store was first made
    PoolResult<std::optional<manager::EtcdKv>> leader = etcd->Get(prefix + "/leader");
    if (!leader.ok()) return leader.error();
    if (!leader.value()) {
      return PoolError{manager::ErrorKind::kUnavailable, "no-term",
                       "the bench's leader key in etcd is gone (its lease ran out?)"};
    }
    term = manager::EtcdTerm{prefix + "/leader", leader.value()->create_revision};
  }
  return std::unique_ptr<PoolStore>(
      std::make_unique<manager::EtcdStore>(etcd, term, manager::EtcdStoreOptions{prefix, 128}));
}

// What a run left in its store, removed (etcd is shared; SQLite's file goes with the directory).
void DropBenchStore(const PoolBenchOptions& o) {
  if (o.store != "etcd" || o.etcd.empty()) return;
  manager::EtcdClient etcd({manager::SplitUrls(o.etcd), {}, 5000});
  if (PoolResult<Done> r = etcd.DeletePrefix(EtcdBenchPrefix(o)); !r.ok())
    spdlog::warn("bench pool: {} left in etcd: {}", EtcdBenchPrefix(o), r.error().message);
}

// The only place that knows the kinds of store: a store for this run, empty or, opened again
// with the same options, holding what the run wrote (the memory phase reopens it). o.dir is
// this run's own fresh directory: a store kept elsewhere can take its path as its name.
PoolResult<std::unique_ptr<PoolStore>> MakeBenchStore(const PoolBenchOptions& o) {
  if (o.store == "sqlite") {
    PoolResult<std::unique_ptr<manager::SqliteStore>> s =
        manager::SqliteStore::Open((o.dir / "pool.db").string());
    if (!s.ok()) return s.error();
    return std::unique_ptr<PoolStore>(std::move(s).value());
  }
  if (o.store == "etcd") return MakeEtcdStore(o);
  return PoolError{manager::ErrorKind::kBadRequest, "unknown-store",
                   "no store named '" + o.store + "' (sqlite, etcd)"};
}

// What the heap holds now, in bytes: glibc's count (mallinfo2: in use in the arenas and in
// mmapped chunks), or ASan's own under ASan, whose allocator glibc does not see.
int64_t HeapBytes() {
#ifdef DXPU_BENCH_POOL_ASAN
  return static_cast<int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
#endif
}

double SecondsOf(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// What is timed, in the report's order.
enum Op : uint8_t {
  kAllocate,       // PoolManager::Allocate: the decision and its store write
  kAttach,         // from Allocate until the allocation is active
  kRelease,        // PoolManager::Release
  kReleaseToFree,  // from Release until its GPUs are free
  kChurnAllocate,  // kAllocate and kAttach in the churn
  kChurnAttach,
  kProbe,       // one box's probe: run and completed
  kStoreApply,  // one PoolStore::Apply (a transaction), in any of the above
  kOps,
};
constexpr std::array<const char*, kOps> kOpNames = {
    "allocate",       "attach",       "release", "release-to-free",
    "churn-allocate", "churn-attach", "probe",   "store-apply"};

// One kind of operation's latencies, in seconds.
struct Timing {
  std::string what;
  std::vector<double> seconds;
};

struct Figures {
  size_t count = 0;
  double per_s = 0;  // one over the mean: what one manager does a second, back to back
  double p50 = 0, p99 = 0, mean = 0, max = 0;
};

Figures FiguresOf(std::vector<double> s) {
  Figures f;
  f.count = s.size();
  if (s.empty()) return f;
  std::sort(s.begin(), s.end());
  double sum = 0;
  for (double v : s) sum += v;
  f.mean = sum / static_cast<double>(s.size());
  f.per_s = f.mean > 0 ? 1 / f.mean : 0;
  f.p50 = Percentile(s, 0.50);
  f.p99 = Percentile(s, 0.99);
  f.max = s.back();
  return f;
}

struct Memory {
  int64_t bytes = 0;       // the manager's heap after Open, less before
  double per_gpu = 0;      // bytes / GPUs
  double load_s = 0;       // PoolStore::Load of the whole pool
  double open_s = 0;       // PoolManager::Open of what it loaded
  size_t allocations = 0;  // kept (active and released) when it was loaded
  size_t leases = 0;
};

struct RunResult {
  uint32_t gpus = 0, boxes = 0, hosts = 0;
  double bridges_s = 0;         // making the BridgeBox objects (the bench's, not the manager's)
  double add_boxes_s = 0;       // AddBox for every box and its first probe
  double register_hosts_s = 0;  // RegisterHost for every host
  double run_s = 0;             // the whole run
  std::vector<Timing> ops;
  Memory memory;        // after the allocate phase: the held share, every allocation active
  Memory with_history;  // at the end: the churn's released allocations kept as well
  std::map<uint32_t, std::vector<double>> attach_by_size;  // both phases' attaches, by GPUs
  uint64_t refusals = 0;  // allocations refused (too few GPUs free for the request)
  size_t leased = 0, free = 0;

  // What each allocation kept after its release adds to the manager's heap.
  double BytesPerReleased() const {
    const auto more = static_cast<double>(with_history.allocations - memory.allocations);
    return more > 0 ? static_cast<double>(with_history.bytes - memory.bytes) / more : 0;
  }
};

// A host as the manager sees it through its agent (as tests/manager/pool_sim_test.cc models
// it): an attach succeeds only if the box's bridge presents the device to this host's node at
// that BDF, as a real hot-add reads its IDs over the fabric and gets UR otherwise.
struct InProcessHost {
  std::set<GpuRef> attached;
};

struct Held {
  uint64_t id = 0;
  uint32_t count = 0;
};

std::string BoxName(uint32_t i) { return fmt::format("box-{:05}", i); }
std::string HostName(uint32_t i) { return fmt::format("host-{:05}", i); }

std::unique_ptr<bridge::BridgeBox> MakeBridge(uint64_t node, std::string* error) {
  bridge::BridgeBoxConfig c;
  c.node_id = node;
  for (uint16_t i = 0; i < kGpusPerBox; ++i) {
    bridge::BoxDeviceConfig d;
    d.profile = *gpu::FindProfile("dxgpu");
    d.box_bdf = static_cast<uint16_t>(0x0100 + (i << 8));
    d.memory_bytes = 64 << 10;  // sparse; a release scrubs it
    c.devices.push_back(d);
  }
  return bridge::BridgeBox::Create(c, error);
}

// The run's store, each Apply (one transaction) timed while `timing` is set.
class TimedStore final : public PoolStore {
 public:
  TimedStore(std::unique_ptr<PoolStore> inner, Timing& applies)
      : inner_(std::move(inner)), applies_(applies) {}
  PoolResult<PoolSnapshot> Load() override { return inner_->Load(); }
  PoolResult<Done> Apply(const StoreBatch& batch) override {
    const Clock::time_point t0 = Clock::now();
    PoolResult<Done> done = inner_->Apply(batch);
    if (timing_) applies_.seconds.push_back(SecondsOf(Clock::now() - t0));
    refused_in_a_row_ = done.ok() ? 0 : refused_in_a_row_ + 1;
    if (!done.ok()) last_error_ = done.error().name + ": " + done.error().message;
    return done;
  }
  void set_timing(bool on) { timing_ = on; }
  // "" while the store takes changes; what it says once it has refused many in a row (the
  // run cannot go on: an etcd that lost quorum, a disk full).
  std::string Failing() const {
    return refused_in_a_row_ >= kMaxStoreRefusals ? "the store refuses every change: " + last_error_
                                                  : "";
  }

 private:
  static constexpr uint32_t kMaxStoreRefusals = 100;
  std::unique_ptr<PoolStore> inner_;
  Timing& applies_;
  bool timing_ = false;
  uint32_t refused_in_a_row_ = 0;
  std::string last_error_;
};

// A store that answers Load with a copy of what it holds and writes nothing: what the manager
// opens in the memory phase.
class SnapshotStore final : public PoolStore {
 public:
  explicit SnapshotStore(PoolSnapshot snapshot) : snapshot_(std::move(snapshot)) {}
  PoolResult<PoolSnapshot> Load() override { return snapshot_; }
  PoolResult<Done> Apply(const StoreBatch& /*batch*/) override { return Done{}; }

 private:
  PoolSnapshot snapshot_;
};

// One pool size's run: the pool, its store, the bridges and hosts in this process, and the
// manager's clock.
class PoolRun {
 public:
  PoolRun(const PoolBenchOptions& o, uint32_t gpus, uint32_t hosts)
      : o_(o), gpus_(gpus), boxes_(gpus / kGpusPerBox), hosts_(hosts), rng_(o.seed) {
    target_ = static_cast<size_t>(std::lround(o.occupancy * gpus));
    options_.probe_interval_ns = kProbeIntervalNs;
    result_.gpus = gpus;
    result_.boxes = boxes_;
    result_.hosts = hosts;
    for (const char* what : kOpNames) result_.ops.push_back(Timing{what, {}});
  }
  PoolRun(const PoolRun&) = delete;
  PoolRun& operator=(const PoolRun&) = delete;
  ~PoolRun() {
    manager_.reset();  // before its store
    store_.reset();
  }

  // The whole run; "" when it went through, else what went wrong.
  std::string Run() {
    const Clock::time_point start = Clock::now();
    std::string error = Setup();
    if (error.empty()) error = AllocatePhase();
    if (error.empty()) error = MeasureMemory(result_.memory);
    if (error.empty()) error = ChurnPhase();
    if (error.empty()) error = ProbePhase();
    if (error.empty()) error = Check();
    if (error.empty()) error = MeasureMemory(result_.with_history);
    result_.run_s = SecondsOf(Clock::now() - start);
    return error;
  }
  const RunResult& result() const { return result_; }

 private:
  Timing& Samples(Op op) { return result_.ops[op]; }
  std::string Label(const char* phase) const {
    return fmt::format("bench pool, {} GPUs: {}", gpus_, phase);
  }

  std::string Setup() {
    Progress progress(Label("setup"));
    const uint64_t total = uint64_t{boxes_} * 2 + hosts_;
    uint64_t done = 0;
    Clock::time_point t0 = Clock::now();
    for (uint32_t i = 0; i < boxes_; ++i) {
      std::string error;
      std::unique_ptr<bridge::BridgeBox> box = MakeBridge(0xb0000000ULL + i, &error);
      if (box == nullptr) return "making bridge " + BoxName(i) + ": " + error;
      bridges_[BoxName(i)] = std::move(box);
      progress.Update(++done, total);
    }
    result_.bridges_s = SecondsOf(Clock::now() - t0);
    PoolResult<std::unique_ptr<PoolStore>> store = MakeBenchStore(o_);
    if (!store.ok()) return "opening the store: " + store.error().message;
    store_ = std::make_unique<TimedStore>(std::move(store).value(), Samples(kStoreApply));
    PoolResult<std::unique_ptr<PoolManager>> m = PoolManager::Open(*store_, options_, now_);
    if (!m.ok()) return "opening the pool: " + m.error().message;
    manager_ = std::move(m).value();

    t0 = Clock::now();
    for (uint32_t i = 0; i < boxes_; ++i) {
      BoxRecord b;
      b.id = BoxName(i);
      b.management = "in-process:" + b.id;
      b.fabric = "in-process:" + b.id;
      PoolResult<BoxRecord> added = manager_->AddBox(std::move(b), now_);
      if (!added.ok()) return "adding " + BoxName(i) + ": " + added.error().message;
    }
    // The first probe of every box: its GPUs.
    for (const Action& a : manager_->TakeActions(now_)) {
      Complete(RunAction(a));
      progress.Update(++done, total);
    }
    result_.add_boxes_s = SecondsOf(Clock::now() - t0);
    const manager::PoolSummary s = manager_->Summary();
    if (s.gpus != gpus_ || s.gpus_free != gpus_ || s.boxes_healthy != boxes_) {
      return fmt::format(
          "after the first probes the pool has {} GPUs ({} free) in {} healthy "
          "boxes, not {} in {}",
          s.gpus, s.gpus_free, s.boxes_healthy, gpus_, boxes_);
    }
    t0 = Clock::now();
    for (uint32_t i = 0; i < hosts_; ++i) {
      HostRecord h;
      h.id = HostName(i);
      h.node_id = 0x10000 + uint64_t{i};
      h.agent = "in-process:" + h.id;
      h.mode = "userspace";
      h.boot_id = "boot-1";
      PoolResult<HostRecord> registered = manager_->RegisterHost(h, now_);
      if (!registered.ok()) return "registering " + h.id + ": " + registered.error().message;
      in_process_hosts_[h.id] = InProcessHost{};
      progress.Update(++done, total);
    }
    result_.register_hosts_s = SecondsOf(Clock::now() - t0);
    return "";
  }

  // Allocates until the target share of the GPUs is held.
  std::string AllocatePhase() {
    Progress progress(Label("allocate"));
    store_->set_timing(true);
    while (leased_ < target_) {
      const uint32_t count = kRequestSizes[rng_.Uniform(kRequestSizes.size())];
      if (count > target_ - leased_) continue;  // the last ones: a smaller draw
      if (std::string e = AllocateOne(count, Samples(kAllocate), Samples(kAttach)); !e.empty())
        return e;
      progress.Update(leased_, target_);
    }
    return "";
  }

  // At the target share: a release whenever the pool holds at least the target, otherwise an
  // allocation, until the churn's releases are done.
  std::string ChurnPhase() {
    Progress progress(Label("churn"));
    const size_t releases = o_.churn.value_or(DefaultChurn(o_, gpus_));
    Timing& release = Samples(kRelease);
    Timing& freed = Samples(kReleaseToFree);
    while (release.seconds.size() < releases) {
      if (leased_ < target_ || held_.empty()) {
        const uint32_t count = kRequestSizes[rng_.Uniform(kRequestSizes.size())];
        if (std::string e = AllocateOne(count, Samples(kChurnAllocate), Samples(kChurnAttach));
            !e.empty())
          return e;
        continue;
      }
      const size_t i = rng_.Uniform(held_.size());
      std::swap(held_[i], held_.back());
      const Held h = held_.back();
      held_.pop_back();
      const Clock::time_point t0 = Clock::now();
      PoolResult<AllocationView> r = manager_->Release(h.id, now_);
      const Clock::time_point t1 = Clock::now();
      if (!r.ok()) return "releasing " + manager::AllocationName(h.id) + ": " + r.error().message;
      if (std::string e = RunUntil(h.id, AllocationState::kReleased); !e.empty()) return e;
      release.seconds.push_back(SecondsOf(t1 - t0));
      freed.seconds.push_back(SecondsOf(Clock::now() - t0));
      leased_ -= h.count;
      progress.Update(release.seconds.size(), releases);
    }
    return "";
  }

  // Every box probed once, as the daemon does every 2 s: what a round costs the manager.
  std::string ProbePhase() {
    now_ += kProbeIntervalNs;
    const std::vector<Action> due = manager_->TakeActions(now_);
    Timing& probe = Samples(kProbe);
    for (const Action& a : due) {
      if (a.kind != ActionKind::kBridgeProbe) {
        return fmt::format("a {} step was due with nothing in progress",
                           manager::ActionKindName(a.kind));
      }
      const Clock::time_point t0 = Clock::now();
      Complete(RunAction(a));
      probe.seconds.push_back(SecondsOf(Clock::now() - t0));
    }
    if (probe.seconds.size() != boxes_) {
      return fmt::format("{} probes were due, not one for each of the {} boxes",
                         probe.seconds.size(), boxes_);
    }
    if (!manager_->Settled() || !manager_->TakeActions(now_).empty()) {
      return "the probes found something to do: a bridge and the manager disagree";
    }
    return "";
  }

  // The pool's invariants: no GPU leased twice, every lease an active allocation's and attached
  // by its host's agent at its BDF on a bridge that has it assigned to that host, every other
  // GPU free on its bridge and offered, free + leased = all.
  std::string Check() {
    std::map<GpuRef, const LeaseRecord*> leases;
    const std::vector<AllocationView> allocs = manager_->Allocations();
    size_t active_gpus = 0;
    for (const AllocationView& v : allocs) {
      const bool active = v.record.state == AllocationState::kActive;
      if (!active && v.record.state != AllocationState::kReleased) {
        return fmt::format("{} is {} at the end", manager::AllocationName(v.record.id),
                           manager::AllocationStateName(v.record.state));
      }
      if (v.leases.size() != (active ? v.record.count : 0)) {
        return fmt::format("{} ({}) holds {} GPUs, not {}", manager::AllocationName(v.record.id),
                           manager::AllocationStateName(v.record.state), v.leases.size(),
                           active ? v.record.count : 0);
      }
      active_gpus += v.leases.size();
      for (const LeaseRecord& l : v.leases) {
        if (!leases.emplace(GpuRef{l.box, l.device}, &l).second)
          return manager::GpuName(l.box, l.device) + " is leased twice";
      }
    }
    std::map<std::string, uint64_t> node_of;
    for (const HostRecord& h : manager_->Hosts()) node_of[h.id] = h.node_id;
    size_t gpus = 0;
    for (const auto& [id, box] : bridges_) {
      for (const bridge::DeviceStatus& d : box->Devices()) {
        ++gpus;
        const std::string name = manager::GpuName(id, d.index);
        auto l = leases.find(GpuRef{id, d.index});
        if (l == leases.end()) {
          if (d.owner_node != 0) return name + " is owned on its bridge with no lease";
          continue;
        }
        const LeaseRecord& lease = *l->second;
        if (lease.step != manager::LeaseStep::kAttached)
          return name + " is " + std::string(manager::LeaseStepName(lease.step));
        if (d.owner_node != node_of[lease.host] || d.host_bdf != lease.host_bdf)
          return name + " is not assigned on its bridge to " + lease.host + " at its BDF";
        if (!in_process_hosts_[lease.host].attached.contains(l->first))
          return name + " is not attached by " + lease.host + "'s agent";
      }
    }
    for (const auto& [id, h] : in_process_hosts_) {
      for (const GpuRef& g : h.attached) {
        auto l = leases.find(g);
        if (l == leases.end() || l->second->host != id) {
          return fmt::format(
              "{}'s agent still has {} ({})", id, manager::GpuName(g.box, g.device),
              l == leases.end() ? std::string("no lease") : "leased to " + l->second->host);
        }
      }
    }
    const manager::PoolSummary s = manager_->Summary();
    result_.leased = leases.size();
    result_.free = s.gpus_free;
    if (gpus != gpus_ || s.gpus != gpus_ || s.gpus_free + leases.size() != gpus_ ||
        leases.size() != leased_ || active_gpus != leased_) {
      return fmt::format(
          "GPUs lost: {} free + {} leased of {} (the bridges have {}; the bench "
          "counted {} held)",
          s.gpus_free, leases.size(), s.gpus, gpus, leased_);
    }
    return "";
  }

  // The manager's heap: what PoolManager::Open keeps of a store that holds the whole pool. The
  // store is loaded first, through a second handle on the same store, so that neither its
  // snapshot nor the store's own caches are counted; the bridges were made long before.
  std::string MeasureMemory(Memory& out) {
    PoolResult<std::unique_ptr<PoolStore>> store = MakeBenchStore(o_);
    if (!store.ok()) return "opening the store again: " + store.error().message;
    Clock::time_point t0 = Clock::now();
    PoolResult<PoolSnapshot> loaded = store.value()->Load();
    out.load_s = SecondsOf(Clock::now() - t0);
    if (!loaded.ok()) return "loading the store: " + loaded.error().message;
    out.allocations = loaded.value().allocations.size();
    out.leases = loaded.value().leases.size();
    SnapshotStore snapshot(std::move(loaded).value());
    const int64_t before = HeapBytes();
    t0 = Clock::now();
    PoolResult<std::unique_ptr<PoolManager>> m = PoolManager::Open(snapshot, options_, now_);
    out.open_s = SecondsOf(Clock::now() - t0);
    out.bytes = HeapBytes() - before;
    if (!m.ok()) return "opening the pool again: " + m.error().message;
    if (m.value()->Summary().gpus != gpus_) return "the pool opened again has lost GPUs";
    out.per_gpu = static_cast<double>(out.bytes) / gpus_;
    return "";
  }

  // An allocation for a random host, timed to its decision and to its attach's end.
  std::string AllocateOne(uint32_t count, Timing& decision, Timing& attach) {
    AllocationRequest r;
    r.host = HostName(static_cast<uint32_t>(rng_.Uniform(hosts_)));
    r.count = count;
    r.policy = manager::Policy::kPack;
    const Clock::time_point t0 = Clock::now();
    PoolResult<AllocationView> made = manager_->Allocate(r, now_);
    const Clock::time_point t1 = Clock::now();
    if (!made.ok()) {
      const bool refused = made.error().name == "insufficient-gpus" ||
                           made.error().name == "host-full";  // another draw may fit
      if (refused && ++refused_in_a_row_ < kMaxRefusedInARow) {
        ++result_.refusals;
        return "";
      }
      return fmt::format("allocating {} GPUs for {}: {}: {}", count, r.host, made.error().name,
                         made.error().message);
    }
    refused_in_a_row_ = 0;
    const uint64_t id = made.value().record.id;
    if (std::string e = RunUntil(id, AllocationState::kActive); !e.empty()) return e;
    decision.seconds.push_back(SecondsOf(t1 - t0));
    attach.seconds.push_back(SecondsOf(Clock::now() - t0));
    result_.attach_by_size[count].push_back(attach.seconds.back());
    held_.push_back(Held{id, count});
    leased_ += count;
    return "";
  }

  // Runs the steps due, each answered in this process, until the allocation is in `want`.
  std::string RunUntil(uint64_t id, AllocationState want) {
    const uint64_t give_up = now_ + kGiveUpNs;
    while (now_ < give_up) {
      if (std::string failing = store_->Failing(); !failing.empty()) return failing;
      PoolResult<AllocationView> v = manager_->Allocation(id);
      if (!v.ok()) return v.error().message;
      const manager::AllocationRecord& a = v.value().record;
      if (a.state == want) return "";
      if (a.state == AllocationState::kFailed) {
        return manager::AllocationName(id) + " failed: " + a.error;
      }
      const std::vector<Action> due = manager_->TakeActions(now_);
      if (due.empty()) {
        now_ = std::max(now_ + kStepNs, manager_->NextDeadline());  // a retry's time
        continue;
      }
      for (const Action& step : due) Complete(RunAction(step));
    }
    return fmt::format("{} did not become {} ({} s on the manager's clock)",
                       manager::AllocationName(id), manager::AllocationStateName(want),
                       kGiveUpNs / manager::kSecond);
  }

  void Complete(const ActionResult& r) {
    now_ += kStepNs;
    manager_->Complete(r, now_);
  }

  ActionResult RunAction(const Action& a) {
    if (a.kind == ActionKind::kAgentAttach || a.kind == ActionKind::kAgentDetach) {
      return RunAgent(a);
    }
    auto box = bridges_.find(a.box.id);
    if (box == bridges_.end()) {
      ActionResult r;
      r.id = a.id;
      r.outcome = ActionOutcome::kUnreachable;
      r.error = "no bridge " + a.box.id + " in this process";
      return r;
    }
    return manager::RunBridgeAction(
        a, [this, &b = *box->second](dxpu_mgmt_msg m) { return Exchange(b, m); });
  }

  // One management request through the bridge's own handler, encoded and decoded as on the
  // wire (unsigned: an in-process bridge checks no signature).
  bridge::ManagementReply Exchange(bridge::BridgeBox& box, dxpu_mgmt_msg m) {
    m.request_id = ++request_id_;
    bridge::ManagementReply reply;
    std::vector<uint8_t> request(DXPU_MGMT_MAX_MSG);
    size_t len = 0;
    if (dxpu_mgmt_encode(&m, request.data(), request.size(), &len) != DXPU_MGMT_ERR_OK) {
      reply.error_name = "encode";
      reply.error = "the request does not encode";
      return reply;
    }
    request.resize(len);
    reply.bytes = bridge::HandleManagement(box, request, now_, &management_counters_);
    if (dxpu_mgmt_decode(reply.bytes.data(), reply.bytes.size(), &reply.msg) != DXPU_MGMT_ERR_OK) {
      reply.bytes.clear();
      reply.error_name = "bad-reply";
      reply.error = "the bridge's answer does not decode";
    }
    return reply;
  }

  ActionResult RunAgent(const Action& a) {
    ActionResult r;
    r.id = a.id;
    InProcessHost& h = in_process_hosts_[a.host.id];
    const GpuRef gpu{a.box.id, a.device};
    if (a.kind == ActionKind::kAgentDetach) {
      h.attached.erase(gpu);
      return r;
    }
    auto box = bridges_.find(a.box.id);
    if (box != bridges_.end()) {
      for (const bridge::DeviceStatus& d : box->second->Devices()) {
        if (d.index == a.device && d.owner_node == a.host.node_id && d.host_bdf == a.host_bdf) {
          h.attached.insert(gpu);
          return r;
        }
      }
    }
    r.outcome = ActionOutcome::kRefused;
    r.error = "no device answers at that BDF";
    return r;
  }

  const PoolBenchOptions& o_;
  uint32_t gpus_, boxes_, hosts_;
  size_t target_ = 0;  // GPUs held in the churn
  ManagerOptions options_;
  std::map<std::string, std::unique_ptr<bridge::BridgeBox>> bridges_;
  std::map<std::string, InProcessHost> in_process_hosts_;
  std::unique_ptr<TimedStore> store_;
  std::unique_ptr<PoolManager> manager_;
  bridge::ManagementCounters management_counters_;
  sim::Rng rng_;
  uint64_t now_ = kStartNs;
  uint32_t request_id_ = 0;
  std::vector<Held> held_;  // active allocations, in no order
  size_t leased_ = 0;       // GPUs they hold
  uint32_t refused_in_a_row_ = 0;
  RunResult result_;
};

// ---- the report

// Each operation's mean time over the smallest pool's (1 for the smallest pool itself).
double GrowthOf(const std::vector<RunResult>& runs, const RunResult& r, size_t op) {
  const double base = FiguresOf(runs.front().ops[op].seconds).mean;
  return base > 0 ? FiguresOf(r.ops[op].seconds).mean / base : 0;
}

std::string Ms(double seconds) { return fmt::format("{:.3f}", seconds * 1e3); }

void PrintText(const PoolBenchOptions& o, const std::vector<RunResult>& runs) {
  std::cout << fmt::format(
      "dxpu bench pool: the pool manager's core (PoolManager) over the {} store; seed {}\n"
      "bridges (BridgeBox firmware objects) and agents (model hosts) run in this process, "
      "every step at once: no network latency is included\n",
      o.store, o.seed);
  for (const RunResult& r : runs) {
    std::cout << fmt::format(
        "\n{} GPUs in {} boxes of {}, {} hosts; {:.0f}% held in the churn; run {:.1f} s\n", r.gpus,
        r.boxes, kGpusPerBox, r.hosts, o.occupancy * 100, r.run_s);
    std::cout << fmt::format(
        "setup: {} boxes added and probed in {:.2f} s, {} hosts registered in {:.2f} s (the "
        "bridges made in {:.2f} s)\n",
        r.boxes, r.add_boxes_s, r.hosts, r.register_hosts_s, r.bridges_s);
    std::cout << fmt::format("{:<16} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8}\n", "operation", "count",
                             "per s", "p50 ms", "p99 ms", "mean ms", "max ms");
    for (const Timing& t : r.ops) {
      const Figures f = FiguresOf(t.seconds);
      std::cout << fmt::format("{:<16} {:>7} {:>9.0f} {:>8} {:>8} {:>8} {:>8}\n", t.what, f.count,
                               f.per_s, Ms(f.p50), Ms(f.p99), Ms(f.mean), Ms(f.max));
    }
    std::string by_size;
    for (const auto& [count, seconds] : r.attach_by_size) {
      const Figures f = FiguresOf(seconds);
      by_size += fmt::format("{}{} GPU{}: {} / {} ({})", by_size.empty() ? "" : ", ", count,
                             count == 1 ? "" : "s", Ms(f.p50), Ms(f.p99), f.count);
    }
    std::cout << "attach by request size, p50 / p99 ms (count): " << by_size << "\n";
    std::cout << fmt::format(
        "memory: {:.0f} bytes of heap per GPU at the held share ({:.2f} MiB: the manager's "
        "state after Open, {} allocations, {} leases), and {:.0f} bytes more for each "
        "allocation kept after its release ({} kept at the end); opening the pool at the end: "
        "store load {:.1f} ms, PoolManager::Open {:.1f} ms\n",
        r.memory.per_gpu, static_cast<double>(r.memory.bytes) / (1 << 20), r.memory.allocations,
        r.memory.leases, r.BytesPerReleased(), r.with_history.allocations - r.memory.allocations,
        r.with_history.load_s * 1e3, r.with_history.open_s * 1e3);
    std::cout << fmt::format(
        "at the end: {} leased + {} free = {} GPUs; {} refused; checked: no GPU leased twice, "
        "each lease assigned on its bridge and attached by its host, none lost\n",
        r.leased, r.free, r.leased + r.free, r.refusals);
  }
  std::cout << "\nallocate: PoolManager::Allocate (the decision and its store write); attach: "
               "from Allocate until active (every bridge and agent step); release: "
               "PoolManager::Release; release-to-free: from Release until its GPUs are free "
               "(detached, reset, scrubbed); churn-*: at the held share, between releases; "
               "probe: one box's INVENTORY and STATUS and their judging; store-apply: one "
               "transaction of the store in any of these. per s: one over the mean, back to "
               "back.\n";
  if (runs.size() < 2) return;
  std::cout << fmt::format(
      "\nhow time grows with the pool: mean time per operation over the "
      "{}-GPU pool's\n",
      runs.front().gpus);
  std::cout << fmt::format("{:>7} {:>6} {:>6}", "GPUs", "boxes", "hosts");
  for (const Timing& t : runs.front().ops) std::cout << fmt::format(" {:>15}", t.what);
  std::cout << fmt::format(" {:>11}\n", "bytes/GPU");
  for (const RunResult& r : runs) {
    std::cout << fmt::format("{:>7} {:>6} {:>6}", r.gpus, r.boxes, r.hosts);
    for (size_t i = 0; i < r.ops.size(); ++i) {
      std::cout << fmt::format(" {:>15.2f}", GrowthOf(runs, r, i));
    }
    std::cout << fmt::format(" {:>11.0f}\n", r.memory.per_gpu);
  }
}

nlohmann::json MemoryJson(const Memory& m) {
  return {{"bytes", m.bytes},   {"bytes_per_gpu", m.per_gpu},   {"load_s", m.load_s},
          {"open_s", m.open_s}, {"allocations", m.allocations}, {"leases", m.leases}};
}

void PrintJson(const PoolBenchOptions& o, const std::vector<RunResult>& runs) {
  nlohmann::json out;
  out["store"] = o.store;
  out["seed"] = o.seed;
  out["occupancy"] = o.occupancy;
  out["request_sizes"] = kRequestSizes;
  out["in_process"] = true;  // bridges and agents in this process: no network latency
  out["runs"] = nlohmann::json::array();
  for (const RunResult& r : runs) {
    nlohmann::json run = {{"gpus", r.gpus},
                          {"boxes", r.boxes},
                          {"hosts", r.hosts},
                          {"run_s", r.run_s},
                          {"setup",
                           {{"bridges_s", r.bridges_s},
                            {"add_boxes_s", r.add_boxes_s},
                            {"register_hosts_s", r.register_hosts_s}}},
                          {"refusals", r.refusals}};
    run["results"] = nlohmann::json::array();
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const Figures f = FiguresOf(r.ops[i].seconds);
      run["results"].push_back({{"what", r.ops[i].what},
                                {"count", f.count},
                                {"per_s", f.per_s},
                                {"p50_us", f.p50 * 1e6},
                                {"p99_us", f.p99 * 1e6},
                                {"mean_us", f.mean * 1e6},
                                {"max_us", f.max * 1e6},
                                {"time_vs_smallest", GrowthOf(runs, r, i)}});
    }
    run["attach_by_size"] = nlohmann::json::array();
    for (const auto& [count, seconds] : r.attach_by_size) {
      const Figures f = FiguresOf(seconds);
      run["attach_by_size"].push_back({{"gpus", count},
                                       {"count", f.count},
                                       {"p50_us", f.p50 * 1e6},
                                       {"p99_us", f.p99 * 1e6},
                                       {"mean_us", f.mean * 1e6}});
    }
    run["memory"] = MemoryJson(r.memory);
    run["memory_with_history"] = MemoryJson(r.with_history);
    run["memory_with_history"]["bytes_per_released_allocation"] = r.BytesPerReleased();
    run["end"] = {
        {"gpus", r.leased + r.free}, {"leased", r.leased}, {"free", r.free}, {"checked", true}};
    out["runs"].push_back(std::move(run));
  }
  std::cout << out.dump(2) << "\n";
}

// The pool sizes to run, the smallest first, each with its hosts in proportion.
std::vector<std::pair<uint32_t, uint32_t>> SizesOf(const PoolBenchOptions& o) {
  std::vector<uint32_t> gpus = o.sizes;
  if (o.growth) {
    for (uint32_t part : {8u, 4u, 2u}) {
      gpus.push_back(std::max<uint32_t>(kGpusPerBox, o.gpus / part / kGpusPerBox * kGpusPerBox));
    }
  }
  if (gpus.empty() || o.growth) gpus.push_back(o.gpus);
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (uint32_t g : gpus) {
    const auto hosts = static_cast<uint32_t>(uint64_t{o.hosts} * g / o.gpus);
    out.emplace_back(g, std::max<uint32_t>(1, hosts));
  }
  return out;
}

int Run(const PoolBenchOptions& o) {
  for (uint32_t g : o.sizes) {
    if (g % kGpusPerBox != 0) {
      std::cerr << "dxpu bench pool: --sizes: " << g << " is not a multiple of 8 (boxes of 8 "
                << "GPUs)\n";
      return kExitUsage;
    }
  }
  if (o.store == "etcd" && o.etcd.empty()) {
    std::cerr << "dxpu bench pool: --store etcd needs --etcd: a running etcd's client URLs, "
              << "e.g. http://127.0.0.1:2379\n";
    return kExitUsage;
  }
  if (o.gpus % kGpusPerBox != 0) {
    std::cerr << "dxpu bench pool: --gpus " << o.gpus << " is not a multiple of 8 (boxes of 8 "
              << "GPUs)\n";
    return kExitUsage;
  }
  const auto sizes = SizesOf(o);
  // The manager logs every box that answers and every GPU it learns: not the bench's output.
  const spdlog::level::level_enum level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path() / fmt::format("dxpu-bench-pool-{}", getpid());
  std::vector<RunResult> runs;
  int rc = kExitOk;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto [gpus, hosts] = sizes[i];
    if (sizes.size() > 1) {
      std::cerr << fmt::format("[{}/{}] {} GPUs in {} boxes, {} hosts ...\n", i + 1, sizes.size(),
                               gpus, gpus / kGpusPerBox, hosts);
    }
    PoolBenchOptions run_options = o;
    if (!run_options.churn) run_options.churn = DefaultChurn(o, sizes.back().first);
    run_options.dir = dir / fmt::format("{}-gpus", gpus);
    fs::create_directories(run_options.dir, ec);
    if (ec) {
      std::cerr << "dxpu bench pool: cannot make " << run_options.dir << ": " << ec.message()
                << "\n";
      rc = kExitFailure;
      break;
    }
    PoolRun run(run_options, gpus, hosts);
    const std::string error = run.Run();
    DropBenchStore(run_options);
    if (!error.empty()) {
      std::cerr << fmt::format("dxpu bench pool: {} GPUs, {} hosts: {}\n", gpus, hosts, error);
      rc = kExitFailure;
      break;
    }
    runs.push_back(run.result());
  }
  fs::remove_all(dir, ec);
  spdlog::set_level(level);
  if (rc != kExitOk) return rc;
  if (o.json) {
    PrintJson(o, runs);
  } else {
    PrintText(o, runs);
  }
  return kExitOk;
}

}  // namespace pool_bench
}  // namespace

std::function<int()> AddBenchPoolCommand(CLI::App& bench, CLI::App** app) {
  auto o = std::make_shared<pool_bench::PoolBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "pool",
      "The pool manager at scale: its real core (PoolManager) over a real store builds a pool "
      "of --gpus GPUs in boxes of 8 and --hosts hosts (setup: every box added and probed, "
      "every host registered), then allocates requests of 1, 2, 4 or 8 GPUs (drawn from "
      "--seed) for random hosts until --occupancy of the GPUs are held (allocate: "
      "PoolManager::Allocate, the decision and its store write; attach: from Allocate until "
      "active), churns at that share (release: PoolManager::Release; release-to-free: until "
      "its GPUs are free again; and the allocations between), probes every box once, checks "
      "that no GPU is leased twice and none is lost, and opens the pool again from the store: "
      "the manager's heap per GPU. Each operation's rate (one over its mean time), p50 and "
      "p99. The bridges are real bridge firmware (BridgeBox) objects and the agents model "
      "hosts, all in this process: no network latency is included. --growth runs it at an "
      "eighth, a quarter, half and all of --gpus and --hosts and says how each operation's "
      "time grows with the pool.");
  cmd->add_option("--store", o->store,
                  "where the manager keeps the pool: sqlite (a file in a temporary directory) "
                  "or etcd (a running cluster: --etcd; the run's keys are deleted after it)")
      ->check(CLI::IsMember({"sqlite", "etcd"}))
      ->capture_default_str();
  cmd->add_option("--etcd", o->etcd,
                  "--store etcd: the members' client URLs, comma-separated "
                  "(http://127.0.0.1:2379)");
  cmd->add_option("--gpus", o->gpus, "GPUs in the pool, a multiple of 8 (boxes of 8)")
      ->check(CLI::Range(8u, 100'000u))
      ->capture_default_str();
  cmd->add_option("--hosts", o->hosts, "hosts registered")
      ->check(CLI::Range(1u, 400'000u))
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the requests' sizes and hosts")
      ->capture_default_str();
  cmd->add_option("--occupancy", o->occupancy, "share of the GPUs held in the churn")
      ->check(CLI::Range(0.05, 0.95))
      ->capture_default_str();
  cmd->add_option("--churn", o->churn,
                  "releases in the churn phase (default: about as many as the allocate phase "
                  "of the largest pool makes allocations: its holdings turn over once)")
      ->check(CLI::Range(1u, 10'000'000u));
  CLI::Option* growth = cmd->add_flag(
      "--growth", o->growth,
      "run at an eighth, a quarter, half and all of --gpus (hosts in proportion) and print "
      "each operation's time over the smallest pool's");
  cmd->add_option("--sizes", o->sizes,
                  "run at these pool sizes in GPUs (comma-separated, multiples of 8; hosts in "
                  "proportion to --gpus and --hosts) and print the growth, as --growth")
      ->delimiter(',')
      ->check(CLI::Range(8u, 100'000u))
      ->excludes(growth);
  cmd->add_flag("--json", o->json, "print the results as JSON");
  cmd->footer(
      "Examples:\n"
      "  dxpu bench pool\n"
      "  dxpu bench pool --growth --json\n"
      "  dxpu bench pool --gpus 64 --hosts 16 --sizes 16,32,64\n"
      "The figures at 10,000 GPUs and how they grow: docs/manager.md, \"Scale\".\n"
      "Exit status: 0 done, 1 the store failed or the pool broke an invariant, 2 bad command "
      "line.");
  *app = cmd;
  return [o] { return pool_bench::Run(*o); };
}

}  // namespace dxpu::cli
