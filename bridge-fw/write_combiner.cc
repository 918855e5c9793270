// write_combiner.cc - consecutive DMA writes joined (write_combiner.h).
#include "bridge-fw/write_combiner.h"

namespace dxpu::bridge {

bool WriteCombiner::Joinable(const dxpu_tlp& tlp) {
  // No hints, digest or poison: nothing a join would have to merge.
  if (tlp.kind != DXPU_TLP_MWR || tlp.payload == nullptr || tlp.flags != 0 || tlp.first_be != 0xf)
    return false;
  return tlp.length_dw == 1 ? tlp.last_be == 0 : tlp.last_be == 0xf;
}

void WriteCombiner::Start(HostSlot slot, const dxpu_tlp& tlp) {
  pending_ = true;
  slot_ = slot;
  header_ = tlp;
  header_.payload = nullptr;
  payload_.assign(tlp.payload, tlp.payload + (size_t{tlp.length_dw} * 4));
}

bool WriteCombiner::Append(HostSlot slot, const dxpu_tlp& tlp, uint32_t cap) {
  if (!pending_ || slot != slot_ || !Joinable(tlp)) return false;
  const uint64_t bytes = uint64_t{tlp.length_dw} * 4;
  const uint64_t total = payload_.size() + bytes;
  if (tlp.addr != header_.addr + payload_.size() || total > cap) return false;
  if ((header_.addr >> 12) != ((header_.addr + total - 1) >> 12)) return false;
  if (tlp.requester_id != header_.requester_id || tlp.tc != header_.tc ||
      tlp.attr != header_.attr || tlp.at != header_.at)
    return false;
  payload_.insert(payload_.end(), tlp.payload, tlp.payload + bytes);
  return true;
}

dxpu_tlp WriteCombiner::Take() {
  dxpu_tlp t = header_;
  t.length_dw = static_cast<uint16_t>(payload_.size() / 4);
  t.first_be = 0xf;
  t.last_be = t.length_dw == 1 ? 0 : 0xf;
  t.payload = payload_.data();
  pending_ = false;
  return t;
}

}  // namespace dxpu::bridge
