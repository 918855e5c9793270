// etcd_store.cc - the pool's store on etcd (etcd_store.h).
#include "manager/etcd_store.h"

#include <charconv>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "manager/record_codec.h"

namespace dxpu::manager {

namespace {

PoolError Constraint(std::string message) {
  return {ErrorKind::kConflict, "store-constraint", std::move(message)};
}

PoolError Corrupt(std::string_view key, std::string_view problem) {
  return {ErrorKind::kUnavailable, "store-corrupt", fmt::format("etcd key {}: {}", key, problem)};
}

std::string DeviceKey(std::string_view box, uint16_t device) {
  return fmt::format("{}/{:05}", box, device);
}

// The key of each change's record, under PREFIX/pool/.
struct KeyOf {
  std::string operator()(const PutBox& c) const { return "box/" + c.box.id; }
  std::string operator()(const PutGpu& c) const {
    return "gpu/" + DeviceKey(c.gpu.box, c.gpu.device);
  }
  std::string operator()(const PutHost& c) const { return "host/" + c.host.id; }
  std::string operator()(const PutAllocation& c) const {
    return fmt::format("alloc/{:020}", c.allocation.id);
  }
  std::string operator()(const PutLease& c) const {
    return "lease/" + DeviceKey(c.lease.box, c.lease.device);
  }
  std::string operator()(const DeleteLease& c) const {
    return "lease/" + DeviceKey(c.box, c.device);
  }
  std::string operator()(const DeleteGpu& c) const { return "gpu/" + DeviceKey(c.box, c.device); }
  std::string operator()(const DeleteBox& c) const { return "box/" + c.id; }
  std::string operator()(const DeleteHost& c) const { return "host/" + c.id; }
};

// The value a change writes, or nullopt for a delete.
struct ValueOf {
  std::optional<std::string> operator()(const PutBox& c) const { return EncodeRecord(c.box); }
  std::optional<std::string> operator()(const PutGpu& c) const { return EncodeRecord(c.gpu); }
  std::optional<std::string> operator()(const PutHost& c) const { return EncodeRecord(c.host); }
  std::optional<std::string> operator()(const PutAllocation& c) const {
    return EncodeRecord(c.allocation);
  }
  std::optional<std::string> operator()(const PutLease& c) const { return EncodeRecord(c.lease); }
  template <typename Delete>
  std::optional<std::string> operator()([[maybe_unused]] const Delete& change) const {
    return std::nullopt;
  }
};

// The record a key names must be the one its value holds: a value under another record's key
// is a corrupt store, not that record.
bool DeviceKeyIs(std::string_view rest, std::string_view box, uint16_t device) {
  return rest == DeviceKey(box, device);
}

}  // namespace

// Applies changes to the index one by one, checking each constraint as it goes, and undoes
// them all unless Keep() is called.
class EtcdStore::Checker {
 public:
  explicit Checker(Index& index) : x_(index) {}
  Checker(const Checker&) = delete;
  Checker& operator=(const Checker&) = delete;
  ~Checker() {
    if (keep_) return;
    for (size_t i = undo_.size(); i-- > 0;) undo_[i]();  // the latest change first
  }
  void Keep() { keep_ = true; }

  std::optional<PoolError> operator()(const PutBox& c) {
    if (x_.boxes.insert(c.box.id).second) Undo([this, id = c.box.id] { x_.boxes.erase(id); });
    return std::nullopt;
  }
  std::optional<PoolError> operator()(const PutGpu& c) {
    if (!x_.boxes.contains(c.gpu.box))
      return Constraint(
          fmt::format("GPU {}: no box {}", GpuName(c.gpu.box, c.gpu.device), c.gpu.box));
    const GpuKey key{c.gpu.box, c.gpu.device};
    if (x_.gpus.insert(key).second) Undo([this, key] { x_.gpus.erase(key); });
    return std::nullopt;
  }
  std::optional<PoolError> operator()(const PutHost& c) {
    const auto other = x_.node_host.find(c.host.node_id);
    if (other != x_.node_host.end() && other->second != c.host.id) {
      return Constraint(fmt::format("host {}: node ID {:#x} is host {}'s", c.host.id,
                                    c.host.node_id, other->second));
    }
    RemoveHostIndex(c.host.id);
    x_.host_node[c.host.id] = c.host.node_id;
    x_.node_host[c.host.node_id] = c.host.id;
    Undo([this, id = c.host.id, node = c.host.node_id] {
      x_.host_node.erase(id);
      x_.node_host.erase(node);
    });
    return std::nullopt;
  }
  std::optional<PoolError> operator()(const PutAllocation& c) {
    const AllocationRecord& a = c.allocation;
    if (!a.request_key.empty()) {
      const auto other = x_.key_allocation.find(a.request_key);
      if (other != x_.key_allocation.end() && other->second != a.id) {
        return Constraint(fmt::format("{}: request key {} is {}'s", AllocationName(a.id),
                                      a.request_key, AllocationName(other->second)));
      }
    }
    const auto old = x_.allocation_key.find(a.id);
    if (old != x_.allocation_key.end()) {
      const std::string old_key = old->second;
      if (!old_key.empty()) x_.key_allocation.erase(old_key);
      x_.allocation_key.erase(old);
      Undo([this, id = a.id, old_key] {
        x_.allocation_key[id] = old_key;
        if (!old_key.empty()) x_.key_allocation[old_key] = id;
      });
    }
    x_.allocation_key[a.id] = a.request_key;
    if (!a.request_key.empty()) x_.key_allocation[a.request_key] = a.id;
    Undo([this, id = a.id, key = a.request_key] {
      x_.allocation_key.erase(id);
      if (!key.empty()) x_.key_allocation.erase(key);
    });
    return std::nullopt;
  }
  std::optional<PoolError> operator()(const PutLease& c) {
    const LeaseRecord& l = c.lease;
    const GpuKey gpu{l.box, l.device};
    const std::string name = GpuName(l.box, l.device);
    if (!x_.gpus.contains(gpu)) return Constraint(fmt::format("lease of {}: no such GPU", name));
    if (!x_.allocation_key.contains(l.allocation)) {
      return Constraint(
          fmt::format("lease of {}: no allocation {}", name, AllocationName(l.allocation)));
    }
    if (const auto held = x_.leases.find(gpu);
        held != x_.leases.end() && held->second.allocation != l.allocation) {
      return PoolError{
          ErrorKind::kConflict, "gpu-leased",
          fmt::format("GPU {} is leased to {}, not {}", name,
                      AllocationName(held->second.allocation), AllocationName(l.allocation))};
    }
    const auto at = x_.host_bdfs.find({l.host, l.host_bdf});
    if (at != x_.host_bdfs.end() && at->second != gpu) {
      return Constraint(fmt::format("lease of {}: host {} has {} at {:#06x}", name, l.host,
                                    GpuName(at->second.first, at->second.second), l.host_bdf));
    }
    RemoveLeaseIndex(gpu);
    x_.leases[gpu] = LeaseInfo{l.allocation, l.host, l.host_bdf};
    x_.host_bdfs[{l.host, l.host_bdf}] = gpu;
    Undo([this, gpu, host = l.host, bdf = l.host_bdf] {
      x_.leases.erase(gpu);
      x_.host_bdfs.erase({host, bdf});
    });
    return std::nullopt;
  }
  std::optional<PoolError> operator()(const DeleteLease& c) {
    RemoveLeaseIndex({c.box, c.device});
    return std::nullopt;
  }
  std::optional<PoolError> operator()(const DeleteGpu& c) {
    const GpuKey gpu{c.box, c.device};
    if (x_.leases.contains(gpu))
      return Constraint(fmt::format("GPU {} has a lease", GpuName(c.box, c.device)));
    if (x_.gpus.erase(gpu) > 0) Undo([this, gpu] { x_.gpus.insert(gpu); });
    return std::nullopt;
  }
  std::optional<PoolError> operator()(const DeleteBox& c) {
    const auto first = x_.gpus.lower_bound({c.id, 0});
    if (first != x_.gpus.end() && first->first == c.id)
      return Constraint(fmt::format("box {} still has GPUs", c.id));
    if (x_.boxes.erase(c.id) > 0) Undo([this, id = c.id] { x_.boxes.insert(id); });
    return std::nullopt;
  }
  std::optional<PoolError> operator()(const DeleteHost& c) {
    RemoveHostIndex(c.id);
    return std::nullopt;
  }

 private:
  void Undo(std::function<void()> f) { undo_.push_back(std::move(f)); }
  void RemoveHostIndex(const std::string& id) {
    const auto it = x_.host_node.find(id);
    if (it == x_.host_node.end()) return;
    const uint64_t node = it->second;
    x_.host_node.erase(it);
    x_.node_host.erase(node);
    Undo([this, id, node] {
      x_.host_node[id] = node;
      x_.node_host[node] = id;
    });
  }
  void RemoveLeaseIndex(const GpuKey& gpu) {
    const auto it = x_.leases.find(gpu);
    if (it == x_.leases.end()) return;
    const LeaseInfo old = it->second;
    x_.leases.erase(it);
    x_.host_bdfs.erase({old.host, old.host_bdf});
    Undo([this, gpu, old] {
      x_.leases[gpu] = old;
      x_.host_bdfs[{old.host, old.host_bdf}] = gpu;
    });
  }

  Index& x_;
  std::vector<std::function<void()>> undo_;
  bool keep_ = false;
};

EtcdStore::EtcdStore(std::shared_ptr<EtcdClient> etcd, EtcdTerm term, EtcdStoreOptions options)
    : etcd_(std::move(etcd)), term_(std::move(term)), options_(std::move(options)) {}

PoolResult<PoolSnapshot> EtcdStore::Load() {
  const std::string pool = options_.prefix + "/pool/";
  int64_t revision = 0;
  PoolResult<std::vector<EtcdKv>> kvs = etcd_->ReadPrefix(pool, &revision);
  if (!kvs.ok()) return kvs.error();
  PoolSnapshot s;
  for (const EtcdKv& kv : kvs.value()) {
    const std::string_view rest = std::string_view(kv.key).substr(pool.size());
    const size_t slash = rest.find('/');
    const std::string_view kind = rest.substr(0, slash);
    const std::string_view name = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    bool ok = false;
    if (kind == "box") {
      std::optional<BoxRecord> b = DecodeBox(kv.value);
      ok = b && b->id == name;
      if (ok) s.boxes.push_back(std::move(*b));
    } else if (kind == "gpu") {
      std::optional<GpuRecord> g = DecodeGpu(kv.value);
      ok = g && DeviceKeyIs(name, g->box, g->device);
      if (ok) s.gpus.push_back(std::move(*g));
    } else if (kind == "host") {
      std::optional<HostRecord> h = DecodeHost(kv.value);
      ok = h && h->id == name;
      if (ok) s.hosts.push_back(std::move(*h));
    } else if (kind == "alloc") {
      std::optional<AllocationRecord> a = DecodeAllocation(kv.value);
      ok = a && name == fmt::format("{:020}", a->id);
      if (ok) s.allocations.push_back(std::move(*a));
    } else if (kind == "lease") {
      std::optional<LeaseRecord> l = DecodeLease(kv.value);
      ok = l && DeviceKeyIs(name, l->box, l->device);
      if (ok) s.leases.push_back(std::move(*l));
    }
    if (!ok) return Corrupt(kv.key, "not a record of the pool, or not the one its key names");
  }
  // The index, built through the same checks as every batch: a store that breaks its own
  // constraints (written by something else) is refused whole.
  Index index;
  Checker check(index);
  const auto refused = [&](const auto& change) -> std::optional<PoolError> {
    const std::optional<PoolError> bad = check(change);
    if (!bad) return std::nullopt;
    return Corrupt(options_.prefix + "/pool/" + KeyOf{}(change), bad->message);
  };
  for (const BoxRecord& b : s.boxes) {
    if (std::optional<PoolError> bad = refused(PutBox{b})) return *bad;
  }
  for (const GpuRecord& g : s.gpus) {
    if (std::optional<PoolError> bad = refused(PutGpu{g})) return *bad;
  }
  for (const HostRecord& h : s.hosts) {
    if (std::optional<PoolError> bad = refused(PutHost{h})) return *bad;
  }
  for (const AllocationRecord& a : s.allocations) {
    if (std::optional<PoolError> bad = refused(PutAllocation{a})) return *bad;
  }
  for (const LeaseRecord& l : s.leases) {
    if (std::optional<PoolError> bad = refused(PutLease{l})) return *bad;
  }
  check.Keep();
  index_ = std::move(index);
  return s;
}

PoolResult<Done> EtcdStore::Apply(const StoreBatch& batch) {
  if (batch.empty()) return Done{};
  if (ended_.load()) {
    return PoolError{ErrorKind::kUnavailable, "not-leader",
                     fmt::format("this manager's term (leader key revision {}) has ended; "
                                 "nothing was written",
                                 term_.revision)};
  }
  if (uncertain_.load()) {
    return PoolError{ErrorKind::kUnavailable, "store-uncertain",
                     "an earlier change may or may not be in etcd; this term must end and the "
                     "next load what etcd holds"};
  }
  Checker check(index_);
  std::map<std::string, std::optional<std::string>> writes;  // the last change to each key
  for (const StoreChange& c : batch.changes) {
    if (std::optional<PoolError> bad = std::visit(check, c)) return *bad;
    writes[options_.prefix + "/pool/" + std::visit(KeyOf{}, c)] = std::visit(ValueOf{}, c);
  }
  if (static_cast<int64_t>(writes.size()) > options_.max_txn_ops) {
    return PoolError{ErrorKind::kInternal, "store-batch-too-large",
                     fmt::format("a change of {} keys; the etcd cluster takes at most {} in one "
                                 "transaction (raise etcd's --max-txn-ops and this manager's "
                                 "--etcd-max-txn-ops together)",
                                 writes.size(), options_.max_txn_ops)};
  }
  std::vector<EtcdOp> ops;
  ops.reserve(writes.size());
  for (auto& [key, value] : writes) {
    if (value)
      ops.push_back(EtcdOp{EtcdOp::Kind::kPut, key, std::move(*value), 0});
    else
      ops.push_back(EtcdOp{EtcdOp::Kind::kDelete, key, "", 0});
  }
  const std::vector<EtcdCompare> fence = {
      EtcdCompare{term_.leader_key, EtcdCompare::Target::kCreate, term_.revision, ""}};
  PoolResult<EtcdTxnResult> txn = etcd_->Txn(fence, ops, {});
  if (!txn.ok()) {
    if (txn.error().kind == ErrorKind::kUnavailable) {
      uncertain_.store(true);
      return PoolError{ErrorKind::kUnavailable, "store-uncertain",
                       fmt::format("{} (whether etcd took the change is unknown: this term ends "
                                   "and the next loads what etcd holds)",
                                   txn.error().message)};
    }
    return txn.error();  // refused as a request: nothing was applied
  }
  if (!txn.value().succeeded) {
    ended_.store(true);
    return PoolError{ErrorKind::kUnavailable, "not-leader",
                     fmt::format("etcd refused the change: {} is no longer this manager's "
                                 "(term revision {}); another manager leads; nothing was written",
                                 term_.leader_key, term_.revision)};
  }
  check.Keep();
  return Done{};
}

}  // namespace dxpu::manager
