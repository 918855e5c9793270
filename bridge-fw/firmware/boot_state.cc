// boot_state.cc - the boot state's records in two flash blocks (boot_state.h).
#include "bridge-fw/firmware/boot_state.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "core/crc32c.h"
#include "dxpu/compat.h"

namespace dxpu::firmware {
namespace {

constexpr uint8_t kNoSlot = 0xff;

uint8_t SlotByte(std::optional<Slot> s) {
  return s ? static_cast<uint8_t>(SlotIndex(*s)) : kNoSlot;
}

// Where a record sits: block 0 or 1 of the boot state, granule index.
struct Place {
  int block = 0;
  uint32_t index = 0;
};

struct Scan {
  std::optional<BootState> newest;
  Place newest_at;
};

FirmwareResult<std::vector<uint8_t>> ReadBlock(const FlashDevice& flash, int i) {
  std::vector<uint8_t> block(flash.geometry().erase_block);
  FirmwareResult<Ok> r =
      flash.Read(uint64_t{BootStateBlock(i)} * flash.geometry().erase_block, block);
  if (!r.ok()) return r.error();
  return block;
}

bool Erased(std::span<const uint8_t> b) {
  return std::ranges::all_of(b, [](uint8_t x) { return x == 0xff; });
}

}  // namespace

std::string_view SlotStateName(SlotState s) {
  switch (s) {
    case SlotState::kEmpty:
      return "empty";
    case SlotState::kWritten:
      return "written";
    case SlotState::kGood:
      return "good";
    case SlotState::kBad:
      return "bad";
  }
  return "?";
}

bool BootState::SameAs(const BootState& o) const {
  return active == o.active && trial == o.trial && tries_left == o.tries_left &&
         min_version == o.min_version && slot_state == o.slot_state &&
         slot_version == o.slot_version && security_counter == o.security_counter &&
         slot_security == o.slot_security;
}

std::vector<uint8_t> EncodeBootState(const BootState& s, uint32_t granule) {
  std::vector<uint8_t> r(granule, 0);
  dxpu_put_be32(r.data(), kBootStateMagic);
  dxpu_put_be32(&r[4], s.sequence);
  r[8] = SlotByte(s.active);
  r[9] = SlotByte(s.trial);
  r[10] = s.tries_left;
  dxpu_put_be32(&r[12], s.min_version.packed);
  r[16] = static_cast<uint8_t>(s.slot_state[0]);
  r[17] = static_cast<uint8_t>(s.slot_state[1]);
  dxpu_put_be32(&r[20], s.slot_version[0].packed);
  dxpu_put_be32(&r[24], s.slot_version[1].packed);
  dxpu_put_be32(&r[28], s.security_counter);
  dxpu_put_be32(&r[32], s.slot_security[0]);
  dxpu_put_be32(&r[36], s.slot_security[1]);
  dxpu_put_be32(&r[granule - 4], dxpu_crc32c(0, r.data(), granule - 4));
  return r;
}

std::optional<BootState> DecodeBootState(std::span<const uint8_t> r) {
  if (r.size() < 64 || dxpu_get_be32(r.data()) != kBootStateMagic) return std::nullopt;
  const size_t n = r.size();
  if (dxpu_get_be32(&r[n - 4]) != dxpu_crc32c(0, r.data(), n - 4)) return std::nullopt;
  if ((r[8] > 1 && r[8] != kNoSlot) || (r[9] > 1 && r[9] != kNoSlot) || r[16] > 3 || r[17] > 3)
    return std::nullopt;
  BootState s;
  s.sequence = dxpu_get_be32(&r[4]);
  if (r[8] != kNoSlot) s.active = static_cast<Slot>(r[8]);
  if (r[9] != kNoSlot) s.trial = static_cast<Slot>(r[9]);
  s.tries_left = r[10];
  s.min_version.packed = dxpu_get_be32(&r[12]);
  s.slot_state = {static_cast<SlotState>(r[16]), static_cast<SlotState>(r[17])};
  s.slot_version = {FirmwareVersion{dxpu_get_be32(&r[20])}, FirmwareVersion{dxpu_get_be32(&r[24])}};
  s.security_counter = dxpu_get_be32(&r[28]);
  s.slot_security = {dxpu_get_be32(&r[32]), dxpu_get_be32(&r[36])};
  return s;
}

namespace {

FirmwareResult<Scan> ScanBootState(const FlashDevice& flash) {
  const uint32_t g = flash.geometry().granule;
  Scan scan;
  for (int i = 0; i < 2; ++i) {
    FirmwareResult<std::vector<uint8_t>> block = ReadBlock(flash, i);
    if (!block.ok()) return block.error();
    const std::span<const uint8_t> b = block.value();
    for (uint32_t k = 0; k < b.size() / g; ++k) {
      const std::optional<BootState> s = DecodeBootState(b.subspan(uint64_t{k} * g, g));
      if (s && (!scan.newest || s->sequence > scan.newest->sequence)) {
        scan.newest = s;
        scan.newest_at = {i, k};
      }
    }
  }
  return scan;
}

}  // namespace

FirmwareResult<std::optional<BootState>> ReadBootState(const FlashDevice& flash) {
  FirmwareResult<Scan> scan = ScanBootState(flash);
  if (!scan.ok()) return scan.error();
  return scan.value().newest;
}

FirmwareResult<Ok> WriteBootState(FlashDevice& flash, const BootState& next) {
  FirmwareResult<Scan> scanned = ScanBootState(flash);
  if (!scanned.ok()) return scanned.error();
  const Scan& scan = scanned.value();
  if (scan.newest && next.security_counter < scan.newest->security_counter)
    return FirmwareError{"counter-decrease",
                         fmt::format("a boot state with anti-rollback counter {} below the "
                                     "flash's {}: refused (the counter never decreases)",
                                     next.security_counter, scan.newest->security_counter)};
  const uint32_t g = flash.geometry().granule;
  const uint32_t per_block = flash.geometry().erase_block / g;
  BootState record = next;
  record.sequence = scan.newest ? scan.newest->sequence + 1 : 1;
  const std::vector<uint8_t> bytes = EncodeBootState(record, g);

  // The first erased granule after the newest record, in its block.
  const int block = scan.newest ? scan.newest_at.block : 0;
  FirmwareResult<std::vector<uint8_t>> content = ReadBlock(flash, block);
  if (!content.ok()) return content.error();
  const std::span<const uint8_t> b = content.value();
  for (uint32_t k = scan.newest ? scan.newest_at.index + 1 : 0; k < per_block; ++k) {
    if (!Erased(b.subspan(uint64_t{k} * g, g))) continue;  // a torn record: skipped
    return flash.Program(
        uint64_t{BootStateBlock(block)} * flash.geometry().erase_block + uint64_t{k} * g, bytes);
  }
  // Full (or, with no valid record anywhere, nothing erased after torn ones): the other block,
  // erased, from its start. The newest record stays in this block until the new one is written.
  const int other = scan.newest ? 1 - block : block;
  FirmwareResult<Ok> erased = flash.Erase(BootStateBlock(other));
  if (!erased.ok()) return erased;
  return flash.Program(uint64_t{BootStateBlock(other)} * flash.geometry().erase_block, bytes);
}

}  // namespace dxpu::firmware
