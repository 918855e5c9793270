// slot_writer.h - writing a new image into the slot that is not running (docs/firmware.md):
// the boot state first says the slot is empty, each erase block is erased as the writes reach
// it, the bytes are programmed in order, and at the end the image is read back from the flash
// and verified before the slot goes on trial. A power cut anywhere leaves the running slot and
// the boot state's choice intact.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_SLOT_WRITER_H_
#define DXPU_BRIDGE_FW_FIRMWARE_SLOT_WRITER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "bridge-fw/firmware/boot_select.h"
#include "bridge-fw/firmware/firmware_error.h"
#include "bridge-fw/firmware/flash_device.h"
#include "bridge-fw/firmware/image.h"

namespace dxpu::firmware {

class SlotWriter {
 public:
  // Starts an image whose header is `header` (checked with VerifyHeader against the factory's
  // keys, hardware revision, slot size, and the boot state's minimum version unless
  // `allow_downgrade`) into `slot`, which must not be `running`.
  static FirmwareResult<SlotWriter> Begin(FlashDevice& flash, Slot slot, Slot running,
                                          std::span<const uint8_t> header, bool allow_downgrade);
  // Begin's checks alone, nothing written: the header verified against the factory's policy,
  // the boot state's anti-rollback counter (never overridden) and, unless `allow_downgrade`,
  // the push floor (PushFloor of the minimum and the running slot's version).
  static FirmwareResult<ImageHeader> Check(const FlashDevice& flash, Slot slot, Slot running,
                                           std::span<const uint8_t> header, bool allow_downgrade);

  // The image's next bytes (the header first): at most what the header says is left.
  FirmwareResult<Ok> Append(std::span<const uint8_t> bytes);
  uint64_t written() const { return written_; }  // bytes taken so far
  uint64_t total() const { return total_; }      // header + payload

  // Once every byte is in: the last partial granule programmed, the image read back and
  // verified, the slot put on trial. Returns the verified image's header.
  FirmwareResult<ImageHeader> Finish();

 private:
  SlotWriter(FlashDevice& flash, Slot slot, ImageHeader header,
             std::span<const uint8_t> header_bytes, bool allow_downgrade);
  FirmwareResult<Ok> ProgramGranules(std::span<const uint8_t> bytes);

  FlashDevice* flash_;
  Slot slot_;
  ImageHeader header_;
  std::vector<uint8_t> header_bytes_;
  bool allow_downgrade_;
  uint64_t total_ = 0;
  uint64_t written_ = 0;
  uint64_t programmed_ = 0;       // bytes of the slot programmed (whole granules)
  uint32_t erased_blocks_ = 0;    // the slot's first N blocks are erased
  std::vector<uint8_t> partial_;  // less than a granule, not yet programmed
};

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_SLOT_WRITER_H_
