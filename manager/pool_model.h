// pool_model.h - what the pool manager knows, as small value types: boxes (bridges) and their
// GPUs, hosts, allocations and the lease of each GPU an allocation holds (docs/manager.md).
// These are the rows the store persists and the values the REST API shows.
#ifndef DXPU_MANAGER_POOL_MODEL_H_
#define DXPU_MANAGER_POOL_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dxpu::manager {

// A GPU box: one dxpu-bridge.
struct BoxRecord {
  std::string id;             // the operator's name for it: [A-Za-z0-9._-]{1,63}
  std::string management;     // its management socket: "udp:IP:PORT" or "unix:PATH"
  std::string fabric;         // where hosts reach it for DxFP: "udp:IP:PORT" or a MAC
  bool healthy = false;       // the last inventory probe was answered
  uint64_t last_seen_ns = 0;  // when, on the manager's clock (0: never)
  // Its bridge's fabric public key (64 hex digits), as its INVENTORY says; "": no identity
  // (plaintext sessions) or not probed yet. Hosts authenticate the bridge by it.
  std::string fabric_key;
};

// A GPU in a box, named by the box and its device index on that bridge ("box-a/3").
struct GpuRecord {
  std::string box;
  uint16_t device = 0;
  uint16_t box_bdf = 0;
  std::string profile;  // the GPU model's profile (the allocation constraint)
  bool present = true;  // listed by the bridge's last inventory
};

// A host: one dxpu-agent.
struct HostRecord {
  std::string id;              // the host's name: [A-Za-z0-9._-]{1,63}
  uint64_t node_id = 0;        // its DxFP node ID (bridges assign GPUs to it), never 0
  std::string agent;           // the agent's API: "http://IP:PORT"
  std::string mode;            // "kernel" (dxpu.ko sysfs) or "userspace" (the host proxy)
  std::string boot_id;         // changes each time the agent starts: its attached set is then gone
  uint64_t registered_ns = 0;  // its last registration (every heartbeat): when last seen
  // How often its agent registers, as it says (in memory only: 0 after a manager restart until
  // the agent's next heartbeat, and for an agent that does not say). 0: liveness unknown.
  uint64_t heartbeat_ns = 0;
  // Its fabric public key (64 hex digits) as its agent registered it; "": none (a host that
  // only reaches bridges without identity). The manager sets it on each bridge where the host
  // holds GPUs (HOST_KEY_SET) and removes it when the last is released; a new one (rotation)
  // is pushed to those bridges at once.
  std::string fabric_key;
};

enum class Policy : uint8_t {
  kPack,    // as few boxes as possible
  kSpread,  // as many boxes as possible
  kPrefer,  // the given box first, then as few others as possible
};
std::string_view PolicyName(Policy p);
std::optional<Policy> PolicyNamed(std::string_view name);

enum class AllocationState : uint8_t {
  kAttaching,  // GPUs reserved; the bridge and the agent are being programmed
  kActive,     // every GPU attached to the host
  kReleasing,  // being detached, reset and scrubbed
  kReleased,   // every GPU back in the pool (kept for history and for a double release)
  kFailed,     // the attach could not finish; its GPUs were released (error says why)
};
std::string_view AllocationStateName(AllocationState s);
std::optional<AllocationState> AllocationStateNamed(std::string_view name);

struct AllocationRecord {
  uint64_t id = 0;  // shown as "alloc-<id>"
  std::string host;
  uint32_t count = 0;
  Policy policy = Policy::kPack;
  std::string profile;      // "" = any
  std::string prefer_box;   // for kPrefer
  std::string request_key;  // the client's idempotency key ("" = none): a retry gets the same
  AllocationState state = AllocationState::kAttaching;
  std::string error;        // why it failed, or the last problem while it progresses
  uint64_t created_ns = 0;  // manager clock, for the attach deadline
  uint64_t updated_ns = 0;
};

// Where one GPU of an allocation is in the attach/release protocol (docs/manager.md). Each
// step is recorded before the next is asked of anyone, so a restarted manager resumes there.
enum class LeaseStep : uint8_t {
  kReserved,   // the GPU is this allocation's; nothing asked of the bridge yet (or not answered)
  kAssigned,   // the bridge owns the GPU to the host's node at host_bdf and grants its DMA
  kAttached,   // the agent hot-added it: in use
  kDetaching,  // released: the agent is to hot-remove it
  kScrubbing,  // the agent let go (or is gone): the bridge is to reset, scrub and free it
};
std::string_view LeaseStepName(LeaseStep s);
std::optional<LeaseStep> LeaseStepNamed(std::string_view name);

// One GPU held by one allocation. At most one lease per GPU (the store enforces it); a GPU
// with no lease is free. A lease ends (is deleted) when the bridge has scrubbed the GPU.
struct LeaseRecord {
  uint64_t allocation = 0;
  std::string box;
  uint16_t device = 0;
  std::string host;
  uint16_t host_bdf = 0;  // where the bridge presents it to the host (unique per host)
  LeaseStep step = LeaseStep::kReserved;
  uint64_t updated_ns = 0;
};

// Everything persisted, as loaded at start.
struct PoolSnapshot {
  std::vector<BoxRecord> boxes;
  std::vector<GpuRecord> gpus;
  std::vector<HostRecord> hosts;
  std::vector<AllocationRecord> allocations;
  std::vector<LeaseRecord> leases;
};

// "alloc-17" <-> 17
std::string AllocationName(uint64_t id);
std::optional<uint64_t> AllocationIdNamed(std::string_view name);
// "box-a/3"
std::string GpuName(std::string_view box, uint16_t device);
// Names of boxes and hosts: 1 to 63 of [A-Za-z0-9._-], not starting with '.' or '-'.
bool ValidName(std::string_view name);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_POOL_MODEL_H_
