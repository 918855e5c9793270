// pool_manager.cc - the pool manager's core (pool_manager.h). Every change is a StoreBatch:
// persisted first, then applied to the in-memory pool by ApplyToMemory, the one place the
// maps and the free-GPU index change.
#include "manager/pool_manager.h"

#include "manager/pool_json.h"

#include <algorithm>
#include <limits>
#include <utility>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "crypto/fabric_keys.h"

namespace dxpu::manager {

namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

bool IsBridgeStep(LeaseStep s) { return s == LeaseStep::kAssigned || s == LeaseStep::kAttached; }

}  // namespace

std::string_view ActionKindName(ActionKind kind) {
  switch (kind) {
    case ActionKind::kBridgeAssign:
      return "bridge-assign";
    case ActionKind::kBridgeRelease:
      return "bridge-release";
    case ActionKind::kBridgeProbe:
      return "bridge-probe";
    case ActionKind::kAgentAttach:
      return "agent-attach";
    case ActionKind::kAgentDetach:
      return "agent-detach";
  }
  return "unknown";
}

PoolManager::PoolManager(PoolStore& store, ManagerOptions options)
    : store_(store), options_(options) {}

PoolResult<std::unique_ptr<PoolManager>> PoolManager::Open(PoolStore& store, ManagerOptions options,
                                                           uint64_t now) {
  std::unique_ptr<PoolManager> m(new PoolManager(store, options));
  PoolResult<Done> loaded = m->Load(now);
  if (!loaded.ok()) return loaded.error();
  return m;
}

PoolResult<Done> PoolManager::Load(uint64_t now) {
  opened_ns_ = now;
  PoolResult<PoolSnapshot> snapshot = store_.Load();
  if (!snapshot.ok()) return snapshot.error();
  PoolSnapshot& s = snapshot.value();
  for (BoxRecord& b : s.boxes) ApplyToMemory(PutBox{std::move(b)});
  for (GpuRecord& g : s.gpus) ApplyToMemory(PutGpu{std::move(g)});
  for (HostRecord& h : s.hosts) ApplyToMemory(PutHost{std::move(h)});
  for (AllocationRecord& a : s.allocations) {
    next_allocation_ = std::max(next_allocation_, a.id + 1);
    ApplyToMemory(PutAllocation{std::move(a)});
  }
  for (LeaseRecord& l : s.leases) ApplyToMemory(PutLease{std::move(l)});
  size_t resumed = 0;
  for (auto& [id, alloc] : allocations_) {
    SettleAllocation(id, now);
    if (alloc.state == AllocationState::kAttaching || alloc.state == AllocationState::kReleasing)
      ++resumed;
  }
  spdlog::info("pool: {} boxes, {} GPUs, {} hosts, {} allocations ({} in progress), {} leases",
               boxes_.size(), gpus_.size(), hosts_.size(), allocations_.size(), resumed,
               leases_.size());
  return Done{};
}

// ------------------------------------------------------------------ changes

PoolResult<Done> PoolManager::Commit(StoreBatch batch) {
  if (batch.empty()) return Done{};
  PoolResult<Done> applied = store_.Apply(batch);
  if (!applied.ok()) {
    counters_.store_errors++;
    spdlog::error("pool: the store refused a change: {}: {}", applied.error().name,
                  applied.error().message);
    return applied;
  }
  for (StoreChange& change : batch.changes) ApplyToMemory(std::move(change));
  return Done{};
}

void PoolManager::ApplyToMemory(StoreChange change) {
  std::visit(
      [this](auto&& c) {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, PutBox>) {
          const std::string id = c.box.id;
          boxes_[id] = std::move(c.box);
          box_runtime_.try_emplace(id);
          RefreshFreeBox(id);
        } else if constexpr (std::is_same_v<T, PutGpu>) {
          const GpuRef key{c.gpu.box, c.gpu.device};
          if (auto it = gpus_.find(key); it != gpus_.end()) {
            free_.Remove(it->second.profile, key);
            CountGpu(it->second, -1);
          }
          CountGpu(c.gpu, +1);
          gpus_[key] = std::move(c.gpu);
          RefreshFree(key);
        } else if constexpr (std::is_same_v<T, PutHost>) {
          const std::string id = c.host.id;
          hosts_[id] = std::move(c.host);
        } else if constexpr (std::is_same_v<T, PutAllocation>) {
          if (!c.allocation.request_key.empty())
            by_request_key_[c.allocation.request_key] = c.allocation.id;
          const uint64_t id = c.allocation.id;
          const AllocationState state = c.allocation.state;
          if (state == AllocationState::kAttaching || state == AllocationState::kReleasing) {
            in_progress_.insert(id);
          } else {
            in_progress_.erase(id);
          }
          allocations_[id] = std::move(c.allocation);
        } else if constexpr (std::is_same_v<T, PutLease>) {
          const GpuRef key{c.lease.box, c.lease.device};
          UnindexLease(key);
          by_allocation_[c.lease.allocation].insert(key);
          by_host_[c.lease.host].insert(key);
          if (c.lease.step != LeaseStep::kAttached) moving_.insert(key);
          leases_[key] = std::move(c.lease);
          lease_runtime_.try_emplace(key);
          RefreshFree(key);
        } else if constexpr (std::is_same_v<T, DeleteLease>) {
          const GpuRef key{c.box, c.device};
          UnindexLease(key);
          leases_.erase(key);
          lease_runtime_.erase(key);
          RefreshFree(key);
        } else if constexpr (std::is_same_v<T, DeleteGpu>) {
          const GpuRef key{c.box, c.device};
          if (auto it = gpus_.find(key); it != gpus_.end()) {
            free_.Remove(it->second.profile, key);
            CountGpu(it->second, -1);
          }
          gpus_.erase(key);
        } else if constexpr (std::is_same_v<T, DeleteBox>) {
          boxes_.erase(c.id);
          box_runtime_.erase(c.id);
        } else if constexpr (std::is_same_v<T, DeleteHost>) {
          hosts_.erase(c.id);
        }
      },
      std::move(change));
}

void PoolManager::UnindexLease(const GpuRef& key) {
  auto it = leases_.find(key);
  if (it == leases_.end()) return;
  auto erase_from = [&key](auto& index, const auto& name) {
    auto entry = index.find(name);
    if (entry == index.end()) return;
    entry->second.erase(key);
    if (entry->second.empty()) index.erase(entry);
  };
  erase_from(by_allocation_, it->second.allocation);
  erase_from(by_host_, it->second.host);
  moving_.erase(key);
}

void PoolManager::CountGpu(const GpuRecord& gpu, int delta) {
  if (!gpu.present) return;
  for (const std::string& profile : {gpu.profile, std::string()}) {
    size_t& n = totals_[profile];
    n = delta > 0 ? n + 1 : n - 1;
    if (n == 0) totals_.erase(profile);
  }
}

std::vector<GpuRef> PoolManager::KeysOf(const std::map<std::string, std::set<GpuRef>>& index,
                                        const std::string& name) {
  auto it = index.find(name);
  return it == index.end() ? std::vector<GpuRef>{}
                           : std::vector<GpuRef>(it->second.begin(), it->second.end());
}

bool PoolManager::Allocatable(const GpuRef& gpu) const {
  auto g = gpus_.find(gpu);
  if (g == gpus_.end() || !g->second.present) return false;
  auto b = boxes_.find(gpu.box);
  if (b == boxes_.end() || !b->second.healthy) return false;
  return !leases_.contains(gpu) && !cleaning_.contains(gpu);
}

void PoolManager::RefreshFree(const GpuRef& gpu) {
  auto g = gpus_.find(gpu);
  if (g == gpus_.end()) return;
  if (Allocatable(gpu)) {
    free_.Add(g->second.profile, gpu);
  } else {
    free_.Remove(g->second.profile, gpu);
  }
}

void PoolManager::RefreshFreeBox(const std::string& box) {
  for (auto it = gpus_.lower_bound(GpuRef{box, 0}); it != gpus_.end() && it->first.box == box;
       ++it) {
    RefreshFree(it->first);
  }
}

std::optional<uint16_t> PoolManager::FreeHostBdf(const std::string& host,
                                                 const std::set<uint16_t>& taken) const {
  std::set<uint16_t> used = taken;
  for (const GpuRef& key : KeysOf(by_host_, host)) used.insert(leases_.at(key).host_bdf);
  for (uint16_t bus = 1; bus <= 0xff; ++bus) {
    const auto bdf = static_cast<uint16_t>(bus << 8);
    if (!used.contains(bdf)) return bdf;
  }
  return std::nullopt;
}

// ------------------------------------------------------------------ the API

std::optional<PoolError> BadBoxName(std::string_view id) {
  if (ValidName(id)) return std::nullopt;
  return PoolError{ErrorKind::kBadRequest, "bad-name",
                   fmt::format("'{}' is not a box name (1-63 of A-Z a-z 0-9 . _ -)", id)};
}

PoolResult<BoxRecord> PoolManager::AddBox(BoxRecord box, uint64_t now) {
  if (std::optional<PoolError> bad = BadBoxName(box.id)) return *bad;
  if (box.management.empty() || box.fabric.empty()) {
    return PoolError{ErrorKind::kBadRequest, "bad-address",
                     "a box needs its management and fabric addresses"};
  }
  if (auto it = boxes_.find(box.id); it != boxes_.end()) {
    box.healthy = it->second.healthy;
    box.last_seen_ns = it->second.last_seen_ns;
  } else {
    box.healthy = false;
    box.last_seen_ns = 0;
  }
  const std::string id = box.id;
  PoolResult<Done> done = Commit(StoreBatch{{PutBox{box}}});
  if (!done.ok()) return done.error();
  box_runtime_[id].next_probe_ns = now;  // learn its GPUs at once
  spdlog::info("pool: box {} at {} (fabric {})", id, box.management, box.fabric);
  return boxes_.at(id);
}

namespace {

// "udp:IP:PORT" and "IP:PORT" are the same management address.
std::string_view WithoutUdp(std::string_view address) {
  if (address.starts_with("udp:")) address.remove_prefix(4);
  return address;
}

}  // namespace

PoolManager::ForeignState PoolManager::ForeignStateOf(
    const BoxRecord& box, const std::vector<ProbedDevice>& devices) const {
  ForeignState f;
  for (const auto& [id, other] : boxes_) {
    if (id == box.id) continue;
    if (WithoutUdp(other.management) == WithoutUdp(box.management) || other.fabric == box.fabric) {
      f.other_box = id;
      break;
    }
  }
  for (const ProbedDevice& d : devices) {
    if (d.owner_node == 0) continue;
    const GpuRef gpu{box.id, d.device};
    if (cleaning_.contains(gpu)) continue;  // an orphan this pool adopted and is releasing
    if (auto l = leases_.find(gpu); l != leases_.end() && boxes_.contains(box.id)) {
      auto h = hosts_.find(l->second.host);
      if (h != hosts_.end() && h->second.node_id == d.owner_node) continue;  // this pool's
    }
    std::string holder = fmt::format("node {:#x}, no host of this pool", d.owner_node);
    for (const auto& [hid, host] : hosts_) {
      if (host.node_id == d.owner_node)
        holder = fmt::format("host {} (node {:#x})", hid, host.node_id);
    }
    f.devices.push_back(fmt::format("device {} ({}) is assigned to {} at {}", d.device,
                                    BdfText(d.box_bdf), holder, BdfText(d.host_bdf)));
  }
  return f;
}

PoolResult<Done> PoolManager::RemoveBox(const std::string& id) {
  if (!boxes_.contains(id)) {
    return PoolError{ErrorKind::kNotFound, "unknown-box", fmt::format("no box named '{}'", id)};
  }
  StoreBatch batch;
  for (auto it = gpus_.lower_bound(GpuRef{id, 0}); it != gpus_.end() && it->first.box == id; ++it) {
    if (leases_.contains(it->first) || cleaning_.contains(it->first)) {
      return PoolError{
          ErrorKind::kConflict, "box-in-use",
          fmt::format("{} is still held; release it first", GpuName(id, it->first.device))};
    }
    batch.changes.emplace_back(DeleteGpu{id, it->first.device});
  }
  for (const auto& [fid, flight] : in_flight_) {
    if (flight.box == id) {
      return PoolError{ErrorKind::kConflict, "box-busy",
                       fmt::format("box {} has a step in progress; try again", id)};
    }
  }
  batch.changes.emplace_back(DeleteBox{id});
  return Commit(std::move(batch));
}

PoolResult<HostRecord> PoolManager::RegisterHost(HostRecord host, uint64_t now) {
  if (!ValidName(host.id)) {
    return PoolError{ErrorKind::kBadRequest, "bad-name",
                     fmt::format("'{}' is not a host name (1-63 of A-Z a-z 0-9 . _ -)", host.id)};
  }
  if (host.node_id == 0) {
    return PoolError{ErrorKind::kBadRequest, "bad-node-id", "a host's node ID cannot be 0"};
  }
  if (host.mode != "kernel" && host.mode != "userspace") {
    return PoolError{ErrorKind::kBadRequest, "bad-mode",
                     fmt::format("mode must be kernel or userspace, not '{}'", host.mode)};
  }
  if (host.agent.empty()) {
    return PoolError{ErrorKind::kBadRequest, "bad-address", "a host needs its agent's address"};
  }
  for (const auto& [id, other] : hosts_) {
    if (id != host.id && other.node_id == host.node_id) {
      return PoolError{
          ErrorKind::kConflict, "node-id-taken",
          fmt::format("node ID {:#x} is host {}'s; start this host's agent with another "
                      "--node-id, or remove {} first (stop its agent, then `dxpu pool "
                      "remove-host {}`)",
                      host.node_id, id, id, id)};
    }
  }
  if (!host.fabric_key.empty()) {
    crypto::KeyResult<crypto::Key> key = crypto::ParseFabricPublicKey(host.fabric_key);
    if (!key.ok()) {
      return PoolError{ErrorKind::kBadRequest, "bad-fabric-key",
                       fmt::format("fabric_key: {}", key.error().message)};
    }
    host.fabric_key = crypto::KeyHex(key.value());
  }
  StoreBatch batch;
  auto existing = hosts_.find(host.id);
  const bool rotated = existing != hosts_.end() && existing->second.fabric_key != host.fabric_key;
  const bool restarted = existing != hosts_.end() && existing->second.boot_id != host.boot_id;
  if (existing != hosts_.end() && existing->second.node_id != host.node_id) {
    // Its bridges own GPUs to the old node ID: only a host that holds nothing may change it.
    if (by_host_.contains(host.id)) {
      return PoolError{ErrorKind::kConflict, "host-in-use",
                       fmt::format("{} holds GPUs under node ID {:#x}; release them first", host.id,
                                   existing->second.node_id)};
    }
  }
  host.registered_ns = now;
  batch.changes.emplace_back(PutHost{host});
  size_t again = 0;
  if (restarted) {
    // The agent started afresh: what it had attached is gone from the host. Attach again.
    for (const GpuRef& key : KeysOf(by_host_, host.id)) {
      const LeaseRecord& lease = leases_.at(key);
      if (lease.step != LeaseStep::kAttached) continue;
      LeaseRecord l = lease;
      l.step = LeaseStep::kAssigned;
      l.updated_ns = now;
      batch.changes.emplace_back(PutLease{std::move(l)});
      ++again;
    }
    counters_.agent_restarts_seen++;
  }
  PoolResult<Done> done = Commit(std::move(batch));
  if (!done.ok()) return done.error();
  for (const GpuRef& key : KeysOf(by_host_, host.id)) lease_runtime_[key].next_try_ns = now;
  if (rotated) {
    // A new key (rotation): each bridge where the host holds GPUs gets it with its next probe,
    // now. Its live sessions stay up; its next handshake there needs the new key.
    std::set<std::string> boxes;
    for (const GpuRef& key : KeysOf(by_host_, host.id)) boxes.insert(key.box);
    for (const std::string& box : boxes) box_runtime_[box].next_probe_ns = now;
    spdlog::info("pool: host {}: fabric key {} (pushed to {} boxes where it holds GPUs)", host.id,
                 host.fabric_key.empty() ? std::string("removed") : host.fabric_key.substr(0, 16),
                 boxes.size());
  }
  spdlog::info("pool: host {} (node {:#x}, {} agent at {}){}", host.id, host.node_id, host.mode,
               host.agent,
               restarted ? fmt::format(": agent restarted, {} GPUs to attach again", again) : "");
  return hosts_.at(host.id);
}

PoolResult<HostRecord> PoolManager::RemoveHost(const std::string& id) {
  auto it = hosts_.find(id);
  if (it == hosts_.end()) {
    return PoolError{ErrorKind::kNotFound, "unknown-host", fmt::format("no host named '{}'", id)};
  }
  // Its GPUs, by allocation (a lease on its way back counts: the host may still hold it).
  std::map<uint64_t, size_t> held;
  for (const GpuRef& key : KeysOf(by_host_, id)) held[leases_.at(key).allocation]++;
  for (uint64_t a : in_progress_) {
    if (allocations_.at(a).host == id) held.try_emplace(a, 0);
  }
  if (!held.empty()) {
    std::string which;
    for (const auto& [a, n] : held) {
      which += fmt::format("{}{} ({}, {} GPU{})", which.empty() ? "" : ", ", AllocationName(a),
                           AllocationStateName(allocations_.at(a).state), n, n == 1 ? "" : "s");
    }
    return PoolError{
        ErrorKind::kConflict, "host-in-use",
        fmt::format("host {} holds GPUs: {}; release {} first (`dxpu pool release ID`)", id, which,
                    held.size() == 1 ? "it" : "them")};
  }
  HostRecord removed = it->second;
  PoolResult<Done> done = Commit(StoreBatch{{DeleteHost{id}}});
  if (!done.ok()) return done.error();
  spdlog::info("pool: host {} (node {:#x}) removed", id, removed.node_id);
  return removed;
}

HostLiveness PoolManager::Liveness(const HostRecord& host, uint64_t now) const {
  HostLiveness l;
  l.last_seen_ns = host.registered_ns;
  if (host.heartbeat_ns == 0) return l;
  l.known = true;
  l.dead_after_ns = kMissedHeartbeats * host.heartbeat_ns;
  // Seen before this manager started: it has its dead time from the start to be heard again.
  const uint64_t since = std::max(host.registered_ns, opened_ns_);
  l.alive = now < since + l.dead_after_ns;
  return l;
}

namespace {

// "40 s", "1.5 s", "3 min"
std::string Ago(uint64_t ns) {
  if (ns >= 120 * kSecond) return fmt::format("{} min", ns / (60 * kSecond));
  if (ns >= 10 * kSecond) return fmt::format("{} s", ns / kSecond);
  return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
}

}  // namespace

PoolResult<AllocationView> PoolManager::Allocate(const AllocationRequest& request, uint64_t now) {
  if (!request.request_key.empty()) {
    if (auto it = by_request_key_.find(request.request_key); it != by_request_key_.end()) {
      const AllocationRecord& made = allocations_.at(it->second);
      if (made.host != request.host || made.count != request.count) {
        return PoolError{
            ErrorKind::kConflict, "key-reused",
            fmt::format("request key '{}' was used for {} ({} GPUs for {})", request.request_key,
                        AllocationName(made.id), made.count, made.host)};
      }
      return ViewOf(made);
    }
  }
  if (request.count == 0 || request.count > options_.max_count) {
    counters_.refusals++;
    return PoolError{
        ErrorKind::kBadRequest, "bad-count",
        fmt::format("count must be 1 to {}, not {}", options_.max_count, request.count)};
  }
  auto host = hosts_.find(request.host);
  if (host == hosts_.end()) {
    counters_.refusals++;
    const std::string start =
        fmt::format("start `dxpu-agent --host {} --node-id ID --manager URL` on it", request.host);
    if (hosts_.empty()) {
      return PoolError{ErrorKind::kNotFound, "unknown-host",
                       fmt::format("no host named '{}' has registered; no host has registered "
                                   "yet; {}",
                                   request.host, start)};
    }
    std::string names;
    size_t listed = 0;
    for (const auto& [id, h] : hosts_) {
      if (listed == 10) {
        names += fmt::format(" and {} more", hosts_.size() - listed);
        break;
      }
      names += (listed++ == 0 ? "" : ", ") + id;
    }
    return PoolError{ErrorKind::kNotFound, "unknown-host",
                     fmt::format("no host named '{}' has registered; registered: {} (see `dxpu "
                                 "pool hosts`); {}",
                                 request.host, names, start)};
  }
  if (const HostLiveness live = Liveness(host->second, now); !live.alive) {
    counters_.refusals++;
    return PoolError{
        ErrorKind::kConflict, "host-dead",
        fmt::format("host {}'s agent was last seen {} ago (dead after {} missed heartbeats); "
                    "start dxpu-agent on {} or pick another host",
                    request.host, Ago(now - live.last_seen_ns), kMissedHeartbeats, request.host)};
  }
  PoolResult<std::vector<GpuRef>> chosen =
      ChooseGpus(free_, request, boxes_.contains(request.prefer_box), totals_, options_.max_count);
  if (!chosen.ok()) {
    counters_.refusals++;
    return chosen.error();
  }
  AllocationRecord alloc;
  alloc.id = next_allocation_;
  alloc.host = request.host;
  alloc.count = request.count;
  alloc.policy = request.policy;
  alloc.profile = request.profile;
  alloc.prefer_box = request.prefer_box;
  alloc.request_key = request.request_key;
  alloc.state = AllocationState::kAttaching;
  alloc.created_ns = now;
  alloc.updated_ns = now;
  StoreBatch batch;
  batch.changes.emplace_back(PutAllocation{alloc});
  std::set<uint16_t> taken;
  for (const GpuRef& gpu : chosen.value()) {
    std::optional<uint16_t> bdf = FreeHostBdf(request.host, taken);
    if (!bdf) {
      counters_.refusals++;
      return PoolError{ErrorKind::kConflict, "host-full",
                       fmt::format("{} has no host BDF left for another GPU", request.host)};
    }
    taken.insert(*bdf);
    batch.changes.emplace_back(PutLease{
        LeaseRecord{alloc.id, gpu.box, gpu.device, request.host, *bdf, LeaseStep::kReserved, now}});
  }
  PoolResult<Done> done = Commit(std::move(batch));
  if (!done.ok()) return done.error();
  next_allocation_ = alloc.id + 1;
  counters_.allocations++;
  for (const GpuRef& gpu : chosen.value()) lease_runtime_[gpu].next_try_ns = now;
  spdlog::info("pool: {}: {} GPUs for {} ({})", AllocationName(alloc.id), alloc.count, alloc.host,
               PolicyName(alloc.policy));
  return ViewOf(allocations_.at(alloc.id));
}

PoolResult<AllocationView> PoolManager::Release(uint64_t allocation, uint64_t now) {
  auto it = allocations_.find(allocation);
  if (it == allocations_.end()) {
    return PoolError{ErrorKind::kNotFound, "unknown-allocation",
                     fmt::format("no allocation {}", AllocationName(allocation))};
  }
  const AllocationState state = it->second.state;
  if (state == AllocationState::kReleasing || state == AllocationState::kReleased ||
      state == AllocationState::kFailed) {
    return PoolError{
        ErrorKind::kConflict, "already-released",
        fmt::format("{} is already {}", AllocationName(allocation), AllocationStateName(state))};
  }
  StoreBatch batch;
  StartRelease(it->second, AllocationState::kReleasing, "", now, batch);
  PoolResult<Done> done = Commit(std::move(batch));
  if (!done.ok()) return done.error();
  counters_.releases++;
  RetryNow(allocation, now);
  SettleAllocation(allocation, now);
  spdlog::info("pool: {}: released by {}", AllocationName(allocation), it->second.host);
  return ViewOf(allocations_.at(allocation));
}

void PoolManager::StartRelease(const AllocationRecord& alloc, AllocationState state,
                               const std::string& error, uint64_t now, StoreBatch& batch) {
  AllocationRecord a = alloc;
  a.state = state;
  a.error = error;
  a.updated_ns = now;
  batch.changes.emplace_back(PutAllocation{std::move(a)});
  for (const LeaseRecord& lease : LeasesOf(alloc.id)) {
    LeaseRecord l = lease;
    switch (lease.step) {
      case LeaseStep::kReserved:
        l.step = LeaseStep::kScrubbing;
        break;
      case LeaseStep::kAssigned:
      case LeaseStep::kAttached:
        l.step = LeaseStep::kDetaching;
        break;
      case LeaseStep::kDetaching:
      case LeaseStep::kScrubbing:
        continue;
    }
    l.updated_ns = now;
    batch.changes.emplace_back(PutLease{std::move(l)});
  }
}

void PoolManager::RetryNow(uint64_t allocation, uint64_t now) {
  auto it = by_allocation_.find(allocation);
  if (it == by_allocation_.end()) return;
  for (const GpuRef& key : it->second) {
    LeaseRuntime& rt = lease_runtime_[key];
    rt.failures = 0;
    rt.next_try_ns = now;
  }
}

std::vector<LeaseRecord> PoolManager::LeasesOf(uint64_t allocation) const {
  std::vector<LeaseRecord> out;
  auto it = by_allocation_.find(allocation);
  if (it == by_allocation_.end()) return out;
  for (const GpuRef& key : it->second) out.push_back(leases_.at(key));
  return out;
}

void PoolManager::SettleAllocation(uint64_t allocation, uint64_t now) {
  auto it = allocations_.find(allocation);
  if (it == allocations_.end()) return;
  const std::vector<LeaseRecord> leases = LeasesOf(allocation);
  AllocationRecord a = it->second;
  if (a.state == AllocationState::kAttaching && leases.size() == a.count &&
      std::all_of(leases.begin(), leases.end(),
                  [](const LeaseRecord& l) { return l.step == LeaseStep::kAttached; })) {
    a.state = AllocationState::kActive;
    a.error.clear();
    spdlog::info("pool: {}: {} GPUs attached to {} in {:.1f} ms", AllocationName(a.id), a.count,
                 a.host, static_cast<double>(now - a.created_ns) / 1e6);
  } else if (a.state == AllocationState::kReleasing && leases.empty()) {
    a.state = AllocationState::kReleased;
    spdlog::info("pool: {}: every GPU back in the pool", AllocationName(a.id));
  } else {
    return;
  }
  a.updated_ns = now;
  (void)Commit(StoreBatch{{PutAllocation{std::move(a)}}});
}

// ------------------------------------------------------------------ queries

AllocationView PoolManager::ViewOf(const AllocationRecord& alloc) const {
  return AllocationView{alloc, LeasesOf(alloc.id)};
}

std::vector<BoxRecord> PoolManager::Boxes() const {
  std::vector<BoxRecord> out;
  for (const auto& [id, box] : boxes_) out.push_back(box);
  return out;
}

std::vector<GpuView> PoolManager::Gpus() const {
  std::vector<GpuView> out;
  for (const auto& [key, gpu] : gpus_) {
    GpuView v{gpu, std::nullopt, Allocatable(key)};
    if (auto l = leases_.find(key); l != leases_.end()) v.lease = l->second;
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<HostRecord> PoolManager::Hosts() const {
  std::vector<HostRecord> out;
  for (const auto& [id, host] : hosts_) out.push_back(host);
  return out;
}

PoolResult<HostRecord> PoolManager::Host(const std::string& id) const {
  auto it = hosts_.find(id);
  if (it == hosts_.end()) {
    return PoolError{ErrorKind::kNotFound, "unknown-host", fmt::format("no host named '{}'", id)};
  }
  return it->second;
}

std::vector<AllocationView> PoolManager::Allocations() const {
  std::vector<AllocationView> out;
  for (const auto& [id, alloc] : allocations_) out.push_back(ViewOf(alloc));
  return out;
}

PoolResult<AllocationView> PoolManager::Allocation(uint64_t id) const {
  auto it = allocations_.find(id);
  if (it == allocations_.end()) {
    return PoolError{ErrorKind::kNotFound, "unknown-allocation",
                     fmt::format("no allocation {}", AllocationName(id))};
  }
  return ViewOf(it->second);
}

PoolSummary PoolManager::Summary() const {
  PoolSummary s;
  s.boxes = boxes_.size();
  for (const auto& [id, box] : boxes_) s.boxes_healthy += box.healthy ? 1 : 0;
  for (const auto& [key, gpu] : gpus_) s.gpus += gpu.present ? 1 : 0;
  s.gpus_free = free_.Count("");
  s.hosts = hosts_.size();
  for (const auto& [id, alloc] : allocations_) {
    if (alloc.state == AllocationState::kActive) s.allocations_active++;
    if (alloc.state == AllocationState::kAttaching || alloc.state == AllocationState::kReleasing)
      s.allocations_in_progress++;
  }
  s.actions_in_flight = in_flight_.size();
  return s;
}

bool PoolManager::Settled() const {
  // No allocation attaching or releasing, every lease attached (so only active ones have any).
  return in_flight_.empty() && cleaning_.empty() && in_progress_.empty() && moving_.empty();
}

// ------------------------------------------------------------------ the reconciler

Action PoolManager::MakeAction(ActionKind kind, const BoxRecord& box, uint64_t now,
                               const GpuRef& gpu, std::optional<LeaseStep> step) {
  Action a;
  a.id = next_action_++;
  a.kind = kind;
  a.box = box;
  a.device = gpu.device;
  in_flight_[a.id] = InFlight{kind, gpu, box.id, now, step, ""};
  counters_.actions_started++;
  return a;
}

void PoolManager::CheckDeadlines(uint64_t now) {
  std::vector<uint64_t> late;
  for (uint64_t id : in_progress_) {
    const AllocationRecord& alloc = allocations_.at(id);
    if (alloc.state == AllocationState::kAttaching &&
        now >= alloc.created_ns + options_.attach_timeout_ns)
      late.push_back(id);
  }
  for (uint64_t id : late) {
    const AllocationRecord& alloc = allocations_.at(id);
    std::string why;
    for (const LeaseRecord& l : LeasesOf(id)) {
      const LeaseRuntime& rt = lease_runtime_[GpuRef{l.box, l.device}];
      if (l.step != LeaseStep::kAttached) {
        why = fmt::format("{} stuck {}{}", GpuName(l.box, l.device), LeaseStepName(l.step),
                          rt.last_error.empty() ? "" : ": " + rt.last_error);
        break;
      }
    }
    const std::string error = fmt::format("attach did not finish in {} s ({})",
                                          options_.attach_timeout_ns / kSecond, why);
    spdlog::warn("pool: {}: {}; giving its GPUs back", AllocationName(id), error);
    StoreBatch batch;
    StartRelease(alloc, AllocationState::kFailed, error, now, batch);
    if (Commit(std::move(batch)).ok()) {
      counters_.attach_timeouts++;
      RetryNow(id, now);
    }
  }
  StoreBatch expired;
  std::vector<GpuRef> taken_back;
  size_t timeouts = 0;
  for (const GpuRef& key : moving_) {
    const LeaseRecord& lease = leases_.at(key);
    if (lease.step != LeaseStep::kDetaching) continue;
    auto host = hosts_.find(lease.host);
    const HostLiveness live =
        host != hosts_.end() ? Liveness(host->second, now) : HostLiveness{true, false, 0, 0};
    auto rt = lease_runtime_.find(key);
    const bool tried =
        rt != lease_runtime_.end() && rt->second.failures > 0 && !rt->second.in_flight;
    if (!live.alive && tried) {
      // Nobody is there to detach it (its agent missed its heartbeats and did not take the
      // detach either): waiting out the detach timeout buys nothing. One attempt first, so that
      // an agent merely late with its heartbeats still detaches.
      spdlog::warn(
          "pool: {}: host {}'s agent was last seen {} ago and did not take the detach; taking "
          "it back at the bridge without waiting out the detach timeout",
          GpuName(key.box, key.device), lease.host,
          host != hosts_.end() ? Ago(now - live.last_seen_ns) : std::string("never"));
      LeaseRecord l = lease;
      l.step = LeaseStep::kScrubbing;
      l.updated_ns = now;
      expired.changes.emplace_back(PutLease{std::move(l)});
      taken_back.push_back(key);
    } else if (now >= lease.updated_ns + options_.detach_timeout_ns) {
      spdlog::warn("pool: {}: host {} did not detach it in {} s; taking it back at the bridge",
                   GpuName(key.box, key.device), lease.host, options_.detach_timeout_ns / kSecond);
      LeaseRecord l = lease;
      l.step = LeaseStep::kScrubbing;
      l.updated_ns = now;
      expired.changes.emplace_back(PutLease{std::move(l)});
      taken_back.push_back(key);
      ++timeouts;
    }
  }
  if (!Commit(std::move(expired)).ok()) return;
  counters_.detach_timeouts += timeouts;
  // The bridge's release is a new step: not behind the failed detaches' backoff.
  for (const GpuRef& key : taken_back) {
    LeaseRuntime& rt = lease_runtime_[key];
    if (rt.in_flight) continue;
    rt.failures = 0;
    rt.next_try_ns = now;
  }
}

std::vector<std::pair<uint64_t, std::string>> PoolManager::HostKeysOn(
    const std::string& box) const {
  std::set<std::string> seen;
  std::vector<std::pair<uint64_t, std::string>> keys;
  for (auto l = leases_.lower_bound(GpuRef{box, 0}); l != leases_.end() && l->first.box == box;
       ++l) {
    const LeaseRecord& lease = l->second;
    if (lease.step != LeaseStep::kAssigned && lease.step != LeaseStep::kAttached) continue;
    auto h = hosts_.find(lease.host);
    if (h == hosts_.end() || h->second.fabric_key.empty() || !seen.insert(lease.host).second)
      continue;
    keys.emplace_back(h->second.node_id, h->second.fabric_key);
  }
  return keys;
}

bool PoolManager::HoldsOtherOn(const std::string& host, const GpuRef& gpu) const {
  for (const GpuRef& key : KeysOf(by_host_, host))
    if (key.box == gpu.box && !(key == gpu)) return true;
  return false;
}

std::vector<Action> PoolManager::TakeActions(uint64_t now) {
  CheckDeadlines(now);
  std::vector<Action> out;
  for (auto& [id, rt] : box_runtime_) {
    if (rt.probe_in_flight || now < rt.next_probe_ns) continue;
    Action a = MakeAction(ActionKind::kBridgeProbe, boxes_.at(id), now, GpuRef{id, 0}, {});
    if (!boxes_.at(id).fabric_key.empty()) a.host_keys = HostKeysOn(id);
    rt.probe_in_flight = a.id;
    out.push_back(std::move(a));
  }
  for (const GpuRef& key : moving_) {
    const LeaseRecord& lease = leases_.at(key);
    LeaseRuntime& rt = lease_runtime_[key];
    if (rt.in_flight || now < rt.next_try_ns) continue;
    ActionKind kind;
    switch (lease.step) {
      case LeaseStep::kReserved:
        kind = ActionKind::kBridgeAssign;
        break;
      case LeaseStep::kAssigned:
        kind = ActionKind::kAgentAttach;
        break;
      case LeaseStep::kDetaching:
        kind = ActionKind::kAgentDetach;
        break;
      case LeaseStep::kScrubbing:
        kind = ActionKind::kBridgeRelease;
        break;
      case LeaseStep::kAttached:
      default:
        continue;
    }
    Action a = MakeAction(kind, boxes_.at(key.box), now, key, lease.step);
    a.host = hosts_.at(lease.host);
    in_flight_.at(a.id).host_boot = a.host.boot_id;
    a.host_bdf = lease.host_bdf;
    a.allocation = lease.allocation;
    if (kind == ActionKind::kBridgeRelease) a.remove_host_key = !HoldsOtherOn(lease.host, key);
    rt.in_flight = a.id;
    out.push_back(std::move(a));
  }
  for (auto& [key, rt] : cleaning_) {
    if (rt.in_flight || now < rt.next_try_ns) continue;
    Action a = MakeAction(ActionKind::kBridgeRelease, boxes_.at(key.box), now, key, {});
    rt.in_flight = a.id;
    out.push_back(std::move(a));
  }
  return out;
}

uint64_t PoolManager::NextDeadline() const {
  uint64_t next = kNever;
  for (const auto& [id, rt] : box_runtime_) {
    if (!rt.probe_in_flight) next = std::min(next, rt.next_probe_ns);
  }
  for (const GpuRef& key : moving_) {
    const LeaseRecord& lease = leases_.at(key);
    auto rt = lease_runtime_.find(key);
    if (lease.step == LeaseStep::kDetaching) {
      next = std::min(next, lease.updated_ns + options_.detach_timeout_ns);
      auto h = hosts_.find(lease.host);
      if (h != hosts_.end() && h->second.heartbeat_ns != 0 && rt != lease_runtime_.end() &&
          rt->second.failures > 0 && !rt->second.in_flight) {
        // When its agent counts as dead (Liveness), CheckDeadlines takes the GPU back (only
        // once a detach has failed and none is in flight: else that time, once past, would be
        // due forever and the reconciler would spin).
        next = std::min(next, std::max(h->second.registered_ns, opened_ns_) +
                                  kMissedHeartbeats * h->second.heartbeat_ns);
      }
    }
    if (lease.step == LeaseStep::kAttached || rt == lease_runtime_.end() || rt->second.in_flight)
      continue;
    next = std::min(next, rt->second.next_try_ns);
  }
  for (const auto& [key, rt] : cleaning_) {
    if (!rt.in_flight) next = std::min(next, rt.next_try_ns);
  }
  for (uint64_t id : in_progress_) {
    const AllocationRecord& alloc = allocations_.at(id);
    if (alloc.state == AllocationState::kAttaching)
      next = std::min(next, alloc.created_ns + options_.attach_timeout_ns);
  }
  return next;
}

void PoolManager::Backoff(LeaseRuntime& rt, const std::string& error, uint64_t now) {
  rt.failures++;
  rt.last_error = error;
  uint64_t delay = options_.retry_min_ns;
  for (uint32_t i = 1; i < rt.failures && delay < options_.retry_max_ns; ++i) delay *= 2;
  rt.next_try_ns = now + std::min(delay, options_.retry_max_ns);
  counters_.actions_failed++;
}

void PoolManager::Complete(const ActionResult& result, uint64_t now) {
  auto it = in_flight_.find(result.id);
  if (it == in_flight_.end()) return;
  const InFlight flight = it->second;
  in_flight_.erase(it);
  switch (flight.kind) {
    case ActionKind::kBridgeProbe:
      CompleteProbe(flight, result, now);
      return;
    case ActionKind::kBridgeRelease:
      if (!flight.step) {
        CompleteOrphan(flight, result, now);
        return;
      }
      break;
    default:
      break;
  }
  CompleteLease(flight, result, now);
}

void PoolManager::CompleteLease(const InFlight& flight, const ActionResult& result, uint64_t now) {
  auto l = leases_.find(flight.gpu);
  if (l == leases_.end()) return;
  LeaseRuntime& rt = lease_runtime_[flight.gpu];
  rt.in_flight.reset();
  const std::string gpu = GpuName(flight.gpu.box, flight.gpu.device);
  if (result.outcome != ActionOutcome::kDone) {
    std::string error = result.error;
    if (result.busy_owner != 0) error += "; " + WhoHolds(flight.gpu, result.busy_owner);
    spdlog::warn("pool: {} for {}: {} ({})", ActionKindName(flight.kind), gpu,
                 result.outcome == ActionOutcome::kRefused ? "refused" : "no answer", error);
    Backoff(rt, error, now);
    if (auto a = allocations_.find(l->second.allocation); a != allocations_.end())
      a->second.error = fmt::format("{}: {}", gpu, error);
    return;
  }
  // The lease moved on while the step ran (a release came), or the agent restarted since (what
  // it attached is gone with it): the lease's next step runs now.
  const bool agent_step =
      flight.kind == ActionKind::kAgentAttach || flight.kind == ActionKind::kAgentDetach;
  auto host = hosts_.find(l->second.host);
  if (l->second.step != flight.step ||
      (agent_step && (host == hosts_.end() || host->second.boot_id != flight.host_boot))) {
    rt.next_try_ns = now;
    return;
  }
  rt.failures = 0;
  rt.last_error.clear();
  rt.next_try_ns = now;
  const uint64_t allocation = l->second.allocation;
  LeaseRecord next = l->second;
  next.updated_ns = now;
  StoreBatch batch;
  switch (l->second.step) {
    case LeaseStep::kReserved:
      next.step = LeaseStep::kAssigned;
      break;
    case LeaseStep::kAssigned:
      next.step = LeaseStep::kAttached;
      break;
    case LeaseStep::kDetaching:
      next.step = LeaseStep::kScrubbing;
      break;
    case LeaseStep::kScrubbing:
      batch.changes.emplace_back(DeleteLease{flight.gpu.box, flight.gpu.device});
      break;
    case LeaseStep::kAttached:
      return;
  }
  if (batch.empty()) batch.changes.emplace_back(PutLease{std::move(next)});
  if (!Commit(std::move(batch)).ok()) {
    Backoff(rt, "the store refused the change", now);
    return;
  }
  SettleAllocation(allocation, now);
}

std::string PoolManager::WhoHolds(const GpuRef& gpu, uint64_t node) const {
  const std::string name = GpuName(gpu.box, gpu.device);
  for (const auto& [id, host] : hosts_) {
    if (host.node_id != node) continue;
    auto l = leases_.find(gpu);
    if (l != leases_.end() && l->second.host == id) {
      return fmt::format("its bridge has {} assigned to host {} (node {:#x}) of {}", name, id, node,
                         AllocationName(l->second.allocation));
    }
    return fmt::format(
        "its bridge has {} assigned to host {} (node {:#x}) with no allocation "
        "here: an assignment made outside the manager (`dxpu bridge assign`?); "
        "the allocation fails after the attach timeout and its release frees it",
        name, id, node);
  }
  return fmt::format(
      "its bridge has {} assigned to node {:#x}, no host of this pool: an "
      "assignment made outside the manager (`dxpu bridge assign`?); the allocation "
      "fails after the attach timeout and its release frees it",
      name, node);
}

void PoolManager::CompleteOrphan(const InFlight& flight, const ActionResult& result, uint64_t now) {
  auto it = cleaning_.find(flight.gpu);
  if (it == cleaning_.end()) return;
  it->second.in_flight.reset();
  if (result.outcome != ActionOutcome::kDone) {
    Backoff(it->second, result.error, now);
    return;
  }
  spdlog::info("pool: {}: the bridge had it assigned with no allocation here; released",
               GpuName(flight.gpu.box, flight.gpu.device));
  counters_.orphans_released++;
  cleaning_.erase(it);
  RefreshFree(flight.gpu);
}

void PoolManager::CompleteProbe(const InFlight& flight, const ActionResult& result, uint64_t now) {
  auto b = boxes_.find(flight.box);
  auto rt = box_runtime_.find(flight.box);
  if (b == boxes_.end() || rt == box_runtime_.end()) return;
  rt->second.probe_in_flight.reset();
  rt->second.next_probe_ns = now + options_.probe_interval_ns;
  const std::string& box = flight.box;
  if (result.outcome != ActionOutcome::kDone) {
    rt->second.probe_failures++;
    if (b->second.healthy) {
      spdlog::warn("pool: box {} does not answer: {}; its free GPUs are not offered", box,
                   result.error);
      BoxRecord down = b->second;
      down.healthy = false;
      (void)Commit(StoreBatch{{PutBox{std::move(down)}}});
    }
    return;
  }
  rt->second.probe_failures = 0;
  StoreBatch batch;
  BoxRecord up = b->second;
  up.last_seen_ns = now;
  if (!up.healthy || up.fabric_key != result.box_fabric_key) {
    if (!up.healthy) spdlog::info("pool: box {} answers: {} GPUs", box, result.devices.size());
    if (up.fabric_key != result.box_fabric_key)
      spdlog::info("pool: box {}: its bridge's fabric key is {}", box,
                   result.box_fabric_key.empty() ? std::string("none (no identity)")
                                                 : result.box_fabric_key);
    up.healthy = true;
    up.fabric_key = result.box_fabric_key;
    batch.changes.emplace_back(PutBox{up});
  } else {
    b->second.last_seen_ns = now;  // in memory only: not worth a write every probe
  }
  // The inventory: GPUs new, changed or gone.
  std::set<uint16_t> seen;
  for (const ProbedDevice& d : result.devices) {
    seen.insert(d.device);
    const GpuRef key{box, d.device};
    auto g = gpus_.find(key);
    if (g == gpus_.end() || g->second.box_bdf != d.box_bdf || g->second.profile != d.profile ||
        !g->second.present) {
      batch.changes.emplace_back(PutGpu{GpuRecord{box, d.device, d.box_bdf, d.profile, true}});
    }
  }
  for (auto g = gpus_.lower_bound(GpuRef{box, 0}); g != gpus_.end() && g->first.box == box; ++g) {
    if (!seen.contains(g->first.device) && g->second.present) {
      GpuRecord gone = g->second;
      gone.present = false;
      batch.changes.emplace_back(PutGpu{std::move(gone)});
    }
  }
  // Ownership: what the bridge says against what the leases say. A lease that changed since the
  // probe left is not judged by it.
  for (const ProbedDevice& d : result.devices) {
    const GpuRef key{box, d.device};
    auto l = leases_.find(key);
    if (l == leases_.end()) {
      if (d.owner_node != 0 && !cleaning_.contains(key)) {
        spdlog::warn(
            "pool: {} is assigned to node {:#x} on its bridge but to no allocation "
            "here: releasing it",
            GpuName(box, d.device), d.owner_node);
        cleaning_[key].next_try_ns = now;
      }
      continue;
    }
    const LeaseRecord& lease = l->second;
    if (lease.updated_ns > flight.started_ns || !IsBridgeStep(lease.step)) continue;
    auto h = hosts_.find(lease.host);
    const bool owned =
        h != hosts_.end() && d.owner_node == h->second.node_id && d.host_bdf == lease.host_bdf;
    if (owned) continue;
    spdlog::warn("pool: {} is {} to {} but its bridge shows it {}: assigning it again",
                 GpuName(box, d.device), LeaseStepName(lease.step), lease.host,
                 d.owner_node == 0 ? std::string("free (restarted?)")
                                   : fmt::format("owned by node {:#x}", d.owner_node));
    LeaseRecord again = lease;
    again.step = LeaseStep::kReserved;
    again.updated_ns = now;
    batch.changes.emplace_back(PutLease{std::move(again)});
    counters_.bridge_restarts_seen++;
  }
  if (!Commit(std::move(batch)).ok()) return;
  RefreshFreeBox(box);
}

}  // namespace dxpu::manager
