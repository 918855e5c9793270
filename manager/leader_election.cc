// leader_election.cc - the manager replicas' election by etcd lease (leader_election.h).
#include "manager/leader_election.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

namespace dxpu::manager {

namespace {

using nlohmann::json;

// How much earlier than etcd could expire the lease a leader stops counting itself leader:
// clock rates differ a little, and etcd starts counting when the renewal arrives.
constexpr double kValidFraction = 0.8;

std::optional<uint64_t> ParseEpoch(const std::string& text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

LeaderElection::LeaderElection(std::shared_ptr<EtcdClient> etcd, ElectionOptions options)
    : etcd_(std::move(etcd)), options_(std::move(options)) {}

std::optional<LeaderInfo> LeaderElection::ParseLeader(const std::string& value) {
  const json j = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("replica") || !j["replica"].is_string() || !j.contains("url") ||
      !j["url"].is_string() || !j.contains("epoch") || !j["epoch"].is_number_unsigned()) {
    return std::nullopt;
  }
  return LeaderInfo{j["replica"].get<std::string>(), j["url"].get<std::string>(),
                    j["epoch"].get<uint64_t>()};
}

PoolResult<LeaderElection::Outcome> LeaderElection::Campaign(uint64_t wall_ns) {
  const std::string leader_key = options_.prefix + "/leader";
  const std::string epoch_key = options_.prefix + "/epoch";
  Outcome out;
  // Who leads now (a cheap read: standbys ask often).
  PoolResult<std::optional<EtcdKv>> leader = etcd_->Get(leader_key);
  if (!leader.ok()) return leader.error();
  if (leader.value()) {
    out.leader = ParseLeader(leader.value()->value);
    return out;
  }
  PoolResult<std::optional<EtcdKv>> last = etcd_->Get(epoch_key);
  if (!last.ok()) return last.error();
  uint64_t epoch = wall_ns;
  int64_t last_mod = 0;
  if (last.value()) {
    const std::optional<uint64_t> e = ParseEpoch(last.value()->value);
    if (!e) {
      return PoolError{ErrorKind::kUnavailable, "store-corrupt",
                       fmt::format("etcd key {} is not an epoch", epoch_key)};
    }
    epoch = std::max(wall_ns, *e + 1);
    last_mod = last.value()->mod_revision;
  }
  const auto ttl_s =
      std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(options_.ttl).count());
  const Clock::time_point asked = Clock::now();
  PoolResult<int64_t> lease = etcd_->GrantLease(ttl_s);
  if (!lease.ok()) return lease.error();
  const std::string value =
      json{{"replica", options_.replica}, {"url", options_.url}, {"epoch", epoch}}.dump();
  PoolResult<EtcdTxnResult> txn =
      etcd_->Txn({EtcdCompare{leader_key, EtcdCompare::Target::kCreate, 0, ""},
                  EtcdCompare{epoch_key, EtcdCompare::Target::kMod, last_mod, ""}},
                 {EtcdOp{EtcdOp::Kind::kPut, leader_key, value, lease.value()},
                  EtcdOp{EtcdOp::Kind::kPut, epoch_key, std::to_string(epoch), 0}},
                 {EtcdOp{EtcdOp::Kind::kGet, leader_key, "", 0}});
  if (!txn.ok()) {
    (void)etcd_->Revoke(lease.value());
    return txn.error();
  }
  if (!txn.value().succeeded) {
    (void)etcd_->Revoke(lease.value());
    if (!txn.value().reads.empty() && txn.value().reads.front())
      out.leader = ParseLeader(txn.value().reads.front()->value);
    return out;
  }
  lease_ = lease.value();
  SetValidUntil(asked);
  out.won = true;
  out.term = EtcdTerm{leader_key, txn.value().revision};
  out.epoch = epoch;
  return out;
}

PoolResult<bool> LeaderElection::Renew() {
  if (lease_ == 0) return false;
  const Clock::time_point asked = Clock::now();
  PoolResult<int64_t> ttl = etcd_->KeepAlive(lease_);
  if (!ttl.ok()) return ttl.error();
  if (ttl.value() <= 0) {
    lease_ = 0;
    valid_until_.store(0);
    return false;
  }
  SetValidUntil(asked);
  return true;
}

bool LeaderElection::Valid(Clock::time_point now) const {
  return now.time_since_epoch().count() < valid_until_.load();
}

void LeaderElection::SetValidUntil(Clock::time_point asked) {
  const auto until =
      asked + std::chrono::duration_cast<Clock::duration>(options_.ttl * kValidFraction);
  valid_until_.store(until.time_since_epoch().count());
}

void LeaderElection::Resign() {
  if (lease_ == 0) return;
  if (PoolResult<Done> r = etcd_->Revoke(lease_); !r.ok())
    spdlog::warn("giving up the leader lease: {} (it expires by itself)", r.error().message);
  lease_ = 0;
  valid_until_.store(0);
}

}  // namespace dxpu::manager
