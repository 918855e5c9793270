// virtio_pci_regs.h - the numbers of the virtio PCI transport and split virtqueues, as OASIS
// virtio v1.2 sections 2.1, 2.7, 4.1 and 6 define them (Linux names them in
// include/uapi/linux/virtio_pci.h, virtio_config.h and virtio_ring.h).
#ifndef DXPU_LIB_VIRTIO_VIRTIO_PCI_REGS_H_
#define DXPU_LIB_VIRTIO_VIRTIO_PCI_REGS_H_

#include <cstdint>

namespace dxpu::virtio {

// ---- PCI IDs (4.1.2) ----
inline constexpr uint16_t kVendorId = 0x1af4;
inline constexpr uint16_t kDeviceIdBase = 0x1040;  // + the virtio device ID: modern only
inline constexpr uint16_t kSubsystemId = 0x1100;

// ---- virtio structure capability (4.1.4): struct virtio_pci_cap ----
inline constexpr uint8_t kCapCommonCfg = 1;
inline constexpr uint8_t kCapNotifyCfg = 2;
inline constexpr uint8_t kCapIsrCfg = 3;
inline constexpr uint8_t kCapDeviceCfg = 4;
inline constexpr uint8_t kCapPciCfg = 5;
// Byte offsets in the capability (from its ID byte).
inline constexpr uint16_t kCapLen = 2;
inline constexpr uint16_t kCapCfgType = 3;
inline constexpr uint16_t kCapBar = 4;
inline constexpr uint16_t kCapOffset = 8;
inline constexpr uint16_t kCapLength = 12;
inline constexpr uint16_t kCapNotifyMultiplier = 16;  // virtio_pci_notify_cap
inline constexpr uint16_t kCapPciCfgData = 16;        // virtio_pci_cfg_cap
inline constexpr uint8_t kCapSize = 16;
inline constexpr uint8_t kNotifyCapSize = 20;
inline constexpr uint8_t kPciCfgCapSize = 20;

// ---- common configuration (4.1.4.3): struct virtio_pci_common_cfg ----
inline constexpr uint32_t kDeviceFeatureSelect = 0x00;  // le32
inline constexpr uint32_t kDeviceFeature = 0x04;        // le32, RO
inline constexpr uint32_t kDriverFeatureSelect = 0x08;  // le32
inline constexpr uint32_t kDriverFeature = 0x0c;        // le32
inline constexpr uint32_t kConfigMsixVector = 0x10;     // le16
inline constexpr uint32_t kNumQueues = 0x12;            // le16, RO
inline constexpr uint32_t kDeviceStatus = 0x14;         // u8
inline constexpr uint32_t kConfigGeneration = 0x15;     // u8, RO
inline constexpr uint32_t kQueueSelect = 0x16;          // le16
inline constexpr uint32_t kQueueSize = 0x18;            // le16
inline constexpr uint32_t kQueueMsixVector = 0x1a;      // le16
inline constexpr uint32_t kQueueEnable = 0x1c;          // le16
inline constexpr uint32_t kQueueNotifyOff = 0x1e;       // le16, RO
inline constexpr uint32_t kQueueDesc = 0x20;            // le64
inline constexpr uint32_t kQueueDriver = 0x28;          // le64
inline constexpr uint32_t kQueueDevice = 0x30;          // le64
inline constexpr uint32_t kQueueNotifyData = 0x38;      // le16, RO (NOTIF_CONFIG_DATA: not offered)
inline constexpr uint32_t kQueueReset = 0x3a;           // le16 (RING_RESET: not offered)
inline constexpr uint32_t kCommonCfgSize = 0x3c;
inline constexpr uint16_t kNoVector = 0xffff;

// ---- device status (2.1) ----
inline constexpr uint8_t kStatusAcknowledge = 1;
inline constexpr uint8_t kStatusDriver = 2;
inline constexpr uint8_t kStatusDriverOk = 4;
inline constexpr uint8_t kStatusFeaturesOk = 8;
inline constexpr uint8_t kStatusNeedsReset = 64;
inline constexpr uint8_t kStatusFailed = 128;

// ---- ISR status (4.1.4.5) ----
inline constexpr uint8_t kIsrQueue = 1;
inline constexpr uint8_t kIsrConfig = 2;

// ---- reserved feature bits (6) ----
inline constexpr int kFeatureRingIndirectDesc = 28;
inline constexpr int kFeatureRingEventIdx = 29;
inline constexpr int kFeatureVersion1 = 32;
inline constexpr int kFeatureAccessPlatform = 33;

constexpr uint64_t FeatureBit(int bit) { return uint64_t{1} << bit; }

// ---- split virtqueues (2.7) ----
inline constexpr uint32_t kDescSize = 16;  // le64 addr, le32 len, le16 flags, le16 next
inline constexpr uint16_t kDescFlagNext = 1;
inline constexpr uint16_t kDescFlagWrite = 2;
inline constexpr uint16_t kDescFlagIndirect = 4;
inline constexpr uint16_t kAvailFlagNoInterrupt = 1;
inline constexpr uint32_t kAvailRing = 4;  // le16 flags, le16 idx, le16 ring[size]
inline constexpr uint32_t kUsedIdx = 2;    // le16 flags, le16 idx, then the elements
inline constexpr uint32_t kUsedRing = 4;
inline constexpr uint32_t kUsedElemSize = 8;  // le32 id, le32 len
inline constexpr uint16_t kMaxQueueSize = 32768;

}  // namespace dxpu::virtio

#endif  // DXPU_LIB_VIRTIO_VIRTIO_PCI_REGS_H_
