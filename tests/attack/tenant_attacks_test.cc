// tenant_attacks_test.cc - issue 32 item 7, from a second tenant: a legitimate host of the same
// bridge with a GPU of its own, which programs that GPU to DMA outside the windows it was
// granted, and which tries to read what the GPU's previous tenant left in its memory. The
// victim's workload runs beside it (attack_scene.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "attack_scene.h"
#include "dxgpu/device_channel.h"
#include "gpu/commands.h"

namespace dxpu::test::attack::tenant {
namespace {

using TenantAttackTest = AttackScene;

TEST_F(TenantAttackTest, DmaOutsideItsGrantsIsRefusedAndCounted) {
  ASSERT_EQ(bridge_.Lend(1, kTenantNode), "");
  auto port = VictimHost::OpenPort(kTenantNode, bridge_.keys().tenant, bridge_.keys().bridge.pub,
                                   bridge_.fabric_port());
  ASSERT_TRUE(port.ok()) << port.status().message();
  auto channel = dxgpu::DeviceChannel::Open(**port, 0, {});
  ASSERT_TRUE(channel.ok()) << channel.status().message();
  const double refused_before =
      bridge_.Metric("dxpu_bridge_refused_total{reason=\"no-dma-window\"}");
  const double ur_before = bridge_.Metric("dxpu_bridge_datapath_ur_sent_total");

  // Below every grant (host page 1) and above them all (2^48): 4 KiB written from the GPU's
  // memory to each, then 4 KiB read from each.
  uint64_t owner = 1;
  for (const uint64_t outside : {uint64_t{0x1000}, uint64_t{1} << 48}) {
    gpu::PushbufferBuilder write;
    write.Copy({gpu::kCopyDstHost, 4096, 0, outside});
    auto seq = (*channel)->Submit(std::move(write), owner, "dma-write-outside");
    ASSERT_TRUE(seq.ok()) << seq.status().message();
    ASSERT_TRUE((*channel)->Wait(*seq).ok());
    // Posted writes: the GPU does not hear of their fate; the bridge dropped them.
    EXPECT_TRUE((*channel)->TakeFailures(owner, *seq).ok());
    ++owner;
    gpu::PushbufferBuilder read;
    read.Copy({gpu::kCopySrcHost, 4096, outside, 0});
    seq = (*channel)->Submit(std::move(read), owner, "dma-read-outside");
    ASSERT_TRUE(seq.ok()) << seq.status().message();
    ASSERT_TRUE((*channel)->Wait(*seq).ok());
    // A read is answered UR: the copy engine stops with an error.
    EXPECT_EQ((*channel)->TakeFailures(owner, *seq).code(), dxgpu::ErrorCode::kDeviceError);
    ++owner;
  }
  // Each 4 KiB write is 16 posted writes of 256 bytes (the Max Payload Size the host set), each
  // read one request (Max Read Request 4096): 2 x (16 + 1) refused, 2 answered UR.
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_refused_total{reason=\"no-dma-window\"}") - refused_before,
            34);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_datapath_ur_sent_total") - ur_before, 2);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_refused_total{reason=\"not-owner\"}"), 0);
  (*channel).reset();
  port->reset();
  ExpectVictimUnharmed(2, 1, 1);
}

TEST_F(TenantAttackTest, TheNextTenantFindsNothingOfThePreviousTenantsMemory) {
  // Tenant A fills its GPU's memory with a pattern, then its session ends without RELEASE.
  ASSERT_EQ(bridge_.Lend(1, kTenantNode), "");
  constexpr uint64_t kPattern = 0x5ec7e75ec7e75ec7;
  {
    auto a = VictimHost::Open(kTenantNode, bridge_.keys().tenant, bridge_.keys().bridge.pub,
                              bridge_.fabric_port());
    ASSERT_TRUE(a.ok()) << a.status().message();
    dxgpu::Runtime& rt = (*a)->runtime();
    auto all = rt.Malloc(0, kGpuMemory);
    ASSERT_TRUE(all.ok()) << all.status().message();
    const std::vector<uint64_t> pattern(kGpuMemory / 8, kPattern);
    ASSERT_TRUE(rt.MemcpyHtoD(*all, pattern.data(), kGpuMemory).ok());
  }
  ASSERT_TRUE([&] {
    for (int i = 0; i < 200; ++i) {
      if (bridge_.Metric("dxpu_bridge_device_quarantined{device=\"1\"}") == 1) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }()) << "the lost session's GPU was not quarantined";

  // Tenant B cannot be given it as it is; the manager's path (RELEASE: reset and scrub) can.
  const bridge::ManagementClient manager = bridge_.Manager();
  EXPECT_EQ(manager.Assign(1, kHostBdf, kLateNode).msg.status, DXPU_MGMT_QUARANTINED);
  ASSERT_TRUE(manager.Release(1).ok());
  ASSERT_EQ(bridge_.Lend(1, kLateNode), "");
  auto b = VictimHost::Open(kLateNode, bridge_.keys().late, bridge_.keys().bridge.pub,
                            bridge_.fabric_port());
  ASSERT_TRUE(b.ok()) << b.status().message();
  dxgpu::Runtime& rt = (*b)->runtime();
  auto all = rt.Malloc(0, kGpuMemory);
  ASSERT_TRUE(all.ok()) << all.status().message();
  std::vector<uint64_t> seen(kGpuMemory / 8, kPattern);
  ASSERT_TRUE(rt.MemcpyDtoH(seen.data(), *all, kGpuMemory).ok());
  EXPECT_EQ(std::count(seen.begin(), seen.end(), kPattern), 0);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 0), static_cast<ptrdiff_t>(seen.size()))
      << "every byte scrubbed";
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_quarantined_total"), 1);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_releases_total"), 1);
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_scrubbed_bytes_total"), static_cast<double>(kGpuMemory));
  EXPECT_EQ(bridge_.Metric("dxpu_bridge_device_resets_total{device=\"1\"}"), 1);
  ExpectVictimUnharmed(3, 1, 1);
}

}  // namespace
}  // namespace dxpu::test::attack::tenant
