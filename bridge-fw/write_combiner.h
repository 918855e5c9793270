// write_combiner.h - joins a device's consecutive DMA writes to its host into larger ones
// before they enter the host's session: a copy engine writes at its MPS (256 bytes), the
// fabric carries up to 4 KiB per TLP (docs/bridge.md, "Large writes"). Only writes of whole
// DWs that continue the previous one exactly (same host, requester and attributes, the next
// address), within one 4 KiB page and the session's frame, are joined; anything else ends the
// pending write first, so the device's order is kept.
#ifndef DXPU_BRIDGE_FW_WRITE_COMBINER_H_
#define DXPU_BRIDGE_FW_WRITE_COMBINER_H_

#include <cstdint>
#include <vector>

#include "bridge-fw/datapath.h"
#include "core/tlp_codec.h"

namespace dxpu::bridge {

class WriteCombiner {
 public:
  // Whether `tlp` may start or join a combined write: an MWr of whole DWs, no flags.
  static bool Joinable(const dxpu_tlp& tlp);

  // Makes `tlp` (Joinable) the pending write for host `slot`.
  void Start(HostSlot slot, const dxpu_tlp& tlp);
  // Appends `tlp` when it continues the pending write and the result stays within `cap`
  // bytes and one 4 KiB page; false (nothing changed) otherwise.
  bool Append(HostSlot slot, const dxpu_tlp& tlp, uint32_t cap);

  bool pending() const { return pending_; }
  HostSlot slot() const { return slot_; }
  uint32_t pending_bytes() const { return pending_ ? static_cast<uint32_t>(payload_.size()) : 0; }
  // The pending write as one TLP, valid until the next call; nothing is pending afterwards.
  dxpu_tlp Take();

 private:
  bool pending_ = false;
  HostSlot slot_ = kNoHost;
  dxpu_tlp header_{};
  std::vector<uint8_t> payload_;
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_WRITE_COMBINER_H_
