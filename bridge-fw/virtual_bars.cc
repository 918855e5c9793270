// virtual_bars.cc - a host's copy of a borrowed device's BAR registers (virtual_bars.h).
#include "bridge-fw/virtual_bars.h"

#include "gpu/pci_regs.h"

namespace dxpu::bridge {
namespace {

constexpr uint32_t kMemType64 = 0x4;     // BAR bits 2:1 = 10b
constexpr uint32_t kPrefetchable = 0x8;  // BAR bit 3

// Merges the enabled bytes of `value` into `old`.
uint32_t MergeBytes(uint32_t old, uint32_t value, uint8_t byte_enables) {
  uint32_t mask = 0;
  for (int k = 0; k < 4; ++k) {
    if ((byte_enables >> k) & 1U) mask |= 0xffU << (8 * k);
  }
  return (old & ~mask) | (value & mask);
}

}  // namespace

VirtualBars::VirtualBars(std::span<const gpu::BarState> bars) {
  for (const gpu::BarState& b : bars) {
    if (b.index >= kBars || b.size == 0) continue;
    slots_[b.index] = Slot{b.size, b.is_64bit, b.prefetchable, 0};
  }
}

bool VirtualBars::Covers(uint16_t reg) {
  return reg >= gpu::pci::kBar0 && reg < gpu::pci::kBar0 + 4 * kBars;
}

std::optional<size_t> VirtualBars::Owner(size_t i, bool* upper) const {
  *upper = false;
  if (slots_[i].size != 0) return i;
  if (i > 0 && slots_[i - 1].size != 0 && slots_[i - 1].is_64bit) {
    *upper = true;
    return i - 1;
  }
  return std::nullopt;
}

uint32_t VirtualBars::ReadDw(uint16_t reg) const {
  if (!Covers(reg)) return 0;
  bool upper = false;
  const auto owner = Owner((reg - gpu::pci::kBar0) / 4, &upper);
  if (!owner) return 0;  // an unimplemented BAR reads 0
  const Slot& s = slots_[*owner];
  if (upper) return static_cast<uint32_t>(s.address >> 32);
  uint32_t flags = 0;
  if (s.is_64bit) flags |= kMemType64;
  if (s.prefetchable) flags |= kPrefetchable;
  return static_cast<uint32_t>(s.address) | flags;
}

void VirtualBars::WriteDw(uint16_t reg, uint32_t value, uint8_t byte_enables) {
  if (!Covers(reg)) return;
  bool upper = false;
  const auto owner = Owner((reg - gpu::pci::kBar0) / 4, &upper);
  if (!owner) return;
  Slot& s = slots_[*owner];
  // Address bits below the size read 0, as on the device: all-ones reads back the size mask.
  const uint64_t writable =
      ~(s.size - 1) & (s.is_64bit ? ~uint64_t{0} : 0xffff'ffffULL) & ~uint64_t{0xf};
  uint64_t raw = s.address;
  if (upper) {
    const uint32_t hi = MergeBytes(static_cast<uint32_t>(raw >> 32), value, byte_enables);
    raw = (uint64_t{hi} << 32) | (raw & 0xffff'ffffULL);
  } else {
    const uint32_t lo = MergeBytes(static_cast<uint32_t>(raw), value, byte_enables);
    raw = (raw & ~0xffff'ffffULL) | lo;
  }
  s.address = raw & writable;
}

void VirtualBars::Reset() {
  for (Slot& s : slots_) s.address = 0;
}

std::optional<uint64_t> VirtualBars::HostAddress(size_t bar) const {
  if (bar >= kBars || slots_[bar].size == 0) return std::nullopt;
  return slots_[bar].address;
}

}  // namespace dxpu::bridge
