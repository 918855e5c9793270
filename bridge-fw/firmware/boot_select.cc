// boot_select.cc - choosing the slot to boot (boot_select.h).
#include "bridge-fw/firmware/boot_select.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

namespace dxpu::firmware {

TrustPolicy FactoryPolicy(const FactoryInfo& factory) {
  TrustPolicy p;
  p.keys = factory.keys;
  p.hw_revision = factory.hw_revision;
  p.max_payload = FlashLayout(factory).slot_size() - kHeaderBytes;
  return p;
}

FirmwareResult<VerifiedImage> ReadSlotImage(const FlashDevice& flash, Slot slot) {
  const FlashLayout layout(flash.factory());
  std::vector<uint8_t> header(kHeaderBytes);
  FirmwareResult<Ok> r = flash.Read(layout.slot_offset(slot), header);
  if (!r.ok()) return r.error();
  if (std::ranges::all_of(header, [](uint8_t b) { return b == 0xff; }))
    return FirmwareError{"empty", "no image"};
  const TrustPolicy policy = FactoryPolicy(flash.factory());
  FirmwareResult<ImageHeader> h = VerifyHeader(header, policy);
  if (!h.ok()) return h.error();
  std::vector<uint8_t> image(kHeaderBytes + h.value().payload_length);
  r = flash.Read(layout.slot_offset(slot), image);
  if (!r.ok()) return r.error();
  return VerifyImage(image, policy);
}

SlotImage CheckSlot(const FlashDevice& flash, Slot slot) {
  FirmwareResult<VerifiedImage> image = ReadSlotImage(flash, slot);
  if (!image.ok()) {
    const FirmwareError& e = image.error();
    return {false, {}, 0, e.name == "empty" ? "empty" : e.name + ": " + e.message};
  }
  return {true, image.value().header.version, image.value().header.security_version, ""};
}

namespace {

std::string SlotText(Slot s) { return fmt::format("slot {}", SlotName(s)); }

}  // namespace

BootChoice ChooseBoot(const std::optional<BootState>& state,
                      const std::array<SlotImage, 2>& slots) {
  BootChoice c;
  BootState s = state.value_or(BootState{});
  const SlotImage& a = slots[0];
  const SlotImage& b = slots[1];
  auto image = [&](Slot x) -> const SlotImage& { return slots[SlotIndex(x)]; };
  // Why `x` cannot boot, or "" when it can.
  auto problem = [&](Slot x) -> std::string {
    const SlotImage& i = image(x);
    if (!i.valid) return i.problem;
    if (s.state_of(x) == SlotState::kBad) return "marked bad (it failed its trial)";
    if (i.security_version < s.security_counter)
      return fmt::format("rollback: security version {} is below the anti-rollback counter {}",
                         i.security_version, s.security_counter);
    if (i.version < s.min_version)
      return fmt::format("downgrade: version {} is below the minimum {}", i.version.ToString(),
                         s.min_version.ToString());
    return "";
  };

  // 1, 2: a trial goes on while it has tries and a valid image; else it failed.
  if (s.trial) {
    const Slot t = *s.trial;
    const std::string p = problem(t);
    if (s.tries_left > 0 && p.empty()) {
      c.notes.push_back(fmt::format("{} on trial (version {}): try {} of {}", SlotText(t),
                                    image(t).version.ToString(), kTrialTries - s.tries_left + 1,
                                    kTrialTries));
      s.tries_left = static_cast<uint8_t>(s.tries_left - 1);
      c.slot = t;
      c.trial = true;
      c.state = s;
      c.write_state = true;
      return c;
    }
    c.notes.push_back(fmt::format("{} failed its trial ({}): falling back", SlotText(t),
                                  p.empty() ? "no tries left" : p));
    s.slot_state[SlotIndex(t)] = SlotState::kBad;
    s.trial.reset();
    s.tries_left = 0;
  }
  // 3: the active slot, else the other one.
  std::vector<Slot> order;
  if (s.active) {
    order = {*s.active, OtherSlot(*s.active)};
  } else {
    // Nothing active (a new flash): the higher version first.
    order = b.valid && (!a.valid || a.version < b.version) ? std::vector{Slot::kB, Slot::kA}
                                                           : std::vector{Slot::kA, Slot::kB};
  }
  for (const Slot x : order) {
    const std::string p = problem(x);
    if (!p.empty()) {
      if (s.active == x)
        c.notes.push_back(fmt::format("active {} cannot boot: {}", SlotText(x), p));
      continue;
    }
    if (s.active != x) {
      c.notes.push_back(
          fmt::format("{} (version {}) becomes active", SlotText(x), image(x).version.ToString()));
      s.active = x;
    }
    if (s.state_of(x) != SlotState::kGood || s.version_of(x) != image(x).version ||
        s.security_of(x) != image(x).security_version) {
      s.slot_state[SlotIndex(x)] = SlotState::kGood;
      s.slot_version[SlotIndex(x)] = image(x).version;
      s.slot_security[SlotIndex(x)] = image(x).security_version;
    }
    c.slot = x;
    c.state = s;
    c.write_state = !state || !s.SameAs(*state);
    return c;
  }
  c.reason =
      fmt::format("no valid image: slot A: {}; slot B: {}", problem(Slot::kA), problem(Slot::kB));
  c.state = s;
  c.write_state = !state || !s.SameAs(*state);
  return c;
}

BootState MarkGood(const BootState& state, Slot running) {
  if (state.trial != running) return state;
  BootState s = state;
  s.active = running;
  s.trial.reset();
  s.tries_left = 0;
  s.slot_state[SlotIndex(running)] = SlotState::kGood;
  FirmwareVersion floor = s.version_of(running);
  const Slot other = OtherSlot(running);
  if (s.state_of(other) == SlotState::kGood) floor = std::min(floor, s.version_of(other));
  s.min_version = std::max(s.min_version, floor);
  s.security_counter = std::max(s.security_counter, s.security_of(running));
  return s;
}

BootState BeginWrite(const BootState& state, Slot slot) {
  BootState s = state;
  s.slot_state[SlotIndex(slot)] = SlotState::kEmpty;
  s.slot_version[SlotIndex(slot)] = {};
  s.slot_security[SlotIndex(slot)] = 0;
  if (s.trial == slot) {
    s.trial.reset();
    s.tries_left = 0;
  }
  if (s.active == slot) s.active.reset();
  return s;
}

BootState StartTrial(const BootState& state, Slot slot, const ImageHeader& header,
                     bool allow_downgrade) {
  BootState s = state;
  const FirmwareVersion version = header.version;
  s.slot_state[SlotIndex(slot)] = SlotState::kWritten;
  s.slot_version[SlotIndex(slot)] = version;
  s.slot_security[SlotIndex(slot)] = header.security_version;
  s.trial = slot;
  s.tries_left = kTrialTries;
  if (allow_downgrade && version < s.min_version) s.min_version = version;
  return s;
}

FirmwareVersion PushFloor(FirmwareVersion min_version, FirmwareVersion running) {
  return std::max(min_version, running);
}

}  // namespace dxpu::firmware
