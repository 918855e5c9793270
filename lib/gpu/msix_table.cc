// msix_table.cc - MSI-X table registers, pending bits and message delivery.
#include "gpu/msix_table.h"

#include <utility>

namespace dxpu::gpu {

MsixTable::MsixTable(uint16_t vectors) : entries_(vectors), pending_(vectors, false) {}

uint32_t MsixTable::ReadTable(uint32_t offset) const {
  if (offset >= table_bytes()) return 0;
  const Entry& e = entries_[offset / kEntryBytes];
  switch (offset % kEntryBytes / 4) {
    case 0:
      return e.address_lo;
    case 1:
      return e.address_hi;
    case 2:
      return e.data;
    default:
      return e.control;
  }
}

uint32_t MsixTable::ReadPba(uint32_t offset) const {
  uint32_t value = 0;
  for (uint32_t bit = 0; bit < 32; ++bit) {
    const uint32_t vector = offset / 4 * 32 + bit;
    if (vector < vectors() && pending_[vector]) value |= 1u << bit;
  }
  return value;
}

void MsixTable::WriteTable(uint32_t offset, uint32_t value, uint32_t byte_mask) {
  if (offset >= table_bytes()) return;
  Entry& e = entries_[offset / kEntryBytes];
  const auto merge = [&](uint32_t& reg, uint32_t writable) {
    const uint32_t mask = byte_mask & writable;
    reg = (reg & ~mask) | (value & mask);
  };
  switch (offset % kEntryBytes / 4) {
    case 0:
      merge(e.address_lo, ~0x3u);
      break;
    case 1:
      merge(e.address_hi, ~0u);
      break;
    case 2:
      merge(e.data, ~0u);
      break;
    default:
      merge(e.control, kVectorControlMask);
      break;
  }
}

void MsixTable::Signal(uint16_t vector, const MsixState& state) {
  if (!state.enabled || vector >= vectors() || pending_[vector]) return;
  pending_[vector] = true;
  ++pending_count_;
}

bool MsixTable::pending(uint16_t vector) const { return vector < vectors() && pending_[vector]; }

size_t MsixTable::Deliver(const MsixState& state, bool bus_master, uint16_t requester_id,
                          TlpQueue& out) {
  if (pending_count_ == 0 || !state.enabled || state.function_masked || !bus_master) return 0;
  size_t sent = 0;
  for (uint16_t v = 0; v < vectors(); ++v) {
    const Entry& e = entries_[v];
    if (!pending_[v] || (e.control & kVectorControlMask) != 0) continue;
    OwnedTlp t;
    t.origin = TlpOrigin::kInterrupt;
    t.header.kind = DXPU_TLP_MWR;
    t.header.requester_id = requester_id;
    t.header.addr = (uint64_t{e.address_hi} << 32) | e.address_lo;
    t.header.length_dw = 1;
    t.header.first_be = 0xf;
    t.payload = {static_cast<uint8_t>(e.data), static_cast<uint8_t>(e.data >> 8),
                 static_cast<uint8_t>(e.data >> 16), static_cast<uint8_t>(e.data >> 24)};
    out.push_back(std::move(t));
    pending_[v] = false;
    --pending_count_;
    ++sent;
  }
  return sent;
}

void MsixTable::Reset() {
  for (Entry& e : entries_) e = Entry{};
  pending_.assign(pending_.size(), false);
  pending_count_ = 0;
}

}  // namespace dxpu::gpu
