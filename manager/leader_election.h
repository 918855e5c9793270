// leader_election.h - which of the pool's manager replicas leads, decided by etcd with a lease:
// the leader key PREFIX/leader exists while its creator's lease lives, and holds
// {"replica", "url", "epoch"}. A replica wins by creating the key (a transaction that compares
// its creation revision with 0), keeps it by renewing the lease every TTL/3, and loses it when
// the lease expires: at once if it crashes or is cut off, after TTL at most.
//
// A term: the leader key's creation revision, unique and increasing across terms, which every
// write of the term is fenced on (etcd_store.h); and an epoch for the bridges' management fence
// (bridge-fw/management_auth.h): max(the wall clock in ns, the last term's epoch + 1), kept in
// PREFIX/epoch, so a new leader's signed requests are above every older leader's even when the
// clocks disagree, and a bridge refuses an old leader's once it has seen the new one's.
//
// A replica considers itself leader only until the lease could have expired as etcd counts it:
// from the moment its last successful renewal was sent, TTL minus a margin (Valid()).
#ifndef DXPU_MANAGER_LEADER_ELECTION_H_
#define DXPU_MANAGER_LEADER_ELECTION_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "manager/etcd_client.h"
#include "manager/etcd_store.h"

namespace dxpu::manager {

struct LeaderInfo {
  std::string replica;
  std::string url;
  uint64_t epoch = 0;
};

struct ElectionOptions {
  std::string prefix = "/dxpu";
  std::string replica;  // this replica's name
  std::string url;      // where its API is reached, for clients sent here by standbys
  std::chrono::milliseconds ttl{5000};
};

class LeaderElection {
 public:
  using Clock = std::chrono::steady_clock;

  LeaderElection(std::shared_ptr<EtcdClient> etcd, ElectionOptions options);

  struct Outcome {
    bool won = false;
    EtcdTerm term;                     // won: the term
    uint64_t epoch = 0;                // won: its epoch
    std::optional<LeaderInfo> leader;  // lost: who leads (none: nobody right now)
  };
  // One attempt to lead. An error: etcd could not be asked (no quorum, unreachable).
  PoolResult<Outcome> Campaign(uint64_t wall_ns);
  // Renews the term's lease. false: the term is over (the lease expired or is gone).
  PoolResult<bool> Renew();
  // Still leader by the clock: the lease cannot have expired yet. Thread-safe (the term's
  // workers ask it before each step).
  bool Valid(Clock::time_point now) const;
  // Gives the term up (the lease revoked: a successor may win at once). Best effort.
  void Resign();

  // The leader key's value, read back (nullopt: not one written by a replica).
  static std::optional<LeaderInfo> ParseLeader(const std::string& value);

 private:
  void SetValidUntil(Clock::time_point asked);

  std::shared_ptr<EtcdClient> etcd_;
  ElectionOptions options_;
  int64_t lease_ = 0;
  std::atomic<Clock::rep> valid_until_{0};  // Clock ticks; 0: not leading
};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_LEADER_ELECTION_H_
