// box_switch.cc - peer-to-peer TLPs across the box's PCIe switch (box_switch.h).
#include "bridge-fw/box_switch.h"

#include <algorithm>

namespace dxpu::bridge {

BoxSwitch::BoxSwitch(size_t devices, const BoxLinkConfig& link)
    : link_(link), up_free_(devices, 0), down_free_(devices, 0), queues_(devices) {}

uint64_t BoxSwitch::Serialisation(const dxpu_tlp& tlp) const {
  if (link_.bandwidth_bps == 0) return 0;
  const uint64_t bits = uint64_t{dxpu_tlp_wire_len(&tlp)} * 8;
  return (bits * 1'000'000'000 + link_.bandwidth_bps - 1) / link_.bandwidth_bps;
}

void BoxSwitch::Send(DeviceIndex from, DeviceIndex to, const dxpu_tlp& tlp, uint64_t now) {
  const uint64_t ser = Serialisation(tlp);
  // Up the source's link, through the switch, down the target's: each link one TLP at a time.
  const uint64_t up_done = std::max(now, up_free_[from]) + ser;
  up_free_[from] = up_done;
  const uint64_t at_switch = up_done + link_.latency_ns;
  const uint64_t down_done = std::max(at_switch, down_free_[to]) + ser;
  down_free_[to] = down_done;
  InFlight f;
  f.due = down_done + link_.latency_ns;
  f.tlp = pcie::OwnedTlp::Copy(tlp);
  queues_[to].push_back(std::move(f));
}

size_t BoxSwitch::Deliver(uint64_t now,
                          const std::function<void(DeviceIndex to, const dxpu_tlp&)>& deliver) {
  size_t n = 0;
  for (size_t to = 0; to < queues_.size(); ++to) {
    std::deque<InFlight>& q = queues_[to];
    while (!q.empty() && q.front().due <= now) {
      const InFlight f = std::move(q.front());
      q.pop_front();
      deliver(static_cast<DeviceIndex>(to), f.tlp.View());
      ++n;
    }
  }
  return n;
}

void BoxSwitch::DropTo(DeviceIndex d) { queues_.at(d).clear(); }

uint64_t BoxSwitch::NextDeadline() const {
  uint64_t next = UINT64_MAX;
  for (const auto& q : queues_)
    if (!q.empty()) next = std::min(next, q.front().due);
  return next;
}

size_t BoxSwitch::in_flight() const {
  size_t n = 0;
  for (const auto& q : queues_) n += q.size();
  return n;
}

}  // namespace dxpu::bridge
