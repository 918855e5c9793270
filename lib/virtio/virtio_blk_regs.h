// virtio_blk_regs.h - the numbers of the virtio block device (OASIS virtio v1.2 section 5.2;
// Linux: include/uapi/linux/virtio_blk.h).
#ifndef DXPU_LIB_VIRTIO_VIRTIO_BLK_REGS_H_
#define DXPU_LIB_VIRTIO_VIRTIO_BLK_REGS_H_

#include <cstdint>

namespace dxpu::virtio::blk {

inline constexpr uint16_t kDeviceId = 2;
inline constexpr uint32_t kSectorSize = 512;  // the unit of every sector number and count

// Feature bits (5.2.3).
inline constexpr int kFeatureSizeMax = 1;
inline constexpr int kFeatureSegMax = 2;
inline constexpr int kFeatureBlkSize = 6;
inline constexpr int kFeatureFlush = 9;
inline constexpr int kFeatureMq = 12;
inline constexpr int kFeatureDiscard = 13;
inline constexpr int kFeatureWriteZeroes = 14;

// struct virtio_blk_config (5.2.4), byte offsets.
inline constexpr uint32_t kCfgCapacity = 0x00;   // le64, in 512-byte sectors
inline constexpr uint32_t kCfgSizeMax = 0x08;    // le32
inline constexpr uint32_t kCfgSegMax = 0x0c;     // le32
inline constexpr uint32_t kCfgBlkSize = 0x14;    // le32
inline constexpr uint32_t kCfgNumQueues = 0x22;  // le16
inline constexpr uint32_t kCfgMaxDiscardSectors = 0x24;
inline constexpr uint32_t kCfgMaxDiscardSeg = 0x28;
inline constexpr uint32_t kCfgDiscardSectorAlignment = 0x2c;
inline constexpr uint32_t kCfgMaxWriteZeroesSectors = 0x30;
inline constexpr uint32_t kCfgMaxWriteZeroesSeg = 0x34;
inline constexpr uint32_t kCfgWriteZeroesMayUnmap = 0x38;  // u8, then 3 unused bytes
inline constexpr uint32_t kConfigSize = 0x3c;

// Request types (5.2.6).
inline constexpr uint32_t kTypeIn = 0;
inline constexpr uint32_t kTypeOut = 1;
inline constexpr uint32_t kTypeFlush = 4;
inline constexpr uint32_t kTypeGetId = 8;
inline constexpr uint32_t kTypeDiscard = 11;
inline constexpr uint32_t kTypeWriteZeroes = 13;
inline constexpr uint32_t kHeaderSize = 16;  // le32 type, le32 reserved, le64 sector
inline constexpr uint32_t kIdBytes = 20;
// struct virtio_blk_discard_write_zeroes: le64 sector, le32 num_sectors, le32 flags.
inline constexpr uint32_t kSegmentSize = 16;
inline constexpr uint32_t kSegmentFlagUnmap = 1;

inline constexpr uint8_t kStatusOk = 0;
inline constexpr uint8_t kStatusIoErr = 1;
inline constexpr uint8_t kStatusUnsupp = 2;

}  // namespace dxpu::virtio::blk

#endif  // DXPU_LIB_VIRTIO_VIRTIO_BLK_REGS_H_
