// boot_loader.h - what dxpu-boot does before it runs a bridge (docs/firmware.md, "Booting:
// dxpu-boot"): open the flash, choose a slot (boot_select.h), write the boot state first (so a
// bridge that dies before it is marked good uses up a try), and extract the chosen image's
// executable and configuration into a work directory under fixed names.
#ifndef DXPU_BRIDGE_FW_BOOT_BOOT_LOADER_H_
#define DXPU_BRIDGE_FW_BOOT_BOOT_LOADER_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bridge-fw/firmware/firmware_error.h"
#include "bridge-fw/firmware/flash_layout.h"
#include "bridge-fw/firmware/image.h"

namespace dxpu::firmware {

// The files PrepareBoot writes into WORK_DIR/slot-A/ or slot-B/. The section names in the image
// are never used as paths.
inline constexpr const char* kBootExecutableName = "dxpu-bridge";
inline constexpr const char* kBootConfigName = "bridge.json";
inline constexpr mode_t kBootExecutableMode = 0700;
inline constexpr mode_t kBootConfigMode = 0600;

// The error name of PrepareBoot when neither slot can boot; the message is ChooseBoot's
// reason ("no valid image: slot A: bad-hash: ...; slot B: empty").
inline constexpr const char* kNoBootableImage = "no-bootable-image";

// What to run: the bridge of `slot`, extracted.
struct BootPlan {
  Slot slot = Slot::kA;
  bool trial = false;  // the slot is on trial: a try was used up
  FirmwareVersion version;
  std::string build_id;
  std::string executable;          // absolute: WORK_DIR/slot-X/dxpu-bridge, mode 0700
  std::string config;              // absolute: WORK_DIR/slot-X/bridge.json, mode 0600
  std::vector<std::string> notes;  // ChooseBoot's notes (logged too)
};

// Opens the flash at `flash_path`, reads the boot state, checks both slots, chooses, writes the
// boot state ChooseBoot asks for (only when a slot is chosen), reads and verifies the chosen
// slot's image again, and extracts it under `work_dir` (created if missing). Errors: the
// flash's (open, read, power-lost), kNoBootableImage, bad-payload (no executable or no
// configuration section), extract (a file could not be written).
FirmwareResult<BootPlan> PrepareBoot(const std::string& flash_path, const std::string& work_dir);

// Why dxpu-boot refuses to run the bridge with another configuration than its image's: every
// image (format 1) carries a signed configuration, and only a signed image replaces it. Refused:
// `--config FILE` (`config`, non-empty) and a configuration option among the arguments passed
// on to dxpu-bridge (-c, --config, in any spelling CLI11 takes). nullopt: nothing overrides it.
std::optional<std::string> ConfigOverride(const std::string& config,
                                          const std::vector<std::string>& bridge_args);

// WORK_DIR/slot-A or WORK_DIR/slot-B.
std::string SlotWorkDir(const std::string& work_dir, Slot slot);

// Writes `data` to `path` atomically: a temporary file in the same directory (O_CLOEXEC),
// written in full, given `mode`, synced, then renamed over `path`. The temporary is removed on
// any failure.
FirmwareResult<Ok> WriteFileAtomically(const std::string& path, std::span<const uint8_t> data,
                                       mode_t mode);

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_BOOT_BOOT_LOADER_H_
