// virtio_gpu_device.h - virtio-gpu (device type 16, OASIS virtio v1.2 section 5.7), 2D only:
// display info and EDID for one scanout, 2D resources in host memory, guest backing read by
// DeviceAction::GuestRead, scanout and cursor. No virgl/3D, no blob resources, no capsets.
//
// The control queue's requests are handled in order, one at a time: a TRANSFER_TO_HOST_2D
// holds the queue until every read of its rectangle is answered, then its response goes out.
// The cursor queue's commands need no guest memory and are answered at once. What the display
// shows is scanout(): the bridge reports it and writes it as a PNG (scanout_png.h).
#ifndef DXPU_LIB_VIRTIO_GPU_VIRTIO_GPU_DEVICE_H_
#define DXPU_LIB_VIRTIO_GPU_VIRTIO_GPU_DEVICE_H_

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "virtio/gpu/pixel_format.h"
#include "virtio/gpu/scanout.h"
#include "virtio/gpu/virtio_gpu_protocol.h"
#include "virtio/virtio_device.h"

namespace dxpu::virtio::gpu {

// The largest read a transfer asks for at once: well below kMaxGuestRead, so that each read's
// buffer is reused heap memory rather than fresh pages (a 1 MiB buffer was mapped and faulted
// in page by page for every read: a 1080p frame took 6 times as long natively; measured with
// `dxpu bench virtio`, docs/virtio-gpu.md).
inline constexpr uint32_t kTransferPieceBytes = 64u << 10;

struct VirtioGpuOptions {
  uint32_t display_width = 1024;  // the mode display info and EDID report (EDID: <= 4095)
  uint32_t display_height = 768;
  uint32_t max_resources = 4096;
  // Host memory for resources (their pixels) and their backing lists; a create or an attach
  // beyond it is answered ERR_OUT_OF_MEMORY. Also memory_bytes().
  uint64_t max_memory_bytes = uint64_t{256} << 20;
  uint32_t max_backing_entries = 16384;  // per RESOURCE_ATTACH_BACKING
  uint32_t max_resource_width = 16384;
  uint32_t max_resource_height = 16384;
  uint16_t control_queue_size = 256;
  uint16_t cursor_queue_size = 64;
  // GuestReads of one transfer outstanding at once: bounds what a transfer holds, however
  // many pieces its backing is cut into.
  uint32_t max_reads_in_flight = 16;
};

class VirtioGpuDevice final : public VirtioDevice {
 public:
  explicit VirtioGpuDevice(const VirtioGpuOptions& options = {});

  uint16_t device_id() const override { return kDeviceId; }
  std::string_view kind() const override { return "virtio-gpu"; }
  uint64_t device_features() const override { return kFeatureEdid; }
  uint16_t num_queues() const override { return 2; }
  uint16_t queue_max_size(uint16_t queue) const override;

  uint32_t config_size() const override { return kConfigSize; }
  uint32_t ReadConfig(uint32_t offset, uint32_t size) const override;
  void WriteConfig(uint32_t offset, uint32_t size, uint32_t value) override;

  void SetDriverFeatures(uint64_t features) override { driver_features_ = features; }
  void Start() override { started_ = true; }
  void Reset() override;
  uint64_t Release(ReleasePolicy policy) override;

  void Submit(Request request, uint64_t now) override;
  std::optional<DeviceAction> Poll(uint64_t now) override;
  void OnGuestRead(uint64_t tag, std::span<const uint8_t> data, bool ok, uint64_t now) override;

  uint64_t memory_bytes() const override { return options_.max_memory_bytes; }
  void VisitCounters(const CounterVisitor& visit) const override;

  // ---- for the bridge ----
  const Scanout& scanout() const { return scanout_; }
  // The monitor changed its mode (an operator's choice): display info and EDID report the
  // new size, events_read gets VIRTIO_GPU_EVENT_DISPLAY, the transport is told.
  void ResizeDisplay(uint32_t width, uint32_t height);
  // Host memory the resources and their backing lists hold now.
  uint64_t memory_used() const { return memory_used_; }
  size_t resource_count() const { return resources_.size(); }

 private:
  struct BackingEntry {
    uint64_t address = 0;
    uint32_t length = 0;
    uint64_t start = 0;  // its first byte's offset in the resource's backing
  };
  struct Resource {
    uint32_t format = 0;
    PixelLayout layout;
    uint32_t width = 0;
    uint32_t height = 0;
    std::vector<uint8_t> pixels;  // width * height * 4, in the resource's format
    std::vector<BackingEntry> backing;
    uint64_t backing_bytes = 0;
  };
  // A TRANSFER_TO_HOST_2D in progress: `rows` pieces of `row_bytes`, the n-th at backing
  // offset src + n * src_stride, landing at pixels offset dst + n * dst_stride (a full-width
  // rectangle is one piece).
  struct Transfer {
    uint16_t head = 0;
    uint32_t writable_bytes = 0;
    CtrlHdr hdr;
    uint32_t resource_id = 0;
    uint64_t src = 0;
    uint64_t dst = 0;
    uint64_t stride = 0;
    uint64_t row_bytes = 0;
    uint32_t rows = 0;
    uint32_t row = 0;     // the next read starts in this piece...
    uint64_t in_row = 0;  // ...at this offset
    struct Landing {
      uint64_t dst = 0;
      uint32_t length = 0;
    };
    std::unordered_map<uint64_t, Landing> in_flight;  // by tag
    bool failed = false;
  };
  enum Counter : size_t {
    kCounterGetDisplayInfo,
    kCounterGetEdid,
    kCounterResourceCreate2d,
    kCounterResourceUnref,
    kCounterAttachBacking,
    kCounterDetachBacking,
    kCounterSetScanout,
    kCounterTransferToHost2d,
    kCounterResourceFlush,
    kCounterUpdateCursor,
    kCounterMoveCursor,
    kCounterUnsupportedCommand,
    kCounterMalformed,
    kCounterErrUnspec,
    kCounterErrOutOfMemory,
    kCounterErrInvalidScanoutId,
    kCounterErrInvalidResourceId,
    kCounterErrInvalidParameter,
    kCounterBytesTransferred,
    kCounterGuestReads,
    kCounterGuestReadFailures,
    kCounterStaleGuestReads,
    kCounterResponsesTruncated,
    kCounterQueueOverflows,
    kCounterBadConfigAccess,
    kCounterCount,
  };

  void Pump();
  void HandleControl(const Request& request);
  void HandleCursor(const Request& request);
  // Answers `request` with `response` (its header filled here from `hdr`'s fence and `type`).
  void Respond(uint16_t queue, uint16_t head, uint32_t writable_bytes, const CtrlHdr& hdr,
               uint32_t type, WireWriter response);
  void RespondStatus(const Request& request, const CtrlHdr& hdr, uint32_t type);

  // Each command's status; nullopt where the command answered with its own data, or will
  // answer later (a transfer, once its reads are answered).
  std::optional<uint32_t> GetDisplayInfo(const Request& request, const CtrlHdr& hdr);
  std::optional<uint32_t> GetEdid(const Request& request, const CtrlHdr& hdr, WireReader& in);
  uint32_t ResourceCreate2d(WireReader& in);
  uint32_t ResourceUnref(WireReader& in);
  uint32_t AttachBacking(WireReader& in);
  uint32_t DetachBacking(WireReader& in);
  uint32_t SetScanout(WireReader& in);
  uint32_t ResourceFlush(WireReader& in);
  std::optional<uint32_t> StartTransfer(const Request& request, const CtrlHdr& hdr, WireReader& in);
  uint32_t UpdateCursor(WireReader& in, bool move_only);

  void IssueReads();
  void FinishTransferIfDone();
  void CopyToScanout(const Resource& resource, const Rect& rect);
  void DisableScanout();
  void DropResource(uint32_t id);
  void DropEverything();
  uint64_t Scrub(std::vector<uint8_t>& bytes);

  VirtioGpuOptions options_;
  uint64_t driver_features_ = 0;
  bool started_ = false;
  uint32_t events_read_ = 0;
  std::unordered_map<uint32_t, Resource> resources_;
  uint64_t memory_used_ = 0;
  Scanout scanout_;
  std::deque<Request> control_pending_;
  std::deque<Request> cursor_pending_;
  std::optional<Transfer> transfer_;
  std::deque<DeviceAction> outbox_;
  // The tag's high 32 bits: a reset raises it, so a read answered after one is known stale.
  uint32_t generation_ = 0;
  uint32_t next_read_ = 0;
  uint64_t zeroed_since_release_ = 0;
  std::array<uint64_t, kCounterCount> counters_{};
};

}  // namespace dxpu::virtio::gpu

#endif  // DXPU_LIB_VIRTIO_GPU_VIRTIO_GPU_DEVICE_H_
