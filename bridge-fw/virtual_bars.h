// virtual_bars.h - the BAR registers a host sees for a device it borrows. The device's real
// BARs hold addresses on the box's PCIe, placed by the bridge; each host programs its own
// addresses into a copy the bridge keeps, and the bridge turns that copy into the data
// plane's BAR windows (host address -> device address). A host's sizing (all-ones write, read
// back) works on the copy exactly as on a real BAR, and no host can move the device's BARs on
// the box. The Command register's Memory Space Enable decides whether the windows are live.
#ifndef DXPU_BRIDGE_FW_VIRTUAL_BARS_H_
#define DXPU_BRIDGE_FW_VIRTUAL_BARS_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "gpu/config_space.h"

namespace dxpu::bridge {

class VirtualBars {
 public:
  VirtualBars() = default;
  // The device's BARs as the box placed them (index, size, 64-bit, prefetchable).
  explicit VirtualBars(std::span<const gpu::BarState> bars);

  // Whether configuration offset `reg` (DW-aligned) is one of the six BAR registers.
  static bool Covers(uint16_t reg);

  // The register at `reg` as the host sees it.
  uint32_t ReadDw(uint16_t reg) const;
  // A host's write to the register at `reg`, bytes enabled by `byte_enables` (bit k: byte k).
  void WriteDw(uint16_t reg, uint32_t value, uint8_t byte_enables);
  // Power-on values (after an FLR): every address 0.
  void Reset();

  // The address the host gave BAR `bar`; nullopt when no BAR starts at that index.
  std::optional<uint64_t> HostAddress(size_t bar) const;
  // The size of BAR `bar` (0 when none starts there).
  uint64_t Size(size_t bar) const { return bar < kBars ? slots_[bar].size : 0; }

 private:
  static constexpr size_t kBars = 6;
  struct Slot {
    uint64_t size = 0;  // 0: no BAR starts here
    bool is_64bit = false;
    bool prefetchable = false;
    uint64_t address = 0;  // as the host wrote it, bits below the size cleared
  };
  // The BAR whose register (lower or upper half) is at index i, and whether it is the upper.
  std::optional<size_t> Owner(size_t i, bool* upper) const;

  std::array<Slot, kBars> slots_{};
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_VIRTUAL_BARS_H_
