// firmware_service.cc - firmware update requests applied to the flash (firmware_service.h).
#include "bridge-fw/firmware/firmware_service.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <span>
#include <string_view>
#include <utility>

#include "bridge-fw/firmware/boot_select.h"
#include "bridge-fw/firmware/downgrade.h"
#include "bridge-fw/firmware/image.h"
#include "dxpu/compat.h"

namespace dxpu::firmware {
namespace {

static_assert(kHeaderBytes == DXPU_MGMT_FW_IMAGE_HEADER_SIZE);

uint8_t WireSlot(std::optional<Slot> s) {
  return s ? static_cast<uint8_t>(SlotIndex(*s)) : DXPU_MGMT_FW_NO_SLOT;
}

}  // namespace

uint16_t FirmwareErrorStatus(const FirmwareError& error) {
  const std::string_view n = error.name;
  if (n == "unknown-key" || n == "bad-signature") return DXPU_MGMT_IMAGE_UNTRUSTED;
  if (n == "wrong-hardware") return DXPU_MGMT_WRONG_HARDWARE;
  if (n == "downgrade" || n == "rollback" || n == "bad-authorisation") return DXPU_MGMT_DOWNGRADE;
  constexpr std::array<std::string_view, 8> kFlash = {"flash-io",    "not-erased",  "out-of-range",
                                                      "protected",   "unaligned",   "power-lost",
                                                      "bad-factory", "bad-geometry"};
  if (std::find(kFlash.begin(), kFlash.end(), n) != kFlash.end()) return DXPU_MGMT_FLASH_ERROR;
  if (n == "slot-busy") return DXPU_MGMT_INTERNAL;
  return DXPU_MGMT_IMAGE_INVALID;  // the image's own checks, header-mismatch, verify-failed
}

FirmwareService::FirmwareService(std::unique_ptr<FlashDevice> flash, Slot running,
                                 FirmwareVersion version, BootState state)
    : flash_(std::move(flash)), running_(running), running_version_(version), state_(state) {}

FirmwareResult<std::unique_ptr<FirmwareService>> FirmwareService::Open(
    const std::string& flash_path, Slot running) {
  FirmwareResult<std::unique_ptr<FlashDevice>> flash = FlashDevice::Open(flash_path);
  if (!flash.ok()) return flash.error();
  const SlotImage image = CheckSlot(*flash.value(), running);
  if (!image.valid)
    return FirmwareError{"bad-slot", fmt::format("slot {} does not hold a valid image ({})",
                                                 SlotName(running), image.problem)};
  FirmwareResult<std::optional<BootState>> state = ReadBootState(*flash.value());
  if (!state.ok()) return state.error();
  const FactoryInfo& f = flash.value()->factory();
  spdlog::info("firmware: bridge ID {}, key list {} ({} trusted keys), anti-rollback counter {}",
               ToHex(f.bridge_id), f.key_list_sequence, f.keys.size(),
               state.value() ? state.value()->security_counter : 0);
  return std::unique_ptr<FirmwareService>(new FirmwareService(
      std::move(flash).value(), running, image.version, state.value().value_or(BootState{})));
}

bool FirmwareService::running_on_trial() const { return state_.trial == running_; }

FirmwareResult<Ok> FirmwareService::ReloadState() {
  FirmwareResult<std::optional<BootState>> state = ReadBootState(*flash_);
  if (!state.ok()) return state.error();
  state_ = state.value().value_or(BootState{});
  return Ok{};
}

FirmwareResult<Ok> FirmwareService::MarkRunningGood() {
  if (!running_on_trial()) return Ok{};
  FirmwareResult<Ok> w = WriteBootState(*flash_, MarkGood(state_, running_));
  if (!w.ok()) return w;
  spdlog::info("firmware: slot {} ({}) passed its health check: marked good", SlotName(running_),
               running_version_.ToString());
  return ReloadState();
}

dxpu_mgmt_fw_report FirmwareService::Report() const {
  dxpu_mgmt_fw_report r{};
  r.running_slot = WireSlot(running_);
  r.transfer = transfer_ == Transfer::kIdle        ? DXPU_MGMT_FW_IDLE
               : transfer_ == Transfer::kCommitted ? DXPU_MGMT_FW_COMMITTED
                                                   : DXPU_MGMT_FW_RECEIVING;
  r.target_slot =
      transfer_ == Transfer::kIdle ? DXPU_MGMT_FW_NO_SLOT : WireSlot(OtherSlot(running_));
  r.trial_slot = WireSlot(state_.trial);
  r.tries_left = state_.trial ? state_.tries_left : 0;
  for (const Slot s : {Slot::kA, Slot::kB}) {
    r.slot_state[SlotIndex(s)] = static_cast<uint8_t>(state_.state_of(s));
    r.slot_version[SlotIndex(s)] = state_.version_of(s).packed;
  }
  r.running_version = running_version_.packed;
  r.min_version = state_.min_version.packed;
  r.hw_revision = flash_->factory().hw_revision;
  if (transfer_ != Transfer::kIdle) {
    const uint64_t prefix = authorised_ ? kDowngradeBytes : 0;
    r.next_offset = stream_offset();
    r.total = prefix + kHeaderBytes + header_payload_length_;
  }
  return r;
}

uint64_t FirmwareService::stream_offset() const {
  if (!authorised_) return writer_ ? writer_->written() : 0;
  return writer_ ? kDowngradeBytes + writer_->written() : authorisation_.size();
}

FirmwareAnswer FirmwareService::Refuse(const FirmwareError& error, const char* what) {
  const uint16_t status = FirmwareErrorStatus(error);
  spdlog::warn("firmware: {} refused ({}): {}: {}", what, dxpu_mgmt_status_name(status), error.name,
               error.message);
  return {status, std::nullopt};
}

void FirmwareService::Abandon() {
  writer_.reset();
  header_.clear();
  authorisation_.clear();
  authorised_ = false;
  transfer_ = Transfer::kIdle;
  (void)ReloadState();
}

FirmwareAnswer FirmwareService::Begin(const dxpu_mgmt_fw_begin& begin) {
  const std::span<const uint8_t> header(begin.header, kHeaderBytes);
  const bool authorised = (begin.flags & DXPU_MGMT_FW_F_ALLOW_DOWNGRADE) != 0;
  if (transfer_ != Transfer::kIdle && std::ranges::equal(header, header_) &&
      authorised == authorised_) {
    spdlog::info("firmware: the same image again: {} at byte {}",
                 transfer_ == Transfer::kCommitted ? "committed" : "resuming", stream_offset());
    return Reported();
  }
  if (running_on_trial()) {
    spdlog::warn("firmware: update refused: slot {} is still on trial (not yet marked good)",
                 SlotName(running_));
    return {DXPU_MGMT_TRIAL_RUNNING, std::nullopt};
  }
  // Every check of the header first, nothing written: with ALLOW_DOWNGRADE all but the push
  // floor, which only the authorisation that must come first can lift.
  FirmwareResult<ImageHeader> h =
      SlotWriter::Check(*flash_, OtherSlot(running_), running_, header, authorised);
  if (!h.ok()) return Refuse(h.error(), "image");
  Abandon();
  header_.assign(header.begin(), header.end());
  header_payload_length_ = h.value().payload_length;
  authorised_ = authorised;
  if (authorised) {
    transfer_ = Transfer::kAuthorising;
    spdlog::info("firmware: {} with ALLOW_DOWNGRADE: waiting for its {}-byte authorisation",
                 h.value().version.ToString(), kDowngradeBytes);
    return Reported();
  }
  if (FirmwareResult<Ok> w = BeginWriter(false); !w.ok()) return Refuse(w.error(), "image");
  return Reported();
}

FirmwareResult<Ok> FirmwareService::BeginWriter(bool allow_downgrade) {
  FirmwareResult<SlotWriter> w =
      SlotWriter::Begin(*flash_, OtherSlot(running_), running_, header_, allow_downgrade);
  if (!w.ok()) {
    Abandon();
    return w.error();
  }
  writer_.emplace(std::move(w).value());
  transfer_ = Transfer::kReceiving;
  (void)ReloadState();
  spdlog::info("firmware: receiving {} ({} bytes) into slot {}",
               FirmwareVersion{dxpu_get_be32(&header_[8])}.ToString(), writer_->total(),
               SlotName(OtherSlot(running_)));
  return Ok{};
}

FirmwareResult<Ok> FirmwareService::TakeAuthorisation(std::span<const uint8_t>* bytes) {
  const size_t take = std::min(bytes->size(), kDowngradeBytes - authorisation_.size());
  const std::span<const uint8_t> taken = bytes->first(take);
  authorisation_.insert(authorisation_.end(), taken.begin(), taken.end());
  *bytes = bytes->subspan(take);
  if (authorisation_.size() < kDowngradeBytes) return Ok{};
  FirmwareResult<DowngradeAuth> auth =
      VerifyDowngrade(authorisation_, flash_->factory().keys, flash_->factory().bridge_id, header_);
  if (!auth.ok()) {
    Abandon();
    return auth.error();
  }
  const FirmwareVersion floor = PushFloor(state_.min_version, running_version_);
  spdlog::warn("firmware: DOWNGRADE AUTHORISED by key {}: writing {} (floor {}, running {})",
               ToHex(auth.value().key_id), auth.value().version.ToString(), floor.ToString(),
               running_version_.ToString());
  return BeginWriter(true);
}

FirmwareAnswer FirmwareService::Chunk(const dxpu_mgmt_fw_chunk& chunk) {
  if (transfer_ == Transfer::kIdle) return {DXPU_MGMT_NO_TRANSFER, std::nullopt};
  const uint64_t next = stream_offset();
  const uint64_t end = chunk.offset + chunk.length;  // no wrap: checked with the arguments
  if (end <= next) return Reported();                // a repeat: already taken
  if (chunk.offset != next || transfer_ == Transfer::kCommitted)
    return {DXPU_MGMT_OUT_OF_ORDER, std::nullopt};
  std::span<const uint8_t> bytes(chunk.data, chunk.length);
  if (transfer_ == Transfer::kAuthorising) {
    if (FirmwareResult<Ok> a = TakeAuthorisation(&bytes); !a.ok())
      return Refuse(a.error(), "downgrade authorisation");
    if (bytes.empty()) return Reported();
  }
  FirmwareResult<Ok> a = writer_->Append(bytes);
  if (!a.ok()) {
    if (FirmwareErrorStatus(a.error()) == DXPU_MGMT_FLASH_ERROR) Abandon();
    return Refuse(a.error(), "chunk");
  }
  return Reported();
}

FirmwareAnswer FirmwareService::Commit() {
  if (transfer_ == Transfer::kIdle) return {DXPU_MGMT_NO_TRANSFER, std::nullopt};
  if (transfer_ == Transfer::kCommitted) return Reported();
  if (!writer_ || writer_->written() != writer_->total())
    return {DXPU_MGMT_INCOMPLETE, std::nullopt};
  FirmwareResult<ImageHeader> done = writer_->Finish();
  if (!done.ok()) {
    Abandon();  // the slot holds something that did not verify: a new BEGIN starts over
    return Refuse(done.error(), "commit");
  }
  transfer_ = Transfer::kCommitted;
  if (FirmwareResult<Ok> r = ReloadState(); !r.ok()) return Refuse(r.error(), "commit");
  spdlog::info("firmware: {} written to slot {} and verified: on trial at the next boot",
               done.value().version.ToString(), SlotName(OtherSlot(running_)));
  return Reported();
}

FirmwareAnswer FirmwareService::Handle(const dxpu_mgmt_msg& request) {
  switch (request.type) {
    case DXPU_MGMT_FW_BEGIN:
      return Begin(request.body.fw_begin);
    case DXPU_MGMT_FW_CHUNK:
      return Chunk(request.body.fw_chunk);
    case DXPU_MGMT_FW_STATUS:
      return Reported();
    case DXPU_MGMT_FW_COMMIT:
      return Commit();
    case DXPU_MGMT_FW_REBOOT:
      spdlog::info("firmware: reboot requested");
      reboot_requested_ = true;
      return {DXPU_MGMT_OK, std::nullopt};
    default:
      return {DXPU_MGMT_UNKNOWN_TYPE, std::nullopt};
  }
}

}  // namespace dxpu::firmware
