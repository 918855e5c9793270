// firmware_service.h - the running bridge's side of a firmware update (docs/firmware.md,
// "Updating over the management socket"): FW_BEGIN, FW_CHUNK, FW_STATUS, FW_COMMIT and
// FW_REBOOT applied to the bridge's flash, and the health check's verdict on a trial boot.
// Sans-IO apart from the flash: the daemon decodes the datagram and sends the answer.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_FIRMWARE_SERVICE_H_
#define DXPU_BRIDGE_FW_FIRMWARE_FIRMWARE_SERVICE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bridge-fw/firmware/boot_state.h"
#include "bridge-fw/firmware/firmware_error.h"
#include "bridge-fw/firmware/flash_device.h"
#include "bridge-fw/firmware/flash_layout.h"
#include "bridge-fw/firmware/slot_writer.h"
#include "core/dxpu_mgmt.h"

namespace dxpu::firmware {

// The answer to one firmware request: a status, and the report when the status is OK (none
// for FW_REBOOT).
struct FirmwareAnswer {
  uint16_t status = DXPU_MGMT_OK;
  std::optional<dxpu_mgmt_fw_report> report;
};

// The management status for a firmware error name ("downgrade" -> DXPU_MGMT_DOWNGRADE).
uint16_t FirmwareErrorStatus(const FirmwareError& error);

class FirmwareService {
 public:
  // The bridge booted from `running` of the flash at `flash_path`: that slot must hold a
  // valid image (the boot loader chose it).
  static FirmwareResult<std::unique_ptr<FirmwareService>> Open(const std::string& flash_path,
                                                               Slot running);

  // A decoded firmware request (types FW_BEGIN .. FW_REBOOT), its arguments already checked.
  FirmwareAnswer Handle(const dxpu_mgmt_msg& request);

  // Whether the running slot is on trial (booted by the boot loader's trial rule).
  bool running_on_trial() const;
  // The health check passed: the running trial slot becomes active and good. No-op if the
  // running slot is not on trial.
  FirmwareResult<Ok> MarkRunningGood();
  // FW_REBOOT was answered: the daemon shuts down and exits with kRebootExitStatus.
  bool reboot_requested() const { return reboot_requested_; }

  Slot running() const { return running_; }
  FirmwareVersion running_version() const { return running_version_; }
  FlashDevice& flash() { return *flash_; }

 private:
  enum class Transfer : uint8_t { kIdle, kAuthorising, kReceiving, kCommitted };

  FirmwareService(std::unique_ptr<FlashDevice> flash, Slot running, FirmwareVersion version,
                  BootState state);
  FirmwareAnswer Begin(const dxpu_mgmt_fw_begin& begin);
  FirmwareAnswer Chunk(const dxpu_mgmt_fw_chunk& chunk);
  FirmwareAnswer Commit();
  // The downgrade authorisation that precedes the image in a transfer begun with
  // ALLOW_DOWNGRADE: its next bytes; once whole, verified and the image's write begun.
  FirmwareResult<Ok> TakeAuthorisation(std::span<const uint8_t>* bytes);
  FirmwareResult<Ok> BeginWriter(bool allow_downgrade);
  uint64_t stream_offset() const;
  static FirmwareAnswer Refuse(const FirmwareError& error, const char* what);
  // Drops the transfer after the flash failed under it: what is in the slot is unknown.
  void Abandon();
  FirmwareResult<Ok> ReloadState();
  dxpu_mgmt_fw_report Report() const;
  FirmwareAnswer Reported() const { return {DXPU_MGMT_OK, Report()}; }

  std::unique_ptr<FlashDevice> flash_;
  Slot running_;
  FirmwareVersion running_version_;
  BootState state_;  // the boot state as last read or written; this service is its only writer
  Transfer transfer_ = Transfer::kIdle;
  std::optional<SlotWriter> writer_;
  std::vector<uint8_t> header_;  // the transfer's image header
  uint64_t header_payload_length_ = 0;
  bool authorised_ = false;             // begun with ALLOW_DOWNGRADE: an authorisation comes first
  std::vector<uint8_t> authorisation_;  // its bytes so far
  bool reboot_requested_ = false;
};

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_FIRMWARE_SERVICE_H_
