// flash_layout.h - where things sit in the bridge's flash (docs/firmware.md, "The flash"):
// block 0 the factory block, blocks 1 and 2 the boot state, 3 and 4 the key list, then slot A,
// then slot B.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_FLASH_LAYOUT_H_
#define DXPU_BRIDGE_FW_FIRMWARE_FLASH_LAYOUT_H_

#include <cstdint>
#include <string_view>
#include <utility>

#include "bridge-fw/firmware/flash_device.h"

namespace dxpu::firmware {

enum class Slot : uint8_t { kA = 0, kB = 1 };

inline constexpr Slot OtherSlot(Slot s) { return s == Slot::kA ? Slot::kB : Slot::kA; }
inline constexpr std::string_view SlotName(Slot s) { return s == Slot::kA ? "A" : "B"; }
inline constexpr size_t SlotIndex(Slot s) { return static_cast<size_t>(s); }

// The boot state's two erase blocks: 1 and 2.
inline constexpr uint32_t BootStateBlock(int i) { return 1 + static_cast<uint32_t>(i); }

struct FlashLayout {
  explicit FlashLayout(FactoryInfo info) : info_(std::move(info)) {}

  uint32_t slot_first_block(Slot s) const {
    return kFirstSlotBlock + static_cast<uint32_t>(SlotIndex(s)) * info_.blocks_per_slot;
  }
  uint32_t blocks_per_slot() const { return info_.blocks_per_slot; }
  uint64_t slot_offset(Slot s) const {
    return uint64_t{slot_first_block(s)} * info_.geometry.erase_block;
  }
  uint64_t slot_size() const {
    return uint64_t{info_.blocks_per_slot} * info_.geometry.erase_block;
  }

 private:
  FactoryInfo info_;
};

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_FLASH_LAYOUT_H_
