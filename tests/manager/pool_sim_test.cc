// pool_sim_test.cc - the pool manager in the deterministic simulator: real BridgeBoxes (their
// management messages through HandleManagement), the manager's real SQLite store, model hosts,
// a virtual clock and seeded step latencies. A scripted scene (three hosts, two boxes,
// allocations that span boxes, releases, a host that takes what another gave back) is run
// once to count its events, then again with the manager, a bridge or an agent crashed at every
// event in turn; each run must end with the invariants of docs/manager.md:
//   - no GPU owned by two hosts (on its bridge, and by the leases);
//   - every active allocation's GPUs owned by its host on their bridges and attached there;
//   - every GPU of a released allocation back in the pool: free on its bridge, scrubbed, and
//     offered again; none lost (free + leased = all).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bridge-fw/bridge_box.h"
#include "bridge-fw/management.h"
#include "core/dxpu_mgmt.h"
#include "gpu/device_profile.h"
#include "manager/bridge_steps.h"
#include "manager/pool_manager.h"
#include "manager/sqlite_store.h"

namespace dxpu::manager {
namespace {

constexpr uint16_t kGpusPerBox = 4;

std::unique_ptr<bridge::BridgeBox> MakeBox(uint64_t node, const std::string& profile) {
  bridge::BridgeBoxConfig c;
  c.node_id = node;
  for (uint16_t i = 0; i < kGpusPerBox; ++i) {
    bridge::BoxDeviceConfig d;
    d.profile = *gpu::FindProfile(profile);
    d.box_bdf = static_cast<uint16_t>(0x0100 + (i << 8));
    d.memory_bytes = 64 << 10;
    c.devices.push_back(d);
  }
  std::string error;
  auto box = bridge::BridgeBox::Create(c, &error);
  EXPECT_NE(box, nullptr) << error;
  return box;
}

// A host as the manager sees it through its agent: attach succeeds only if the bridge presents
// the device to this host's node at that BDF (a real hot-add reads its IDs over the fabric and
// gets UR otherwise); a restart forgets everything and registers with a new boot ID.
struct ModelHost {
  HostRecord record;
  std::set<GpuRef> attached;
  bool up = true;
  uint32_t boots = 1;
};

struct Pending {
  uint64_t at = 0;
  uint64_t seq = 0;
  ActionResult result;
  bool operator>(const Pending& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

enum class Crash { kNone, kManager, kBridge, kAgent };

class PoolWorld {
 public:
  explicit PoolWorld(uint64_t seed) : rng_(seed) {
    char tmpl[] = "/tmp/dxpu-pool-sim-XXXXXX";
    dir_ = mkdtemp(tmpl);
    boxes_["box-a"] = MakeBox(0xb0a, "dxgpu");
    boxes_["box-b"] = MakeBox(0xb0b, "dxgpu");
    for (const char* h : {"h1", "h2", "h3"}) {
      ModelHost m;
      m.record.id = h;
      m.record.node_id = 0xa0 + hosts_.size() + 1;
      m.record.agent = std::string("model:") + h;
      m.record.mode = "userspace";
      m.record.boot_id = "boot-1";
      hosts_[h] = m;
    }
    OpenManager();
    for (const auto& [id, box] : boxes_) {
      BoxRecord b;
      b.id = id;
      b.management = "model:" + id;
      b.fabric = "model:" + id;
      EXPECT_TRUE(manager_->AddBox(b, now_).ok());
    }
    for (const auto& [id, h] : hosts_) EXPECT_TRUE(manager_->RegisterHost(h.record, now_).ok());
  }
  ~PoolWorld() {
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void OpenManager() {
    manager_.reset();
    store_.reset();
    auto store = SqliteStore::Open(dir_ + "/pool.db");
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(store).value();
    ManagerOptions o;
    o.probe_interval_ns = 500 * kMillisecond;
    o.attach_timeout_ns = 20 * kSecond;
    o.detach_timeout_ns = 5 * kSecond;
    auto m = PoolManager::Open(*store_, o, now_);
    ASSERT_TRUE(m.ok()) << m.error().message;
    manager_ = std::move(m).value();
  }

  // One event of the run: deliver a result, or start what is due, or let time pass.
  // False when nothing is left to do before `until`.
  bool Step(uint64_t until) {
    std::vector<Action> actions = manager_->TakeActions(now_);
    if (!actions.empty()) {
      if (Event()) return true;  // crashed after deciding, before anything ran
      for (const Action& a : actions) Run(a);
      return true;
    }
    const uint64_t next =
        std::min(pending_.empty() ? UINT64_MAX : pending_.top().at, manager_->NextDeadline());
    if (next > until) return false;
    now_ = std::max(now_, next);
    if (!pending_.empty() && pending_.top().at <= now_) {
      Pending p = pending_.top();
      pending_.pop();
      manager_->Complete(p.result, now_);
      Event();
    }
    return true;
  }

  // Runs until the manager settles (and the probes have looked at every box since).
  bool Settle(uint64_t limit_ns = 120 * kSecond) {
    const uint64_t end = now_ + limit_ns;
    const uint64_t start = now_;
    while (now_ < end) {
      if (!Step(end)) now_ = end;
      // Settled, and at least four probe rounds since the start and since the last crash: a
      // restarted bridge is noticed by a probe, not at once.
      const uint64_t quiet_from = std::max(start, crashed_ns_) + 2 * kSecond;
      if (now_ >= quiet_from && manager_->Settled() && pending_.empty()) return true;
    }
    return false;
  }

  // Counts an event; at the chosen one, crashes what the run asked for. True if the manager
  // crashed (what it was about to do is lost).
  bool Event() {
    ++events_;
    if (events_ != crash_at_) return false;
    crashed_ns_ = now_;
    switch (crash_) {
      case Crash::kManager:
        // Everything in flight is lost with it; what the bridges and agents did stays done.
        pending_ = {};
        OpenManager();
        return true;
      case Crash::kBridge: {
        const std::string victim = "box-a";
        boxes_[victim] = MakeBox(0xb0a, "dxgpu");  // a restarted bridge: no owners, memory fresh
        for (auto& [id, h] : hosts_) {
          for (auto it = h.attached.begin(); it != h.attached.end();) {
            it = it->box == victim ? h.attached.erase(it) : std::next(it);  // surprise removal
          }
        }
        return false;
      }
      case Crash::kAgent: {
        ModelHost& h = hosts_["h1"];
        h.attached.clear();
        h.record.boot_id = "boot-" + std::to_string(++h.boots);
        // The agent registers again when it comes back.
        EXPECT_TRUE(manager_->RegisterHost(h.record, now_).ok());
        return false;
      }
      case Crash::kNone:
        return false;
    }
    return false;
  }

  void Run(const Action& a) {
    ActionResult r;
    switch (a.kind) {
      case ActionKind::kAgentAttach:
      case ActionKind::kAgentDetach:
        r = RunAgent(a);
        break;
      default: {
        bridge::BridgeBox& box = *boxes_.at(a.box.id);
        r = RunBridgeAction(a, [&](dxpu_mgmt_msg m) { return Exchange(box, m); });
        break;
      }
    }
    std::uniform_int_distribution<uint64_t> latency(10'000, 2'000'000);
    pending_.push(Pending{now_ + latency(rng_), seq_++, std::move(r)});
  }

  bridge::ManagementReply Exchange(bridge::BridgeBox& box, dxpu_mgmt_msg m) {
    m.request_id = static_cast<uint32_t>(seq_);
    std::vector<uint8_t> req(256);
    size_t len = 0;
    EXPECT_EQ(dxpu_mgmt_encode(&m, req.data(), req.size(), &len), DXPU_MGMT_ERR_OK);
    req.resize(len);
    bridge::ManagementReply reply;
    reply.bytes = bridge::HandleManagement(box, req, now_, &mgmt_counters_);
    EXPECT_EQ(dxpu_mgmt_decode(reply.bytes.data(), reply.bytes.size(), &reply.msg),
              DXPU_MGMT_ERR_OK);
    return reply;
  }

  ActionResult RunAgent(const Action& a) {
    ActionResult r;
    r.id = a.id;
    ModelHost& h = hosts_.at(a.host.id);
    const GpuRef gpu{a.box.id, a.device};
    if (!h.up) {
      r.outcome = ActionOutcome::kUnreachable;
      r.error = "no answer (the agent is gone)";
      return r;
    }
    if (a.kind == ActionKind::kAgentDetach) {
      h.attached.erase(gpu);
      return r;
    }
    for (const bridge::DeviceStatus& d : boxes_.at(a.box.id)->Devices()) {
      if (d.index == a.device && d.owner_node == h.record.node_id && d.host_bdf == a.host_bdf) {
        h.attached.insert(gpu);
        return r;
      }
    }
    r.outcome = ActionOutcome::kRefused;
    r.error = "no device answers at that BDF";
    return r;
  }

  // The invariants, once settled.
  void Check(const std::string& when) {
    SCOPED_TRACE(when);
    std::map<GpuRef, const LeaseRecord*> leases;
    std::vector<AllocationView> allocs = manager_->Allocations();
    for (const AllocationView& v : allocs) {
      for (const LeaseRecord& l : v.leases) {
        const GpuRef g{l.box, l.device};
        EXPECT_FALSE(leases.contains(g)) << GpuName(l.box, l.device) << " leased twice";
        leases[g] = &l;
      }
      if (v.record.state == AllocationState::kActive) {
        EXPECT_EQ(v.leases.size(), v.record.count) << AllocationName(v.record.id);
      } else {
        EXPECT_TRUE(v.record.state == AllocationState::kReleased ||
                    v.record.state == AllocationState::kFailed)
            << AllocationName(v.record.id) << " " << AllocationStateName(v.record.state);
        EXPECT_TRUE(v.leases.empty()) << AllocationName(v.record.id);
      }
    }
    size_t gpus = 0;
    for (const auto& [id, box] : boxes_) {
      for (const bridge::DeviceStatus& d : box->Devices()) {
        ++gpus;
        const GpuRef g{id, d.index};
        auto l = leases.find(g);
        if (l == leases.end()) {
          EXPECT_EQ(d.owner_node, 0u) << GpuName(id, d.index) << " owned with no lease";
          continue;
        }
        const ModelHost& h = hosts_.at(l->second->host);
        EXPECT_EQ(l->second->step, LeaseStep::kAttached) << GpuName(id, d.index);
        EXPECT_EQ(d.owner_node, h.record.node_id) << GpuName(id, d.index);
        EXPECT_EQ(d.host_bdf, l->second->host_bdf) << GpuName(id, d.index);
        EXPECT_TRUE(h.attached.contains(g)) << GpuName(id, d.index) << " not attached";
      }
    }
    for (const auto& [id, h] : hosts_) {
      for (const GpuRef& g : h.attached) {
        auto l = leases.find(g);
        EXPECT_TRUE(l != leases.end() && l->second->host == id)
            << id << " still has " << GpuName(g.box, g.device);
      }
    }
    const PoolSummary s = manager_->Summary();
    EXPECT_EQ(s.gpus, gpus);
    EXPECT_EQ(s.gpus_free + leases.size(), gpus) << "a GPU left the pool";
  }

  PoolManager& manager() { return *manager_; }
  uint64_t now() const { return now_; }
  uint64_t events() const { return events_; }
  bridge::BridgeBox& box(const std::string& id) { return *boxes_.at(id); }
  ModelHost& host(const std::string& id) { return hosts_.at(id); }
  void CrashAt(Crash what, uint64_t event) {
    crash_ = what;
    crash_at_ = event;
  }

 private:
  std::mt19937_64 rng_;
  std::string dir_;
  uint64_t now_ = 1'000 * kSecond;
  std::map<std::string, std::unique_ptr<bridge::BridgeBox>> boxes_;
  std::map<std::string, ModelHost> hosts_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<PoolManager> manager_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending_;
  bridge::ManagementCounters mgmt_counters_;
  uint64_t seq_ = 1;
  uint64_t events_ = 0;
  uint64_t crash_at_ = 0;
  uint64_t crashed_ns_ = 0;
  Crash crash_ = Crash::kNone;
};

uint64_t Allocate(PoolWorld& w, const std::string& host, uint32_t count, Policy policy,
                  const std::string& prefer = "") {
  AllocationRequest r;
  r.host = host;
  r.count = count;
  r.policy = policy;
  r.prefer_box = prefer;
  PoolResult<AllocationView> v = w.manager().Allocate(r, w.now());
  EXPECT_TRUE(v.ok()) << v.error().name << ": " << v.error().message;
  return v.ok() ? v.value().record.id : 0;
}

// The scene: h1 takes 3 (packed), h2 takes 3 (spread over both boxes), h1 gives its back and
// h3 takes 4 preferring box-b, then h2 gives its back. Each settles before the next.
void Scene(PoolWorld& w) {
  ASSERT_TRUE(w.Settle()) << "the boxes' first probes";
  const uint64_t a1 = Allocate(w, "h1", 3, Policy::kPack);
  ASSERT_TRUE(w.Settle());
  const uint64_t a2 = Allocate(w, "h2", 3, Policy::kSpread);
  ASSERT_TRUE(w.Settle());
  w.Check("after two allocations");
  // The manager may have restarted since: look the allocations up by ID.
  ASSERT_TRUE(w.manager().Release(a1, w.now()).ok());
  ASSERT_TRUE(w.Settle());
  const uint64_t a3 = Allocate(w, "h3", 4, Policy::kPrefer, "box-b");
  ASSERT_TRUE(w.Settle());
  w.Check("after h3 took what h1 gave back");
  ASSERT_TRUE(w.manager().Release(a2, w.now()).ok());
  ASSERT_TRUE(w.Settle());
  w.Check("at the end");
  EXPECT_NE(a3, 0u);
}

TEST(PoolSimTest, SceneWithoutFaultsEndsWithEveryInvariant) {
  PoolWorld w(1);
  Scene(w);
  // h1 gave back 3, h2 gave back 3; h3 holds 4: the pool has 4 of 8 free, and the released
  // GPUs were scrubbed by their bridges.
  const PoolSummary s = w.manager().Summary();
  EXPECT_EQ(s.gpus, 8u);
  EXPECT_EQ(s.gpus_free, 4u);
  EXPECT_EQ(s.allocations_active, 1u);
  uint64_t resets = 0;
  for (const char* b : {"box-a", "box-b"}) {
    for (const bridge::DeviceStatus& d : w.box(b).Devices()) resets += d.resets;
  }
  EXPECT_EQ(resets, 6u) << "each released GPU reset and scrubbed once";
  EXPECT_GT(w.events(), 40u);
}

TEST(PoolSimTest, AllocationsFollowTheirPolicy) {
  PoolWorld w(2);
  ASSERT_TRUE(w.Settle());
  const uint64_t packed = Allocate(w, "h1", 2, Policy::kPack);
  const uint64_t spread = Allocate(w, "h2", 2, Policy::kSpread);
  ASSERT_TRUE(w.Settle());
  auto boxes_of = [&](uint64_t id) {
    std::set<std::string> boxes;
    const AllocationView v = w.manager().Allocation(id).value();
    for (const LeaseRecord& l : v.leases) boxes.insert(l.box);
    return boxes;
  };
  EXPECT_EQ(boxes_of(packed).size(), 1u);
  EXPECT_EQ(boxes_of(spread).size(), 2u);
  // Packed onto one box (best fit, a tie: the first), spread over both: 1 GPU is left on the
  // packed box and 3 on the other. Preferring the packed box takes its one, the rest elsewhere.
  const std::string full = *boxes_of(packed).begin();
  const uint64_t preferred = Allocate(w, "h3", 3, Policy::kPrefer, full);
  ASSERT_TRUE(w.Settle());
  std::map<std::string, int> per_box;
  const AllocationView pv = w.manager().Allocation(preferred).value();
  for (const LeaseRecord& l : pv.leases) per_box[l.box]++;
  EXPECT_EQ(per_box[full], 1);
  EXPECT_EQ(per_box.size(), 2u);
  // One is left: a request for two is refused with the counts, and the pool is unchanged.
  AllocationRequest more{"h1", 2, Policy::kPack, "", "", ""};
  PoolResult<AllocationView> refused = w.manager().Allocate(more, w.now());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().name, "insufficient-gpus");
  EXPECT_EQ(w.manager().Allocations().size(), 3u);
  EXPECT_EQ(w.manager().Summary().gpus_free, 1u);
  w.Check("after the refusal");
}

// An ASSIGN refused device-busy (the bridge has the GPU assigned to another node, done outside
// the manager after its probe saw the GPU free): the allocation's error names who holds it, a
// host of the pool by its name, or a node no host of the pool has.
TEST(PoolSimTest, DeviceBusySaysWhoHoldsTheGpu) {
  for (const auto& [node, holder] :
       {std::pair<uint64_t, std::string>{0xa2, "assigned to host h2 (node 0xa2)"},
        std::pair<uint64_t, std::string>{0x77, "assigned to node 0x77, no host of this pool"}}) {
    SCOPED_TRACE(holder);
    PoolWorld w(3);
    ASSERT_TRUE(w.Settle());
    ASSERT_EQ(w.box("box-a").Assign(0, node, 0x0900), bridge::ManageResult::kOk);
    const uint64_t id = Allocate(w, "h1", 4, Policy::kPrefer, "box-a");
    ASSERT_NE(id, 0u);
    EXPECT_FALSE(w.Settle(300 * kMillisecond)) << "box-a/0 cannot be assigned to h1";
    const std::string error = w.manager().Allocation(id).value().record.error;
    EXPECT_NE(error.find("ASSIGN on box-a"), std::string::npos) << error;
    EXPECT_NE(error.find("its bridge has box-a/0 " + holder), std::string::npos) << error;
  }
}

// A host whose agent said a 1 s heartbeat and then went silent is dead after 3 s: it gets no
// new GPUs, and its release does not wait out the detach timeout (5 s here): one detach that
// gets no answer, then its bridge takes the GPUs back. (With the dead time in NextDeadline while
// that detach was in flight, the reconciler's next deadline stayed in the past: this run spun
// without advancing its clock and never ended.)
TEST(PoolSimTest, DeadAgentsGpusGoBackWithoutTheDetachTimeout) {
  PoolWorld w(4);
  ASSERT_TRUE(w.Settle());
  HostRecord h1 = w.host("h1").record;
  h1.heartbeat_ns = kSecond;
  const uint64_t seen = w.now();
  ASSERT_TRUE(w.manager().RegisterHost(h1, seen).ok());
  const uint64_t id = Allocate(w, "h1", 2, Policy::kPack);
  ASSERT_TRUE(w.Settle());
  ASSERT_EQ(w.manager().Allocation(id).value().record.state, AllocationState::kActive);
  w.host("h1").up = false;        // its agent dies: no heartbeat, no answer, and (userspace mode)
  w.host("h1").attached.clear();  // what it had attached went with it
  ASSERT_TRUE(w.Settle());
  ASSERT_GE(w.now(), seen + 3 * kSecond);
  EXPECT_FALSE(w.manager().Liveness(w.manager().Host("h1").value(), w.now()).alive);
  AllocationRequest more{"h1", 1, Policy::kPack, "", "", ""};
  PoolResult<AllocationView> refused = w.manager().Allocate(more, w.now());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().name, "host-dead");
  const uint64_t released = w.now();
  ASSERT_TRUE(w.manager().Release(id, released).ok());
  ASSERT_TRUE(w.Settle(10 * kSecond));
  const AllocationRecord a = w.manager().Allocation(id).value().record;
  EXPECT_EQ(a.state, AllocationState::kReleased);
  EXPECT_LT(a.updated_ns, released + 500 * kMillisecond)
      << "released " << (a.updated_ns - released) / kMillisecond << " ms after the release";
  EXPECT_EQ(w.manager().counters().detach_timeouts, 0u);
  w.Check("after the dead host's release");
}

// Runs the scene with `what` crashed at each event in turn (every `stride`-th, to bound the
// time), checking the invariants at the end of each.
void CrashEverywhere(Crash what, uint64_t stride) {
  PoolWorld clean(7);
  Scene(clean);
  const uint64_t total = clean.events();
  ASSERT_GT(total, 40u);
  size_t runs = 0;
  for (uint64_t at = 1; at <= total; at += stride) {
    SCOPED_TRACE("crash at event " + std::to_string(at) + " of " + std::to_string(total));
    PoolWorld w(7);
    w.CrashAt(what, at);
    Scene(w);
    ++runs;
    if (::testing::Test::HasFailure()) break;  // the first failing event is the one to read
  }
  EXPECT_GE(runs, total / stride);
}

TEST(PoolSimTest, ManagerCrashAtEveryEventKeepsTheInvariants) {
  CrashEverywhere(Crash::kManager, 1);
}
TEST(PoolSimTest, BridgeCrashAtEveryEventKeepsTheInvariants) { CrashEverywhere(Crash::kBridge, 1); }
TEST(PoolSimTest, AgentCrashAtEveryEventKeepsTheInvariants) { CrashEverywhere(Crash::kAgent, 1); }

}  // namespace
}  // namespace dxpu::manager
