// host_proxy.cc - the userspace host proxy, sans-IO (host_proxy.h).
#include "host/host_proxy.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace dxpu::host {
namespace {

constexpr uint8_t kAllBytes = 0xf;

dxpu_tlp ConfigRequest(uint8_t kind, uint16_t bdf, uint16_t reg, uint8_t be) {
  dxpu_tlp t{};
  t.kind = kind;
  t.length_dw = 1;
  t.first_be = be;
  t.cfg_target = bdf;
  t.cfg_reg = static_cast<uint16_t>(reg & ~3U);
  return t;
}

}  // namespace

HostProxy::HostProxy(const HostProxyOptions& options) : options_(options) {}

uint32_t HostProxy::FabricPayload(uint32_t max_frame) const {
  // A CplD has a 3-DW header.
  return std::max(options_.max_payload,
                  fabric::FramePayloadLimit(max_frame, 12, options_.fabric_max_payload));
}

HostProxy::~HostProxy() = default;

uint64_t HostProxy::progress() const {
  uint64_t p = generation_;
  for (const std::unique_ptr<Path>& path : paths_) p += path->core->counters().dma_writes;
  return p;
}

// ------------------------------------------------------------------ paths

bool HostProxy::MakeCore(Path& path, PathId id, uint32_t max_payload, std::string* error) {
  dxpu_host_config cfg{};
  dxpu_host_config_defaults(&cfg);
  cfg.requester_id = options_.requester_id;
  cfg.rcb = options_.read_completion_boundary;
  cfg.max_payload = max_payload;
  cfg.request_timeout = options_.request_timeout_ns;
  cfg.msi_base = options_.msi_base;
  cfg.msi_size = options_.msi_size;
  Path* p = &path;
  path.core = HostCore::Create(
      cfg, [p](const dxpu_tlp& t) { return SendOnPath(*p, t); },
      [this, id](uint16_t bdf, uint64_t, uint32_t data) { OnInterrupt(id, bdf, data); });
  if (path.core == nullptr && error != nullptr)
    *error = "the host transaction layer refused the options";
  return path.core != nullptr;
}

std::optional<PathId> HostProxy::AddBridgePath(std::string name, const dxfp_session_config& session,
                                               std::string* error) {
  const auto id = static_cast<PathId>(paths_.size());
  auto path = std::make_unique<Path>();
  path->state.name = std::move(name);
  Path* p = path.get();

  // Completions start at the direct size; once the session is up they grow to what one
  // frame of its negotiated size carries (FabricPayload).
  if (!MakeCore(*p, id, options_.max_payload, error)) return std::nullopt;

  dxfp_session_config sc = session;
  sc.role = DXFP_ROLE_INITIATOR;
  sc.node_id = options_.node_id;
  fabric::EndpointCallbacks cb;
  // Credits are freed here once a TLP is dealt with; a peer TLP waiting for its target's
  // queue keeps its credit, so the bridge stops sending before the backlog grows.
  cb.deliver = [this, p, id](const dxpu_tlp& t) {
    if (FromDevice(id, t, p->now))
      p->endpoint->Release(dxpu_tlp_kind_class(t.kind), dxpu_tlp_payload_len(&t));
  };
  cb.established = [this, p] {
    p->core->SetMaxPayload(FabricPayload(p->endpoint->session().max_frame));
    p->state.up = true;
    ++generation_;
  };
  cb.link_down = [this, id](dxfp_down_reason reason, std::span<const dxpu_tlp>) {
    OnPathDown(id, dxfp_down_reason_name(reason));
  };
  fabric::EndpointOptions eo;
  eo.queue.max_tlps_per_class = options_.queue_tlps;
  eo.queue.max_payload_bytes_per_class = options_.queue_bytes;
  eo.auto_release = false;
  p->endpoint = fabric::Endpoint::Create(sc, std::move(cb), eo, error);
  if (p->endpoint == nullptr) return std::nullopt;
  paths_.push_back(std::move(path));
  return id;
}

std::optional<PathId> HostProxy::AddDirectPath(const gpu::DeviceProfile& profile,
                                               gpu::GpuOptions options, uint16_t host_bdf,
                                               std::string* error, DirectWire wire) {
  const auto id = static_cast<PathId>(paths_.size());
  auto path = std::make_unique<Path>();
  path->state = {"direct", true, true, false, {}};
  Path* p = path.get();
  p->wire = std::move(wire);
  options.requester_id = host_bdf;
  p->device = gpu::GpuDevice::Create(profile, options, error);
  if (p->device == nullptr) return std::nullopt;

  if (!MakeCore(*p, id, options_.max_payload, error)) return std::nullopt;
  paths_.push_back(std::move(path));
  AddDevice(id, host_bdf);
  return id;
}

void HostProxy::Connect(PathId path, uint64_t now) {
  Path& p = *paths_.at(path);
  if (p.endpoint != nullptr) p.endpoint->Connect(now);
}

void HostProxy::Close(PathId path, uint64_t now) {
  Path& p = *paths_.at(path);
  if (p.endpoint != nullptr && !p.state.down) p.endpoint->Close(now, DXFP_CLOSE_SHUTDOWN);
  OnPathDown(path, "closed by this host");
}

bool HostProxy::SendOnPath(Path& path, const dxpu_tlp& tlp) {
  if (path.state.down) return false;
  if (path.device != nullptr) {
    if (path.wire.to_device) {
      path.wire.to_device(tlp);
    } else {
      // The ideal link: the device has it at once.
      path.device->Receive(tlp, path.now);
    }
    return true;
  }
  return path.endpoint->Submit(tlp, path.now);
}

void HostProxy::OnPathDown(PathId path, std::string reason) {
  Path& p = *paths_.at(path);
  if (p.state.down) return;
  p.state.down = true;
  p.state.up = false;
  p.state.down_reason = std::move(reason);
  for (DeviceState& d : devices_) {
    if (d.path == path) d.lost = true;
  }
  // Everything still outstanding on the path ends now, with UR and all-ones.
  p.core->FailAll(DXPU_TLP_CPL_UR);
  ++generation_;
}

void HostProxy::OnInterrupt(PathId path, uint16_t bdf, uint32_t data) {
  const std::optional<DeviceId> dev = FindDevice(path, bdf);
  if (!dev) return;  // counted by the core as an interrupt; no device of ours sent it
  devices_[*dev].interrupts[data]++;
  ++generation_;
}

// ------------------------------------------------------------------ running

void HostProxy::ReceiveFrame(PathId path, uint64_t now, std::span<const uint8_t> frame) {
  Path& p = *paths_.at(path);
  if (p.endpoint == nullptr) return;
  p.now = now;
  p.endpoint->Receive(now, frame);
}

void HostProxy::DeliverToDevice(PathId path, const dxpu_tlp& tlp, uint64_t now) {
  Path& p = *paths_.at(path);
  p.now = now;
  if (p.device != nullptr) p.device->Receive(tlp, now);
}

void HostProxy::DeliverToHost(PathId path, const dxpu_tlp& tlp, uint64_t now) {
  paths_.at(path)->now = now;
  FromDevice(path, tlp, now);
}

bool HostProxy::FromDevice(PathId from, const dxpu_tlp& tlp, uint64_t now) {
  switch (RouteToPeer(from, tlp)) {
    case PeerRoute::kNotPeer:
      paths_[from]->core->Receive(tlp, now);
      return true;
    case PeerRoute::kSent:
      return true;
    case PeerRoute::kWaiting:
      return false;
  }
  return true;
}

HostProxy::PeerRoute HostProxy::RouteToPeer(PathId from, const dxpu_tlp& tlp) {
  // A request into another device's memory window, or the completion of a peer's read.
  const int target =
      dxpu_peer_route(peers_.data(), peers_.size(), &tlp, options_.requester_id, DXPU_PEER_NONE);
  if (target == DXPU_PEER_NONE) return PeerRoute::kNotPeer;
  const DeviceState& d = devices_[static_cast<size_t>(target)];
  Path& to = *paths_[d.path];
  // A lost target: the transaction layer refuses the TLP (UR, counted).
  if (d.lost || to.state.down) return PeerRoute::kNotPeer;
  ++peer_tlps_;
  to.now = std::max(to.now, paths_[from]->now);
  if (to.peer_backlog.empty() && SendOnPath(to, tlp)) return PeerRoute::kSent;
  // The target's queue is full: the TLP waits, in order, and (from a bridge) keeps its credit.
  const bool credited = paths_[from]->endpoint != nullptr;
  if (!credited && to.peer_backlog.size() >= kMaxPeerBacklog) {
    ++peer_dropped_;  // a direct device outrunning a bridge: bounded, counted
    return PeerRoute::kSent;
  }
  PeerWaiting w;
  w.from = from;
  w.credited = credited;
  w.tlp.header = tlp;
  w.tlp.header.payload = nullptr;
  if (tlp.payload != nullptr)
    w.tlp.payload.assign(tlp.payload, tlp.payload + dxpu_tlp_payload_len(&tlp));
  to.peer_backlog.push_back(std::move(w));
  return credited ? PeerRoute::kWaiting : PeerRoute::kSent;
}

void HostProxy::DrainPeerBacklog(Path& to) {
  while (!to.peer_backlog.empty()) {
    PeerWaiting& w = to.peer_backlog.front();
    const dxpu_tlp t = w.tlp.View();
    if (!to.state.down && !SendOnPath(to, t)) return;
    if (to.state.down) ++peer_dropped_;
    Path& from = *paths_[w.from];
    if (w.credited && !from.state.down)
      from.endpoint->Release(dxpu_tlp_kind_class(t.kind), dxpu_tlp_payload_len(&t));
    to.peer_backlog.pop_front();
  }
}

void HostProxy::SetMemoryWindow(DeviceId dev, uint64_t base, uint64_t size) {
  dxpu_peer& p = peers_.at(dev);
  p.window = base;
  p.window_size = size;
}

void HostProxy::PumpDirect(PathId id, uint64_t now) {
  Path& path = *paths_[id];
  gpu::GpuDevice& device = *path.device;
  if (path.wire.to_host) {
    // A modelled link: the carrier brings each TLP to the host later.
    device.Poll(now, [&](const dxpu_tlp& t) {
      path.wire.to_host(t);
      return true;
    });
    return;
  }
  // In batches: a copy engine may have queued a whole large copy's writes, and handing them
  // over a few hundred at a time keeps the bytes in cache on their way to host memory.
  constexpr size_t kBatch = 256;
  for (;;) {
    path.to_host.clear();
    device.Poll(now, [&](const dxpu_tlp& t) {
      if (path.to_host.size() == kBatch) return false;
      gpu::OwnedTlp owned;
      owned.header = t;
      owned.header.payload = nullptr;
      if (t.payload != nullptr)
        owned.payload.assign(t.payload, t.payload + dxpu_tlp_payload_len(&t));
      path.to_host.push_back(std::move(owned));
      return true;
    });
    if (path.to_host.empty()) return;
    // The device is out of Poll: the core may answer into it (device reads of host memory).
    std::vector<gpu::OwnedTlp> batch = std::move(path.to_host);
    for (const gpu::OwnedTlp& t : batch) FromDevice(id, t.View(), now);
  }
}

void HostProxy::Flush(uint64_t now, const Transmit& transmit) {
  for (PathId id = 0; id < paths_.size(); ++id) {
    Path& p = *paths_[id];
    p.now = now;
    DrainPeerBacklog(p);
    if (p.device != nullptr) {
      PumpDirect(id, now);
      p.core->Expire(now);
      continue;
    }
    p.core->Expire(now);
    p.endpoint->Flush(now, [&](link::FramePieces frame) { transmit(id, frame); });
    if (!p.peer_backlog.empty()) {
      // What the frames just sent made room for.
      DrainPeerBacklog(p);
      p.endpoint->Flush(now, [&](link::FramePieces frame) { transmit(id, frame); });
    }
  }
}

uint64_t HostProxy::NextDeadline() const {
  uint64_t next = UINT64_MAX;
  for (const auto& p : paths_) {
    next = std::min(next, p->core->NextDeadline());
    if (p->device != nullptr) next = std::min(next, p->device->NextDeadline());
    if (p->endpoint != nullptr && !p->state.down)
      next = std::min(next, p->endpoint->NextDeadline());
  }
  return next;
}

// ------------------------------------------------------------------ devices

DeviceId HostProxy::AddDevice(PathId path, uint16_t host_bdf) {
  DeviceState d;
  d.path = path;
  d.host_bdf = host_bdf;
  d.lost = paths_.at(path)->state.down;
  devices_.push_back(std::move(d));
  peers_.push_back(dxpu_peer{.window = 0, .window_size = 0, .bdf = host_bdf, .in_use = 1});
  // The device may reach every window already registered.
  for (const auto& [iova, memory] : windows_) {
    paths_[path]->core->AddWindow(host_bdf, iova, memory, DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE);
  }
  return static_cast<DeviceId>(devices_.size() - 1);
}

std::optional<DeviceId> HostProxy::FindDevice(PathId path, uint16_t bdf) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].path == path && devices_[i].host_bdf == bdf) return static_cast<DeviceId>(i);
  }
  return std::nullopt;
}

std::optional<DeviceId> HostProxy::device_of(PathId path) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].path == path) return static_cast<DeviceId>(i);
  }
  return std::nullopt;
}

// ------------------------------------------------------------------ requests

std::optional<RequestId> HostProxy::Issue(DeviceId dev, dxpu_tlp tlp, uint32_t data_bytes,
                                          uint64_t now) {
  DeviceState& d = devices_.at(dev);
  Path& p = *paths_.at(d.path);
  if (d.lost || p.state.down) return std::nullopt;
  p.now = now;
  const RequestId id = next_request_++;
  Pending& pending = requests_[id];
  pending.result.data.assign(data_bytes, 0);
  const dxpu_host_err err =
      p.core->Issue(tlp, pending.result.data, now, [this, id](uint8_t status, uint32_t) {
        auto it = requests_.find(id);
        if (it == requests_.end()) return;
        it->second.done = true;
        it->second.result.status = status;
        ++generation_;
      });
  if (err != DXPU_HOST_OK) {
    requests_.erase(id);
    return std::nullopt;
  }
  return id;
}

std::optional<RequestId> HostProxy::ConfigRead(DeviceId dev, uint16_t reg, uint64_t now) {
  const uint16_t bdf = devices_.at(dev).host_bdf;
  return Issue(dev, ConfigRequest(DXPU_TLP_CFGRD0, bdf, reg, kAllBytes), 4, now);
}

std::optional<RequestId> HostProxy::ConfigWrite(DeviceId dev, uint16_t reg, uint32_t value,
                                                uint8_t be, uint64_t now) {
  DeviceState& d = devices_.at(dev);
  const std::array<uint8_t, 4> data{static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8),
                                    static_cast<uint8_t>(value >> 16),
                                    static_cast<uint8_t>(value >> 24)};
  dxpu_tlp t = ConfigRequest(DXPU_TLP_CFGWR0, d.host_bdf, reg, be);
  t.payload = data.data();
  std::optional<RequestId> id = Issue(dev, t, 0, now);
  if (id) {
    // The shadow follows the write at once: writes reach the device in order, and reads of
    // the shadow must not wait for the network (pci_ops must not sleep).
    const uint32_t base = reg & 0xffcU;
    for (uint32_t i = 0; i < 4; ++i) {
      if (((be >> i) & 1U) != 0) dxpu_cfg_shadow_write(&d.shadow, base + i, 1, data[i]);
    }
  }
  return id;
}

std::optional<RequestId> HostProxy::MemRead(DeviceId dev, uint64_t addr, uint32_t len,
                                            uint64_t now) {
  dxpu_tlp t{};
  if (!dxpu_tlp_mem_request(DXPU_TLP_MRD, addr, len, &t)) return std::nullopt;
  return Issue(dev, t, len, now);
}

bool HostProxy::MemWrite(DeviceId dev, uint64_t addr, std::span<const uint8_t> bytes) {
  DeviceState& d = devices_.at(dev);
  Path& p = *paths_.at(d.path);
  if (d.lost || p.state.down || bytes.empty()) return false;
  dxpu_tlp_req_split split{};
  if (dxpu_tlp_req_split_init(&split, addr, bytes.size(), options_.max_payload) != DXPU_TLP_OK)
    return false;
  dxpu_tlp_req_piece piece{};
  std::vector<uint8_t> buf;
  while (dxpu_tlp_req_split_next(&split, &piece)) {
    buf.assign(static_cast<size_t>(piece.length_dw) * 4, 0);
    std::memcpy(buf.data() + (addr + piece.offset - piece.addr), bytes.data() + piece.offset,
                piece.nbytes);
    dxpu_tlp t{};
    dxpu_tlp_req_piece_header(&piece, DXPU_TLP_MWR, &t);
    t.payload = buf.data();
    if (p.core->Post(t) != DXPU_HOST_OK) return false;
  }
  return true;
}

bool HostProxy::Done(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() || it->second.done;
}

std::optional<RequestResult> HostProxy::TakeResult(RequestId id) {
  auto it = requests_.find(id);
  if (it == requests_.end() || !it->second.done) return std::nullopt;
  RequestResult r = std::move(it->second.result);
  requests_.erase(it);
  return r;
}

// ------------------------------------------------------------------ DMA windows

bool HostProxy::AddWindow(uint64_t iova, std::span<uint8_t> memory) {
  if (windows_.contains(iova)) return false;
  size_t added = 0;
  for (; added < devices_.size(); ++added) {
    const DeviceState& d = devices_[added];
    if (paths_[d.path]->core->AddWindow(d.host_bdf, iova, memory,
                                        DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE) != DXPU_HOST_OK)
      break;
  }
  if (added != devices_.size()) {
    for (size_t i = 0; i < added; ++i)
      paths_[devices_[i].path]->core->RemoveWindow(devices_[i].host_bdf, iova);
    return false;
  }
  windows_.emplace(iova, memory);
  return true;
}

void HostProxy::RemoveWindow(uint64_t iova) {
  if (windows_.erase(iova) == 0) return;
  for (const DeviceState& d : devices_) paths_[d.path]->core->RemoveWindow(d.host_bdf, iova);
}

dxpu_host_counters HostProxy::Counters() const {
  dxpu_host_counters sum{};
  constexpr size_t kFields = sizeof(dxpu_host_counters) / sizeof(uint64_t);
  static_assert(kFields * sizeof(uint64_t) == sizeof(dxpu_host_counters));
  for (const auto& p : paths_) {
    std::array<uint64_t, kFields> a{};
    std::array<uint64_t, kFields> b{};
    std::memcpy(a.data(), &sum, sizeof sum);
    std::memcpy(b.data(), &p->core->counters(), sizeof sum);
    for (size_t i = 0; i < kFields; ++i) a[i] += b[i];
    std::memcpy(&sum, a.data(), sizeof sum);
  }
  return sum;
}

}  // namespace dxpu::host
