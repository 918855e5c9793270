// boot_select.h - what a bridge boots (docs/firmware.md, "Choosing what to boot"), sans-IO:
// from the boot state and what each slot holds, the slot to boot and the boot state to write
// before booting it; marking a trial good; starting a trial after an image was written.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_BOOT_SELECT_H_
#define DXPU_BRIDGE_FW_FIRMWARE_BOOT_SELECT_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "bridge-fw/firmware/boot_state.h"
#include "bridge-fw/firmware/flash_device.h"
#include "bridge-fw/firmware/flash_layout.h"
#include "bridge-fw/firmware/image.h"

namespace dxpu::firmware {

// What a slot holds, checked: a valid image (every check but the minimum version) or why not.
struct SlotImage {
  bool valid = false;
  FirmwareVersion version;
  uint32_t security_version = 0;
  std::string problem;  // "empty", or the image error: "bad-hash: ..."
};

// What the bridge trusts, from its factory block: its keys and hardware revision; a slot's size.
TrustPolicy FactoryPolicy(const FactoryInfo& factory);
// Reads the image at the start of `slot` and verifies it against the factory's policy.
SlotImage CheckSlot(const FlashDevice& flash, Slot slot);
// The image at the start of `slot` (header and payload), as CheckSlot read it; empty if none.
FirmwareResult<VerifiedImage> ReadSlotImage(const FlashDevice& flash, Slot slot);

struct BootChoice {
  std::optional<Slot> slot;        // none: nothing valid to boot
  bool trial = false;              // booting a slot on trial
  BootState state;                 // the boot state to write before booting
  bool write_state = false;        // whether it differs from the one read
  std::vector<std::string> notes;  // what was decided and why, for the log
  std::string reason;              // with no slot: each slot's problem
};

BootChoice ChooseBoot(const std::optional<BootState>& state, const std::array<SlotImage, 2>& slots);

// The running trial slot passed its health check: active and good, the trial over, the
// minimum version raised to the lower of the good slots' versions, the anti-rollback counter
// raised to the slot's security version when that is higher. Unchanged if `running` is not on
// trial.
BootState MarkGood(const BootState& state, Slot running);
// Before `slot` is erased for a new image: it is empty, and no longer on trial.
BootState BeginWrite(const BootState& state, Slot slot);
// After the image `header` was written to `slot` and verified: the slot on trial with
// kTrialTries boots; with `allow_downgrade`, the minimum version lowered to its version.
BootState StartTrial(const BootState& state, Slot slot, const ImageHeader& header,
                     bool allow_downgrade);
// The lowest version a push may write without a downgrade authorisation: the minimum version
// or the running image's, whichever is higher (an image older than the one running is a
// downgrade even while an older good image sits in the other slot).
FirmwareVersion PushFloor(FirmwareVersion min_version, FirmwareVersion running);

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_BOOT_SELECT_H_
