// virtio_gpu_protocol.h - the numbers and wire layouts of virtio-gpu (OASIS virtio v1.2 section
// 5.7) that the 2D device uses: command and response types, flags, formats, and the size of
// each request and response structure. Everything on the wire is little-endian and packed as
// the spec lays it out; the device reads and writes it through WireReader/WireWriter, never by
// casting bytes to a struct (a request's bytes are untrusted and may be short).
#ifndef DXPU_LIB_VIRTIO_GPU_VIRTIO_GPU_PROTOCOL_H_
#define DXPU_LIB_VIRTIO_GPU_VIRTIO_GPU_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dxpu::virtio::gpu {

inline constexpr uint16_t kDeviceId = 16;
inline constexpr uint16_t kControlQueue = 0;
inline constexpr uint16_t kCursorQueue = 1;

// Feature bits (5.7.3).
inline constexpr uint64_t kFeatureVirgl = 1ull << 0;
inline constexpr uint64_t kFeatureEdid = 1ull << 1;

// Configuration structure (5.7.4): four le32 fields.
inline constexpr uint32_t kConfigEventsRead = 0;
inline constexpr uint32_t kConfigEventsClear = 4;
inline constexpr uint32_t kConfigNumScanouts = 8;
inline constexpr uint32_t kConfigNumCapsets = 12;
inline constexpr uint32_t kConfigSize = 16;
inline constexpr uint32_t kEventDisplay = 1u << 0;

// enum virtio_gpu_ctrl_type (5.7.6.7).
enum CtrlType : uint32_t {
  kCmdGetDisplayInfo = 0x0100,
  kCmdResourceCreate2d = 0x0101,
  kCmdResourceUnref = 0x0102,
  kCmdSetScanout = 0x0103,
  kCmdResourceFlush = 0x0104,
  kCmdTransferToHost2d = 0x0105,
  kCmdResourceAttachBacking = 0x0106,
  kCmdResourceDetachBacking = 0x0107,
  kCmdGetCapsetInfo = 0x0108,
  kCmdGetCapset = 0x0109,
  kCmdGetEdid = 0x010a,
  kCmdResourceAssignUuid = 0x010b,
  kCmdResourceCreateBlob = 0x010c,
  kCmdSetScanoutBlob = 0x010d,
  kCmdUpdateCursor = 0x0300,
  kCmdMoveCursor = 0x0301,
  kRespOkNodata = 0x1100,
  kRespOkDisplayInfo = 0x1101,
  kRespOkCapsetInfo = 0x1102,
  kRespOkCapset = 0x1103,
  kRespOkEdid = 0x1104,
  kRespErrUnspec = 0x1200,
  kRespErrOutOfMemory = 0x1201,
  kRespErrInvalidScanoutId = 0x1202,
  kRespErrInvalidResourceId = 0x1203,
  kRespErrInvalidContextId = 0x1204,
  kRespErrInvalidParameter = 0x1205,
};

inline constexpr uint32_t kFlagFence = 1u << 0;

// enum virtio_gpu_formats (5.7.6.8): the name gives the bytes' order in memory.
enum Format : uint32_t {
  kFormatB8G8R8A8 = 1,
  kFormatB8G8R8X8 = 2,
  kFormatA8R8G8B8 = 3,
  kFormatX8R8G8B8 = 4,
  kFormatR8G8B8A8 = 67,
  kFormatX8B8G8R8 = 68,
  kFormatA8B8G8R8 = 121,
  kFormatR8G8B8X8 = 134,
};

inline constexpr uint32_t kMaxScanouts = 16;  // VIRTIO_GPU_MAX_SCANOUTS: display info's array
inline constexpr uint32_t kCursorSize = 64;   // a cursor resource is 64x64

// Structure sizes in bytes (each begins with struct virtio_gpu_ctrl_hdr).
inline constexpr size_t kCtrlHdrSize = 24;  // type, flags, fence_id, ctx_id, ring_idx, pad[3]
inline constexpr size_t kRectSize = 16;     // x, y, width, height
inline constexpr size_t kResourceCreate2dSize = kCtrlHdrSize + 16;
inline constexpr size_t kResourceUnrefSize = kCtrlHdrSize + 8;
inline constexpr size_t kSetScanoutSize = kCtrlHdrSize + kRectSize + 8;
inline constexpr size_t kResourceFlushSize = kCtrlHdrSize + kRectSize + 8;
inline constexpr size_t kTransferToHost2dSize = kCtrlHdrSize + kRectSize + 16;
inline constexpr size_t kAttachBackingSize = kCtrlHdrSize + 8;  // then nr_entries mem entries
inline constexpr size_t kMemEntrySize = 16;                     // le64 addr, le32 length, pad
inline constexpr size_t kDetachBackingSize = kCtrlHdrSize + 8;
inline constexpr size_t kGetEdidSize = kCtrlHdrSize + 8;
inline constexpr size_t kUpdateCursorSize = kCtrlHdrSize + 16 + 16;  // hdr, cursor_pos, 4 le32
inline constexpr size_t kDisplayOneSize = kRectSize + 8;             // rect, enabled, flags
inline constexpr size_t kRespDisplayInfoSize = kCtrlHdrSize + kMaxScanouts * kDisplayOneSize;
inline constexpr size_t kEdidMaxBytes = 1024;
inline constexpr size_t kRespEdidSize = kCtrlHdrSize + 8 + kEdidMaxBytes;

struct CtrlHdr {
  uint32_t type = 0;
  uint32_t flags = 0;
  uint64_t fence_id = 0;
  uint32_t ctx_id = 0;
  uint8_t ring_idx = 0;
};

struct Rect {
  uint32_t x = 0;
  uint32_t y = 0;
  uint32_t width = 0;
  uint32_t height = 0;
  bool empty() const { return width == 0 || height == 0; }
  // Whether the rectangle lies inside a width x height surface (64-bit sums: no wrap).
  bool Inside(uint32_t surface_width, uint32_t surface_height) const {
    return uint64_t{x} + width <= surface_width && uint64_t{y} + height <= surface_height;
  }
};

// Reads little-endian fields at fixed offsets of an untrusted byte string; a field past the
// end reads as zero, and ok() says whether any did (the caller checks the length first; this
// keeps a slip from becoming an out-of-range read).
class WireReader {
 public:
  explicit WireReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  size_t size() const { return bytes_.size(); }
  bool ok() const { return ok_; }
  uint8_t U8(size_t at);
  uint32_t U32(size_t at);
  uint64_t U64(size_t at);
  CtrlHdr Hdr();
  Rect RectAt(size_t at);

 private:
  std::span<const uint8_t> bytes_;
  bool ok_ = true;
};

// Builds a response: a zeroed structure of fixed size, fields stored little-endian.
class WireWriter {
 public:
  explicit WireWriter(size_t size) : bytes_(size, 0) {}
  void U32(size_t at, uint32_t value);
  void U64(size_t at, uint64_t value);
  void Hdr(const CtrlHdr& hdr);
  void PutRect(size_t at, const Rect& rect);
  std::span<uint8_t> bytes() { return bytes_; }
  std::vector<uint8_t> Take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace dxpu::virtio::gpu

#endif  // DXPU_LIB_VIRTIO_GPU_VIRTIO_GPU_PROTOCOL_H_
