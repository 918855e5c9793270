// virtio_gpu_device.cc - virtio-gpu's 2D commands (v1.2 section 5.7.6.8). The error code for
// each bad input follows the spec's names and QEMU's device where the spec leaves it open:
// an unknown resource id is ERR_INVALID_RESOURCE_ID, a rectangle outside its resource or a
// zero size or an unknown format ERR_INVALID_PARAMETER, a scanout id past num_scanouts
// ERR_INVALID_SCANOUT_ID, a request too short for its structure or a command this device does
// not implement ERR_UNSPEC, host memory or resource slots exhausted ERR_OUT_OF_MEMORY.
#include "virtio/gpu/virtio_gpu_device.h"

#include <algorithm>
#include <cstring>  // explicit_bzero (glibc)
#include <new>

#include "virtio/gpu/edid.h"

namespace dxpu::virtio::gpu {
namespace {

constexpr uint32_t kNumScanouts = 1;

}  // namespace

VirtioGpuDevice::VirtioGpuDevice(const VirtioGpuOptions& options) : options_(options) {
  options_.display_width = std::clamp<uint32_t>(options_.display_width, 1, kEdidMaxActive);
  options_.display_height = std::clamp<uint32_t>(options_.display_height, 1, kEdidMaxActive);
  options_.max_reads_in_flight = std::max<uint32_t>(1, options_.max_reads_in_flight);
  DisableScanout();
}

uint16_t VirtioGpuDevice::queue_max_size(uint16_t queue) const {
  if (queue == kControlQueue) return options_.control_queue_size;
  if (queue == kCursorQueue) return options_.cursor_queue_size;
  return 0;
}

// ---- configuration structure ----

uint32_t VirtioGpuDevice::ReadConfig(uint32_t offset, uint32_t size) const {
  if ((size != 1 && size != 2 && size != 4) || offset >= kConfigSize ||
      size > kConfigSize - offset) {
    return 0;
  }
  const uint32_t fields[4] = {events_read_, 0, kNumScanouts, 0};
  uint32_t value = 0;
  for (uint32_t i = 0; i < size; ++i) {
    const uint32_t at = offset + i;
    value |= ((fields[at / 4] >> (8 * (at % 4))) & 0xff) << (8 * i);
  }
  return value;
}

void VirtioGpuDevice::WriteConfig(uint32_t offset, uint32_t size, uint32_t value) {
  if ((size != 1 && size != 2 && size != 4) || offset >= kConfigSize ||
      size > kConfigSize - offset) {
    ++counters_[kCounterBadConfigAccess];
    return;
  }
  // Only events_clear is writable: each 1 bit clears that event in events_read.
  for (uint32_t i = 0; i < size; ++i) {
    const uint32_t at = offset + i;
    if (at < kConfigEventsClear || at >= kConfigEventsClear + 4) continue;
    const uint32_t byte = (value >> (8 * i)) & 0xff;
    events_read_ &= ~(byte << (8 * (at - kConfigEventsClear)));
  }
}

void VirtioGpuDevice::ResizeDisplay(uint32_t width, uint32_t height) {
  options_.display_width = std::clamp<uint32_t>(width, 1, kEdidMaxActive);
  options_.display_height = std::clamp<uint32_t>(height, 1, kEdidMaxActive);
  if (!scanout_.enabled) DisableScanout();
  events_read_ |= kEventDisplay;
  outbox_.emplace_back(ConfigChanged{});
}

// ---- lifecycle ----

uint64_t VirtioGpuDevice::Scrub(std::vector<uint8_t>& bytes) {
  const uint64_t n = bytes.size();
  // explicit_bzero: stores a compiler cannot drop as dead before the free.
  if (n != 0) explicit_bzero(bytes.data(), n);
  bytes = {};
  zeroed_since_release_ += n;
  return n;
}

void VirtioGpuDevice::DropEverything() {
  for (auto& [id, resource] : resources_) Scrub(resource.pixels);
  resources_.clear();
  memory_used_ = 0;
  Scrub(scanout_.cursor.rgba);
  scanout_.cursor = {};
  DisableScanout();
  scanout_.flushes = 0;
  control_pending_.clear();
  cursor_pending_.clear();
  transfer_.reset();
  outbox_.clear();
}

void VirtioGpuDevice::Reset() {
  DropEverything();
  ++generation_;
  next_read_ = 0;
  events_read_ = 0;
  driver_features_ = 0;
  started_ = false;
}

uint64_t VirtioGpuDevice::Release(ReleasePolicy /*policy*/) {
  // A GPU's contents are the tenant's pictures: zeroed whatever the policy (kKeep is for
  // disks). Reset has already scrubbed them; this counts what it and this did.
  Reset();
  const uint64_t zeroed = zeroed_since_release_;
  zeroed_since_release_ = 0;
  return zeroed;
}

// ---- requests ----

void VirtioGpuDevice::Submit(Request request, uint64_t /*now*/) {
  std::deque<Request>* pending = nullptr;
  if (request.queue == kControlQueue) pending = &control_pending_;
  if (request.queue == kCursorQueue) pending = &cursor_pending_;
  // A transport that hands in more than the queue holds (or a queue that does not exist):
  // answered with ERR_UNSPEC at once rather than held without bound.
  if (pending == nullptr || pending->size() >= queue_max_size(request.queue)) {
    ++counters_[kCounterQueueOverflows];
    RespondStatus(request, CtrlHdr{}, kRespErrUnspec);
    return;
  }
  pending->push_back(std::move(request));
}

std::optional<DeviceAction> VirtioGpuDevice::Poll(uint64_t /*now*/) {
  Pump();
  if (outbox_.empty()) return std::nullopt;
  DeviceAction action = std::move(outbox_.front());
  outbox_.pop_front();
  return action;
}

void VirtioGpuDevice::Pump() {
  while (!cursor_pending_.empty()) {
    Request request = std::move(cursor_pending_.front());
    cursor_pending_.pop_front();
    HandleCursor(request);
  }
  for (;;) {
    if (transfer_) {
      IssueReads();
      FinishTransferIfDone();
      if (transfer_) return;  // the control queue waits for its reads
    }
    if (control_pending_.empty()) return;
    Request request = std::move(control_pending_.front());
    control_pending_.pop_front();
    HandleControl(request);
  }
}

void VirtioGpuDevice::Respond(uint16_t queue, uint16_t head, uint32_t writable_bytes,
                              const CtrlHdr& hdr, uint32_t type, WireWriter response) {
  CtrlHdr out{.type = type};
  if (hdr.flags & kFlagFence) {
    out.flags = kFlagFence;
    out.fence_id = hdr.fence_id;
    out.ctx_id = hdr.ctx_id;
  }
  response.Hdr(out);
  std::vector<uint8_t> written = response.Take();
  if (written.size() > writable_bytes) {
    // The cursor queue's driver (Linux's) gives no response buffer: nothing to count.
    if (queue != kCursorQueue || writable_bytes != 0) ++counters_[kCounterResponsesTruncated];
    written.resize(writable_bytes);
  }
  switch (type) {
    case kRespErrUnspec:
      ++counters_[kCounterErrUnspec];
      break;
    case kRespErrOutOfMemory:
      ++counters_[kCounterErrOutOfMemory];
      break;
    case kRespErrInvalidScanoutId:
      ++counters_[kCounterErrInvalidScanoutId];
      break;
    case kRespErrInvalidResourceId:
      ++counters_[kCounterErrInvalidResourceId];
      break;
    case kRespErrInvalidParameter:
      ++counters_[kCounterErrInvalidParameter];
      break;
    default:
      break;
  }
  outbox_.emplace_back(Completion{.queue = queue, .head = head, .written = std::move(written)});
}

void VirtioGpuDevice::RespondStatus(const Request& request, const CtrlHdr& hdr, uint32_t type) {
  Respond(request.queue, request.head, request.writable_bytes, hdr, type, WireWriter(kCtrlHdrSize));
}

void VirtioGpuDevice::HandleControl(const Request& request) {
  // The structure each control command needs (a shorter request is malformed), and its counter.
  struct Command {
    uint32_t type;
    size_t size;
    Counter counter;
  };
  static constexpr Command kCommands[] = {
      {kCmdGetDisplayInfo, kCtrlHdrSize, kCounterGetDisplayInfo},
      {kCmdGetEdid, kGetEdidSize, kCounterGetEdid},
      {kCmdResourceCreate2d, kResourceCreate2dSize, kCounterResourceCreate2d},
      {kCmdResourceUnref, kResourceUnrefSize, kCounterResourceUnref},
      {kCmdResourceAttachBacking, kAttachBackingSize, kCounterAttachBacking},
      {kCmdResourceDetachBacking, kDetachBackingSize, kCounterDetachBacking},
      {kCmdSetScanout, kSetScanoutSize, kCounterSetScanout},
      {kCmdTransferToHost2d, kTransferToHost2dSize, kCounterTransferToHost2d},
      {kCmdResourceFlush, kResourceFlushSize, kCounterResourceFlush},
  };
  WireReader in(request.readable);
  if (in.size() < kCtrlHdrSize) {
    ++counters_[kCounterMalformed];
    RespondStatus(request, CtrlHdr{}, kRespErrUnspec);
    return;
  }
  const CtrlHdr hdr = in.Hdr();
  const Command* command = std::find_if(std::begin(kCommands), std::end(kCommands),
                                        [&](const Command& c) { return c.type == hdr.type; });
  if (command == std::end(kCommands)) {  // 3D, capsets, blobs, UUIDs, cursor commands
    ++counters_[kCounterUnsupportedCommand];
    RespondStatus(request, hdr, kRespErrUnspec);
    return;
  }
  ++counters_[command->counter];
  if (in.size() < command->size) {
    ++counters_[kCounterMalformed];
    RespondStatus(request, hdr, kRespErrUnspec);
    return;
  }
  // nullopt: the command answers with its own data, or (a transfer) later.
  std::optional<uint32_t> status;
  switch (hdr.type) {
    case kCmdGetDisplayInfo:
      status = GetDisplayInfo(request, hdr);
      break;
    case kCmdGetEdid:
      status = GetEdid(request, hdr, in);
      break;
    case kCmdResourceCreate2d:
      status = ResourceCreate2d(in);
      break;
    case kCmdResourceUnref:
      status = ResourceUnref(in);
      break;
    case kCmdResourceAttachBacking:
      status = AttachBacking(in);
      break;
    case kCmdResourceDetachBacking:
      status = DetachBacking(in);
      break;
    case kCmdSetScanout:
      status = SetScanout(in);
      break;
    case kCmdTransferToHost2d:
      status = StartTransfer(request, hdr, in);
      break;
    case kCmdResourceFlush:
      status = ResourceFlush(in);
      break;
    default:
      break;
  }
  if (status) RespondStatus(request, hdr, *status);
}

void VirtioGpuDevice::HandleCursor(const Request& request) {
  WireReader in(request.readable);
  if (in.size() < kCtrlHdrSize) {
    ++counters_[kCounterMalformed];
    RespondStatus(request, CtrlHdr{}, kRespErrUnspec);
    return;
  }
  const CtrlHdr hdr = in.Hdr();
  if (hdr.type != kCmdUpdateCursor && hdr.type != kCmdMoveCursor) {
    ++counters_[kCounterUnsupportedCommand];
    RespondStatus(request, hdr, kRespErrUnspec);
    return;
  }
  const bool move_only = hdr.type == kCmdMoveCursor;
  ++counters_[move_only ? kCounterMoveCursor : kCounterUpdateCursor];
  if (in.size() < kUpdateCursorSize) {
    ++counters_[kCounterMalformed];
    RespondStatus(request, hdr, kRespErrUnspec);
    return;
  }
  RespondStatus(request, hdr, UpdateCursor(in, move_only));
}

// ---- commands ----

std::optional<uint32_t> VirtioGpuDevice::GetDisplayInfo(const Request& request,
                                                        const CtrlHdr& hdr) {
  WireWriter response(kRespDisplayInfoSize);
  const size_t at = kCtrlHdrSize;  // pmodes[0]; the other 15 stay zero (not enabled)
  response.PutRect(at, Rect{.width = options_.display_width, .height = options_.display_height});
  response.U32(at + kRectSize, 1);  // enabled
  Respond(request.queue, request.head, request.writable_bytes, hdr, kRespOkDisplayInfo,
          std::move(response));
  return std::nullopt;
}

std::optional<uint32_t> VirtioGpuDevice::GetEdid(const Request& request, const CtrlHdr& hdr,
                                                 WireReader& in) {
  if (!(driver_features_ & kFeatureEdid)) return kRespErrUnspec;
  if (in.U32(kCtrlHdrSize) >= kNumScanouts) return kRespErrInvalidScanoutId;
  const auto edid = BuildEdid(options_.display_width, options_.display_height);
  WireWriter response(kRespEdidSize);
  response.U32(kCtrlHdrSize, static_cast<uint32_t>(edid.size()));
  std::copy(edid.begin(), edid.end(), response.bytes().begin() + kCtrlHdrSize + 8);
  Respond(request.queue, request.head, request.writable_bytes, hdr, kRespOkEdid,
          std::move(response));
  return std::nullopt;
}

uint32_t VirtioGpuDevice::ResourceCreate2d(WireReader& in) {
  const uint32_t id = in.U32(kCtrlHdrSize);
  const uint32_t format = in.U32(kCtrlHdrSize + 4);
  const uint32_t width = in.U32(kCtrlHdrSize + 8);
  const uint32_t height = in.U32(kCtrlHdrSize + 12);
  if (id == 0 || resources_.contains(id)) return kRespErrInvalidResourceId;
  const std::optional<PixelLayout> layout = LayoutOf(format);
  if (!layout || width == 0 || height == 0 || width > options_.max_resource_width ||
      height > options_.max_resource_height) {
    return kRespErrInvalidParameter;
  }
  const uint64_t bytes = uint64_t{width} * height * kBytesPerPixel;
  if (resources_.size() >= options_.max_resources ||
      bytes > options_.max_memory_bytes - memory_used_) {
    return kRespErrOutOfMemory;
  }
  Resource resource;
  resource.format = format;
  resource.layout = *layout;
  resource.width = width;
  resource.height = height;
  try {
    resource.pixels.assign(bytes, 0);
  } catch (const std::bad_alloc&) {
    return kRespErrOutOfMemory;
  }
  memory_used_ += bytes;
  resources_.emplace(id, std::move(resource));
  return kRespOkNodata;
}

void VirtioGpuDevice::DropResource(uint32_t id) {
  auto it = resources_.find(id);
  if (it == resources_.end()) return;
  Resource& resource = it->second;
  memory_used_ -= resource.pixels.size() + resource.backing.size() * sizeof(BackingEntry);
  Scrub(resource.pixels);
  if (scanout_.resource_id == id) DisableScanout();
  resources_.erase(it);
}

uint32_t VirtioGpuDevice::ResourceUnref(WireReader& in) {
  const uint32_t id = in.U32(kCtrlHdrSize);
  if (!resources_.contains(id)) return kRespErrInvalidResourceId;
  DropResource(id);  // a cursor keeps the image it copied
  return kRespOkNodata;
}

uint32_t VirtioGpuDevice::AttachBacking(WireReader& in) {
  const uint32_t id = in.U32(kCtrlHdrSize);
  const uint32_t entries = in.U32(kCtrlHdrSize + 4);
  auto it = resources_.find(id);
  if (it == resources_.end()) return kRespErrInvalidResourceId;
  Resource& resource = it->second;
  if (!resource.backing.empty()) return kRespErrUnspec;  // detach first (QEMU answers so too)
  if (entries == 0 || entries > options_.max_backing_entries) return kRespErrInvalidParameter;
  // The entries follow the header; a request shorter than its count says is malformed.
  if ((in.size() - kAttachBackingSize) / kMemEntrySize < entries) {
    ++counters_[kCounterMalformed];
    return kRespErrUnspec;
  }
  const uint64_t list_bytes = uint64_t{entries} * sizeof(BackingEntry);
  if (list_bytes > options_.max_memory_bytes - memory_used_) return kRespErrOutOfMemory;
  std::vector<BackingEntry> backing;
  backing.reserve(entries);
  uint64_t total = 0;
  for (uint32_t i = 0; i < entries; ++i) {
    const size_t at = kAttachBackingSize + size_t{i} * kMemEntrySize;
    const uint64_t address = in.U64(at);
    const uint32_t length = in.U32(at + 8);
    // A zero-length piece, or one that wraps the address space, is no memory.
    if (length == 0 || address > UINT64_MAX - (length - 1)) return kRespErrInvalidParameter;
    backing.push_back(BackingEntry{.address = address, .length = length, .start = total});
    total += length;
  }
  resource.backing = std::move(backing);
  resource.backing_bytes = total;
  memory_used_ += list_bytes;
  return kRespOkNodata;
}

uint32_t VirtioGpuDevice::DetachBacking(WireReader& in) {
  auto it = resources_.find(in.U32(kCtrlHdrSize));
  if (it == resources_.end()) return kRespErrInvalidResourceId;
  Resource& resource = it->second;
  if (resource.backing.empty()) return kRespErrUnspec;
  memory_used_ -= resource.backing.size() * sizeof(BackingEntry);
  resource.backing = {};
  resource.backing_bytes = 0;
  return kRespOkNodata;
}

void VirtioGpuDevice::DisableScanout() {
  Scrub(scanout_.rgba);
  scanout_.enabled = false;
  scanout_.resource_id = 0;
  scanout_.source = {};
  scanout_.width = options_.display_width;
  scanout_.height = options_.display_height;
}

void VirtioGpuDevice::CopyToScanout(const Resource& resource, const Rect& rect) {
  // The part of `rect` (resource coordinates) the scanout shows.
  const Rect& src = scanout_.source;
  const uint64_t x0 = std::max(rect.x, src.x);
  const uint64_t y0 = std::max(rect.y, src.y);
  const uint64_t x1 = std::min(uint64_t{rect.x} + rect.width, uint64_t{src.x} + src.width);
  const uint64_t y1 = std::min(uint64_t{rect.y} + rect.height, uint64_t{src.y} + src.height);
  if (x0 >= x1 || y0 >= y1) return;
  const size_t row_bytes = (x1 - x0) * kBytesPerPixel;
  for (uint64_t y = y0; y < y1; ++y) {
    const size_t from = (y * resource.width + x0) * kBytesPerPixel;
    const size_t to = ((y - src.y) * scanout_.width + (x0 - src.x)) * kBytesPerPixel;
    ConvertToRgba(resource.layout, std::span(resource.pixels).subspan(from, row_bytes),
                  std::span(scanout_.rgba).subspan(to, row_bytes));
  }
}

uint32_t VirtioGpuDevice::SetScanout(WireReader& in) {
  const Rect rect = in.RectAt(kCtrlHdrSize);
  const uint32_t scanout_id = in.U32(kCtrlHdrSize + kRectSize);
  const uint32_t id = in.U32(kCtrlHdrSize + kRectSize + 4);
  if (scanout_id >= kNumScanouts) return kRespErrInvalidScanoutId;
  if (id == 0) {  // resource 0: the scanout is disabled
    DisableScanout();
    return kRespOkNodata;
  }
  auto it = resources_.find(id);
  if (it == resources_.end()) return kRespErrInvalidResourceId;
  const Resource& resource = it->second;
  if (rect.empty() || !rect.Inside(resource.width, resource.height)) {
    return kRespErrInvalidParameter;
  }
  // The display shows the resource from now on, as it is (QEMU's scanout is the resource's
  // image itself); flushes refresh it.
  DisableScanout();
  scanout_.enabled = true;
  scanout_.resource_id = id;
  scanout_.source = rect;
  scanout_.width = rect.width;
  scanout_.height = rect.height;
  scanout_.rgba.assign(size_t{rect.width} * rect.height * kBytesPerPixel, 0);
  CopyToScanout(resource, rect);
  return kRespOkNodata;
}

uint32_t VirtioGpuDevice::ResourceFlush(WireReader& in) {
  const Rect rect = in.RectAt(kCtrlHdrSize);
  auto it = resources_.find(in.U32(kCtrlHdrSize + kRectSize));
  if (it == resources_.end()) return kRespErrInvalidResourceId;
  const Resource& resource = it->second;
  if (rect.empty() || !rect.Inside(resource.width, resource.height)) {
    return kRespErrInvalidParameter;
  }
  if (scanout_.enabled && scanout_.resource_id == it->first) {
    CopyToScanout(resource, rect);
    ++scanout_.flushes;
  }
  return kRespOkNodata;
}

std::optional<uint32_t> VirtioGpuDevice::StartTransfer(const Request& request, const CtrlHdr& hdr,
                                                       WireReader& in) {
  const Rect rect = in.RectAt(kCtrlHdrSize);
  const uint64_t offset = in.U64(kCtrlHdrSize + kRectSize);
  const uint32_t id = in.U32(kCtrlHdrSize + kRectSize + 8);
  auto it = resources_.find(id);
  if (it == resources_.end()) return kRespErrInvalidResourceId;
  const Resource& resource = it->second;
  if (resource.backing.empty()) return kRespErrUnspec;  // nothing to read from (as QEMU)
  if (rect.empty() || !rect.Inside(resource.width, resource.height)) {
    return kRespErrInvalidParameter;
  }
  // Row n of the rectangle is read from backing offset `offset + n * stride` (the guest's
  // copy has the resource's layout; Linux sends offset = y * stride + x * 4).
  const uint64_t stride = uint64_t{resource.width} * kBytesPerPixel;
  const uint64_t row_bytes = uint64_t{rect.width} * kBytesPerPixel;
  const uint64_t span = stride * (rect.height - 1) + row_bytes;
  if (offset > resource.backing_bytes || span > resource.backing_bytes - offset) {
    return kRespErrInvalidParameter;  // the backing is too small for the rectangle
  }
  Transfer t{.head = request.head,
             .writable_bytes = request.writable_bytes,
             .hdr = hdr,
             .resource_id = id,
             .src = offset,
             .dst = uint64_t{rect.y} * stride + uint64_t{rect.x} * kBytesPerPixel,
             .stride = stride,
             .row_bytes = row_bytes,
             .rows = rect.height,
             .in_flight = {}};
  if (rect.x == 0 && rect.width == resource.width) {  // whole rows: one contiguous piece
    t.row_bytes = stride * rect.height;
    t.rows = 1;
  }
  transfer_ = std::move(t);
  return std::nullopt;
}

void VirtioGpuDevice::IssueReads() {
  Transfer& t = *transfer_;
  const Resource& resource = resources_.at(t.resource_id);
  while (!t.failed && t.row < t.rows && t.in_flight.size() < options_.max_reads_in_flight) {
    const uint64_t src = t.src + t.row * t.stride + t.in_row;
    // The backing entry holding `src`: the last one starting at or before it.
    auto entry =
        std::upper_bound(resource.backing.begin(), resource.backing.end(), src,
                         [](uint64_t offset, const BackingEntry& e) { return offset < e.start; });
    --entry;  // StartTransfer checked src < backing_bytes, and the first entry starts at 0
    const uint64_t in_entry = src - entry->start;
    const uint32_t length = static_cast<uint32_t>(std::min(
        {t.row_bytes - t.in_row, entry->length - in_entry, uint64_t{kTransferPieceBytes}}));
    const uint64_t tag = uint64_t{generation_} << 32 | next_read_++;
    t.in_flight.emplace(
        tag, Transfer::Landing{.dst = t.dst + t.row * t.stride + t.in_row, .length = length});
    outbox_.emplace_back(
        GuestRead{.tag = tag, .address = entry->address + in_entry, .length = length});
    ++counters_[kCounterGuestReads];
    t.in_row += length;
    if (t.in_row == t.row_bytes) {
      ++t.row;
      t.in_row = 0;
    }
  }
}

void VirtioGpuDevice::FinishTransferIfDone() {
  Transfer& t = *transfer_;
  if (!t.in_flight.empty() || (!t.failed && t.row < t.rows)) return;
  const CtrlHdr hdr = t.hdr;
  Respond(kControlQueue, t.head, t.writable_bytes, hdr, t.failed ? kRespErrUnspec : kRespOkNodata,
          WireWriter(kCtrlHdrSize));
  transfer_.reset();
}

void VirtioGpuDevice::OnGuestRead(uint64_t tag, std::span<const uint8_t> data, bool ok,
                                  uint64_t /*now*/) {
  if (!transfer_ || (tag >> 32) != generation_) {
    ++counters_[kCounterStaleGuestReads];
    return;
  }
  Transfer& t = *transfer_;
  auto landing = t.in_flight.find(tag);
  if (landing == t.in_flight.end()) {
    ++counters_[kCounterStaleGuestReads];
    return;
  }
  if (!ok || data.size() != landing->second.length) {
    ++counters_[kCounterGuestReadFailures];
    t.failed = true;  // no more reads; the response waits for those still out
  } else {
    Resource& resource = resources_.at(t.resource_id);
    std::ranges::copy(data, std::span(resource.pixels).subspan(landing->second.dst).begin());
    counters_[kCounterBytesTransferred] += data.size();
  }
  t.in_flight.erase(landing);
}

uint32_t VirtioGpuDevice::UpdateCursor(WireReader& in, bool move_only) {
  // struct virtio_gpu_update_cursor: hdr, pos {scanout_id, x, y, pad}, resource_id, hot_x,
  // hot_y, pad.
  const uint32_t scanout_id = in.U32(kCtrlHdrSize);
  const int32_t x = static_cast<int32_t>(in.U32(kCtrlHdrSize + 4));
  const int32_t y = static_cast<int32_t>(in.U32(kCtrlHdrSize + 8));
  const uint32_t id = in.U32(kCtrlHdrSize + 16);
  const uint32_t hot_x = in.U32(kCtrlHdrSize + 20);
  const uint32_t hot_y = in.U32(kCtrlHdrSize + 24);
  if (scanout_id >= kNumScanouts) return kRespErrInvalidScanoutId;
  CursorState& cursor = scanout_.cursor;
  if (move_only) {
    cursor.x = x;
    cursor.y = y;
    return kRespOkNodata;
  }
  if (id == 0) {  // resource 0: the cursor is hidden
    Scrub(cursor.rgba);
    cursor = CursorState{};
    cursor.x = x;
    cursor.y = y;
    return kRespOkNodata;
  }
  auto it = resources_.find(id);
  if (it == resources_.end()) return kRespErrInvalidResourceId;
  const Resource& resource = it->second;
  if (resource.width != kCursorSize || resource.height != kCursorSize || hot_x >= kCursorSize ||
      hot_y >= kCursorSize) {
    return kRespErrInvalidParameter;
  }
  cursor.visible = true;
  cursor.resource_id = id;
  cursor.x = x;
  cursor.y = y;
  cursor.hot_x = hot_x;
  cursor.hot_y = hot_y;
  cursor.rgba.resize(resource.pixels.size());
  ConvertToRgba(resource.layout, resource.pixels, cursor.rgba);
  return kRespOkNodata;
}

// ---- status ----

void VirtioGpuDevice::VisitCounters(const CounterVisitor& visit) const {
  static constexpr std::string_view kNames[kCounterCount] = {
      "cmd_get_display_info",
      "cmd_get_edid",
      "cmd_resource_create_2d",
      "cmd_resource_unref",
      "cmd_resource_attach_backing",
      "cmd_resource_detach_backing",
      "cmd_set_scanout",
      "cmd_transfer_to_host_2d",
      "cmd_resource_flush",
      "cmd_update_cursor",
      "cmd_move_cursor",
      "cmd_unsupported",
      "malformed_requests",
      "err_unspec",
      "err_out_of_memory",
      "err_invalid_scanout_id",
      "err_invalid_resource_id",
      "err_invalid_parameter",
      "bytes_transferred",
      "guest_reads",
      "guest_read_failures",
      "stale_guest_reads",
      "responses_truncated",
      "queue_overflows",
      "bad_config_accesses",
  };
  for (size_t i = 0; i < kCounterCount; ++i) visit(kNames[i], counters_[i]);
  visit("resources", resources_.size());
  visit("memory_used_bytes", memory_used_);
  visit("scanout_flushes", scanout_.flushes);
}

}  // namespace dxpu::virtio::gpu
