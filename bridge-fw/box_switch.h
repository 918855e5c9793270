// box_switch.h - the box's PCIe switch as peer-to-peer traffic sees it: a TLP from one of the
// box's devices to another crosses the source's link up to the switch and the target's link
// down, each with a latency and a bandwidth (store and forward, one TLP at a time per link
// direction). With both zero (the default) a TLP is due at once. Host traffic does not pass
// here: a simulated fabric path already includes the box's PCIe (docs/bridge.md, "Peer to
// peer").
#ifndef DXPU_BRIDGE_FW_BOX_SWITCH_H_
#define DXPU_BRIDGE_FW_BOX_SWITCH_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "bridge-fw/datapath.h"
#include "core/tlp_codec.h"
#include "pcie/owned_tlp.h"

namespace dxpu::bridge {

struct BoxLinkConfig {
  uint64_t latency_ns = 0;     // one way, per link
  uint64_t bandwidth_bps = 0;  // per link and direction; 0: no serialisation time
};

class BoxSwitch {
 public:
  BoxSwitch(size_t devices, const BoxLinkConfig& link);

  // Takes a copy of `tlp` (payload included) from device `from` to device `to`, sent at `now`.
  void Send(DeviceIndex from, DeviceIndex to, const dxpu_tlp& tlp, uint64_t now);
  // Hands every TLP due by `now` to deliver(target, tlp), in the order each target's link
  // carries them; returns how many.
  size_t Deliver(uint64_t now, const std::function<void(DeviceIndex to, const dxpu_tlp&)>& deliver);
  // Forgets what is on its way to device d (it was reset).
  void DropTo(DeviceIndex d);
  // When Deliver next has something; UINT64_MAX: nothing in flight.
  uint64_t NextDeadline() const;
  size_t in_flight() const;

 private:
  struct InFlight {
    uint64_t due = 0;
    pcie::OwnedTlp tlp;
  };
  uint64_t Serialisation(const dxpu_tlp& tlp) const;

  BoxLinkConfig link_;
  std::vector<uint64_t> up_free_;             // by source: when its link up is free
  std::vector<uint64_t> down_free_;           // by target: when its link down is free
  std::vector<std::deque<InFlight>> queues_;  // by target, in due order
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_BOX_SWITCH_H_
