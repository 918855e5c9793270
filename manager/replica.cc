// replica.cc - a manager replica's terms on etcd (replica.h).
#include "manager/replica.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "bridge-fw/management_auth.h"

namespace dxpu::manager {

namespace {

// The store a term's service writes through, shared with the replica, which ends the term.
class TermStore final : public PoolStore {
 public:
  explicit TermStore(std::shared_ptr<EtcdStore> store) : store_(std::move(store)) {}
  PoolResult<PoolSnapshot> Load() override { return store_->Load(); }
  PoolResult<Done> Apply(const StoreBatch& batch) override { return store_->Apply(batch); }

 private:
  std::shared_ptr<EtcdStore> store_;
};

// The election's calls must all return well within a lease: a renewal that waits on a dead
// member for longer than the lease would let the term run past it.
EtcdClientOptions ElectionClient(EtcdClientOptions etcd, std::chrono::milliseconds ttl) {
  const auto members = static_cast<int>(std::max<size_t>(1, etcd.endpoints.size()));
  etcd.timeout_ms = std::max(100, static_cast<int>(ttl.count()) / (3 * members));
  return etcd;
}

}  // namespace

Replica::Replica(ReplicaOptions options, ServiceSlot& slot)
    : options_(std::move(options)),
      slot_(slot),
      election_etcd_(
          std::make_shared<EtcdClient>(ElectionClient(options_.etcd, options_.election.ttl))),
      store_etcd_(std::make_shared<EtcdClient>(options_.etcd)),
      election_(election_etcd_, options_.election) {
  options_.store.prefix = options_.election.prefix;
}

Replica::~Replica() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Replica::Start() {
  ServingState s;
  s.replica = options_.election.replica;
  s.reason = "starting";
  slot_.Standby(s);
  thread_ = std::thread([this] { Run(); });
}

void Replica::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [this] { return stopping_; });
}

bool Replica::BeginTerm(const LeaderElection::Outcome& won) {
  store_ = std::make_shared<EtcdStore>(store_etcd_, won.term, options_.store);
  ServiceOptions o = options_.service;
  // No step once the term may be over, by this replica's own clock or its store.
  o.may_act = [this, store = store_] {
    return election_.Valid(LeaderElection::Clock::now()) && !store->ended() && !store->uncertain();
  };
  if (!options_.management_key.empty()) {
    std::string error;
    o.signer = bridge::ManagementSigner::FromKeyFile(options_.management_key, won.epoch, &error);
    if (!o.signer) {
      spdlog::error("--management-key: {}", error);
      return false;
    }
  }
  PoolResult<std::unique_ptr<ManagerService>> service =
      ManagerService::Start(std::make_unique<TermStore>(store_), o);
  if (!service.ok()) {
    spdlog::error("term {}: the pool could not be loaded from etcd: {}: {}", won.term.revision,
                  service.error().name, service.error().message);
    return false;
  }
  ServingState s;
  s.replica = options_.election.replica;
  s.leader_replica = options_.election.replica;
  s.leader_url = options_.election.url;
  s.term = won.term.revision;
  s.epoch = won.epoch;
  slot_.Lead(std::shared_ptr<ManagerService>(std::move(service).value()), s);
  spdlog::info("replica {} leads: term {}, management epoch {}", options_.election.replica,
               won.term.revision, won.epoch);
  return true;
}

void Replica::EndTerm(const std::string& why) {
  if (store_) store_->EndTerm();  // no write of this term goes to etcd any more
  ServingState s;
  s.replica = options_.election.replica;
  s.reason = why;
  slot_.Standby(s);  // stops the term's service
  election_.Resign();
  store_.reset();
  spdlog::warn("replica {} no longer leads: {}", options_.election.replica, why);
}

void Replica::Run() {
  const auto ttl = options_.election.ttl;
  const auto renew_every = std::chrono::duration_cast<std::chrono::milliseconds>(ttl / 3);
  bool leading = false;
  std::string last_reason;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    if (!leading) {
      PoolResult<LeaderElection::Outcome> c = election_.Campaign(ManagerService::Now());
      ServingState s;
      s.replica = options_.election.replica;
      if (!c.ok()) {
        s.reason = "no-quorum: " + c.error().message;
      } else if (c.value().won) {
        leading = BeginTerm(c.value());
        if (!leading) {
          EndTerm("the pool could not be loaded from etcd (see the log)");
          SleepFor(renew_every);  // not at once again: another replica may load it
        }
        continue;
      } else if (c.value().leader) {
        s.reason = "standby";
        s.leader_replica = c.value().leader->replica;
        s.leader_url = c.value().leader->url;
      } else {
        s.reason = "an election is in progress";
      }
      if (s.reason != last_reason) {
        spdlog::info("replica {}: {}{}", s.replica, s.reason,
                     s.leader_url.empty() ? "" : " (leader " + s.leader_replica + ")");
        last_reason = s.reason;
      }
      slot_.Standby(s);
      SleepFor(renew_every);
      continue;
    }
    SleepFor(renew_every);
    std::string why;
    PoolResult<bool> renewed = election_.Renew();
    if (!renewed.ok()) {
      if (!election_.Valid(LeaderElection::Clock::now()))
        why = "the leader lease could not be renewed in time: " + renewed.error().message;
    } else if (!renewed.value()) {
      why = "the leader lease expired (another replica may lead now)";
    }
    if (why.empty() && store_->ended())
      why = "etcd refused a write: a newer term has begun (this replica was cut off)";
    if (why.empty() && store_->uncertain())
      why = "a store write's outcome is unknown; the next term reloads the pool from etcd";
    if (why.empty() && !election_.Valid(LeaderElection::Clock::now()))
      why = "the leader lease could not be renewed in time";
    if (!why.empty()) {
      EndTerm(why);
      leading = false;
      last_reason.clear();
    }
  }
  if (leading) EndTerm("stopping");
}

}  // namespace dxpu::manager
