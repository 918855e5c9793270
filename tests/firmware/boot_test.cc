// boot_test.cc - choosing what to boot (boot_select.h) and writing a new image into the idle
// slot (slot_writer.h): every rule of docs/firmware.md's "Choosing what to boot", and a power
// cut at every flash operation of a whole update, after which the bridge boots a valid, signed
// image every time.
#include "bridge-fw/firmware/boot_select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "bridge-fw/firmware/slot_writer.h"
#include "firmware_testutil.h"

namespace dxpu::firmware {
namespace {

using testing::OtherKey;
using testing::RootKey;
using testing::ScratchDir;
using testing::SignedImage;
using testing::SmallFactory;
using testing::TestBridgeId;
using testing::TestKey;
using testing::TestKeyList;

const FirmwareVersion kV1 = FirmwareVersion::Of(1, 0, 0);
const FirmwareVersion kV2 = FirmwareVersion::Of(1, 1, 0);
const FirmwareVersion kV3 = FirmwareVersion::Of(2, 0, 0);

// Writes `image` into `slot` in 1000-byte pieces; the slot is then on trial.
FirmwareResult<ImageHeader> Install(FlashDevice& f, Slot slot, const std::vector<uint8_t>& image,
                                    bool allow_downgrade = false) {
  FirmwareResult<SlotWriter> w =
      SlotWriter::Begin(f, slot, OtherSlot(slot), image, allow_downgrade);
  if (!w.ok()) return w.error();
  for (size_t at = 0; at < image.size(); at += 1000) {
    FirmwareResult<Ok> a =
        w.value().Append(std::span(image).subspan(at, std::min<size_t>(1000, image.size() - at)));
    if (!a.ok()) return a.error();
  }
  return w.value().Finish();
}

// What the boot loader does: read, choose, write the state it chose; the slot booted.
struct Booted {
  std::optional<Slot> slot;
  bool trial = false;
  FirmwareVersion version;
  std::string reason;
  std::vector<std::string> notes;
};
FirmwareResult<Booted> Boot(FlashDevice& f) {
  FirmwareResult<std::optional<BootState>> state = ReadBootState(f);
  if (!state.ok()) return state.error();
  const std::array<SlotImage, 2> slots = {CheckSlot(f, Slot::kA), CheckSlot(f, Slot::kB)};
  const BootChoice c = ChooseBoot(state.value(), slots);
  if (c.write_state) {
    FirmwareResult<Ok> w = WriteBootState(f, c.state);
    if (!w.ok()) return w.error();
  }
  Booted b{c.slot, c.trial, {}, c.reason, c.notes};
  if (c.slot) b.version = slots[SlotIndex(*c.slot)].version;
  return b;
}

FirmwareResult<Ok> MarkRunningGood(FlashDevice& f, Slot running) {
  FirmwareResult<std::optional<BootState>> state = ReadBootState(f);
  if (!state.ok()) return state.error();
  return WriteBootState(f, MarkGood(state.value().value_or(BootState{}), running));
}

// A flash whose slot A holds a good v1, as `dxpu flash init --image` leaves it.
std::unique_ptr<FlashDevice> FactoryFlash(const std::string& path) {
  auto f = std::move(FlashDevice::Create(path, SmallFactory(), TestKeyList())).value();
  EXPECT_TRUE(Install(*f, Slot::kA, SignedImage(kV1)).ok());
  EXPECT_TRUE(MarkRunningGood(*f, Slot::kA).ok());
  return f;
}

void Corrupt(FlashDevice& f, Slot slot, uint64_t at) {
  // A disturbed cell: the block rewritten with one bit of byte `at` of the slot flipped.
  const FlashLayout layout(f.factory());
  std::vector<uint8_t> block(f.geometry().erase_block);
  const uint32_t b = layout.slot_first_block(slot) + static_cast<uint32_t>(at / block.size());
  ASSERT_TRUE(f.Read(uint64_t{b} * block.size(), block).ok());
  block[at % block.size()] ^= 0x10;
  ASSERT_TRUE(f.Erase(b).ok());
  ASSERT_TRUE(f.Program(uint64_t{b} * block.size(), block).ok());
}

TEST(BootSelect, ANewFlashBootsTheValidSlotAndNothingElse) {
  ScratchDir dir;
  auto f = std::move(FlashDevice::Create(dir.path("f"), SmallFactory(), TestKeyList())).value();
  Booted b = Boot(*f).value();
  EXPECT_FALSE(b.slot);
  EXPECT_EQ(b.reason, "no valid image: slot A: empty; slot B: empty");

  f = FactoryFlash(dir.path("g"));
  b = Boot(*f).value();
  ASSERT_TRUE(b.slot);
  EXPECT_EQ(*b.slot, Slot::kA);
  EXPECT_FALSE(b.trial);
  EXPECT_EQ(b.version, kV1);
  const BootState s = *ReadBootState(*f).value();
  EXPECT_EQ(s.active, Slot::kA);
  EXPECT_EQ(s.state_of(Slot::kA), SlotState::kGood);
  EXPECT_EQ(s.min_version, kV1);
}

TEST(BootSelect, ATrialGetsThreeBootsThenFallsBack) {
  ScratchDir dir;
  auto f = FactoryFlash(dir.path("f"));
  ASSERT_TRUE(Install(*f, Slot::kB, SignedImage(kV2, 3000, 2)).ok());
  for (int i = 1; i <= kTrialTries; ++i) {
    Booted b = Boot(*f).value();
    ASSERT_TRUE(b.slot);
    EXPECT_EQ(*b.slot, Slot::kB) << "boot " << i;
    EXPECT_TRUE(b.trial);
    EXPECT_EQ(ReadBootState(*f).value()->tries_left, kTrialTries - i);
  }
  // Never marked good: the next boot falls back to A and B is bad.
  Booted b = Boot(*f).value();
  ASSERT_TRUE(b.slot);
  EXPECT_EQ(*b.slot, Slot::kA);
  EXPECT_FALSE(b.trial);
  ASSERT_FALSE(b.notes.empty());
  EXPECT_NE(b.notes[0].find("slot B failed its trial (no tries left)"), std::string::npos);
  const BootState s = *ReadBootState(*f).value();
  EXPECT_EQ(s.state_of(Slot::kB), SlotState::kBad);
  EXPECT_FALSE(s.trial);
  EXPECT_EQ(*Boot(*f).value().slot, Slot::kA);  // and stays there
}

TEST(BootSelect, MarkedGoodTheNewSlotIsActiveAndTheMinimumRises) {
  ScratchDir dir;
  auto f = FactoryFlash(dir.path("f"));
  ASSERT_TRUE(Install(*f, Slot::kB, SignedImage(kV2, 3000, 2)).ok());
  ASSERT_EQ(*Boot(*f).value().slot, Slot::kB);
  ASSERT_TRUE(MarkRunningGood(*f, Slot::kB).ok());
  BootState s = *ReadBootState(*f).value();
  EXPECT_EQ(s.active, Slot::kB);
  EXPECT_FALSE(s.trial);
  EXPECT_EQ(s.min_version, kV1);  // the lower of the two good ones: A stays bootable
  Booted b = Boot(*f).value();
  EXPECT_EQ(*b.slot, Slot::kB);
  EXPECT_FALSE(b.trial);

  // v3 into A (the idle slot), good: the minimum is now v2, and v1 is a downgrade.
  ASSERT_TRUE(Install(*f, Slot::kA, SignedImage(kV3, 3000, 3)).ok());
  ASSERT_EQ(*Boot(*f).value().slot, Slot::kA);
  ASSERT_TRUE(MarkRunningGood(*f, Slot::kA).ok());
  s = *ReadBootState(*f).value();
  EXPECT_EQ(s.min_version, kV2);
  FirmwareResult<ImageHeader> old = Install(*f, Slot::kB, SignedImage(kV1));
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.error().name, "downgrade");
  // Refused before anything was written: B still holds v2 and is still good.
  EXPECT_TRUE(CheckSlot(*f, Slot::kB).valid);
  EXPECT_EQ(ReadBootState(*f).value()->state_of(Slot::kB), SlotState::kGood);
}

TEST(BootSelect, AnImageOlderThanTheRunningOneIsADowngradeEvenAboveTheMinimum) {
  // The review's case (issue 32): 1.5.0 runs, 1.4.0 sits in the other slot, good; the minimum
  // is the lower of the two, so 1.4.0 was taken as no downgrade at all. It is one: the push
  // floor is the running version.
  ScratchDir dir;
  auto f = FactoryFlash(dir.path("f"));
  ASSERT_TRUE(Install(*f, Slot::kB, SignedImage(kV3, 3000, 3)).ok());
  ASSERT_EQ(*Boot(*f).value().slot, Slot::kB);
  ASSERT_TRUE(MarkRunningGood(*f, Slot::kB).ok());
  ASSERT_EQ(ReadBootState(*f).value()->min_version, kV1);
  FirmwareResult<ImageHeader> older = Install(*f, Slot::kA, SignedImage(kV2, 3000, 2));
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.error().name, "downgrade");
  EXPECT_NE(older.error().message.find("below this bridge's minimum 2.0.0"), std::string::npos)
      << older.error().message;
  EXPECT_TRUE(CheckSlot(*f, Slot::kA).valid);  // nothing written: v1 still there
}

TEST(BootSelect, TheOverrideAllowsADowngradeAndLowersTheMinimum) {
  ScratchDir dir;
  auto f = FactoryFlash(dir.path("f"));
  ASSERT_TRUE(Install(*f, Slot::kB, SignedImage(kV3, 3000, 3)).ok());
  ASSERT_EQ(*Boot(*f).value().slot, Slot::kB);
  ASSERT_TRUE(MarkRunningGood(*f, Slot::kB).ok());
  ASSERT_TRUE(Install(*f, Slot::kA, SignedImage(kV2, 3000, 2), /*allow_downgrade=*/true).ok());
  ASSERT_EQ(*Boot(*f).value().slot, Slot::kA);
  ASSERT_TRUE(MarkRunningGood(*f, Slot::kA).ok());
  ASSERT_EQ(ReadBootState(*f).value()->min_version, kV2);
  EXPECT_EQ(Install(*f, Slot::kB, SignedImage(kV1)).error().name, "downgrade");
  ASSERT_TRUE(Install(*f, Slot::kB, SignedImage(kV1), /*allow_downgrade=*/true).ok());
  EXPECT_EQ(ReadBootState(*f).value()->min_version, kV1);
  Booted b = Boot(*f).value();
  EXPECT_EQ(*b.slot, Slot::kB);
  EXPECT_EQ(b.version, kV1);
}

TEST(AntiRollback, MarkingGoodRaisesTheCounterAndNothingBelowItBootsOrIsWritten) {
  ScratchDir dir;
  auto f = FactoryFlash(dir.path("f"));  // A: v1, security version 0
  ASSERT_EQ(ReadBootState(*f).value()->security_counter, 0u);
  // v2 at security version 2: on trial the counter stays (v1 is the fall-back).
  ASSERT_TRUE(Install(*f, Slot::kB, testing::SecureImage(kV2, 2, 2)).ok());
  ASSERT_EQ(*Boot(*f).value().slot, Slot::kB);
  EXPECT_EQ(ReadBootState(*f).value()->security_counter, 0u);
  ASSERT_TRUE(MarkRunningGood(*f, Slot::kB).ok());
  EXPECT_EQ(ReadBootState(*f).value()->security_counter, 2u);

  // Slot A still holds v1, signed and marked good, but below the counter: never booted again,
  // whatever the slots hold. B gone bad, nothing boots rather than v1.
  BootState s = *ReadBootState(*f).value();
  EXPECT_EQ(s.state_of(Slot::kA), SlotState::kGood);
  s.active = Slot::kA;  // as if B had been lost
  s.slot_state[SlotIndex(Slot::kB)] = SlotState::kBad;
  ASSERT_TRUE(WriteBootState(*f, s).ok());
  Booted b = Boot(*f).value();
  EXPECT_FALSE(b.slot);
  EXPECT_NE(b.reason.find("slot A: rollback: security version 0 is below the anti-rollback "
                          "counter 2"),
            std::string::npos)
      << b.reason;

  // A write of an image below the counter is refused, an authorised downgrade included.
  for (const bool allow : {false, true}) {
    FirmwareResult<ImageHeader> w = Install(*f, Slot::kA, testing::SecureImage(kV3, 1, 3), allow);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.error().name, "rollback");
    EXPECT_NE(w.error().message.find("security version 1 is below this bridge's anti-rollback "
                                     "counter 2"),
              std::string::npos)
        << w.error().message;
  }
  // At the counter: fine.
  EXPECT_TRUE(Install(*f, Slot::kA, testing::SecureImage(kV3, 2, 3)).ok());
}

TEST(AntiRollback, TheCounterNeverDecreases) {
  ScratchDir dir;
  auto f = FactoryFlash(dir.path("f"));
  BootState s = *ReadBootState(*f).value();
  s.security_counter = 5;
  ASSERT_TRUE(WriteBootState(*f, s).ok());
  s.security_counter = 4;
  FirmwareResult<Ok> w = WriteBootState(*f, s);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().name, "counter-decrease");
  EXPECT_EQ(ReadBootState(*f).value()->security_counter, 5u);
  // Every transition keeps it.
  const BootState now = *ReadBootState(*f).value();
  EXPECT_EQ(BeginWrite(now, Slot::kB).security_counter, 5u);
  EXPECT_EQ(StartTrial(now, Slot::kB, ImageHeader{}, true).security_counter, 5u);
  EXPECT_EQ(MarkGood(StartTrial(now, Slot::kB, ImageHeader{}, true), Slot::kB).security_counter,
            5u);
}

TEST(BootSelect, ALostActiveImageFallsToTheOtherGoodOne) {
  ScratchDir dir;
  auto f = FactoryFlash(dir.path("f"));
  ASSERT_TRUE(Install(*f, Slot::kB, SignedImage(kV2, 3000, 2)).ok());
  ASSERT_EQ(*Boot(*f).value().slot, Slot::kB);
  ASSERT_TRUE(MarkRunningGood(*f, Slot::kB).ok());
  Corrupt(*f, Slot::kB, 2000);
  Booted b = Boot(*f).value();
  ASSERT_TRUE(b.slot);
  EXPECT_EQ(*b.slot, Slot::kA);
  ASSERT_FALSE(b.notes.empty());
  EXPECT_NE(b.notes[0].find("active slot B cannot boot: bad-hash"), std::string::npos);
  EXPECT_EQ(ReadBootState(*f).value()->active, Slot::kA);
  // Both lost: nothing boots, and the reason names both.
  Corrupt(*f, Slot::kA, 300);
  b = Boot(*f).value();
  EXPECT_FALSE(b.slot);
  EXPECT_NE(b.reason.find("slot A: bad-hash"), std::string::npos);
  EXPECT_NE(b.reason.find("slot B: bad-hash"), std::string::npos);
}

TEST(BootSelect, ACorruptTrialImageEndsTheTrialAtOnce) {
  ScratchDir dir;
  auto f = FactoryFlash(dir.path("f"));
  ASSERT_TRUE(Install(*f, Slot::kB, SignedImage(kV2, 3000, 2)).ok());
  Corrupt(*f, Slot::kB, 1000);
  Booted b = Boot(*f).value();
  EXPECT_EQ(*b.slot, Slot::kA);
  EXPECT_EQ(ReadBootState(*f).value()->state_of(Slot::kB), SlotState::kBad);
}

TEST(SlotWriter, RefusesWhatIsNotTheImageItBegan) {
  ScratchDir dir;
  auto f = FactoryFlash(dir.path("f"));
  const std::vector<uint8_t> image = SignedImage(kV2, 3000, 2);
  EXPECT_EQ(SlotWriter::Begin(*f, Slot::kA, Slot::kA, image, false).error().name, "slot-busy");
  EXPECT_EQ(SlotWriter::Begin(*f, Slot::kB, Slot::kA, SignedImage(kV2, 3000, 2, OtherKey()), false)
                .error()
                .name,
            "unknown-key");
  FirmwareResult<SlotWriter> w = SlotWriter::Begin(*f, Slot::kB, Slot::kA, image, false);
  ASSERT_TRUE(w.ok());
  std::vector<uint8_t> other_header(image.begin(), image.begin() + 100);
  other_header[50] ^= 1;
  EXPECT_EQ(w.value().Append(other_header).error().name, "header-mismatch");
  ASSERT_TRUE(w.value().Append(std::span(image).first(100)).ok());
  EXPECT_EQ(w.value().Finish().error().name, "incomplete");
  ASSERT_TRUE(w.value().Append(std::span(image).subspan(100)).ok());
  EXPECT_EQ(w.value().Append(std::vector<uint8_t>(1, 0)).error().name, "too-large");
  FirmwareResult<ImageHeader> done = w.value().Finish();
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(done.value().version, kV2);
  EXPECT_EQ(ReadBootState(*f).value()->trial, Slot::kB);
}

// The whole update, v1 in A running, v2 into B: written, put on trial, booted, marked good;
// with a power cut at each of its flash operations in turn. After the cut the bridge boots and
// always boots a valid, signed image: v1 (the cut came before the trial was recorded) or v2 (on
// trial, which the healthy v2 then marks good).
TEST(BootSelect, APowerCutAtEveryOperationOfAnUpdateAlwaysBootsASignedImage) {
  ScratchDir dir;
  const std::vector<uint8_t> v2 = SignedImage(kV2, 9000, 2);
  auto update = [&](FlashDevice& f) -> FirmwareResult<Ok> {
    FirmwareResult<ImageHeader> h = Install(f, Slot::kB, v2);
    if (!h.ok()) return h.error();
    FirmwareResult<Booted> b = Boot(f);
    if (!b.ok()) return b.error();
    if (b.value().slot != Slot::kB) return FirmwareError{"test", "did not boot the trial"};
    return MarkRunningGood(f, Slot::kB);
  };
  uint64_t before = 0, total = 0;
  {
    auto f = FactoryFlash(dir.path("count"));
    before = f->operations();
    ASSERT_TRUE(update(*f).ok());
    total = f->operations() - before;
  }
  ASSERT_GT(total, 9000u / 64);
  int booted_old = 0, booted_new = 0;
  for (uint64_t cut = 0; cut < total; ++cut) {
    const std::string path = dir.path("cut" + std::to_string(cut));
    {
      auto f = FactoryFlash(path);
      f->ArmPowerCut(cut);
      ASSERT_FALSE(update(*f).ok()) << "cut " << cut << " never happened";
    }
    auto f = std::move(FlashDevice::Open(path)).value();
    // Boots; a trial is v2, healthy, which marks itself good; the boot after that is settled.
    Booted b;
    for (int boot = 0; boot < 2; ++boot) {
      b = Boot(*f).value();
      ASSERT_TRUE(b.slot) << "cut " << cut << ": nothing to boot: " << b.reason;
      const SlotImage img = CheckSlot(*f, *b.slot);
      ASSERT_TRUE(img.valid) << "cut " << cut << ": booted an invalid slot: " << img.problem;
      ASSERT_TRUE(img.version == kV1 || img.version == kV2) << "cut " << cut;
      if (!b.trial) break;
      ASSERT_EQ(b.version, kV2) << "cut " << cut;
      ASSERT_TRUE(MarkRunningGood(*f, *b.slot).ok());
    }
    EXPECT_FALSE(b.trial) << "cut " << cut;
    (b.version == kV2 ? booted_new : booted_old) += 1;
    f.reset();
    std::remove(path.c_str());
  }
  // Cuts before the trial state was written leave v1; cuts after the mark leave v2.
  EXPECT_GT(booted_old, 0);
  EXPECT_GT(booted_new, 0);
  std::printf("%llu cuts: %d booted v1, %d booted v2\n", static_cast<unsigned long long>(total),
              booted_old, booted_new);
}

}  // namespace
}  // namespace dxpu::firmware
