// boot_state.h - which slot runs and what is on trial (docs/firmware.md, "The boot state"):
// records of one write granule appended to the two boot-state blocks; the valid record with the
// highest sequence number is the state. Every update is atomic against a power cut: after one,
// the state read is the one before the update or the one after.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_BOOT_STATE_H_
#define DXPU_BRIDGE_FW_FIRMWARE_BOOT_STATE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "bridge-fw/firmware/firmware_error.h"
#include "bridge-fw/firmware/flash_device.h"
#include "bridge-fw/firmware/flash_layout.h"
#include "bridge-fw/firmware/image.h"

namespace dxpu::firmware {

inline constexpr uint32_t kBootStateMagic = 0x44584253;  // "DXBS"
inline constexpr uint8_t kTrialTries = 3;                // boots a new image gets to prove itself

enum class SlotState : uint8_t { kEmpty = 0, kWritten = 1, kGood = 2, kBad = 3 };
std::string_view SlotStateName(SlotState s);  // "empty", "written", "good", "bad"

struct BootState {
  uint32_t sequence = 0;  // set by WriteBootState
  std::optional<Slot> active;
  std::optional<Slot> trial;
  uint8_t tries_left = 0;
  FirmwareVersion min_version;
  std::array<SlotState, 2> slot_state{SlotState::kEmpty, SlotState::kEmpty};
  std::array<FirmwareVersion, 2> slot_version{};
  // The anti-rollback counter: the highest security version of an image marked good. It never
  // decreases (WriteBootState refuses a record that lowers it); no image below it boots or is
  // written (docs/firmware.md, "Anti-rollback").
  uint32_t security_counter = 0;
  std::array<uint32_t, 2> slot_security{};  // each slot's image's security version

  SlotState state_of(Slot s) const { return slot_state[SlotIndex(s)]; }
  FirmwareVersion version_of(Slot s) const { return slot_version[SlotIndex(s)]; }
  uint32_t security_of(Slot s) const { return slot_security[SlotIndex(s)]; }
  // Equal in everything but the sequence number.
  bool SameAs(const BootState& o) const;
};

// One record of `granule` bytes, and back (nullopt: not a valid record).
std::vector<uint8_t> EncodeBootState(const BootState& s, uint32_t granule);
std::optional<BootState> DecodeBootState(std::span<const uint8_t> record);

// The newest valid record, or nullopt on a flash that has none (new, or both blocks lost).
FirmwareResult<std::optional<BootState>> ReadBootState(const FlashDevice& flash);
// Appends `next` with the next sequence number (after the newest record's); when its block is
// full, erases the other block and starts there. A record that would lower the anti-rollback
// counter is refused (`counter-decrease`) and nothing is written.
FirmwareResult<Ok> WriteBootState(FlashDevice& flash, const BootState& next);

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_BOOT_STATE_H_
