// pool_manager.h - the pool manager's core, sans-IO: the pool in memory, every change written
// through the store before it takes effect, and the attach/release protocol as a reconciler
// that says which steps to run (Actions) and learns how they went (ActionResults). It does no
// I/O and reads no clock: the daemon runs the actions over real sockets on worker threads, the
// simulator runs them against BridgeBox objects in virtual time, and both get the same core.
//
// Attach (one lease per GPU; docs/manager.md "The protocol"):
//   reserved  --bridge ASSIGN + DMA grants-->  assigned  --agent attach-->  attached
// Release:
//   attached/assigned --agent detach--> scrubbing --bridge RELEASE (FLR, scrub)--> (no lease)
//   reserved --------------------------> scrubbing
// Each step is recorded before the next is asked for and each is idempotent on the far side, so
// after a crash of the manager (reload the store, Open again), of a bridge (its inventory shows
// the GPU unowned: assign again) or of an agent (it registers with a new boot ID: attach again)
// the protocol resumes where it was. A GPU is free only once its bridge has scrubbed it.
#ifndef DXPU_MANAGER_POOL_MANAGER_H_
#define DXPU_MANAGER_POOL_MANAGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "manager/allocator.h"
#include "manager/pool_error.h"
#include "manager/pool_model.h"
#include "manager/pool_store.h"

namespace dxpu::manager {

inline constexpr uint64_t kMillisecond = 1'000'000;
inline constexpr uint64_t kSecond = 1'000'000'000;

struct ManagerOptions {
  uint64_t attach_timeout_ns = 60 * kSecond;   // an attach not done by then fails, rolled back
  uint64_t detach_timeout_ns = 30 * kSecond;   // an agent silent that long loses the GPU anyway
  uint64_t retry_min_ns = 100 * kMillisecond;  // a failed step is retried, doubling, up to max
  uint64_t retry_max_ns = 5 * kSecond;
  uint64_t probe_interval_ns = 2 * kSecond;  // each box's inventory: health, restarts, orphans
  uint32_t max_count = 64;                   // GPUs in one allocation
};

// A host's agent is dead when it has not registered for this many of its heartbeats (docs).
inline constexpr uint64_t kMissedHeartbeats = 3;

// Whether a host's agent is heard from: from its last registration and its heartbeat.
struct HostLiveness {
  bool known = false;  // the agent said its heartbeat (and the manager heard it since it started)
  bool alive = true;   // unknown counts as alive
  uint64_t last_seen_ns = 0;
  uint64_t dead_after_ns = 0;  // silent this long: dead
};

enum class ActionKind : uint8_t {
  kBridgeAssign,   // ASSIGN device to node at host_bdf, then the host's DMA grants
  kBridgeRelease,  // RELEASE device: FLR, scrub, free (of a free device: nothing to do, OK)
  kBridgeProbe,    // INVENTORY + STATUS of the box
  kAgentAttach,    // hot-add (box fabric address, host_bdf) on the host
  kAgentDetach,    // hot-remove it
};
std::string_view ActionKindName(ActionKind kind);

// One step for someone to run. Carries everything the step needs, so the runner needs no view
// of the pool.
struct Action {
  uint64_t id = 0;
  ActionKind kind = ActionKind::kBridgeProbe;
  BoxRecord box;
  uint16_t device = 0;
  HostRecord host;  // agent actions and assign (node ID)
  uint16_t host_bdf = 0;
  uint64_t allocation = 0;
  // kBridgeProbe: the fabric keys (node ID, 64 hex digits) of the hosts with GPUs assigned or
  // attached on this box, set again on its bridge (HOST_KEY_SET is idempotent): a rotated key
  // reaches every bridge where its host holds GPUs.
  std::vector<std::pair<uint64_t, std::string>> host_keys;
  // kBridgeRelease: the host holds no other GPU on this box: after the RELEASE its key is
  // removed from the bridge (HOST_KEY_REMOVE), so that it can open no more sessions there.
  bool remove_host_key = false;
};

enum class ActionOutcome : uint8_t {
  kDone,         // in force
  kRefused,      // answered: no (error says why); retried, an attach until its deadline
  kUnreachable,  // no answer; retried
};

// One device as a bridge's probe saw it.
struct ProbedDevice {
  uint16_t device = 0;
  uint16_t box_bdf = 0;
  std::string profile;
  uint64_t owner_node = 0;  // 0: free
  uint16_t host_bdf = 0;
};

struct ActionResult {
  uint64_t id = 0;
  ActionOutcome outcome = ActionOutcome::kDone;
  std::string error;                  // for people, when not done
  std::vector<ProbedDevice> devices;  // kBridgeProbe
  std::string box_fabric_key;         // kBridgeProbe: the bridge's (64 hex digits); "": none
  // kBridgeAssign refused device-busy: the node its bridge has the device assigned to (0: not
  // known), so the manager can say which host holds it.
  uint64_t busy_owner = 0;
};

// What the API shows of an allocation: the record and its GPUs.
struct AllocationView {
  AllocationRecord record;
  std::vector<LeaseRecord> leases;
};

struct GpuView {
  GpuRecord gpu;
  std::optional<LeaseRecord> lease;  // none: free (or, if !allocatable, being cleaned)
  bool allocatable = false;
};

struct PoolSummary {
  size_t boxes = 0, boxes_healthy = 0, gpus = 0, gpus_free = 0, hosts = 0;
  size_t allocations_active = 0, allocations_in_progress = 0;
  size_t actions_in_flight = 0;
};

struct ManagerCounters {
  uint64_t allocations = 0, releases = 0, refusals = 0;
  uint64_t actions_started = 0, actions_failed = 0, store_errors = 0;
  uint64_t attach_timeouts = 0, detach_timeouts = 0;
  uint64_t bridge_restarts_seen = 0, agent_restarts_seen = 0, orphans_released = 0;
};

// The bad-name error for a box name that is not one; nullopt for a good name.
std::optional<PoolError> BadBoxName(std::string_view id);

class PoolManager {
 public:
  // Loads the store and resumes whatever was in progress. `now` is the manager's clock (ns).
  static PoolResult<std::unique_ptr<PoolManager>> Open(PoolStore& store, ManagerOptions options,
                                                       uint64_t now);
  PoolManager(const PoolManager&) = delete;
  PoolManager& operator=(const PoolManager&) = delete;

  // ---- the API (every change persisted before it returns)
  // Adds a box, or updates its addresses. Its GPUs come from its first probe.
  PoolResult<BoxRecord> AddBox(BoxRecord box, uint64_t now);
  // Removes a box none of whose GPUs is leased.
  PoolResult<Done> RemoveBox(const std::string& id);
  // An agent registers (again). A new boot ID means the host lost its attachments: its
  // attached GPUs are attached again.
  PoolResult<HostRecord> RegisterHost(HostRecord host, uint64_t now);
  // Removes a host's registration: refused (409 host-in-use, naming the allocations) while it
  // holds GPUs. Its agent, if still running, registers it again at its next heartbeat.
  PoolResult<HostRecord> RemoveHost(const std::string& id);
  HostLiveness Liveness(const HostRecord& host, uint64_t now) const;
  // Reserves GPUs for the host; the attach then runs in the background (state "attaching").
  // The same request_key again answers the allocation it made.
  PoolResult<AllocationView> Allocate(const AllocationRequest& request, uint64_t now);
  // Starts giving the allocation's GPUs back (also cancels an attach in progress).
  PoolResult<AllocationView> Release(uint64_t allocation, uint64_t now);

  // What a bridge holds that this pool did not give, as its probe (`devices`) shows it, for
  // `box` before AddBox: another box of this pool at the same management or fabric address
  // (other_box), and each device assigned with no lease of `box` here to that node (one line
  // each, naming the holder). Adding a box adopts its bridge: the probes then release whatever
  // it holds without a lease (issue 32: adding another pool's bridge scrubbed its GPUs).
  struct ForeignState {
    std::string other_box;
    std::vector<std::string> devices;
  };
  ForeignState ForeignStateOf(const BoxRecord& box, const std::vector<ProbedDevice>& devices) const;

  std::vector<BoxRecord> Boxes() const;
  bool HasBox(const std::string& id) const { return boxes_.contains(id); }
  std::vector<GpuView> Gpus() const;
  std::vector<HostRecord> Hosts() const;
  PoolResult<HostRecord> Host(const std::string& id) const;
  std::vector<AllocationView> Allocations() const;
  PoolResult<AllocationView> Allocation(uint64_t id) const;
  PoolSummary Summary() const;
  const ManagerCounters& counters() const { return counters_; }

  // ---- the reconciler
  // The steps due at `now`, each marked in flight until Complete hears of it.
  std::vector<Action> TakeActions(uint64_t now);
  // How a step went. Results of steps this instance did not start are ignored.
  void Complete(const ActionResult& result, uint64_t now);
  // When TakeActions has something next (a retry, a probe, a deadline); UINT64_MAX: nothing.
  uint64_t NextDeadline() const;
  // Nothing in progress: every allocation active, released or failed; no action in flight.
  bool Settled() const;

 private:
  struct LeaseRuntime {
    std::optional<uint64_t> in_flight;  // action ID
    uint64_t next_try_ns = 0;
    uint32_t failures = 0;
    std::string last_error;
  };
  struct BoxRuntime {
    std::optional<uint64_t> probe_in_flight;
    uint64_t next_probe_ns = 0;
    uint32_t probe_failures = 0;
  };
  struct InFlight {
    ActionKind kind;
    GpuRef gpu;  // lease actions and orphan releases (probes: the box, device 0)
    std::string box;
    uint64_t started_ns = 0;
    std::optional<LeaseStep> step;  // the lease's step when it started; none: not a lease's
    std::string host_boot;          // agent steps: the agent's boot ID when it started
  };

  PoolManager(PoolStore& store, ManagerOptions options);
  PoolResult<Done> Load(uint64_t now);
  // Persists the batch, then applies it to the pool in memory; on error neither.
  PoolResult<Done> Commit(StoreBatch batch);
  void ApplyToMemory(StoreChange change);

  // The free-GPU index follows a GPU's lease, presence, box health and cleanup.
  bool Allocatable(const GpuRef& gpu) const;
  void RefreshFree(const GpuRef& gpu);
  void RefreshFreeBox(const std::string& box);
  // The lease indexes (by allocation, by host, not attached) follow ApplyToMemory.
  void UnindexLease(const GpuRef& key);
  // Present GPUs by profile ("" = all) follow PutGpu and DeleteGpu.
  void CountGpu(const GpuRecord& gpu, int delta);
  static std::vector<GpuRef> KeysOf(const std::map<std::string, std::set<GpuRef>>& index,
                                    const std::string& name);
  // The lowest host BDF (bus:00.0) the host uses for none of its GPUs nor any in `taken`.
  std::optional<uint16_t> FreeHostBdf(const std::string& host,
                                      const std::set<uint16_t>& taken) const;

  // The fabric keys of the hosts with GPUs assigned or attached on `box` (Action::host_keys).
  std::vector<std::pair<uint64_t, std::string>> HostKeysOn(const std::string& box) const;
  // Whether `host` holds a GPU on gpu's box other than gpu.
  bool HoldsOtherOn(const std::string& host, const GpuRef& gpu) const;
  Action MakeAction(ActionKind kind, const BoxRecord& box, uint64_t now, const GpuRef& gpu,
                    std::optional<LeaseStep> step);
  void CompleteLease(const InFlight& flight, const ActionResult& result, uint64_t now);
  void CompleteProbe(const InFlight& flight, const ActionResult& result, uint64_t now);
  // Says who holds a GPU its bridge has assigned to `node` (an ASSIGN refused device-busy).
  std::string WhoHolds(const GpuRef& gpu, uint64_t node) const;
  void CompleteOrphan(const InFlight& flight, const ActionResult& result, uint64_t now);
  void Backoff(LeaseRuntime& rt, const std::string& error, uint64_t now);
  void CheckDeadlines(uint64_t now);
  // Adds to `batch` the allocation in `state` and each of its leases on its way back.
  void StartRelease(const AllocationRecord& alloc, AllocationState state, const std::string& error,
                    uint64_t now, StoreBatch& batch);
  void RetryNow(uint64_t allocation, uint64_t now);
  std::vector<LeaseRecord> LeasesOf(uint64_t allocation) const;
  // Active once every lease is attached; released once none is left (persisted).
  void SettleAllocation(uint64_t allocation, uint64_t now);
  AllocationView ViewOf(const AllocationRecord& alloc) const;

  PoolStore& store_;
  ManagerOptions options_;
  std::map<std::string, BoxRecord> boxes_;
  std::map<std::string, BoxRuntime> box_runtime_;
  std::map<GpuRef, GpuRecord> gpus_;
  std::map<std::string, HostRecord> hosts_;
  std::map<uint64_t, AllocationRecord> allocations_;
  std::map<std::string, uint64_t> by_request_key_;
  std::map<GpuRef, LeaseRecord> leases_;
  std::map<GpuRef, LeaseRuntime> lease_runtime_;
  // Indexes, so that no step walks the whole pool: leases by allocation and by host, leases not
  // attached (the only ones with steps to run), allocations attaching or releasing, and the
  // present GPUs by profile.
  std::map<uint64_t, std::set<GpuRef>> by_allocation_;
  std::map<std::string, std::set<GpuRef>> by_host_;
  std::set<GpuRef> moving_;
  std::set<uint64_t> in_progress_;
  std::map<std::string, size_t> totals_;
  // Orphans: assigned on their bridge with no lease here, being released (not persisted: the
  // next probe after a restart finds them again).
  std::map<GpuRef, LeaseRuntime> cleaning_;
  std::map<uint64_t, InFlight> in_flight_;
  FreeGpus free_;
  uint64_t next_allocation_ = 1;
  uint64_t next_action_ = 1;
  uint64_t opened_ns_ = 0;  // a host last seen before is given until then + its dead time
  ManagerCounters counters_;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_POOL_MANAGER_H_
