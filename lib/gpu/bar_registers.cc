// bar_registers.cc - BAR registers: definition, resizing, decoding.
#include "gpu/bar_registers.h"

#include "gpu/pci_regs.h"

namespace dxpu::gpu {
namespace {

uint32_t FlagBits(const BarSpec& bar) {
  return (bar.is_64bit ? pci::kBarMemType64 : 0u) | (bar.prefetchable ? pci::kBarMemPrefetch : 0u);
}

uint32_t Low32(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t High32(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

void Define(RegisterFile& regs, const BarSpec& bar, uint64_t size, uint64_t address) {
  const uint64_t address_mask = ~(size - 1);
  regs.Define({.offset = BarOffset(bar.index),
               .size = 4,
               .value = (Low32(address & address_mask) & ~pci::kBarMemFlags) | FlagBits(bar),
               .rw = Low32(address_mask) & ~pci::kBarMemFlags,
               .hwinit = pci::kBarMemFlags});
  if (bar.is_64bit) {
    regs.Define({.offset = BarOffset(static_cast<uint8_t>(bar.index + 1)),
                 .size = 4,
                 .value = High32(address & address_mask),
                 .rw = High32(address_mask)});
  }
}

}  // namespace

void DefineBar(RegisterFile& regs, const BarSpec& bar, uint64_t size) {
  Define(regs, bar, size, 0);
}

void ResizeBar(RegisterFile& regs, const BarSpec& bar, uint64_t size) {
  Define(regs, bar, size, BarAddress(regs, bar));
}

uint64_t BarAddress(const RegisterFile& regs, const BarSpec& bar) {
  uint64_t address = regs.Read(BarOffset(bar.index), 4) & ~pci::kBarMemFlags;
  if (bar.is_64bit) {
    address |= uint64_t{regs.Read(BarOffset(static_cast<uint8_t>(bar.index + 1)), 4)} << 32;
  }
  return address;
}

uint64_t BarSize(const RegisterFile& regs, const BarSpec& bar) {
  uint64_t mask = regs.WritableMask(BarOffset(bar.index), 4);
  mask |= bar.is_64bit
              ? uint64_t{regs.WritableMask(BarOffset(static_cast<uint8_t>(bar.index + 1)), 4)} << 32
              : uint64_t{0xffffffff} << 32;
  return ~mask + 1;  // the writable mask has no flag bits: size = ~mask + 1
}

}  // namespace dxpu::gpu
