// transport_test.cc - the virtio PCI transport: configuration space and capabilities, feature
// negotiation, common configuration semantics, ISR, the PCI_CFG window, resets.
#include <gtest/gtest.h>

#include "blk_rig.h"
#include "virtio/virtio_blk_regs.h"
#include "virtio/virtio_pci_profile.h"
#include "virtio/virtio_pci_regs.h"

namespace dxpu::virtio::transport_test {
namespace {

using test::BlkRig;

TEST(VirtioTransport, IdsClassAndBars) {
  BlkRig rig;
  ASSERT_NE(rig.function, nullptr) << rig.error;
  EXPECT_EQ(rig.host->ConfigRead32(0x00), 0x1042'1af4u);  // 0x1040 + 2, vendor 0x1af4
  EXPECT_EQ(rig.host->ConfigRead32(0x08), 0x0180'0001u);  // class 01 80 00, revision 1
  EXPECT_EQ(rig.host->ConfigRead32(0x2c), 0x1100'1af4u);  // subsystem
  const std::vector<pcie::Bar> bars = rig.function->Bars();
  ASSERT_EQ(bars.size(), 2u);
  EXPECT_EQ(bars[0].index, 1);
  EXPECT_EQ(bars[0].size, 0x1000u);
  EXPECT_EQ(bars[1].index, 4);
  EXPECT_TRUE(bars[1].is_64bit);
  EXPECT_TRUE(bars[1].prefetchable);
  EXPECT_EQ(bars[1].size, 0x4000u);
  EXPECT_EQ(rig.function->layout().pcie_cap, kPciExpressCapOffset);
  const pcie::Identity id = rig.function->identity();
  EXPECT_EQ(id.kind, "virtio-blk");
  EXPECT_EQ(id.device_id, 0x1042);
  EXPECT_EQ(VirtioClassCode(16), 0x038000u);
}

TEST(VirtioTransport, CapabilityWalkFindsEveryStructure) {
  BlkRig rig;
  ASSERT_TRUE(rig.driver->Probe());
  test::VirtioDriver& d = *rig.driver;
  EXPECT_EQ(d.common->bar, 4);
  EXPECT_EQ(d.common->offset, 0x0000u);
  EXPECT_EQ(d.common->length, kCommonCfgSize);
  EXPECT_EQ(d.isr->offset, 0x1000u);
  EXPECT_EQ(d.device->offset, 0x2000u);
  EXPECT_EQ(d.notify->offset, 0x3000u);
  EXPECT_EQ(d.notify_multiplier, 4u);
  EXPECT_EQ(rig.host->ConfigRead32(d.notify->cap) >> 16 & 0xff, kNotifyCapSize);  // cap_len
  EXPECT_EQ(rig.host->ConfigRead32(d.pci_cfg->cap) >> 16 & 0xff, kPciCfgCapSize);
  // MSI-X: queues + 1 vectors, table in BAR1.
  const std::optional<uint16_t> msix = rig.host->FindCapability(0x11);
  ASSERT_TRUE(msix.has_value());
  EXPECT_EQ((rig.host->ConfigRead32(*msix) >> 16 & 0x7ff) + 1, 3u);  // 2 queues + config
  EXPECT_EQ(rig.host->ConfigRead32(*msix + 4), 1u);                  // BIR 1, offset 0
  EXPECT_TRUE(rig.host->FindCapability(0x01).has_value());           // Power Management
  EXPECT_TRUE(rig.host->FindCapability(0x10).has_value());           // PCI Express
}

TEST(VirtioTransport, FeaturesOffered) {
  BlkRig rig;
  ASSERT_TRUE(rig.driver->Probe());
  const uint64_t f = rig.driver->device_features();
  for (int bit :
       {kFeatureVersion1, kFeatureAccessPlatform, kFeatureRingIndirectDesc, blk::kFeatureSizeMax,
        blk::kFeatureSegMax, blk::kFeatureBlkSize, blk::kFeatureFlush, blk::kFeatureMq,
        blk::kFeatureDiscard, blk::kFeatureWriteZeroes}) {
    EXPECT_NE(f & FeatureBit(bit), 0u) << "bit " << bit;
  }
  EXPECT_EQ(f & FeatureBit(kFeatureRingEventIdx), 0u);
  EXPECT_EQ(f & FeatureBit(34), 0u);  // packed rings: not offered
  // Past the two feature words: zero.
  rig.driver->WriteCommon(kDeviceFeatureSelect, 4, 2);
  EXPECT_EQ(rig.driver->ReadCommon(kDeviceFeature, 4), 0u);
}

TEST(VirtioTransport, FeaturesOkRefusedWithoutAccessPlatformOrVersion1) {
  BlkRig rig;
  ASSERT_TRUE(rig.driver->Probe());
  const uint64_t all = ~uint64_t{0};
  uint8_t status = rig.driver->Negotiate(all & ~FeatureBit(kFeatureAccessPlatform));
  EXPECT_EQ(status & kStatusFeaturesOk, 0);
  EXPECT_EQ(status & (kStatusAcknowledge | kStatusDriver), kStatusAcknowledge | kStatusDriver);
  status = rig.driver->Negotiate(all & ~FeatureBit(kFeatureVersion1));
  EXPECT_EQ(status & kStatusFeaturesOk, 0);
  EXPECT_EQ(rig.function->counters().features_refused, 2u);
  // DRIVER_OK without FEATURES_OK does not stick.
  rig.driver->WriteCommon(kDeviceStatus, 1, status | kStatusDriverOk);
  EXPECT_EQ(rig.driver->status() & kStatusDriverOk, 0);
  status = rig.driver->Negotiate(all);
  EXPECT_NE(status & kStatusFeaturesOk, 0);
  EXPECT_EQ(rig.function->driver_features(), rig.function->offered_features());
}

TEST(VirtioTransport, CommonConfigRegisters) {
  BlkRig rig;
  ASSERT_TRUE(rig.driver->Probe());
  test::VirtioDriver& d = *rig.driver;
  EXPECT_EQ(d.ReadCommon(kNumQueues, 2), 2u);
  EXPECT_EQ(d.ReadCommon(kConfigMsixVector, 2), kNoVector);
  d.WriteCommon(kConfigMsixVector, 2, 2);
  EXPECT_EQ(d.ReadCommon(kConfigMsixVector, 2), 2u);
  d.WriteCommon(kConfigMsixVector, 2, 3);  // only vectors 0..2 exist
  EXPECT_EQ(d.ReadCommon(kConfigMsixVector, 2), kNoVector);
  d.WriteCommon(kQueueSelect, 2, 1);
  EXPECT_EQ(d.ReadCommon(kQueueSize, 2), 256u);
  EXPECT_EQ(d.ReadCommon(kQueueNotifyOff, 2), 1u);
  d.WriteCommon(kQueueMsixVector, 2, 7);
  EXPECT_EQ(d.ReadCommon(kQueueMsixVector, 2), kNoVector);
  d.WriteCommon(kQueueSize, 2, 32);
  EXPECT_EQ(d.ReadCommon(kQueueSize, 2), 32u);
  d.WriteCommon(kQueueDesc, 8, 0x1234'5678'9abc'def0);
  EXPECT_EQ(d.ReadCommon(kQueueDesc, 8), 0x1234'5678'9abc'def0u);
  d.WriteCommon(kQueueSelect, 2, 2);  // no such queue: size 0
  EXPECT_EQ(d.ReadCommon(kQueueSize, 2), 0u);
  // Device configuration: capacity in sectors, blk_size, num_queues.
  EXPECT_EQ(d.ReadDeviceConfig(blk::kCfgCapacity, 4), (8u << 20) / 512);
  EXPECT_EQ(d.ReadDeviceConfig(blk::kCfgCapacity + 4, 4), 0u);
  EXPECT_EQ(d.ReadDeviceConfig(blk::kCfgBlkSize, 4), 512u);
  EXPECT_EQ(d.ReadDeviceConfig(blk::kCfgNumQueues, 2), 2u);
  EXPECT_EQ(d.ReadDeviceConfig(0x100, 4), 0u);  // past the structure
  // Status 0 resets what the driver wrote.
  d.WriteCommon(kDeviceStatus, 1, 0);
  d.WriteCommon(kQueueSelect, 2, 1);
  EXPECT_EQ(d.ReadCommon(kQueueSize, 2), 256u);
  EXPECT_EQ(d.ReadCommon(kQueueDesc, 8), 0u);
  EXPECT_EQ(d.ReadCommon(kConfigMsixVector, 2), kNoVector);
}

TEST(VirtioTransport, PciCfgWindowReadsTheBar) {
  BlkRig rig;
  ASSERT_TRUE(rig.driver->Probe());
  const uint16_t cap = rig.driver->pci_cfg->cap;
  rig.host->ConfigWrite(cap + kCapBar, 1, 4);
  rig.host->ConfigWrite(cap + kCapOffset, 4, kCommonOffset + kNumQueues);
  rig.host->ConfigWrite(cap + kCapLength, 4, 2);
  EXPECT_EQ(rig.host->ConfigRead32(cap + kCapPciCfgData), 2u);  // num_queues
  // A write through it: queue_select = 1, read back directly.
  rig.host->ConfigWrite(cap + kCapOffset, 4, kCommonOffset + kQueueSelect);
  rig.host->ConfigWrite(cap + kCapPciCfgData, 4, 1);
  EXPECT_EQ(rig.driver->ReadCommon(kQueueSelect, 2), 1u);
}

TEST(VirtioTransport, IsrReadClearsAndConfigInterruptOnNeedsReset) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  // A queue with a size that is not a power of two, enabled: NEEDS_RESET.
  test::VirtioDriver& d = *rig.driver;
  d.WriteCommon(kQueueSelect, 2, 1);
  d.WriteCommon(kQueueSize, 2, 100);
  d.WriteCommon(kQueueEnable, 2, 1);
  EXPECT_NE(d.status() & kStatusNeedsReset, 0);
  EXPECT_EQ(d.ReadCommon(kQueueEnable, 2), 0u);
  EXPECT_NE(rig.function->needs_reset_reason().find("power of two"), std::string::npos);
  ASSERT_FALSE(rig.host->msix_messages().empty());
  EXPECT_EQ(rig.host->msix_messages().back().data, 0u);  // the configuration vector
  EXPECT_EQ(d.ReadIsr(), kIsrConfig);
  EXPECT_EQ(d.ReadIsr(), 0);  // read clears
  // The driver cannot clear NEEDS_RESET but by a reset.
  d.WriteCommon(kDeviceStatus, 1, d.status() & ~kStatusNeedsReset);
  EXPECT_NE(d.status() & kStatusNeedsReset, 0);
  d.WriteCommon(kDeviceStatus, 1, 0);
  EXPECT_EQ(d.status(), 0);
}

TEST(VirtioTransport, FlrAndHotResetReturnToPowerOn) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  EXPECT_NE(rig.driver->status(), 0);
  rig.function->Reset(pcie::ResetKind::kHot);
  EXPECT_EQ(rig.function->device_status(), 0);
  EXPECT_FALSE(rig.function->config().memory_enabled());
  EXPECT_EQ(rig.function->queue(0), nullptr);
  // And it works again after a new driver's setup.
  rig.used_seen.assign(64, 0);
  ASSERT_TRUE(rig.Start());
  const std::vector<uint8_t> data = test::Pattern(512, 5);
  EXPECT_EQ(rig.Request(0, blk::kTypeOut, 3, data, 0).status, blk::kStatusOk);
  // FLR through Device Control's Initiate FLR, as the bridge drives it.
  const uint16_t devctl = kPciExpressCapOffset + 8;
  rig.host->ConfigWrite(devctl, 2, (rig.host->ConfigRead32(devctl) & 0xffff) | 0x8000);
  EXPECT_EQ(rig.function->device_status(), 0);
  EXPECT_EQ(rig.function->queue(0), nullptr);
  EXPECT_EQ(rig.FileBytes(3 * 512, 512), data) << "an FLR keeps the disk's contents";
}

TEST(VirtioTransport, CountersAreVisited) {
  BlkRig rig;
  ASSERT_TRUE(rig.Start());
  std::map<std::string, uint64_t> seen;
  rig.function->VisitCounters([&](std::string_view n, uint64_t v) { seen[std::string(n)] = v; });
  for (const char* name : {"tlps_in", "tlps_out", "malformed", "requests", "completions",
                           "dma_errors", "needs_reset", "interrupts_sent", "blk_reads"}) {
    EXPECT_TRUE(seen.contains(name)) << name;
  }
  EXPECT_GT(seen["tlps_in"], 0u);
}

}  // namespace
}  // namespace dxpu::virtio::transport_test
