// device_profile.cc - profile lookups, capability sizes and the rules a profile must meet.
#include "gpu/device_profile.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <initializer_list>
#include <string>

#include "gpu/pci_regs.h"

namespace dxpu::gpu {
namespace {

constexpr uint64_t kMinBarSize = 128;  // PCIe: the smallest memory BAR
constexpr uint64_t kMaxBar32Size = uint64_t{1} << 31;
constexpr uint64_t kMaxBar64Size = uint64_t{1} << 63;
constexpr int kRebarSizeBits = 28;  // 1 MiB << 0..27 in the capability register

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
  return buf;
}

std::string Bar(const BarSpec& bar) { return "BAR " + std::to_string(bar.index); }

uint64_t RebarSize(int k) { return (uint64_t{1} << 20) << k; }

// The smallest size a BAR can have: its power-on size, or the smallest resizable one.
uint64_t MinBarSize(const BarSpec& bar) {
  if (bar.resizable_sizes == 0) return bar.size;
  return RebarSize(std::countr_zero(bar.resizable_sizes));
}

std::string CheckBar(const BarSpec& bar) {
  if (bar.index >= pci::kNumBars) return Bar(bar) + ": index must be 0..5";
  if (bar.is_64bit && bar.index == pci::kNumBars - 1) {
    return Bar(bar) + ": a 64-bit BAR takes two slots and BAR 5 is the last one";
  }
  if (!std::has_single_bit(bar.size)) {
    return Bar(bar) + ": size " + Hex(bar.size) + " is not a power of two";
  }
  if (bar.size < kMinBarSize) {
    return Bar(bar) + ": size " + Hex(bar.size) + " is below the 128-byte minimum of a memory BAR";
  }
  const uint64_t max = bar.is_64bit ? kMaxBar64Size : kMaxBar32Size;
  if (bar.size > max) {
    return Bar(bar) + ": size " + Hex(bar.size) + " does not fit a " +
           (bar.is_64bit ? "64" : "32") + "-bit BAR";
  }
  if (bar.resizable_sizes != 0) {
    if ((bar.resizable_sizes >> kRebarSizeBits) != 0) {
      return Bar(bar) + ": resizable sizes above 128 TiB are not modelled";
    }
    const int top = static_cast<int>(std::bit_width(bar.resizable_sizes)) - 1;
    if (RebarSize(top) > max) {
      return Bar(bar) + ": resizable size " + Hex(RebarSize(top)) + " does not fit a " +
             (bar.is_64bit ? "64" : "32") + "-bit BAR";
    }
    const int k = std::countr_zero(bar.size) - 20;  // size is 1 MiB << k
    if (k < 0 || k >= kRebarSizeBits || ((bar.resizable_sizes >> k) & 1u) == 0) {
      return Bar(bar) + ": size " + Hex(bar.size) + " is not one of its resizable sizes";
    }
  }
  return {};
}

std::string CheckBars(const DeviceProfile& p) {
  std::array<bool, pci::kNumBars> used{};
  bool any_resizable = false;
  for (const BarSpec& bar : p.bars) {
    if (std::string e = CheckBar(bar); !e.empty()) return e;
    const int slots = bar.is_64bit ? 2 : 1;
    for (int s = 0; s < slots; ++s) {
      const auto slot = static_cast<size_t>(bar.index) + static_cast<size_t>(s);
      if (used.at(slot)) {
        return Bar(bar) + ": slot " + std::to_string(slot) + " is already taken by another BAR";
      }
      used.at(slot) = true;
    }
    any_resizable = any_resizable || bar.resizable_sizes != 0;
  }
  const bool has_rebar = FindCapabilityOffset(p, CapabilityId::kResizableBar).has_value();
  if (any_resizable && !has_rebar) {
    return "resizable BARs need the Resizable BAR capability in the capability list";
  }
  if (has_rebar && !any_resizable) {
    return "the Resizable BAR capability needs at least one BAR with resizable_sizes";
  }
  return {};
}

// [offset, offset + size) of the MSI-X table or PBA inside BAR `bir`.
std::string CheckMsixRegion(const DeviceProfile& p, std::string_view what, uint8_t bir,
                            uint64_t offset, uint64_t size) {
  const std::string name(what);
  if ((offset & pci::kMsixBirMask) != 0) {
    return "MSI-X " + name + " offset " + Hex(offset) + " is not 8-byte aligned";
  }
  const BarSpec* bar = FindBar(p, bir);
  if (bar == nullptr) {
    return "MSI-X " + name + " is in BAR " + std::to_string(bir) + ", which does not exist";
  }
  if (offset + size > MinBarSize(*bar)) {
    return "MSI-X " + name + " (" + Hex(offset) + ".." + Hex(offset + size) +
           ") does not fit BAR " + std::to_string(bir) + " of " + Hex(MinBarSize(*bar)) + " bytes";
  }
  return {};
}

std::string CheckInterrupts(const DeviceProfile& p) {
  const bool has_msi = FindCapabilityOffset(p, CapabilityId::kMsi).has_value();
  const bool has_msix = FindCapabilityOffset(p, CapabilityId::kMsix).has_value();
  if (!has_msi && !has_msix) return "a PCIe function that interrupts needs MSI or MSI-X";
  if (has_msi && (!std::has_single_bit(p.msi.vectors) || p.msi.vectors > 32)) {
    return "MSI vectors must be 1, 2, 4, 8, 16 or 32, not " + std::to_string(p.msi.vectors);
  }
  if (!has_msix) {
    if (p.msix.vectors != 0) return "MSI-X vectors are set but there is no MSI-X capability";
    return {};
  }
  const MsixSpec& m = p.msix;
  if (m.vectors < 1 || m.vectors > 2048) {
    return "MSI-X vectors must be 1..2048, not " + std::to_string(m.vectors);
  }
  const uint64_t table_size = uint64_t{m.vectors} * pci::kMsixEntrySize;
  const uint64_t pba_size = (uint64_t{m.vectors} + 63) / 64 * 8;
  if (std::string e = CheckMsixRegion(p, "table", m.table_bar, m.table_offset, table_size);
      !e.empty()) {
    return e;
  }
  if (std::string e = CheckMsixRegion(p, "PBA", m.pba_bar, m.pba_offset, pba_size); !e.empty()) {
    return e;
  }
  if (m.table_bar == m.pba_bar && m.table_offset < m.pba_offset + pba_size &&
      m.pba_offset < m.table_offset + table_size) {
    return "MSI-X table (" + Hex(m.table_offset) + ".." + Hex(m.table_offset + table_size) +
           ") and PBA (" + Hex(m.pba_offset) + ".." + Hex(m.pba_offset + pba_size) + ") overlap";
  }
  return {};
}

std::string CheckLink(const DeviceProfile& p) {
  const auto speed = static_cast<uint8_t>(p.link.speed);
  if (speed < 1 || speed > 5) return "link speed must be 2.5 to 32 GT/s (Gen1..Gen5)";
  const uint8_t w = p.link.width;
  if (w != 1 && w != 2 && w != 4 && w != 8 && w != 12 && w != 16 && w != 32) {
    return "link width must be x1, x2, x4, x8, x12, x16 or x32, not x" + std::to_string(w);
  }
  if (!std::has_single_bit(p.max_payload_supported) || p.max_payload_supported < 128 ||
      p.max_payload_supported > 4096) {
    return "max_payload_supported must be 128..4096 bytes, a power of two, not " +
           std::to_string(p.max_payload_supported);
  }
  return {};
}

std::string Cap(CapabilityId id, uint16_t offset) {
  return std::string(CapabilityName(id)) + " at " + Hex(offset);
}

// Offsets, ranges, order, duplicates and overlaps of the capability placements.
std::string CheckPlacements(const DeviceProfile& p) {
  bool seen_extended = false;
  bool first_extended = true;
  for (size_t i = 0; i < p.capabilities.size(); ++i) {
    const CapabilityPlacement& c = p.capabilities[i];
    const uint16_t size = CapabilitySize(c, p);
    const bool ext = IsExtended(c.id);
    if ((c.offset & 3u) != 0) return Cap(c.id, c.offset) + ": offset is not DW-aligned";
    if (c.id == CapabilityId::kVendorSpecific) {
      if (c.vendor_bytes.empty() || c.vendor_bytes.size() > pci::kLegacyConfigSize - 2u ||
          c.vendor_bytes[0] != c.vendor_bytes.size() + 2u) {
        return Cap(c.id, c.offset) + ": its length byte must be 2 + the bytes it carries";
      }
    } else if (!c.vendor_bytes.empty()) {
      return Cap(c.id, c.offset) + ": only a Vendor-Specific capability carries its own bytes";
    }
    if (!ext) {
      if (seen_extended) return Cap(c.id, c.offset) + ": standard capabilities come first";
      if (c.offset < pci::kHeaderSize || c.offset + size > pci::kLegacyConfigSize) {
        return Cap(c.id, c.offset) + ": must lie within 0x40..0xff";
      }
    } else {
      seen_extended = true;
      if (c.offset < pci::kLegacyConfigSize || c.offset + size > pci::kConfigSpaceSize) {
        return Cap(c.id, c.offset) + ": must lie within 0x100..0xfff";
      }
      if (first_extended && c.offset != pci::kLegacyConfigSize) {
        return Cap(c.id, c.offset) + ": the first extended capability must be at 0x100";
      }
      first_extended = false;
    }
    for (size_t j = 0; j < i; ++j) {
      const CapabilityPlacement& o = p.capabilities[j];
      if (o.id == c.id && c.id != CapabilityId::kVendorSpecific) {
        return Cap(c.id, c.offset) + ": listed twice";
      }
      const uint16_t osize = CapabilitySize(o, p);
      if (c.offset < o.offset + osize && o.offset < c.offset + size) {
        return Cap(c.id, c.offset) + ": overlaps " + Cap(o.id, o.offset);
      }
    }
  }
  return {};
}

std::string CheckCapabilities(const DeviceProfile& p) {
  if (std::string e = CheckPlacements(p); !e.empty()) return e;
  auto has = [&](CapabilityId id) { return FindCapabilityOffset(p, id).has_value(); };
  if (!has(CapabilityId::kPciExpress)) return "a PCIe function needs the PCI Express capability";
  if (!has(CapabilityId::kPowerManagement)) {
    return "a PCIe function needs the Power Management capability";
  }
  if (has(CapabilityId::kL1PmSubstates) && !has(CapabilityId::kLtr)) {
    return "L1 PM Substates (ASPM L1.2) needs the Latency Tolerance Reporting capability";
  }
  if (has(CapabilityId::kPhysicalLayer16) && p.link.speed < LinkSpeed::k16GT) {
    return "the Physical Layer 16.0 GT/s capability needs a link of 16 GT/s or more";
  }
  if (has(CapabilityId::kPowerBudgeting) &&
      (p.power_budget.empty() || p.power_budget.size() > 256)) {
    return "the Power Budgeting capability needs 1..256 power_budget entries";
  }
  if (!has(CapabilityId::kPowerBudgeting) && !p.power_budget.empty()) {
    return "power_budget entries are set but there is no Power Budgeting capability";
  }
  return {};
}

std::string CheckIds(const DeviceProfile& p) {
  if (p.name.empty()) return "the profile needs a name";
  if (p.vendor_id == 0xffff || p.vendor_id == 0x0000) {
    return "vendor ID " + Hex(p.vendor_id) + " reads as 'no device'";
  }
  if (p.device_id == 0xffff) return "device ID 0xffff reads as 'no device'";
  if (p.class_code > 0xffffff) return "class code " + Hex(p.class_code) + " is wider than 24 bits";
  return {};
}

std::string CheckRoofline(const Roofline& r) {
  // All zero: a function without a compute engine (a virtio device); GpuDevice refuses it.
  if (r == Roofline{}) return {};
  if (!(r.peak_fp32_flops > 0) || !(r.memory_bandwidth_bytes > 0)) {
    return "roofline: peak FLOP/s and memory bandwidth must be positive";
  }
  if (r.memory_bytes == 0) return "roofline: device memory size must be positive";
  return {};
}

}  // namespace

uint32_t EncodePowerBudgetEntry(const PowerBudgetEntry& e) {
  uint32_t base = e.watts;
  if (e.watts > 300) {
    base = 0xf3;
  } else if (e.watts > 275) {
    base = 0xf2;
  } else if (e.watts > 250) {
    base = 0xf1;
  } else if (e.watts > 239) {
    base = 0xf0;
  }
  // Data Scale [9:8] = 00b (1.0x); PM Sub State [12:10] = 000b (default sub state).
  return base | (static_cast<uint32_t>(e.state) << 13) | (static_cast<uint32_t>(e.type) << 15) |
         (static_cast<uint32_t>(e.rail) << 18);
}

const BarSpec* FindBar(const DeviceProfile& profile, uint8_t index) {
  for (const BarSpec& bar : profile.bars) {
    if (bar.index == index) return &bar;
  }
  return nullptr;
}

std::optional<uint16_t> FindCapabilityOffset(const DeviceProfile& profile, CapabilityId id) {
  for (const CapabilityPlacement& c : profile.capabilities) {
    if (c.id == id) return c.offset;
  }
  return std::nullopt;
}

uint16_t CapabilitySize(CapabilityId id, const DeviceProfile& profile) {
  auto dw_round = [](unsigned n) { return static_cast<uint16_t>((n + 3u) & ~3u); };
  switch (id) {
    case CapabilityId::kPowerManagement:
      return pci::kPmSizeof;
    case CapabilityId::kMsi:  // 64-bit layout: through Data (0x0e) or Pending Bits (0x18)
      return profile.msi.per_vector_masking ? 0x18 : 0x10;
    case CapabilityId::kPciExpress:
      return pci::kExpEndpointSizeofV2;
    case CapabilityId::kMsix:
      return pci::kMsixSizeof;
    case CapabilityId::kAer:
      return pci::kErrSizeof;
    case CapabilityId::kVirtualChannel:
      return pci::kVcSizeofVc0;
    case CapabilityId::kSerialNumber:
      return pci::kDsnSizeof;
    case CapabilityId::kPowerBudgeting:
      return pci::kPwrSizeof;
    case CapabilityId::kResizableBar: {
      const auto n = static_cast<unsigned>(
          std::count_if(profile.bars.begin(), profile.bars.end(),
                        [](const BarSpec& b) { return b.resizable_sizes != 0; }));
      return static_cast<uint16_t>(4 + 8 * std::max(n, 1u));
    }
    case CapabilityId::kLtr:
      return pci::kLtrSizeof;
    case CapabilityId::kSecondaryPcie:
      return dw_round(pci::kSecpciLaneEqCtl + 2u * profile.link.width);
    case CapabilityId::kL1PmSubstates:
      return pci::kL1ssSizeof;
    case CapabilityId::kPhysicalLayer16:
      return dw_round(pci::kPl16LaneEqCtl + profile.link.width);
    case CapabilityId::kVendorSpecific:  // without its placement: the header and length byte
      return 4;
  }
  return 0;
}

uint16_t CapabilitySize(const CapabilityPlacement& placement, const DeviceProfile& profile) {
  if (placement.id != CapabilityId::kVendorSpecific) return CapabilitySize(placement.id, profile);
  return static_cast<uint16_t>((2u + placement.vendor_bytes.size() + 3u) & ~3u);
}

std::optional<std::string> ValidateProfile(const DeviceProfile& profile) {
  for (auto* check : {CheckIds, CheckBars, CheckLink, CheckCapabilities, CheckInterrupts}) {
    if (std::string e = check(profile); !e.empty()) {
      return "profile '" + profile.name + "': " + e;
    }
  }
  if (std::string e = CheckRoofline(profile.roofline); !e.empty()) {
    return "profile '" + profile.name + "': " + e;
  }
  return std::nullopt;
}

}  // namespace dxpu::gpu
