// etcd_store_test.cc - the pool's store on etcd (manager/etcd_store.h) and the replicas'
// election (manager/leader_election.h) against a real etcd started here: what SqliteStore
// promises (every record round trips, a batch is all or nothing, a GPU is never leased twice,
// the constraints), plus what replication adds: a term's writes fenced off once a newer term
// begins, elections by lease with epochs that only grow, a cluster that loses quorum and
// regains it with nothing lost; and the codecs that read etcd's untrusted bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "etcd_cluster.h"
#include "lib/util/base64.h"
#include "manager/etcd_store.h"
#include "manager/leader_election.h"
#include "manager/record_codec.h"

namespace dxpu::manager {
namespace {

using test::EtcdCluster;

std::filesystem::path TempDir(const char* what) {
  std::string tmpl = std::string("/tmp/dxpu-") + what + "-XXXXXX";
  return mkdtemp(tmpl.data());
}

// A small pool: one box with two GPUs, a host, an allocation holding GPU 0.
StoreBatch SmallPool() {
  StoreBatch b;
  b.changes.emplace_back(PutBox{
      BoxRecord{"box-a", "udp:127.0.0.1:1", "udp:127.0.0.1:2", true, 7, std::string(64, 'a')}});
  b.changes.emplace_back(PutGpu{GpuRecord{"box-a", 0, 0x100, "dxgpu", true}});
  b.changes.emplace_back(PutGpu{GpuRecord{"box-a", 1, 0x200, "dxgpu", false}});
  b.changes.emplace_back(PutHost{HostRecord{"h1", 0xa1, "http://127.0.0.1:3", "userspace", "boot-1",
                                            11, 0, std::string(64, 'b')}});
  AllocationRecord a;
  a.id = 1;
  a.host = "h1";
  a.count = 1;
  a.policy = Policy::kSpread;
  a.profile = "dxgpu";
  a.request_key = "key-1";
  a.state = AllocationState::kActive;
  a.error = "none \"quoted\" \n newline";
  a.created_ns = 1;
  a.updated_ns = UINT64_MAX;
  b.changes.emplace_back(PutAllocation{a});
  b.changes.emplace_back(
      PutLease{LeaseRecord{1, "box-a", 0, "h1", 0x0300, LeaseStep::kAttached, 12}});
  return b;
}

class EtcdStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(TempDir("etcd-store"));
    cluster_ = new EtcdCluster(*dir_, 1);
    ASSERT_TRUE(cluster_->Healthy()) << cluster_->LogTails();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    prefix_ = "/t/" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    etcd_ = std::make_shared<EtcdClient>(EtcdClientOptions{cluster_->Endpoints(), {}, 2000});
  }
  // Wins a term for `replica` and gives its store.
  std::unique_ptr<EtcdStore> Lead(LeaderElection& e, int64_t max_txn_ops = 128) {
    PoolResult<LeaderElection::Outcome> won = e.Campaign(1000);
    EXPECT_TRUE(won.ok() && won.value().won);
    if (!won.ok() || !won.value().won) return nullptr;
    return std::make_unique<EtcdStore>(etcd_, won.value().term,
                                       EtcdStoreOptions{prefix_, max_txn_ops});
  }
  LeaderElection Election(const std::string& replica,
                          std::chrono::milliseconds ttl = std::chrono::seconds(5)) {
    return LeaderElection(etcd_, ElectionOptions{prefix_, replica, "http://" + replica, ttl});
  }
  // What etcd holds under the pool's keys, as text.
  std::vector<std::string> Keys() {
    int64_t revision = 0;
    PoolResult<std::vector<EtcdKv>> kvs = etcd_->ReadPrefix(prefix_ + "/pool/", &revision);
    EXPECT_TRUE(kvs.ok());
    std::vector<std::string> keys;
    if (kvs.ok()) {
      for (const EtcdKv& kv : kvs.value()) keys.push_back(kv.key.substr(prefix_.size()));
    }
    return keys;
  }

  static std::filesystem::path* dir_;
  static EtcdCluster* cluster_;
  std::string prefix_;
  std::shared_ptr<EtcdClient> etcd_;
};
std::filesystem::path* EtcdStoreTest::dir_ = nullptr;
EtcdCluster* EtcdStoreTest::cluster_ = nullptr;

TEST_F(EtcdStoreTest, EveryRecordTypeRoundTripsThroughANewTerm) {
  LeaderElection e = Election("r1");
  std::unique_ptr<EtcdStore> store = Lead(e);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->Load().ok());
  ASSERT_TRUE(store->Apply(SmallPool()).ok());
  e.Resign();
  LeaderElection e2 = Election("r2");
  std::unique_ptr<EtcdStore> next = Lead(e2);
  ASSERT_TRUE(next);
  PoolResult<PoolSnapshot> s = next->Load();
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s.value().boxes.size(), 1u);
  EXPECT_EQ(s.value().boxes[0].fabric_key, std::string(64, 'a'));
  EXPECT_EQ(s.value().boxes[0].last_seen_ns, 7u);
  ASSERT_EQ(s.value().gpus.size(), 2u);
  EXPECT_EQ(s.value().gpus[1].box_bdf, 0x200);
  EXPECT_FALSE(s.value().gpus[1].present);
  ASSERT_EQ(s.value().hosts.size(), 1u);
  EXPECT_EQ(s.value().hosts[0].node_id, 0xa1u);
  EXPECT_EQ(s.value().hosts[0].boot_id, "boot-1");
  ASSERT_EQ(s.value().allocations.size(), 1u);
  const AllocationRecord& a = s.value().allocations[0];
  EXPECT_EQ(a.policy, Policy::kSpread);
  EXPECT_EQ(a.state, AllocationState::kActive);
  EXPECT_EQ(a.error, "none \"quoted\" \n newline");
  EXPECT_EQ(a.updated_ns, UINT64_MAX);
  ASSERT_EQ(s.value().leases.size(), 1u);
  EXPECT_EQ(s.value().leases[0].host_bdf, 0x0300);
  EXPECT_EQ(s.value().leases[0].step, LeaseStep::kAttached);
}

TEST_F(EtcdStoreTest, PutReplacesDeleteRemovesAndABatchMayTouchAKeyTwice) {
  LeaderElection e = Election("r1");
  std::unique_ptr<EtcdStore> store = Lead(e);
  ASSERT_TRUE(store && store->Load().ok());
  ASSERT_TRUE(store->Apply(SmallPool()).ok());
  StoreBatch b;  // the lease ends and the allocation is written twice: the last one counts
  b.changes.emplace_back(DeleteLease{"box-a", 0});
  AllocationRecord a = std::get<PutAllocation>(SmallPool().changes[4]).allocation;
  a.state = AllocationState::kReleasing;
  b.changes.emplace_back(PutAllocation{a});
  a.state = AllocationState::kReleased;
  b.changes.emplace_back(PutAllocation{a});
  b.changes.emplace_back(DeleteGpu{"box-a", 1});
  ASSERT_TRUE(store->Apply(b).ok());
  PoolResult<PoolSnapshot> s = store->Load();
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s.value().leases.empty());
  ASSERT_EQ(s.value().allocations.size(), 1u);
  EXPECT_EQ(s.value().allocations[0].state, AllocationState::kReleased);
  EXPECT_EQ(s.value().gpus.size(), 1u);
}

TEST_F(EtcdStoreTest, ABatchWithABadChangeAppliesNothing) {
  LeaderElection e = Election("r1");
  std::unique_ptr<EtcdStore> store = Lead(e);
  ASSERT_TRUE(store && store->Load().ok());
  ASSERT_TRUE(store->Apply(SmallPool()).ok());
  const std::vector<std::string> before = Keys();
  StoreBatch b;
  b.changes.emplace_back(
      PutBox{BoxRecord{"box-b", "udp:127.0.0.1:5", "udp:127.0.0.1:6", false, 0, ""}});
  b.changes.emplace_back(PutGpu{GpuRecord{"box-b", 0, 0x100, "dxgpu", true}});
  b.changes.emplace_back(PutGpu{GpuRecord{"box-zzz", 0, 0x100, "dxgpu", true}});  // no such box
  PoolResult<Done> r = store->Apply(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().name, "store-constraint");
  EXPECT_EQ(Keys(), before);
  // Nor did the refused batch leave anything in the store's own index: box-b is unknown still.
  StoreBatch gpu_only;
  gpu_only.changes.emplace_back(PutGpu{GpuRecord{"box-b", 1, 0x100, "dxgpu", true}});
  EXPECT_FALSE(store->Apply(gpu_only).ok());
}

TEST_F(EtcdStoreTest, TheConstraintsOfTheSqliteSchemaHold) {
  LeaderElection e = Election("r1");
  std::unique_ptr<EtcdStore> store = Lead(e);
  ASSERT_TRUE(store && store->Load().ok());
  ASSERT_TRUE(store->Apply(SmallPool()).ok());
  const auto refused = [&](StoreChange c, const char* name) {
    StoreBatch b;
    b.changes.push_back(std::move(c));
    PoolResult<Done> r = store->Apply(b);
    return !r.ok() && r.error().name == name;
  };
  AllocationRecord two;
  two.id = 2;
  two.host = "h1";
  two.request_key = "key-2";
  StoreBatch b;
  b.changes.emplace_back(PutAllocation{two});
  ASSERT_TRUE(store->Apply(b).ok());
  EXPECT_TRUE(refused(PutLease{LeaseRecord{2, "box-a", 0, "h1", 0x0400, LeaseStep::kReserved, 1}},
                      "gpu-leased"));
  EXPECT_TRUE(refused(PutLease{LeaseRecord{2, "box-a", 1, "h1", 0x0300, LeaseStep::kReserved, 1}},
                      "store-constraint"));  // h1 has box-a/0 at 03:00
  EXPECT_TRUE(refused(PutLease{LeaseRecord{9, "box-a", 1, "h1", 0x0500, LeaseStep::kReserved, 1}},
                      "store-constraint"));  // no allocation 9
  EXPECT_TRUE(refused(PutLease{LeaseRecord{2, "box-a", 7, "h1", 0x0500, LeaseStep::kReserved, 1}},
                      "store-constraint"));  // no GPU 7
  EXPECT_TRUE(refused(PutHost{HostRecord{"h2", 0xa1, "http://x:1", "userspace", "b", 1, 0, ""}},
                      "store-constraint"));  // h1's node ID
  two.request_key = "key-1";
  EXPECT_TRUE(refused(PutAllocation{two}, "store-constraint"));     // allocation 1's request key
  EXPECT_TRUE(refused(DeleteBox{"box-a"}, "store-constraint"));     // it has GPUs
  EXPECT_TRUE(refused(DeleteGpu{"box-a", 0}, "store-constraint"));  // it has a lease
  // The same lease again (its step moved on) is no conflict.
  StoreBatch again;
  again.changes.emplace_back(
      PutLease{LeaseRecord{1, "box-a", 0, "h1", 0x0300, LeaseStep::kDetaching, 13}});
  EXPECT_TRUE(store->Apply(again).ok());
}

TEST_F(EtcdStoreTest, AnOldTermsWritesAreFencedOff) {
  LeaderElection old_leader = Election("old", std::chrono::seconds(2));
  std::unique_ptr<EtcdStore> old_store = Lead(old_leader);
  ASSERT_TRUE(old_store && old_store->Load().ok());
  ASSERT_TRUE(old_store->Apply(SmallPool()).ok());
  // The old leader is cut off: it renews nothing, and its lease runs out.
  LeaderElection next = Election("new", std::chrono::seconds(2));
  std::optional<LeaderElection::Outcome> won;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!won && std::chrono::steady_clock::now() < end) {
    PoolResult<LeaderElection::Outcome> c = next.Campaign(2000);
    ASSERT_TRUE(c.ok());
    if (c.value().won)
      won = c.value();
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(won) << "the cut-off leader's lease never expired";
  PoolResult<bool> renewed = old_leader.Renew();
  EXPECT_TRUE(renewed.ok() && !renewed.value()) << "an expired lease renewed";
  EtcdStore new_store(etcd_, won->term, EtcdStoreOptions{prefix_, 128});
  ASSERT_TRUE(new_store.Load().ok());
  // The old leader, back, writes from its stale view: etcd refuses it.
  StoreBatch stale;
  stale.changes.emplace_back(DeleteLease{"box-a", 0});
  PoolResult<Done> r = old_store->Apply(stale);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().name, "not-leader");
  EXPECT_TRUE(old_store->ended());
  PoolResult<PoolSnapshot> s = new_store.Load();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value().leases.size(), 1u) << "the fenced write reached etcd";
  // The new term writes.
  StoreBatch mine;
  mine.changes.emplace_back(DeleteLease{"box-a", 0});
  EXPECT_TRUE(new_store.Apply(mine).ok());
  EXPECT_GT(won->epoch, 1000u) << "a new term's epoch must pass the old one's (1000)";
}

TEST_F(EtcdStoreTest, ElectionsGiveOneLeaderAndEpochsThatOnlyGrow) {
  LeaderElection a = Election("a");
  LeaderElection b = Election("b");
  PoolResult<LeaderElection::Outcome> first = a.Campaign(5'000);
  ASSERT_TRUE(first.ok() && first.value().won);
  EXPECT_EQ(first.value().epoch, 5'000u);
  PoolResult<LeaderElection::Outcome> second = b.Campaign(9'000);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second.value().won);
  ASSERT_TRUE(second.value().leader.has_value());
  EXPECT_EQ(second.value().leader->replica, "a");
  EXPECT_EQ(second.value().leader->url, "http://a");
  PoolResult<bool> renewed = a.Renew();
  EXPECT_TRUE(renewed.ok() && renewed.value());
  EXPECT_TRUE(a.Valid(LeaderElection::Clock::now()));
  a.Resign();
  EXPECT_FALSE(a.Valid(LeaderElection::Clock::now()));
  // b's clock is behind a's: its epoch is still above a's.
  PoolResult<LeaderElection::Outcome> third = b.Campaign(10);
  ASSERT_TRUE(third.ok() && third.value().won);
  EXPECT_EQ(third.value().epoch, 5'001u);
  EXPECT_GT(third.value().term.revision, first.value().term.revision);
}

TEST_F(EtcdStoreTest, WhatLoadCannotReadIsCorruptNotACrash) {
  LeaderElection e = Election("r1");
  std::unique_ptr<EtcdStore> store = Lead(e);
  ASSERT_TRUE(store && store->Load().ok());
  ASSERT_TRUE(store->Apply(SmallPool()).ok());
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"/pool/box/box-a", "{not json"},
           {"/pool/box/box-a", R"({"id":"box-b","management":"","fabric":"","healthy":true,)"
                               R"("last_seen_ns":0,"fabric_key":""})"},  // another box's record
           {"/pool/gpu/box-a/00000", R"({"box":"box-a","device":70000,"box_bdf":1,)"
                                     R"("profile":"x","present":true})"},
           {"/pool/zzz/1", "{}"}}) {
    SCOPED_TRACE(key + " = " + value);
    ASSERT_TRUE(etcd_->Txn({}, {EtcdOp{EtcdOp::Kind::kPut, prefix_ + key, value, 0}}, {}).ok());
    EtcdStore reader(etcd_, EtcdTerm{prefix_ + "/leader", 0}, EtcdStoreOptions{prefix_, 128});
    PoolResult<PoolSnapshot> s = reader.Load();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().name, "store-corrupt");
    ASSERT_TRUE(store->Apply(SmallPool()).ok());  // put right again
    (void)etcd_->Txn({}, {EtcdOp{EtcdOp::Kind::kDelete, prefix_ + "/pool/zzz/1", "", 0}}, {});
  }
}

TEST_F(EtcdStoreTest, ABatchLargerThanTheClusterTakesIsRefusedWhole) {
  LeaderElection e = Election("r1");
  std::unique_ptr<EtcdStore> store = Lead(e, /*max_txn_ops=*/16);
  ASSERT_TRUE(store && store->Load().ok());
  StoreBatch b;
  b.changes.emplace_back(
      PutBox{BoxRecord{"box-a", "udp:127.0.0.1:1", "udp:127.0.0.1:2", false, 0, ""}});
  for (uint16_t d = 0; d < 16; ++d) b.changes.emplace_back(PutGpu{GpuRecord{"box-a", d, d, "x"}});
  PoolResult<Done> r = store->Apply(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().name, "store-batch-too-large");
  EXPECT_TRUE(Keys().empty());
  EXPECT_FALSE(store->uncertain());
}

// Quorum lost and regained, on a cluster of three of its own.
TEST(EtcdQuorum, WritesStopWithoutQuorumAndResumeWithNothingLost) {
  const std::filesystem::path dir = TempDir("etcd-quorum");
  {
    EtcdCluster cluster(dir, 3);
    ASSERT_TRUE(cluster.Healthy()) << cluster.LogTails();
    auto etcd = std::make_shared<EtcdClient>(EtcdClientOptions{cluster.Endpoints(), {}, 500});
    LeaderElection e(etcd, ElectionOptions{"/q", "r1", "http://r1", std::chrono::seconds(2)});
    PoolResult<LeaderElection::Outcome> won = e.Campaign(1);
    ASSERT_TRUE(won.ok() && won.value().won);
    EtcdStore store(etcd, won.value().term, EtcdStoreOptions{"/q", 128});
    ASSERT_TRUE(store.Load().ok());
    ASSERT_TRUE(store.Apply(SmallPool()).ok());
    cluster.Kill(1);
    cluster.Kill(2);
    StoreBatch b;
    b.changes.emplace_back(DeleteLease{"box-a", 0});
    const auto asked = std::chrono::steady_clock::now();
    PoolResult<Done> r = store.Apply(b);
    EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(10)) << "a hang";
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::kUnavailable);
    EXPECT_EQ(r.error().name, "store-uncertain") << r.error().message;
    EXPECT_TRUE(store.uncertain());
    // The lease cannot be renewed for long: the surviving member may answer a renewal until it
    // finds itself without a quorum (an election timeout, 500 ms here), then none.
    const auto renew_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    bool renewed = true;
    while (renewed && std::chrono::steady_clock::now() < renew_deadline) {
      renewed = e.Renew().ok();
      if (renewed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_FALSE(renewed) << "a lease renewed for 5 s without quorum";
    // Nor may another write go through on this store's term, whatever etcd does.
    EXPECT_FALSE(store.Apply(b).ok());
    cluster.Start(1);
    cluster.Start(2);
    ASSERT_TRUE(cluster.Healthy()) << cluster.LogTails();
    // A new term (the old lease has run out by now, or is revoked) loads the pool whole.
    e.Resign();
    LeaderElection e2(etcd, ElectionOptions{"/q", "r2", "http://r2", std::chrono::seconds(2)});
    std::optional<LeaderElection::Outcome> next;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!next && std::chrono::steady_clock::now() < end) {
      PoolResult<LeaderElection::Outcome> c = e2.Campaign(2);
      if (c.ok() && c.value().won)
        next = c.value();
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ASSERT_TRUE(next);
    EtcdStore again(etcd, next->term, EtcdStoreOptions{"/q", 128});
    PoolResult<PoolSnapshot> s = again.Load();
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s.value().gpus.size(), 2u);
    EXPECT_EQ(s.value().allocations.size(), 1u);
    // The unknown write either landed whole or not at all.
    EXPECT_LE(s.value().leases.size(), 1u);
    EXPECT_TRUE(again.Apply(b).ok());
  }
  std::filesystem::remove_all(dir);
}

TEST(RecordCodec, RefusesWhatIsNotExactlyARecord) {
  const std::string good = EncodeRecord(GpuRecord{"box-a", 3, 0x100, "dxgpu", true});
  ASSERT_TRUE(DecodeGpu(good).has_value());
  EXPECT_EQ(DecodeGpu(good)->device, 3);
  for (const char* bad :
       {"", "[]", "null", "{}",
        R"({"box":"box-a","device":3,"box_bdf":256,"profile":"dxgpu"})",  // a field missing
        R"({"box":"box-a","device":3,"box_bdf":256,"profile":"dxgpu","present":true,"x":1})",
        R"({"box":"box-a","device":-3,"box_bdf":256,"profile":"dxgpu","present":true})",
        R"({"box":"box-a","device":65536,"box_bdf":256,"profile":"dxgpu","present":true})",
        R"({"box":1,"device":3,"box_bdf":256,"profile":"dxgpu","present":true})",
        R"({"box":"box-a","device":3,"box_bdf":256,"profile":"dxgpu","present":"yes"})"}) {
    EXPECT_FALSE(DecodeGpu(bad).has_value()) << bad;
  }
  AllocationRecord a;
  a.id = 5;
  std::string text = EncodeRecord(a);
  ASSERT_TRUE(DecodeAllocation(text).has_value());
  const size_t at = text.find("\"attaching\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "\"sleeping\"");
  EXPECT_FALSE(DecodeAllocation(text).has_value()) << "an unknown state";
}

TEST(Base64, RoundTripsAndRefusesWhatIsNotCanonical) {
  std::mt19937 rng(7);
  for (size_t n = 0; n < 40; ++n) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const std::string text = util::Base64Encode(bytes);
    EXPECT_EQ(text.size() % 4, 0u);
    EXPECT_EQ(util::Base64Decode(text), bytes);
  }
  EXPECT_EQ(util::Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(util::Base64Encode("fo"), "Zm8=");
  for (const char* bad : {"Zm9", "Zm8", "Zm=v", "Zm9v====", "Zm9=", "Zm!v", "Zn==", "=AAA"})
    EXPECT_FALSE(util::Base64Decode(bad).has_value()) << bad;
}

}  // namespace
}  // namespace dxpu::manager
