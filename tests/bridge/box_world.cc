// box_world.cc - a GPU box and its hosts on a virtual clock (box_world.h).
#include "box_world.h"

#include "gpu/device_profile.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "rtl-sim/datapath_choice.h"

namespace dxpu::test {
namespace {

sim::PortId HostPort(size_t i) { return static_cast<sim::PortId>(i + 1); }
sim::PortId BoxPort(size_t i) { return static_cast<sim::PortId>(1000 + i); }

}  // namespace

namespace {

// The data plane $DXPU_TEST_DATAPATH names: golden (or unset), or rtl (the Verilated RTL in
// the loop: the same tests run again that way).
bridge::BridgeBoxConfig WithTestDatapath(bridge::BridgeBoxConfig config) {
  const char* env = std::getenv("DXPU_TEST_DATAPATH");  // NOLINT(concurrency-mt-unsafe)
  const std::string datapath = env != nullptr && *env != '\0' ? env : "golden";
  std::string why;
  const std::optional<bridge::DataPlane> plane = bridge::DataPlaneNamed(datapath, &why);
  if (!plane) throw std::runtime_error("DXPU_TEST_DATAPATH: " + why);
  config.plane = *plane;
  return config;
}

}  // namespace

BoxWorld::BoxWorld(const bridge::BridgeBoxConfig& config, Transport transport, uint64_t seed,
                   const sim::PathConfig& path)
    : transport_(transport), path_(path), rx_(DXFP_MAX_FRAME) {
  std::string error;
  const bridge::BridgeBoxConfig with_plane = WithTestDatapath(config);
  plane_frames_ = static_cast<bool>(with_plane.plane.framing);
  box_ = bridge::BridgeBox::Create(with_plane, &error);
  if (!box_) throw std::runtime_error("bridge: " + error);
  if (transport_ == Transport::kSimulator) {
    net_ = std::make_unique<sim::Network>(sched_, seed, path_);
    sched_.RunUntil(now_);
  }
}

TestHost& BoxWorld::AddHost(uint64_t node, const dxfp_session_config* base) {
  const size_t i = hosts_.size();
  hosts_.push_back(std::make_unique<TestHost>(node, static_cast<uint32_t>(100 + i), base));
  TestHost* h = hosts_.back().get();
  if (transport_ == Transport::kMemoryLink) {
    auto pair = link::MemoryLink::Pair(4096);
    box_links_.push_back(std::move(pair.a));
    host_links_.push_back(std::move(pair.b));
  } else {
    // The box listens on a port per host, so that it knows whom a frame came from.
    net_->Attach(BoxPort(i), [this, i](std::span<const uint8_t> f) {
      moved_ = true;
      box_->ReceiveFrame(
          sched_.Now(), bridge::Peer{static_cast<uint32_t>(i), link::LinkAddress()}, f,
          [this](const bridge::Peer& to, link::FramePieces p) { BoxTransmit(to, p); });
    });
    net_->Attach(HostPort(i), [this, h](std::span<const uint8_t> f) {
      moved_ = true;
      h->now_ns = sched_.Now();
      h->endpoint().Receive(sched_.Now(), f);
    });
  }
  return *h;
}

bool BoxWorld::Connect(TestHost& h) {
  h.Connect(now_);
  return RunUntil([&] { return h.established(); }, 100'000'000);
}

void BoxWorld::BoxTransmit(const bridge::Peer& to, link::FramePieces frame) {
  if (transport_ == Transport::kMemoryLink) {
    if (to.link < box_links_.size()) box_links_[to.link]->SendPieces(link::LinkAddress(), frame);
    return;
  }
  net_->Send(BoxPort(to.link), HostPort(to.link), link::GatherFrame(frame));
}

bool BoxWorld::Step() {
  moved_ = false;
  const auto box_tx = [this](const bridge::Peer& to, link::FramePieces p) { BoxTransmit(to, p); };
  if (transport_ == Transport::kMemoryLink) {
    for (size_t i = 0; i < hosts_.size(); ++i) {
      for (;;) {
        const link::LinkResult r = box_links_[i]->Receive(rx_, nullptr);
        if (!r.ok()) break;
        moved_ = true;
        box_->ReceiveFrame(now_, bridge::Peer{static_cast<uint32_t>(i), link::LinkAddress()},
                           std::span<const uint8_t>(rx_.data(), r.size), box_tx);
      }
      for (;;) {
        const link::LinkResult r = host_links_[i]->Receive(rx_, nullptr);
        if (!r.ok()) break;
        moved_ = true;
        hosts_[i]->now_ns = now_;
        hosts_[i]->endpoint().Receive(now_, std::span<const uint8_t>(rx_.data(), r.size));
      }
    }
  } else {
    // Deliver everything due now (receivers set moved_).
    sched_.RunUntil(now_);
  }
  box_->Run(now_, box_tx);
  for (size_t i = 0; i < hosts_.size(); ++i) {
    TestHost& h = *hosts_[i];
    h.now_ns = now_;
    h.endpoint().Flush(now_, [&](link::FramePieces p) {
      moved_ = true;
      if (host_tap) host_tap(i, link::GatherFrame(p));
      if (transport_ == Transport::kMemoryLink) {
        host_links_[i]->SendPieces(link::LinkAddress(), p);
      } else {
        net_->Send(HostPort(i), BoxPort(i), link::GatherFrame(p));
      }
    });
  }
  return moved_;
}

uint64_t BoxWorld::NextWake() const {
  uint64_t next = box_->NextDeadline();
  for (const auto& h : hosts_) next = std::min(next, h->endpoint().NextDeadline());
  if (transport_ == Transport::kSimulator) next = std::min<uint64_t>(next, sched_.NextTime());
  return next;
}

bool BoxWorld::RunUntil(const std::function<bool()>& done, uint64_t limit_ns) {
  const uint64_t end = now_ + limit_ns;
  while (!done()) {
    if (now_ >= end) return false;
    if (Step()) continue;
    // Nothing moved: jump to the next thing that will happen (at least 1 us on).
    const uint64_t next = NextWake();
    now_ = std::min(end, std::max(now_ + 1000, next == UINT64_MAX ? end : next));
    if (transport_ == Transport::kSimulator) sched_.RunUntil(now_);
  }
  return true;
}

void BoxWorld::RunFor(uint64_t ns) {
  const uint64_t end = now_ + ns;
  RunUntil([&] { return now_ >= end; }, ns + 1);
}

std::optional<HostRequest> BoxWorld::Wait(TestHost& h, std::optional<uint32_t> id) {
  if (!id) return std::nullopt;
  if (!RunUntil([&] { return h.request(*id).done; }, 500'000'000)) return std::nullopt;
  return h.request(*id);
}

std::optional<uint32_t> BoxWorld::CfgRead(TestHost& h, uint16_t bdf, uint16_t reg) {
  auto r = Wait(h, h.CfgRead(bdf, reg));
  if (!r || r->status != DXPU_TLP_CPL_SC) return std::nullopt;
  return r->data[0] | (r->data[1] << 8) | (r->data[2] << 16) | (uint32_t{r->data[3]} << 24);
}

bool BoxWorld::CfgWrite(TestHost& h, uint16_t bdf, uint16_t reg, uint32_t value, uint8_t be) {
  auto r = Wait(h, h.CfgWrite(bdf, reg, value, be));
  return r && r->status == DXPU_TLP_CPL_SC;
}

std::optional<std::vector<uint8_t>> BoxWorld::MemRead(TestHost& h, uint64_t addr, uint32_t len) {
  auto r = Wait(h, h.MemRead(addr, len));
  if (!r || r->status != DXPU_TLP_CPL_SC) return std::nullopt;
  return r->data;
}

std::optional<uint32_t> BoxWorld::MemRead32(TestHost& h, uint64_t addr) {
  auto d = MemRead(h, addr, 4);
  if (!d) return std::nullopt;
  return (*d)[0] | ((*d)[1] << 8) | ((*d)[2] << 16) | (uint32_t{(*d)[3]} << 24);
}

bridge::BridgeBoxConfig OneGpuBoxConfig(std::optional<bridge::BoxIdentity> identity) {
  bridge::BridgeBoxConfig c;
  c.node_id = 0xb0c5;
  bridge::BoxDeviceConfig d;
  d.profile = *gpu::FindProfile("dxgpu");
  d.box_bdf = 0x0100;
  d.memory_bytes = 64ULL << 20;
  c.devices.push_back(d);
  c.identity = std::move(identity);
  return c;
}

}  // namespace dxpu::test
