// replica.h - one of the pool manager's replicas on etcd: a thread that campaigns for the lead
// (leader_election.h), and while it leads runs the pool (ManagerService over an EtcdStore fenced
// on the term) and renews the term; when the term ends - the lease lost, etcd out of reach for
// longer than the lease, a store write whose outcome is unknown, a write fenced off - it stops
// that service, says why, and campaigns again. Each term loads the pool from etcd afresh, so
// what the last leader acknowledged is what the next one starts from.
//
// While etcd has no quorum no replica leads: each answers 503 "not-leader" with the reason, and
// the pool resumes, from what etcd holds, when quorum returns.
#ifndef DXPU_MANAGER_REPLICA_H_
#define DXPU_MANAGER_REPLICA_H_

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "manager/etcd_client.h"
#include "manager/etcd_store.h"
#include "manager/leader_election.h"
#include "manager/manager_service.h"
#include "manager/service_slot.h"

namespace dxpu::manager {

struct ReplicaOptions {
  ElectionOptions election;    // prefix, replica name, API URL, lease TTL
  EtcdClientOptions etcd;      // the members and TLS
  EtcdStoreOptions store;      // its prefix is election.prefix
  ServiceOptions service;      // per term; the signer's epoch is the term's
  std::string management_key;  // the signing key file ("": requests go unsigned)
};

class Replica {
 public:
  Replica(ReplicaOptions options, ServiceSlot& slot);
  ~Replica();  // ends a term it holds (the lease revoked: another replica leads at once)
  Replica(const Replica&) = delete;
  Replica& operator=(const Replica&) = delete;

  void Start();

 private:
  void Run();
  bool BeginTerm(const LeaderElection::Outcome& won);
  void EndTerm(const std::string& why);
  void SleepFor(std::chrono::milliseconds d);

  ReplicaOptions options_;
  ServiceSlot& slot_;
  std::shared_ptr<EtcdClient> election_etcd_;  // its own connection: never behind a store write
  std::shared_ptr<EtcdClient> store_etcd_;
  LeaderElection election_;
  std::shared_ptr<EtcdStore> store_;  // this term's, while leading
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_REPLICA_H_
