// etcd_store.h - the pool manager's replicated store (pool_store.h) on etcd: each record one
// key under PREFIX/pool/, its value the record as JSON (record_codec.h):
//
//   PREFIX/pool/box/<id>              PREFIX/pool/host/<id>
//   PREFIX/pool/gpu/<box>/<device>    PREFIX/pool/alloc/<id, 20 digits>
//   PREFIX/pool/lease/<box>/<device>
//
// A batch is one etcd transaction (all or nothing), its changes merged per key (etcd takes each
// key once per transaction: the last change to a key is the one written). The store's writer is
// the leader of its term (leader_election.h): every transaction compares the leader key's
// creation revision with the term's, so a manager whose term has ended (a partitioned or paused
// old leader) has every write refused by etcd itself: kUnavailable "not-leader" (fencing).
//
// The constraints SqliteStore keeps with SQL are kept here on an index of what the store holds,
// exact because this store is the only writer in its term: a GPU leased to another allocation
// ("gpu-leased"), a second host with the same node ID, a lease at a host_bdf the host already
// has, a lease of a GPU or allocation that is not there, a GPU of a box that is not there,
// deleting a box that still has GPUs or a GPU with a lease, a request key used twice
// ("store-constraint", kConflict). The index changes only when etcd has taken the batch.
//
// An Apply that failed after its transaction was sent (a timeout, a member lost) may or may
// not have been applied: the store then says "store-uncertain" and refuses every later batch;
// its leader must end the term and the next term loads what etcd holds (the old term's
// transaction, if it ever lands, fails its fence compare once the new term has begun).
//
// Errors: kUnavailable "etcd-unavailable" (no member answered: no quorum, or none reachable),
// "not-leader", "store-uncertain", "store-corrupt" (a key or value Load cannot read);
// kConflict "gpu-leased", "store-constraint"; kInternal "store-batch-too-large" (more keys than
// the cluster's --max-txn-ops).
//
// Not thread-safe, like SqliteStore (the manager serializes Load and Apply), except EndTerm.
#ifndef DXPU_MANAGER_ETCD_STORE_H_
#define DXPU_MANAGER_ETCD_STORE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "manager/etcd_client.h"
#include "manager/pool_store.h"

namespace dxpu::manager {

// The term a store writes in: the leader key and its creation revision when this manager won.
struct EtcdTerm {
  std::string leader_key;
  int64_t revision = 0;
};

struct EtcdStoreOptions {
  std::string prefix = "/dxpu";  // the pool's keys are under PREFIX/pool/
  int64_t max_txn_ops = 128;     // the etcd cluster's --max-txn-ops (etcd's default: 128)
};

class EtcdStore final : public PoolStore {
 public:
  EtcdStore(std::shared_ptr<EtcdClient> etcd, EtcdTerm term, EtcdStoreOptions options);

  PoolResult<PoolSnapshot> Load() override;
  PoolResult<Done> Apply(const StoreBatch& batch) override;

  // The term is over (its lease lost or given up): every later Apply is refused at once,
  // without asking etcd. Thread-safe.
  void EndTerm() { ended_.store(true); }
  // The term is over: ended by EndTerm, or a write was fenced off by a newer term.
  bool ended() const { return ended_.load(); }
  // An Apply's outcome could not be known: this term must end (see above). Thread-safe.
  bool uncertain() const { return uncertain_.load(); }

 private:
  using GpuKey = std::pair<std::string, uint16_t>;
  struct LeaseInfo {
    uint64_t allocation = 0;
    std::string host;
    uint16_t host_bdf = 0;
  };
  // What the constraints need of what the store holds.
  struct Index {
    std::set<std::string> boxes;
    std::set<GpuKey> gpus;
    std::map<std::string, uint64_t> host_node;
    std::map<uint64_t, std::string> node_host;
    std::map<uint64_t, std::string> allocation_key;
    std::map<std::string, uint64_t> key_allocation;
    std::map<GpuKey, LeaseInfo> leases;
    std::map<std::pair<std::string, uint16_t>, GpuKey> host_bdfs;
  };
  class Checker;

  std::shared_ptr<EtcdClient> etcd_;
  EtcdTerm term_;
  EtcdStoreOptions options_;
  Index index_;
  std::atomic<bool> ended_{false};
  std::atomic<bool> uncertain_{false};
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_ETCD_STORE_H_
