// sim_host.cc - a HostProxy in the deterministic simulator (sim_host.h).
#include "sim-world/sim_host.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace dxpu::host {
namespace {

// Network ports: the host's end of direct link i, the device's end; the host's end of box k's
// fabric path, the box's. Box 0's ends are those the one box had before several could be
// added: a path's randomness is forked from its ends, so one box's runs stay as they were.
sim::PortId HostEnd(size_t i) { return static_cast<sim::PortId>(10 + i); }
sim::PortId DeviceEnd(size_t i) { return static_cast<sim::PortId>(500 + i); }
sim::PortId HostFabric(size_t k) { return static_cast<sim::PortId>(1 + (2000 * k)); }
sim::PortId BoxFabric(size_t k) { return static_cast<sim::PortId>(1000 + (2000 * k)); }

}  // namespace

SimHost::SimHost(const HostProxyOptions& options, uint64_t seed)
    : proxy_(options), tlp_buf_(DXPU_TLP_MAX_SIZE) {
  net_ = std::make_unique<sim::Network>(sched_, seed);
  sched_.RunUntil(now_);
}

SimHost::~SimHost() = default;

std::optional<DeviceId> SimHost::AddDirectDevice(const gpu::DeviceProfile& profile,
                                                 uint16_t host_bdf, const sim::PathConfig& link,
                                                 std::string* error, const gpu::GpuOptions& gpu) {
  const size_t i = proxy_.path_count();
  const auto id = static_cast<PathId>(i);
  // Each TLP crosses the modelled link as its encoded bytes (header and payload).
  const auto carry = [this](sim::PortId from, sim::PortId to) {
    return [this, from, to](const dxpu_tlp& t) {
      size_t len = 0;
      if (dxpu_tlp_encode(&t, tlp_buf_.data(), tlp_buf_.size(), &len) != DXPU_TLP_OK) return;
      moved_ = true;
      net_->Send(from, to, std::span<const uint8_t>(tlp_buf_.data(), len));
    };
  };
  DirectWire wire{carry(HostEnd(i), DeviceEnd(i)), carry(DeviceEnd(i), HostEnd(i))};
  std::optional<PathId> path = proxy_.AddDirectPath(profile, gpu, host_bdf, error, std::move(wire));
  if (!path) return std::nullopt;
  net_->SetPath(HostEnd(i), DeviceEnd(i), link);
  net_->SetPath(DeviceEnd(i), HostEnd(i), link);
  net_->Attach(DeviceEnd(i), [this, id](std::span<const uint8_t> f) {
    dxpu_tlp t{};
    if (dxpu_tlp_decode(f.data(), f.size(), &t) != DXPU_TLP_OK) return;
    moved_ = true;
    proxy_.DeliverToDevice(id, t, sched_.Now());
  });
  net_->Attach(HostEnd(i), [this, id](std::span<const uint8_t> f) {
    dxpu_tlp t{};
    if (dxpu_tlp_decode(f.data(), f.size(), &t) != DXPU_TLP_OK) return;
    moved_ = true;
    proxy_.DeliverToHost(id, t, sched_.Now());
  });
  return proxy_.device_of(*path);
}

std::optional<PathId> SimHost::AddBox(std::unique_ptr<bridge::BridgeBox> box,
                                      const dxfp_session_config& session,
                                      const sim::PathConfig& fabric, std::string* error) {
  const size_t k = boxes_.size();
  std::optional<PathId> path = proxy_.AddBridgePath(
      k == 0 ? "sim-fabric" : "sim-fabric-" + std::to_string(k), session, error);
  if (!path) return std::nullopt;
  boxes_.push_back(Box{std::move(box), *path, HostFabric(k), BoxFabric(k)});
  const Box& b = boxes_.back();
  net_->SetPath(b.host_end, b.box_end, fabric);
  net_->SetPath(b.box_end, b.host_end, fabric);
  // By index: boxes_ may grow (and move its elements) after this.
  net_->Attach(b.box_end, [this, k](std::span<const uint8_t> f) {
    moved_ = true;
    const Box& to = boxes_[k];
    to.box->ReceiveFrame(
        sched_.Now(), bridge::Peer{0, link::LinkAddress()}, f,
        [this, &to](const bridge::Peer&, link::FramePieces p) { BoxTransmit(to, p); });
  });
  net_->Attach(b.host_end, [this, k](std::span<const uint8_t> f) {
    moved_ = true;
    proxy_.ReceiveFrame(boxes_[k].path, sched_.Now(), f);
  });
  proxy_.Connect(*path, now_);
  return path;
}

void SimHost::BoxTransmit(const Box& box, link::FramePieces frame) {
  moved_ = true;
  net_->Send(box.box_end, box.host_end, link::GatherFrame(frame));
}

const SimHost::Box& SimHost::BoxOf(PathId path) const {
  const auto it =
      std::find_if(boxes_.begin(), boxes_.end(), [path](const Box& b) { return b.path == path; });
  assert(it != boxes_.end());  // only bridge paths transmit, and each is a box's
  return *it;
}

bool SimHost::Step() {
  moved_ = false;
  sched_.RunUntil(now_);  // deliveries due now (their receivers set moved_)
  for (const Box& b : boxes_)
    b.box->Run(now_, [this, &b](const bridge::Peer&, link::FramePieces p) { BoxTransmit(b, p); });
  proxy_.Flush(now_, [this](PathId path, link::FramePieces p) {
    moved_ = true;
    const Box& b = BoxOf(path);
    net_->Send(b.host_end, b.box_end, link::GatherFrame(p));
  });
  return moved_;
}

void SimHost::Run(const std::function<void(HostProxy& proxy, uint64_t now)>& fn) {
  fn(proxy_, now_);
  Step();
}

bool SimHost::WaitUntil(const std::function<bool(const HostProxy& proxy)>& ready,
                        uint64_t deadline) {
  for (;;) {
    while (Step()) {
    }
    if (ready(proxy_)) return true;
    if (now_ >= deadline) return false;
    // Nothing moves now: jump to the next thing that will happen.
    uint64_t next = std::min<uint64_t>(proxy_.NextDeadline(), sched_.NextTime());
    for (const Box& b : boxes_) next = std::min(next, b.box->NextDeadline());
    now_ = std::min(deadline, std::max(now_ + 1, next));
  }
}

}  // namespace dxpu::host
