// capability_walker.cc - the capability list walk, written from the PCI and PCIe specifications
// (and shaped like Linux's __pci_find_next_cap_ttl and pci_find_next_ext_capability).
#include "capability_walker.h"

#include <set>

namespace dxpu::gpu::test {
namespace {

constexpr size_t kLegacySize = 256;
constexpr size_t kExtendedSize = 4096;
constexpr uint16_t kStatusCapList = 0x0010;

uint32_t Dw(std::span<const uint8_t> c, size_t o) {
  return static_cast<uint32_t>(c[o]) | (static_cast<uint32_t>(c[o + 1]) << 8) |
         (static_cast<uint32_t>(c[o + 2]) << 16) | (static_cast<uint32_t>(c[o + 3]) << 24);
}

std::string Hex(size_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 0xf]);
    v >>= 4;
  } while (v != 0);
  return "0x" + s;
}

void WalkStandard(std::span<const uint8_t> c, CapabilityWalk& out) {
  const auto status = static_cast<uint16_t>(c[0x06] | (c[0x07] << 8));
  if ((status & kStatusCapList) == 0) return;
  std::set<size_t> seen;
  size_t pos = c[0x34] & 0xfcu;
  while (pos != 0) {
    if (pos < 0x40 || pos + 2 > kLegacySize) {
      out.error = "standard capability pointer " + Hex(pos) + " is outside 0x40..0xff";
      return;
    }
    if (!seen.insert(pos).second) {
      out.error = "standard capability list loops back to " + Hex(pos);
      return;
    }
    out.standard.push_back({static_cast<uint16_t>(pos), c[pos], 0});
    pos = c[pos + 1] & 0xfcu;
  }
}

void WalkExtended(std::span<const uint8_t> c, CapabilityWalk& out) {
  if (c.size() < kExtendedSize) return;
  size_t pos = kLegacySize;
  uint32_t header = Dw(c, pos);
  if (header == 0 || header == 0xffffffff) return;  // no extended capabilities
  std::set<size_t> seen;
  for (;;) {
    if (!seen.insert(pos).second) {
      out.error = "extended capability list loops back to " + Hex(pos);
      return;
    }
    out.extended.push_back({static_cast<uint16_t>(pos), static_cast<uint16_t>(header & 0xffff),
                            static_cast<uint8_t>((header >> 16) & 0xf)});
    const size_t next = (header >> 20) & 0xffc;
    if (next == 0) return;
    if (next < kLegacySize || next + 4 > kExtendedSize) {
      out.error = "extended capability pointer " + Hex(next) + " is outside 0x100..0xfff";
      return;
    }
    pos = next;
    header = Dw(c, pos);
  }
}

}  // namespace

CapabilityWalk WalkCapabilities(std::span<const uint8_t> config) {
  CapabilityWalk out;
  if (config.size() < kLegacySize) {
    out.error = "configuration space shorter than 256 bytes";
    return out;
  }
  WalkStandard(config, out);
  if (out.error.empty()) WalkExtended(config, out);
  return out;
}

}  // namespace dxpu::gpu::test
