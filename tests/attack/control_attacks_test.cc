// control_attacks_test.cc - issue 32 item 7, on the bridge's management socket: a local user
// (anyone who can reach the socket) sends state-changing requests unsigned, signed by a key the
// bridge does not trust, and replays a signed request it captured. Each is refused and counted
// by reason; the victim keeps its GPU and its DMA windows, and its workload runs on beside it.
#include <gtest/gtest.h>

#include "attack_scene.h"
#include "bridge_process.h"
#include "management_keys.h"

namespace dxpu::test::attack::control {
namespace {

using ControlAttackTest = AttackScene;

TEST_F(ControlAttackTest, ManagementWithoutCredentialsIsRefusedAndCounted) {
  const link::LinkAddress at = link::LinkAddress::Unix(bridge_.management_path());
  const TestManagementKey stranger = MakeTestManagementKey();
  const double windows = bridge_.Metric("dxpu_bridge_device_dma_windows{device=\"0\"}");
  ASSERT_GT(windows, 0);
  for (const bridge::ManagementClient& attacker :
       {bridge::ManagementClient(at, 1000, 1),
        bridge::ManagementClient(at, 1000, 1, stranger.signer)}) {
    // The victim's GPU taken away and given to the attacker; DMA into all of its host's memory;
    // the bridge rebooted; the second GPU taken.
    EXPECT_EQ(attacker.Release(0).msg.status, DXPU_MGMT_UNAUTHENTICATED);
    EXPECT_EQ(attacker.Assign(0, kHostBdf, kTenantNode).msg.status, DXPU_MGMT_UNAUTHENTICATED);
    EXPECT_EQ(attacker.Grant(0, 0, 0, uint64_t{1} << 40).msg.status, DXPU_MGMT_UNAUTHENTICATED);
    EXPECT_EQ(attacker.RevokeAll(0).msg.status, DXPU_MGMT_UNAUTHENTICATED);
    EXPECT_EQ(attacker.FwReboot().msg.status, DXPU_MGMT_UNAUTHENTICATED);
    EXPECT_EQ(attacker.Assign(1, kHostBdf, kTenantNode).msg.status, DXPU_MGMT_UNAUTHENTICATED);
  }
  // A signed ASSIGN the attacker captured: the manager lent GPU 1 to the tenant and took it
  // back; the capture replayed would lend it again.
  const std::vector<uint8_t> captured =
      SignedAssign(*bridge_.management_key().signer, 1, kTenantNode);
  ASSERT_FALSE(captured.empty());
  ASSERT_EQ(SendManagementDatagram(bridge_.management_path(), captured), DXPU_MGMT_OK);
  ASSERT_TRUE(bridge_.Manager().Release(1).ok());
  EXPECT_EQ(SendManagementDatagram(bridge_.management_path(), captured), DXPU_MGMT_REPLAYED);

  for (const auto& [reason, n] : {std::pair{"unsigned", 6},
                                  {"unknown-key", 6},
                                  {"replayed", 1},
                                  {"bad-signature", 0},
                                  {"stale-epoch", 0}}) {
    EXPECT_EQ(bridge_.Metric(std::string("dxpu_bridge_management_auth_refused_total{reason=\"") +
                             reason + "\"}"),
              n)
        << reason;
  }
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_management_unsigned_accepted_total"), 0);
  // Nothing changed: the victim's GPU and windows as lent, GPU 1 free, the bridge not rebooted.
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_device_dma_windows{device=\"0\"}"), windows);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_device_assigned{device=\"1\",box_bdf=\"02:00.0\","
                           "profile=\"dxgpu\"}"),
            0);
  EXPECT_TRUE(bridge_.process().Alive());
  const bridge::ManagementReply status = bridge_.Manager().Status();
  ASSERT_TRUE(status.ok());
  dxpu_mgmt_device_entry e{};
  ASSERT_TRUE(dxpu_mgmt_status_entry(&status.msg.body.status_report, 0, &e));
  EXPECT_EQ(e.owner, kVictimNode);
  ExpectVictimUnharmed();
}

}  // namespace
}  // namespace dxpu::test::attack::control
