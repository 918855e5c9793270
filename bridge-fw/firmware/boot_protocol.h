// boot_protocol.h - what the boot loader (dxpu-boot) and the bridge it runs (dxpu-bridge --flash)
// agree on (docs/firmware.md, "Booting"): the bridge's options naming the flash and the slot it
// was booted from, and the exit status that asks the boot loader to choose again.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_BOOT_PROTOCOL_H_
#define DXPU_BRIDGE_FW_FIRMWARE_BOOT_PROTOCOL_H_

namespace dxpu::firmware {

// dxpu-bridge exits with this status after answering FW_REBOOT: the boot loader chooses a slot
// again (the new image, on trial) and runs it. 75 is EX_TEMPFAIL of sysexits.h.
inline constexpr int kRebootExitStatus = 75;

// The options dxpu-boot passes: `dxpu-bridge -c CONFIG --flash FILE --slot A|B`.
inline constexpr const char* kFlashOption = "--flash";
inline constexpr const char* kSlotOption = "--slot";

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_BOOT_PROTOCOL_H_
