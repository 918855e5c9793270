// host_proxy.cc - the userspace host proxy, sans-IO (host_proxy.h): the driver of one lib/core
// host path per path.
#include "host/host_proxy.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/tlp_build.h"
#include "fabric/session_frame.h"

namespace dxpu::host {
namespace {

constexpr uint8_t kAllBytes = 0xf;

}  // namespace

HostProxy::HostProxy(const HostProxyOptions& options) : options_(options) {}

HostProxy::~HostProxy() = default;

uint64_t HostProxy::progress() const {
  uint64_t p = generation_;
  for (const std::unique_ptr<Path>& path : paths_)
    p += dxpu_hostpath_host_counters(&path->hp)->dma_writes;
  return p;
}

// ------------------------------------------------------------------ paths

std::unique_ptr<HostProxy::Path> HostProxy::MakePath(const dxfp_session_config* session,
                                                     std::string* error) {
  dxpu_hostpath_config cfg{};
  dxpu_hostpath_config_defaults(&cfg);
  cfg.direct = session == nullptr;
  if (session != nullptr) {
    cfg.session = *session;
    cfg.session.role = DXFP_ROLE_INITIATOR;
    cfg.session.node_id = options_.node_id;
  }
  cfg.host.requester_id = options_.requester_id;
  cfg.host.rcb = options_.read_completion_boundary;
  cfg.host.max_payload = options_.max_payload;
  cfg.host.request_timeout = options_.request_timeout_ns;
  cfg.host.msi_base = options_.msi_base;
  cfg.host.msi_size = options_.msi_size;
  // Completions start at the direct size; once the session is up they grow to what one frame
  // of its negotiated size carries, up to fabric_max_payload.
  cfg.fabric_max_payload = std::max(options_.max_payload, options_.fabric_max_payload);
  cfg.queue_tlps = static_cast<uint32_t>(std::min<size_t>(options_.queue_tlps, UINT32_MAX / 2));
  cfg.queue_bytes = static_cast<uint32_t>(std::min<size_t>(options_.queue_bytes, UINT32_MAX / 2));
  const size_t size = dxpu_hostpath_mem_size(&cfg);
  if (size == 0) {
    if (error != nullptr) *error = dxpu_hostpath_config_check(&cfg);
    return nullptr;
  }
  auto path = std::make_unique<Path>();
  path->memory = std::make_unique_for_overwrite<uint64_t[]>((size + 7) / 8);
  if (!dxpu_hostpath_init(&path->hp, &cfg, path->memory.get(), (size + 7) / 8 * 8)) {
    if (error != nullptr) *error = "the host path refused the options";
    return nullptr;
  }
  if (!peers_.empty()) dxpu_hostpath_set_peers(&path->hp, peers_.data(), peers_.size());
  return path;
}

std::optional<PathId> HostProxy::AddBridgePath(std::string name, const dxfp_session_config& session,
                                               std::string* error) {
  std::unique_ptr<Path> path = MakePath(&session, error);
  if (path == nullptr) return std::nullopt;
  path->state.name = std::move(name);
  paths_.push_back(std::move(path));
  return static_cast<PathId>(paths_.size() - 1);
}

std::optional<PathId> HostProxy::AddDirectPath(const gpu::DeviceProfile& profile,
                                               gpu::GpuOptions options, uint16_t host_bdf,
                                               std::string* error, DirectWire wire) {
  options.requester_id = host_bdf;
  std::unique_ptr<pcie::Function> device = gpu::GpuDevice::Create(profile, options, error);
  if (device == nullptr) return std::nullopt;
  return AddDirectFunction(std::move(device), host_bdf, error, std::move(wire));
}

std::optional<PathId> HostProxy::AddDirectFunction(std::unique_ptr<pcie::Function> device,
                                                   uint16_t host_bdf, std::string* error,
                                                   DirectWire wire) {
  std::unique_ptr<Path> path = MakePath(nullptr, error);
  if (path == nullptr) return std::nullopt;
  path->state = {"direct", true, true, false, {}};
  path->device = std::move(device);
  path->wire = std::move(wire);
  paths_.push_back(std::move(path));
  const auto id = static_cast<PathId>(paths_.size() - 1);
  AddDevice(id, host_bdf);
  return id;
}

void HostProxy::Connect(PathId path, uint64_t now) {
  Path& p = *paths_.at(path);
  dxpu_hostpath_connect(&p.hp, now);
}

void HostProxy::Close(PathId path, uint64_t now) {
  Path& p = *paths_.at(path);
  dxpu_hostpath_close(&p.hp, now, DXFP_CLOSE_SHUTDOWN);
  PollEvents(path);
}

void HostProxy::PollEvents(PathId id) {
  Path& p = *paths_[id];
  dxpu_hostpath_event ev{};
  while (dxpu_hostpath_poll_event(&p.hp, &ev)) {
    switch (ev.kind) {
      case DXPU_HP_EV_COMPLETE: {
        auto it = requests_.find(ev.cookie);
        if (it == requests_.end()) break;
        it->second.done = true;
        it->second.result.status = ev.status;
        ++generation_;
        break;
      }
      case DXPU_HP_EV_INTERRUPT:
        OnInterrupt(id, ev.device, ev.value);
        break;
      case DXPU_HP_EV_ESTABLISHED:
        p.state.up = true;
        ++generation_;
        break;
      case DXPU_HP_EV_DOWN:
        OnPathDown(id, ev.status == DXFP_DOWN_LOCAL_CLOSE
                           ? std::string("closed by this host")
                           : dxfp_down_reason_name(static_cast<dxfp_down_reason>(ev.status)));
        break;
      default:  // DMA written (progress() sees it), DMA refused (counted)
        break;
    }
  }
}

void HostProxy::OnPathDown(PathId path, std::string reason) {
  Path& p = *paths_.at(path);
  if (p.state.down) return;
  p.state.down = true;
  p.state.up = false;
  p.state.down_reason = std::move(reason);
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].path != path) continue;
    devices_[i].lost = true;
    peers_[i].in_use = 0;  // nothing routes to it any more: its peers' TLPs are refused (UR)
  }
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
  if (p.device != nullptr) return;
  (void)dxpu_hostpath_receive(&p.hp, now, frame.data(), frame.size());  // counted there
  PollEvents(path);
}

void HostProxy::DeliverToDevice(PathId path, const dxpu_tlp& tlp, uint64_t now) {
  Path& p = *paths_.at(path);
  if (p.device != nullptr) p.device->Receive(tlp, now);
}

void HostProxy::DeliverToHost(PathId path, const dxpu_tlp& tlp, uint64_t now) {
  dxpu_hostpath_receive_tlp(&paths_.at(path)->hp, now, &tlp);
  PollEvents(path);
}

// The paths take turns, as a root complex arbitrates among its ports: each turn a path
// forwards up to kPeerTurnBytes of what it holds for other paths' devices, and the next call
// begins with the path after the last that forwarded. Forwarded path by path, each until its
// target's queue filled, the first path took all the room a box's queue freed and a second
// box writing to the same GPU waited until the first had finished.
bool HostProxy::ForwardPeers(uint64_t now) {
  bool moved = false;
  const size_t n = paths_.size();
  bool again = true;
  while (again) {
    again = false;
    const size_t first = peer_next_;
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (first + k) % n;
      const PeerTurn turn = ForwardPeersOf(*paths_[i], now);
      if (!turn.moved) continue;
      moved = true;
      peer_next_ = (i + 1) % n;
      again = again || turn.more;
    }
  }
  return moved;
}

HostProxy::PeerTurn HostProxy::ForwardPeersOf(Path& from, uint64_t now) {
  PeerTurn turn;
  size_t bytes = 0;
  int target = DXPU_PEER_NONE;
  for (const dxpu_tlp* t = dxpu_hostpath_peer_front(&from.hp, &target); t != nullptr;
       t = dxpu_hostpath_peer_front(&from.hp, &target)) {
    if (bytes >= kPeerTurnBytes) {
      turn.more = true;
      break;
    }
    const DeviceState& d = devices_[static_cast<size_t>(target)];
    Path& to = *paths_[d.path];
    if (d.lost || to.state.down) {
      ++peer_dropped_;  // its target went away while it waited
    } else if (!dxpu_hostpath_forward(&to.hp, t, now)) {
      break;  // the target's queue is full: it waits, and keeps its source's credit
    }
    bytes += kPeerTurnHeaderBytes + dxpu_tlp_payload_len(t);
    dxpu_hostpath_peer_pop(&from.hp);
    turn.moved = true;
  }
  return turn;
}

void HostProxy::SharePeers() {
  for (const std::unique_ptr<Path>& p : paths_)
    dxpu_hostpath_set_peers(&p->hp, peers_.data(), peers_.size());
}

uint64_t HostProxy::peer_tlps() const {
  uint64_t n = 0;
  for (const std::unique_ptr<Path>& p : paths_) n += p->hp.counters.peer_tlps;
  return n;
}

uint64_t HostProxy::peer_dropped() const {
  uint64_t n = peer_dropped_;
  for (const std::unique_ptr<Path>& p : paths_) n += p->hp.counters.peer_dropped;
  return n;
}

void HostProxy::SetMemoryWindow(DeviceId dev, uint64_t base, uint64_t size) {
  dxpu_peer& p = peers_.at(dev);
  p.window = base;
  p.window_size = size;
}

bool HostProxy::PumpDirect(PathId id, uint64_t now) {
  Path& path = *paths_[id];
  pcie::Function& device = *path.device;
  bool moved = false;
  for (const dxpu_tlp* t = dxpu_hostpath_tlp_front(&path.hp); t != nullptr;
       t = dxpu_hostpath_tlp_front(&path.hp)) {
    if (path.wire.to_device) {
      path.wire.to_device(*t);  // a modelled link: the carrier brings it to the device later
    } else {
      device.Receive(*t, now);  // the ideal link: the device has it at once
    }
    dxpu_hostpath_tlp_pop(&path.hp);
    moved = true;
  }
  if (path.wire.to_host) {
    device.Poll(now, [&](const dxpu_tlp& t) {
      path.wire.to_host(t);
      moved = true;
      return true;
    });
    return moved;
  }
  // In batches: a copy engine may have queued a whole large copy's writes, and handing them
  // over a few hundred at a time keeps the bytes in cache on their way to host memory (and
  // bounds what waits for a peer at once).
  constexpr size_t kBatch = 256;
  std::vector<pcie::OwnedTlp> batch;
  device.Poll(now, [&](const dxpu_tlp& t) {
    if (batch.size() == kBatch) return false;
    batch.push_back(pcie::OwnedTlp::Copy(t));
    return true;
  });
  if (batch.empty()) return moved;
  // The device is out of Poll: the host path may answer into it (device reads of host memory).
  for (const pcie::OwnedTlp& t : batch) {
    const dxpu_tlp view = t.View();
    dxpu_hostpath_receive_tlp(&path.hp, now, &view);
  }
  PollEvents(id);
  return true;
}

bool HostProxy::SendFrames(PathId id, uint64_t now, const Transmit& transmit) {
  Path& p = *paths_[id];
  bool sent = false;
  dxfp_frame_out out;
  while (dxpu_hostpath_poll_pieces(&p.hp, now, p.hp.session.cfg.max_frame, &out)) {
    transmit(id, fabric::SessionFrame(out).pieces());
    sent = true;
  }
  PollEvents(id);
  return sent;
}

void HostProxy::Flush(uint64_t now, const Transmit& transmit) {
  for (const std::unique_ptr<Path>& p : paths_) dxpu_hostpath_on_timeout(&p->hp, now);
  // Until nothing moves: what one path does (a direct device's TLPs, a peer's) may give another
  // something to do. Bounded: a device that never stops talking is taken up at the next Flush.
  constexpr int kMaxRounds = 1024;
  for (int round = 0; round < kMaxRounds; ++round) {
    bool moved = ForwardPeers(now);
    for (PathId id = 0; id < paths_.size(); ++id) {
      const bool m =
          paths_[id]->device != nullptr ? PumpDirect(id, now) : SendFrames(id, now, transmit);
      moved = moved || m;
    }
    if (!moved) return;
  }
}

uint64_t HostProxy::NextDeadline() const {
  uint64_t next = UINT64_MAX;
  for (const auto& p : paths_) {
    next = std::min(next, dxpu_hostpath_next_deadline(&p->hp));
    if (p->device != nullptr) next = std::min(next, p->device->NextDeadline());
  }
  return next;
}

// ------------------------------------------------------------------ devices

DeviceId HostProxy::AddDevice(PathId path, uint16_t host_bdf) {
  DeviceState d;
  d.path = path;
  d.host_bdf = host_bdf;
  d.lost = paths_.at(path)->state.down;
  const bool lost = d.lost;
  devices_.push_back(std::move(d));
  peers_.push_back(dxpu_peer{
      .window = 0, .window_size = 0, .bdf = host_bdf, .in_use = lost ? uint8_t{0} : uint8_t{1}});
  SharePeers();  // the table may have moved
  // The device may reach every window already registered.
  for (const auto& [iova, memory] : windows_) {
    dxpu_hostpath_add_window(&paths_[path]->hp, host_bdf, iova, memory.size(), memory.data(),
                             DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE);
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
  const RequestId id = next_request_++;
  Pending& pending = requests_[id];
  pending.result.data.assign(data_bytes, 0);
  const dxpu_host_err err =
      dxpu_hostpath_issue(&p.hp, &tlp, pending.result.data.data(), data_bytes, id, now, nullptr);
  if (err != DXPU_HOST_OK) {
    requests_.erase(id);
    return std::nullopt;
  }
  return id;
}

std::optional<RequestId> HostProxy::ConfigRead(DeviceId dev, uint16_t reg, uint64_t now) {
  const uint16_t bdf = devices_.at(dev).host_bdf;
  dxpu_tlp t{};
  dxpu_tlp_config_request(DXPU_TLP_CFGRD0, bdf, reg, kAllBytes, &t);
  return Issue(dev, t, 4, now);
}

std::optional<RequestId> HostProxy::ConfigWrite(DeviceId dev, uint16_t reg, uint32_t value,
                                                uint8_t be, uint64_t now) {
  DeviceState& d = devices_.at(dev);
  const std::array<uint8_t, 4> data{static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8),
                                    static_cast<uint8_t>(value >> 16),
                                    static_cast<uint8_t>(value >> 24)};
  dxpu_tlp t{};
  dxpu_tlp_config_request(DXPU_TLP_CFGWR0, d.host_bdf, reg, be, &t);
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

size_t HostProxy::MemWrite(DeviceId dev, uint64_t addr, std::span<const uint8_t> bytes) {
  DeviceState& d = devices_.at(dev);
  Path& p = *paths_.at(d.path);
  if (d.lost || p.state.down || bytes.empty()) return 0;
  uint32_t done = 0;
  (void)dxpu_hostpath_write(&p.hp, addr, bytes.data(), static_cast<uint32_t>(bytes.size()),
                            p.hp.now, &done);
  return done;
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
    if (dxpu_hostpath_add_window(&paths_[d.path]->hp, d.host_bdf, iova, memory.size(),
                                 memory.data(),
                                 DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE) != DXPU_HOST_OK)
      break;
  }
  if (added != devices_.size()) {
    for (size_t i = 0; i < added; ++i)
      dxpu_hostpath_remove_window(&paths_[devices_[i].path]->hp, devices_[i].host_bdf, iova);
    return false;
  }
  windows_.emplace(iova, memory);
  return true;
}

void HostProxy::RemoveWindow(uint64_t iova) {
  if (windows_.erase(iova) == 0) return;
  for (const DeviceState& d : devices_)
    dxpu_hostpath_remove_window(&paths_[d.path]->hp, d.host_bdf, iova);
}

bool HostProxy::AddDeviceWindow(DeviceId dev, uint64_t iova, std::span<uint8_t> memory) {
  const DeviceState& d = devices_.at(dev);
  return dxpu_hostpath_add_window(&paths_[d.path]->hp, d.host_bdf, iova, memory.size(),
                                  memory.data(),
                                  DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE) == DXPU_HOST_OK;
}

void HostProxy::RemoveDeviceWindow(DeviceId dev, uint64_t iova) {
  const DeviceState& d = devices_.at(dev);
  dxpu_hostpath_remove_window(&paths_[d.path]->hp, d.host_bdf, iova);
}

dxpu_host_counters HostProxy::Counters() const {
  dxpu_host_counters sum{};
  constexpr size_t kFields = sizeof(dxpu_host_counters) / sizeof(uint64_t);
  static_assert(kFields * sizeof(uint64_t) == sizeof(dxpu_host_counters));
  for (const auto& p : paths_) {
    std::array<uint64_t, kFields> a{};
    std::array<uint64_t, kFields> b{};
    std::memcpy(a.data(), &sum, sizeof sum);
    std::memcpy(b.data(), dxpu_hostpath_host_counters(&p->hp), sizeof sum);
    for (size_t i = 0; i < kFields; ++i) a[i] += b[i];
    std::memcpy(&sum, a.data(), sizeof sum);
  }
  return sum;
}

}  // namespace dxpu::host
