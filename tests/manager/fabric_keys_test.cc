// fabric_keys_test.cc - the pool manager provisions fabric keys (issue 32 item 1): a real
// BridgeBox whose identity lists no hosts, the manager's real core and SQLite store, the
// bridge steps through HandleManagement, and the agent's attach as a real host session (sealed,
// authenticated with the host's key and the bridge key the attach carries). A host with a key
// gets a GPU: its key is set on the bridge before the ASSIGN and the GPU works over the sealed
// session; a rotation (the agent registers a new key) reaches the bridge while the running
// session's workload goes on, and the next session needs the new key; the release removes the
// key, and the host's next HELLO is refused unknown-key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "box_world.h"
#include "bridge-fw/management.h"
#include "core/dxpu_mgmt.h"
#include "crypto/fabric_keys.h"
#include "manager/bridge_steps.h"
#include "manager/pool_manager.h"
#include "manager/sqlite_store.h"

namespace dxpu::test::fabric_keys {
namespace {

using manager::Action;
using manager::ActionKind;
using manager::ActionOutcome;
using manager::ActionResult;

constexpr uint64_t kNode = 0xa1;

class FabricKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bridge::BoxIdentity id;  // no hosts: the manager provisions them
    id.keys = bridge_keys_;
    bridge::BridgeBoxConfig c = OneGpuBoxConfig(id);
    world_ = std::make_unique<BoxWorld>(c, Transport::kMemoryLink);
    char tmpl[] = "/tmp/dxpu-fabric-keys-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto store = manager::SqliteStore::Open(dir_ + "/pool.db");
    ASSERT_TRUE(store.ok()) << store.error().message;
    store_ = std::move(store).value();
    manager::ManagerOptions o;
    o.probe_interval_ns = 200 * manager::kMillisecond;
    auto m = manager::PoolManager::Open(*store_, o, Now());
    ASSERT_TRUE(m.ok()) << m.error().message;
    manager_ = std::move(m).value();
    manager::BoxRecord box;
    box.id = "box-a";
    box.management = "model:box-a";
    box.fabric = "model:box-a";
    ASSERT_TRUE(manager_->AddBox(box, Now()).ok());
    ASSERT_TRUE(Register(first_).ok());
    RunManager();
  }
  void TearDown() override {
    manager_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  uint64_t Now() const { return world_->now(); }

  manager::PoolResult<manager::HostRecord> Register(const crypto::KeyPair& key) {
    manager::HostRecord h;
    h.id = "h1";
    h.node_id = kNode;
    h.agent = "model:h1";
    h.mode = "userspace";
    h.boot_id = "boot-1";
    h.fabric_key = crypto::KeyHex(key.pub);
    return manager_->RegisterHost(h, Now());
  }

  bridge::ManagementReply Exchange(dxpu_mgmt_msg m) {
    std::vector<uint8_t> req(DXPU_MGMT_MAX_MSG);
    size_t len = 0;
    EXPECT_EQ(dxpu_mgmt_encode(&m, req.data(), req.size(), &len), DXPU_MGMT_ERR_OK);
    req.resize(len);
    bridge::ManagementReply reply;
    reply.bytes = bridge::HandleManagement(world_->box(), req, Now(), &counters_);
    EXPECT_EQ(dxpu_mgmt_decode(reply.bytes.data(), reply.bytes.size(), &reply.msg),
              DXPU_MGMT_ERR_OK);
    sent_.push_back(m.type);
    return reply;
  }

  // The agent: an attach opens a session to the bridge with the host's current key and the
  // bridge key the attach carries; done when the device answers over it.
  ActionResult Agent(const Action& a) {
    ActionResult r;
    r.id = a.id;
    if (a.kind == ActionKind::kAgentDetach) return r;
    attach_bridge_key_ = a.box.fabric_key;
    auto bridge_key = crypto::ParseFabricPublicKey(a.box.fabric_key);
    if (!bridge_key.ok()) {
      r.outcome = ActionOutcome::kRefused;
      r.error = "no bridge key in the attach";
      return r;
    }
    session_ = &Session(agent_key_, bridge_key.value());
    if (!session_->established() || !world_->CfgRead(*session_, a.host_bdf, 0)) {
      r.outcome = ActionOutcome::kRefused;
      r.error = "the device does not answer";
    }
    return r;
  }

  TestHost& Session(const crypto::KeyPair& key, const crypto::Key& bridge_public) {
    configs_.push_back(std::make_unique<dxfp_session_config>());
    dxfp_session_config_defaults(configs_.back().get());
    crypto::SetHostAuth(configs_.back().get(), key, bridge_public);
    world_->RunFor(1'000'000);  // each HELLO's timestamp above the one before
    TestHost& h = world_->AddHost(kNode, configs_.back().get());
    h.Connect(Now());
    world_->RunUntil([&] { return h.established(); }, 50'000'000);
    return h;
  }

  // Runs the manager's steps until it settles and a probe has run.
  void RunManager() {
    for (int i = 0; i < 200; ++i) {
      std::vector<Action> actions = manager_->TakeActions(Now());
      for (const Action& a : actions) {
        const bool agent = a.kind == ActionKind::kAgentAttach || a.kind == ActionKind::kAgentDetach;
        ActionResult r =
            agent ? Agent(a)
                  : manager::RunBridgeAction(a, [&](dxpu_mgmt_msg m) { return Exchange(m); });
        manager_->Complete(r, Now());
      }
      if (actions.empty()) {
        if (manager_->Settled() && i > 0) return;
        world_->RunFor(100 * manager::kMillisecond);
      }
    }
  }

  uint64_t UnknownKey() {
    return world_->box().hello_refusals()[static_cast<size_t>(bridge::HelloRefusal::kUnknownKey)];
  }

  crypto::KeyPair bridge_keys_ = crypto::NewKeyPair();
  crypto::KeyPair first_ = crypto::NewKeyPair(), second_ = crypto::NewKeyPair();
  crypto::KeyPair agent_key_ = first_;
  std::unique_ptr<BoxWorld> world_;
  std::string dir_;
  std::unique_ptr<manager::SqliteStore> store_;
  std::unique_ptr<manager::PoolManager> manager_;
  bridge::ManagementCounters counters_;
  std::vector<uint8_t> sent_;
  std::vector<std::unique_ptr<dxfp_session_config>> configs_;
  std::string attach_bridge_key_;
  TestHost* session_ = nullptr;
};

TEST_F(FabricKeysTest, TheManagerLetsAHostInRotatesItsKeyWithoutDroppingItAndRemovesIt) {
  // The manager learned the bridge's key from its inventory, and stored it.
  ASSERT_EQ(manager_->Boxes().size(), 1u);
  EXPECT_EQ(manager_->Boxes()[0].fabric_key, crypto::KeyHex(bridge_keys_.pub));
  EXPECT_EQ(store_->Load().value().boxes[0].fabric_key, crypto::KeyHex(bridge_keys_.pub));
  EXPECT_EQ(world_->box().host_keys(), 0u);  // nothing provisioned before a GPU is given

  manager::AllocationRequest req;
  req.host = "h1";
  req.count = 1;
  auto alloc = manager_->Allocate(req, Now());
  ASSERT_TRUE(alloc.ok()) << alloc.error().message;
  RunManager();
  auto view = manager_->Allocation(alloc.value().record.id);
  ASSERT_TRUE(view.ok());
  ASSERT_EQ(view.value().record.state, manager::AllocationState::kActive)
      << view.value().record.error;
  // The key went to the bridge before the ASSIGN; the attach carried the bridge's key.
  const auto set = std::find(sent_.begin(), sent_.end(), DXPU_MGMT_HOST_KEY_SET);
  const auto assign = std::find(sent_.begin(), sent_.end(), DXPU_MGMT_ASSIGN);
  ASSERT_NE(set, sent_.end());
  ASSERT_NE(assign, sent_.end());
  EXPECT_LT(set - sent_.begin(), assign - sent_.begin());
  EXPECT_EQ(attach_bridge_key_, crypto::KeyHex(bridge_keys_.pub));
  EXPECT_EQ(world_->box().host_keys(), 1u);
  ASSERT_NE(session_, nullptr);
  TestHost& live = *session_;
  ASSERT_TRUE(world_->CfgRead(live, 0x0100, 0).has_value());

  // Rotation: the agent registers a new key. The manager pushes it; the live session works on.
  ASSERT_TRUE(Register(second_).ok());
  RunManager();
  EXPECT_EQ(store_->Load().value().hosts[0].fabric_key, crypto::KeyHex(second_.pub));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(world_->CfgRead(live, 0x0100, 0).has_value()) << i;
  uint64_t refused = UnknownKey();
  TestHost& old_key = Session(first_, bridge_keys_.pub);
  EXPECT_FALSE(old_key.established());  // the next session needs the new key
  EXPECT_GT(UnknownKey(), refused);
  ASSERT_TRUE(world_->CfgRead(live, 0x0100, 0).has_value());
  TestHost& new_key = Session(second_, bridge_keys_.pub);
  ASSERT_TRUE(new_key.established());
  ASSERT_TRUE(world_->CfgRead(new_key, 0x0100, 0).has_value());

  // Release: the host's last GPU on the box: its key is removed; its next HELLO is refused.
  ASSERT_TRUE(manager_->Release(alloc.value().record.id, Now()).ok());
  RunManager();
  EXPECT_EQ(world_->box().host_keys(), 0u);
  EXPECT_NE(std::find(sent_.begin(), sent_.end(), DXPU_MGMT_HOST_KEY_REMOVE), sent_.end());
  refused = UnknownKey();
  TestHost& after = Session(second_, bridge_keys_.pub);
  EXPECT_FALSE(after.established());
  EXPECT_GT(UnknownKey(), refused);
}

// A registration with a key that is not one is refused; none at all is fine.
TEST_F(FabricKeysTest, ABadKeyInARegistrationIsRefused) {
  manager::HostRecord h;
  h.id = "h2";
  h.node_id = 0xa2;
  h.agent = "model:h2";
  h.mode = "kernel";
  h.boot_id = "b";
  h.fabric_key = "not-a-key";
  auto r = manager_->RegisterHost(h, Now());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().name, "bad-fabric-key");
  h.fabric_key = "";
  EXPECT_TRUE(manager_->RegisterHost(h, Now()).ok());
}

}  // namespace
}  // namespace dxpu::test::fabric_keys
