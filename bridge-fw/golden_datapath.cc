// golden_datapath.cc - see golden_datapath.h and docs/bridge.md.
#include "bridge-fw/golden_datapath.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/tlp_build.h"

namespace dxpu::bridge {
namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

// Bytes a memory request addresses (its Length; byte enables only trim the ends).
uint64_t RequestBytes(const dxpu_tlp& t) { return uint64_t{t.length_dw} * 4u; }

bool IsNonPosted(const dxpu_tlp& t) {
  return dxpu_tlp_kind_class(t.kind) == DXPU_TLP_CLASS_NON_POSTED;
}

bool Contains(uint64_t base, uint64_t size, uint64_t addr, uint64_t len) {
  return addr >= base && len <= size && addr - base <= size - len;
}

// The Unsupported Request completion a completer returns for `request`.
dxpu_tlp UnsupportedRequest(const dxpu_tlp& request, uint16_t completer) {
  dxpu_tlp c{};
  dxpu_tlp_completion_for(&request, completer, DXPU_TLP_CPL_UR, &c);
  return c;
}

}  // namespace

std::string_view RefusalName(Refusal r) {
  switch (r) {
    case Refusal::kNone:
      return "none";
    case Refusal::kNotOwner:
      return "not-owner";
    case Refusal::kNoBarWindow:
      return "no-bar-window";
    case Refusal::kNoDmaWindow:
      return "no-dma-window";
    case Refusal::kUnowned:
      return "unowned";
    case Refusal::kUnexpectedCpl:
      return "unexpected-cpl";
    case Refusal::kUnsupported:
      return "unsupported";
    case Refusal::kCompletionTimeout:
      return "completion-timeout";
    case Refusal::kMalformed:
      return "malformed";
    case Refusal::kCount:
      break;
  }
  return "unknown";
}

std::string CheckConfig(const GoldenDatapathConfig& c) {
  if (c.devices == 0 || c.devices > 4096) return "devices must be 1..4096";
  if (c.host_slots == 0 || c.host_slots >= kNoHost) return "host_slots must be 1..65534";
  if (c.box_tags == 0 || c.box_tags > 1024) return "box_tags must be 1..1024 (10-bit tags)";
  if (c.max_pending_per_host == 0) return "max_pending_per_host must be at least 1";
  if (c.dma_windows_per_device == 0) return "dma_windows_per_device must be at least 1";
  if (c.completion_timeout_ns == 0) return "completion_timeout_ns must be non-zero";
  return {};
}

std::unique_ptr<GoldenDatapath> GoldenDatapath::Create(const GoldenDatapathConfig& config,
                                                       std::string* error) {
  std::string why = CheckConfig(config);
  if (!why.empty()) {
    if (error != nullptr) *error = std::move(why);
    return nullptr;
  }
  return std::unique_ptr<GoldenDatapath>(new GoldenDatapath(config));
}

std::unique_ptr<Datapath> MakeGoldenDatapath(const GoldenDatapathConfig& config,
                                             std::string* error) {
  return GoldenDatapath::Create(config, error);
}

GoldenDatapath::GoldenDatapath(const GoldenDatapathConfig& config)
    : config_(config),
      devices_(config.devices),
      host_windows_(config.host_slots),
      host_pending_(config.host_slots, 0),
      pending_(config.box_tags) {
  // Lowest tags first: the free list is a stack.
  for (uint16_t t = config.box_tags; t > 0; --t) free_tags_.push_back(static_cast<uint16_t>(t - 1));
}

// ---- control plane ----

bool GoldenDatapath::SetDevice(DeviceIndex d, const DeviceEntry& entry) {
  if (d >= devices_.size() || (entry.owner != kNoHost && entry.owner >= config_.host_slots))
    return false;
  Device& dev = devices_[d];
  const HostSlot old_owner = dev.entry.owner;
  if (old_owner != entry.owner) {
    // A new owner starts clean: nothing of the old one's reaches it.
    for (Pending& p : pending_) {
      if (p.in_use && p.device == d) Abandon(p);
    }
    dev.bars = {};
    dev.dma.clear();
  }
  dev.entry = entry;
  if (old_owner != kNoHost) RebuildHostWindows(old_owner);
  if (entry.owner != kNoHost) RebuildHostWindows(entry.owner);
  return true;
}

bool GoldenDatapath::SetBarWindow(DeviceIndex d, size_t bar, const BarWindow& window) {
  if (d >= devices_.size() || bar >= kMaxBars) return false;
  if (window.size != 0 && (window.host_base + window.size < window.host_base ||
                           window.device_base + window.size < window.device_base))
    return false;  // wraps the address space
  Device& dev = devices_[d];
  const HostSlot owner = dev.entry.owner;
  if (window.size != 0 && owner != kNoHost) {
    for (const HostWindow& w : host_windows_[owner]) {
      const bool same =
          w.device == d && dev.bars[bar].size != 0 && w.host_base == dev.bars[bar].host_base;
      if (!same && window.host_base < w.host_base + w.size &&
          w.host_base < window.host_base + window.size)
        return false;  // overlaps another BAR the host has mapped
    }
  }
  dev.bars[bar] = window;
  if (owner != kNoHost) RebuildHostWindows(owner);
  return true;
}

bool GoldenDatapath::AddDmaWindow(DeviceIndex d, const DmaWindow& window) {
  if (d >= devices_.size() || window.size == 0 ||
      window.device_base + window.size < window.device_base ||
      window.host_base + window.size < window.host_base)
    return false;
  Device& dev = devices_[d];
  if (dev.dma.size() >= config_.dma_windows_per_device) return false;
  for (const DmaWindow& w : dev.dma) {
    if (window.device_base < w.device_base + w.size &&
        w.device_base < window.device_base + window.size)
      return false;
  }
  const auto at =
      std::lower_bound(dev.dma.begin(), dev.dma.end(), window.device_base,
                       [](const DmaWindow& w, uint64_t base) { return w.device_base < base; });
  dev.dma.insert(at, window);
  return true;
}

void GoldenDatapath::ClearDmaWindows(DeviceIndex d) {
  if (d < devices_.size()) devices_[d].dma.clear();
}

size_t GoldenDatapath::ReleaseDevice(DeviceIndex d, uint64_t now, std::span<Decision> out) {
  if (d >= devices_.size()) return 0;
  now_ = std::max(now_, now);
  size_t n = 0;
  for (Pending& p : pending_) {
    if (!p.in_use || p.device != d) continue;
    if (n < out.size()) out[n++] = Count(TimeoutCompletion(p));
    Abandon(p);
  }
  DeviceEntry entry = devices_[d].entry;
  entry.owner = kNoHost;
  SetDevice(d, entry);
  return n;
}

void GoldenDatapath::ReleaseHost(HostSlot host) {
  if (host >= config_.host_slots) return;
  for (Pending& p : pending_) {
    if (p.in_use && p.host == host) Abandon(p);
  }
  for (DeviceIndex d = 0; d < device_count(); ++d) {
    if (devices_[d].entry.owner != host) continue;
    DeviceEntry entry = devices_[d].entry;
    entry.owner = kNoHost;
    SetDevice(d, entry);
  }
}

void GoldenDatapath::RebuildHostWindows(HostSlot host) {
  std::vector<HostWindow>& table = host_windows_[host];
  table.clear();
  for (DeviceIndex d = 0; d < device_count(); ++d) {
    const Device& dev = devices_[d];
    if (dev.entry.owner != host) continue;
    for (const BarWindow& b : dev.bars) {
      if (b.size != 0) table.push_back({b.host_base, b.size, b.device_base, d});
    }
  }
  std::sort(table.begin(), table.end(),
            [](const HostWindow& a, const HostWindow& b) { return a.host_base < b.host_base; });
}

// ---- lookups and tags ----

const GoldenDatapath::Device* GoldenDatapath::HostDevice(HostSlot host, uint16_t host_rid,
                                                         DeviceIndex* index) const {
  for (DeviceIndex d = 0; d < device_count(); ++d) {
    const DeviceEntry& e = devices_[d].entry;
    if (e.owner == host && e.host_rid == host_rid) {
      *index = d;
      return &devices_[d];
    }
  }
  return nullptr;
}

const GoldenDatapath::HostWindow* GoldenDatapath::FindBarWindow(HostSlot host, uint64_t addr,
                                                                uint64_t len) const {
  const std::vector<HostWindow>& table = host_windows_[host];
  // The last window starting at or below addr is the only one that can hold it.
  auto it = std::upper_bound(table.begin(), table.end(), addr,
                             [](uint64_t a, const HostWindow& w) { return a < w.host_base; });
  if (it == table.begin()) return nullptr;
  --it;
  return Contains(it->host_base, it->size, addr, len) ? &*it : nullptr;
}

bool GoldenDatapath::AllocTag(HostSlot host, DeviceIndex d, const dxpu_tlp& request, uint64_t now,
                              uint16_t* tag) {
  if (free_tags_.empty() || host_pending_[host] >= config_.max_pending_per_host) return false;
  *tag = free_tags_.back();
  free_tags_.pop_back();
  const dxpu_tlp ur = UnsupportedRequest(request, 0);
  Pending& p = pending_[*tag];
  p.in_use = true;
  p.host = host;
  p.device = d;
  p.host_requester = request.requester_id;
  p.host_tag = request.tag;
  p.remaining = ur.byte_count;
  p.lower_addr = ur.lower_addr;
  p.deadline = now + config_.completion_timeout_ns;
  host_pending_[host]++;
  return true;
}

void GoldenDatapath::FreeTag(uint16_t tag) {
  Pending& p = pending_[tag];
  host_pending_[p.host]--;
  p.in_use = false;
  free_tags_.push_back(tag);
}

void GoldenDatapath::Abandon(Pending& p) {
  host_pending_[p.host]--;
  p.in_use = false;
  // Not free yet: a late completion must find the tag idle, not serving a new request.
  quarantine_.push_back(
      {static_cast<uint16_t>(&p - pending_.data()), now_ + config_.tag_quarantine_ns});
}

// ---- decisions ----

Decision GoldenDatapath::Count(Decision d) {
  switch (d.route) {
    case Route::kDevice:
      counters_.to_device++;
      break;
    case Route::kHost:
      counters_.to_host++;
      break;
    case Route::kDrop:
      counters_.dropped++;
      break;
    case Route::kRetry:
      counters_.retries++;
      break;
  }
  if (d.refusal != Refusal::kNone) {
    counters_.refused[static_cast<size_t>(d.refusal)]++;
    if (d.route != Route::kDrop) counters_.ur_sent++;
  }
  return d;
}

Decision GoldenDatapath::Drop(Refusal why) {
  Decision d;
  d.route = Route::kDrop;
  d.refusal = why;
  return Count(d);
}

Decision GoldenDatapath::Refuse(const dxpu_tlp& request, Refusal why, Route answer_to,
                                uint16_t port, uint16_t completer) {
  if (!IsNonPosted(request)) return Drop(why);
  Decision d;
  d.route = answer_to;
  d.port = port;
  d.refusal = why;
  d.tlp = UnsupportedRequest(request, completer);
  return Count(d);
}

Decision GoldenDatapath::TimeoutCompletion(const Pending& p) {
  Decision d;
  d.route = Route::kHost;
  d.port = p.host;
  d.refusal = Refusal::kCompletionTimeout;
  d.tlp.kind = DXPU_TLP_CPL;
  d.tlp.requester_id = p.host_requester;
  d.tlp.tag = p.host_tag;
  d.tlp.completer_id = devices_[p.device].entry.host_rid;
  d.tlp.cpl_status = DXPU_TLP_CPL_UR;
  d.tlp.byte_count = p.remaining;
  d.tlp.lower_addr = p.lower_addr;
  return d;
}

Decision GoldenDatapath::FromHost(HostSlot host, const dxpu_tlp& tlp, uint64_t now) {
  now_ = std::max(now_, now);
  if (host >= config_.host_slots) return Drop(Refusal::kMalformed);
  switch (tlp.kind) {
    case DXPU_TLP_CFGRD0:
    case DXPU_TLP_CFGWR0:
      return HostConfig(host, tlp, now);
    case DXPU_TLP_MRD:
    case DXPU_TLP_MWR:
      return HostMemory(host, tlp, now);
    case DXPU_TLP_CPL:
    case DXPU_TLP_CPLD:
      return HostCompletion(host, tlp);
    default:
      // Type 1 configuration (there is no bridge below the host's view) and messages.
      return Refuse(tlp, Refusal::kUnsupported, Route::kHost, host, tlp.cfg_target);
  }
}

Decision GoldenDatapath::HostConfig(HostSlot host, const dxpu_tlp& tlp, uint64_t now) {
  DeviceIndex d = 0;
  const Device* dev = HostDevice(host, tlp.cfg_target, &d);
  if (dev == nullptr) return Refuse(tlp, Refusal::kNotOwner, Route::kHost, host, tlp.cfg_target);
  uint16_t tag = 0;
  if (!AllocTag(host, d, tlp, now, &tag)) return Count({Route::kRetry, host, Refusal::kNone, {}});
  Decision out{Route::kDevice, d, Refusal::kNone, tlp};
  out.tlp.cfg_target = dev->entry.box_rid;
  out.tlp.requester_id = config_.bridge_rid;
  out.tlp.tag = tag;
  return Count(out);
}

Decision GoldenDatapath::HostMemory(HostSlot host, const dxpu_tlp& tlp, uint64_t now) {
  const HostWindow* w = FindBarWindow(host, tlp.addr, RequestBytes(tlp));
  if (w == nullptr)  // no device: the completer ID says none
    return Refuse(tlp, Refusal::kNoBarWindow, Route::kHost, host, 0);
  Decision out{Route::kDevice, w->device, Refusal::kNone, tlp};
  out.tlp.addr = tlp.addr - w->host_base + w->device_base;
  out.tlp.requester_id = config_.bridge_rid;
  if (tlp.kind == DXPU_TLP_MRD) {
    uint16_t tag = 0;
    if (!AllocTag(host, w->device, tlp, now, &tag))
      return Count({Route::kRetry, host, Refusal::kNone, {}});
    out.tlp.tag = tag;
  }
  return Count(out);
}

Decision GoldenDatapath::HostCompletion(HostSlot host, const dxpu_tlp& tlp) {
  // The host answers a device's DMA read: the request went out under the device's host_rid.
  DeviceIndex d = 0;
  const Device* dev = HostDevice(host, tlp.requester_id, &d);
  if (dev == nullptr) return Drop(Refusal::kUnexpectedCpl);
  Decision out{Route::kDevice, d, Refusal::kNone, tlp};
  out.tlp.requester_id = dev->entry.box_rid;
  out.tlp.completer_id = config_.bridge_rid;
  return Count(out);
}

Decision GoldenDatapath::FromDevice(DeviceIndex d, const dxpu_tlp& tlp, uint64_t now) {
  now_ = std::max(now_, now);
  if (d >= devices_.size()) return Drop(Refusal::kMalformed);
  switch (tlp.kind) {
    case DXPU_TLP_CPL:
    case DXPU_TLP_CPLD:
      return DeviceCompletion(d, tlp);
    case DXPU_TLP_MRD:
    case DXPU_TLP_MWR:
      return DeviceMemory(d, tlp);
    default:
      return Refuse(tlp, Refusal::kUnsupported, Route::kDevice, d, config_.bridge_rid);
  }
}

Decision GoldenDatapath::DeviceCompletion(DeviceIndex d, const dxpu_tlp& tlp) {
  if (tlp.requester_id != config_.bridge_rid) return PeerCompletion(d, tlp);
  if (tlp.tag >= pending_.size()) return Drop(Refusal::kUnexpectedCpl);
  Pending& p = pending_[tlp.tag];
  const Device& dev = devices_[d];
  if (!p.in_use || p.device != d || tlp.completer_id != dev.entry.box_rid)
    return Drop(Refusal::kUnexpectedCpl);  // late (timed out), stray, or from another device
  Decision out{Route::kHost, p.host, Refusal::kNone, tlp};
  out.tlp.requester_id = p.host_requester;
  out.tlp.tag = p.host_tag;
  out.tlp.completer_id = dev.entry.host_rid;
  if (dxpu_tlp_cpl_is_final(&tlp)) {
    FreeTag(tlp.tag);
  } else {
    // The next completion carries the rest, from the next RCB-aligned address.
    const uint32_t carried = uint32_t{tlp.length_dw} * 4u - (tlp.lower_addr & 3u);
    p.remaining = static_cast<uint16_t>(tlp.byte_count - carried);
    p.lower_addr = static_cast<uint8_t>((tlp.lower_addr + carried) & 0x7fu);
  }
  return Count(out);
}

Decision GoldenDatapath::PeerCompletion(DeviceIndex d, const dxpu_tlp& tlp) {
  // The answer to a peer's read: routed by Requester ID, as a switch does, to a device of the
  // same owner; IDs and tag stay the box's.
  const HostSlot owner = devices_[d].entry.owner;
  for (DeviceIndex to = 0; to < device_count(); ++to) {
    const DeviceEntry& e = devices_[to].entry;
    if (to == d || e.box_rid != tlp.requester_id) continue;
    if (owner == kNoHost || e.owner != owner) break;
    counters_.peer++;
    return Count({Route::kDevice, to, Refusal::kNone, tlp});
  }
  return Drop(Refusal::kUnexpectedCpl);
}

Decision GoldenDatapath::DeviceMemory(DeviceIndex d, const dxpu_tlp& tlp) {
  const Device& dev = devices_[d];
  if (tlp.requester_id != dev.entry.box_rid)  // a device may only speak for itself
    return Refuse(tlp, Refusal::kMalformed, Route::kDevice, d, config_.bridge_rid);
  if (dev.entry.owner == kNoHost)
    return Refuse(tlp, Refusal::kUnowned, Route::kDevice, d, config_.bridge_rid);
  const uint64_t len = RequestBytes(tlp);
  // Peer to peer: a BAR of a device the same host holds, at the address that host gave it.
  // It stays in the box, as behind a PCIe switch; IDs and tag stay the box's.
  if (const HostWindow* w = FindBarWindow(dev.entry.owner, tlp.addr, len)) {
    Decision out{Route::kDevice, w->device, Refusal::kNone, tlp};
    out.tlp.addr = tlp.addr - w->host_base + w->device_base;
    counters_.peer++;
    return Count(out);
  }
  auto it = std::upper_bound(dev.dma.begin(), dev.dma.end(), tlp.addr,
                             [](uint64_t a, const DmaWindow& w) { return a < w.device_base; });
  if (it == dev.dma.begin() || !Contains((it - 1)->device_base, (it - 1)->size, tlp.addr, len))
    return Refuse(tlp, Refusal::kNoDmaWindow, Route::kDevice, d, config_.bridge_rid);
  const DmaWindow& w = *(it - 1);
  Decision out{Route::kHost, dev.entry.owner, Refusal::kNone, tlp};
  out.tlp.addr = tlp.addr - w.device_base + w.host_base;
  out.tlp.requester_id = dev.entry.host_rid;
  return Count(out);
}

size_t GoldenDatapath::Expire(uint64_t now, std::span<Decision> out) {
  now_ = std::max(now_, now);
  while (!quarantine_.empty() && quarantine_.front().until <= now) {
    free_tags_.push_back(quarantine_.front().tag);
    quarantine_.pop_front();
  }
  size_t n = 0;
  for (Pending& p : pending_) {
    if (n == out.size()) break;
    if (!p.in_use || p.deadline > now) continue;
    out[n++] = Count(TimeoutCompletion(p));
    Abandon(p);
  }
  return n;
}

uint64_t GoldenDatapath::NextDeadline() const {
  uint64_t next = quarantine_.empty() ? kNever : quarantine_.front().until;
  for (const Pending& p : pending_) {
    if (p.in_use) next = std::min(next, p.deadline);
  }
  return next;
}

DatapathCounters GoldenDatapath::counters() const {
  DatapathCounters c = counters_;
  c.tags_free = free_tags_.size();
  c.pending = 0;
  for (uint16_t n : host_pending_) c.pending += n;
  return c;
}

}  // namespace dxpu::bridge
