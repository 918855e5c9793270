// slot_writer.cc - an image into the idle slot (slot_writer.h).
#include "bridge-fw/firmware/slot_writer.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <utility>

namespace dxpu::firmware {

SlotWriter::SlotWriter(FlashDevice& flash, Slot slot, ImageHeader header,
                       std::span<const uint8_t> header_bytes, bool allow_downgrade)
    : flash_(&flash),
      slot_(slot),
      header_(std::move(header)),
      header_bytes_(header_bytes.begin(), header_bytes.end()),
      allow_downgrade_(allow_downgrade),
      total_(kHeaderBytes + header_.payload_length) {}

FirmwareResult<ImageHeader> SlotWriter::Check(const FlashDevice& flash, Slot slot, Slot running,
                                              std::span<const uint8_t> header,
                                              bool allow_downgrade) {
  if (slot == running)
    return FirmwareError{"slot-busy", fmt::format("slot {} is the one running", SlotName(slot))};
  FirmwareResult<std::optional<BootState>> state = ReadBootState(flash);
  if (!state.ok()) return state.error();
  TrustPolicy policy = FactoryPolicy(flash.factory());
  const BootState now = state.value().value_or(BootState{});
  policy.min_version = PushFloor(now.min_version, now.version_of(running));
  policy.allow_downgrade = allow_downgrade;
  policy.min_security = now.security_counter;
  return VerifyHeader(header, policy);
}

FirmwareResult<SlotWriter> SlotWriter::Begin(FlashDevice& flash, Slot slot, Slot running,
                                             std::span<const uint8_t> header,
                                             bool allow_downgrade) {
  FirmwareResult<ImageHeader> h = Check(flash, slot, running, header, allow_downgrade);
  if (!h.ok()) return h.error();
  FirmwareResult<std::optional<BootState>> state = ReadBootState(flash);
  if (!state.ok()) return state.error();
  FirmwareResult<Ok> w =
      WriteBootState(flash, BeginWrite(state.value().value_or(BootState{}), slot));
  if (!w.ok()) return w.error();
  return SlotWriter(flash, slot, std::move(h).value(), header.first(kHeaderBytes), allow_downgrade);
}

FirmwareResult<Ok> SlotWriter::ProgramGranules(std::span<const uint8_t> bytes) {
  const FlashGeometry& g = flash_->geometry();
  const FlashLayout layout(flash_->factory());
  // Erase the blocks these granules reach, as they are reached.
  const uint64_t end = programmed_ + bytes.size();
  while (uint64_t{erased_blocks_} * g.erase_block < end) {
    FirmwareResult<Ok> e = flash_->Erase(layout.slot_first_block(slot_) + erased_blocks_);
    if (!e.ok()) return e;
    ++erased_blocks_;
  }
  FirmwareResult<Ok> p = flash_->Program(layout.slot_offset(slot_) + programmed_, bytes);
  if (!p.ok()) return p;
  programmed_ = end;
  return Ok{};
}

FirmwareResult<Ok> SlotWriter::Append(std::span<const uint8_t> bytes) {
  if (bytes.size() > total_ - written_)
    return FirmwareError{"too-large", fmt::format("{} more bytes; the image has {} left",
                                                  bytes.size(), total_ - written_)};
  // The first bytes must be the header Begin checked: another header is another image.
  for (uint64_t i = written_; i < kHeaderBytes && i - written_ < bytes.size(); ++i) {
    if (bytes[i - written_] != header_bytes_[i])
      return FirmwareError{"header-mismatch",
                           "these bytes are not the header the write began "
                           "with"};
  }
  const uint32_t granule = flash_->geometry().granule;
  partial_.insert(partial_.end(), bytes.begin(), bytes.end());
  written_ += bytes.size();
  const size_t whole = partial_.size() / granule * granule;
  if (whole == 0) return Ok{};
  FirmwareResult<Ok> p = ProgramGranules(std::span(partial_).first(whole));
  if (!p.ok()) return p;
  partial_.erase(partial_.begin(), partial_.begin() + static_cast<ptrdiff_t>(whole));
  return Ok{};
}

FirmwareResult<ImageHeader> SlotWriter::Finish() {
  if (written_ != total_)
    return FirmwareError{"incomplete",
                         fmt::format("{} of the image's {} bytes written", written_, total_)};
  if (!partial_.empty()) {
    partial_.resize(flash_->geometry().granule, 0xff);
    FirmwareResult<Ok> p = ProgramGranules(partial_);
    if (!p.ok()) return p.error();
    partial_.clear();
  }
  // Verified from the flash, not from what was sent: what boots is what is there.
  FirmwareResult<VerifiedImage> image = ReadSlotImage(*flash_, slot_);
  if (!image.ok()) return image.error();
  if (image.value().header.signature != header_.signature)
    return FirmwareError{"verify-failed", "the image read back is not the one written"};
  FirmwareResult<std::optional<BootState>> state = ReadBootState(*flash_);
  if (!state.ok()) return state.error();
  FirmwareResult<Ok> w = WriteBootState(
      *flash_, StartTrial(state.value().value_or(BootState{}), slot_, header_, allow_downgrade_));
  if (!w.ok()) return w.error();
  return image.value().header;
}

}  // namespace dxpu::firmware
