// flash_test.cc - the flash model (flash_device.h) and the boot state on it (boot_state.h):
// the erase and program rules, power cuts, and every boot-state update atomic against a cut at
// any operation.
#include "bridge-fw/firmware/flash_device.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "bridge-fw/firmware/boot_state.h"
#include "bridge-fw/firmware/flash_layout.h"
#include "firmware_testutil.h"

namespace dxpu::firmware {
namespace {

using testing::RootKey;
using testing::ScratchDir;
using testing::SmallFactory;
using testing::TestBridgeId;
using testing::TestKey;
using testing::TestKeyList;

std::vector<uint8_t> ReadAt(const FlashDevice& f, uint64_t at, size_t n) {
  std::vector<uint8_t> out(n);
  EXPECT_TRUE(f.Read(at, out).ok());
  return out;
}

TEST(FlashDevice, CreateOpenAndTheFactoryBlock) {
  ScratchDir dir;
  const FactoryInfo info = SmallFactory();
  auto created = FlashDevice::Create(dir.path("flash.img"), info, TestKeyList());
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_EQ(FlashDevice::Create(dir.path("flash.img"), info, TestKeyList()).error().name, "exists");
  auto opened = FlashDevice::Open(dir.path("flash.img"));
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  const FlashDevice& f = *opened.value();
  EXPECT_EQ(f.factory().hw_revision, 7u);
  EXPECT_EQ(f.factory().blocks_per_slot, 4u);
  EXPECT_EQ(f.factory().keys, std::vector<PublicKey>{TestKey().public_key});
  EXPECT_EQ(f.factory().key_list_sequence, 1u);
  EXPECT_EQ(f.factory().bridge_id, TestBridgeId());
  EXPECT_EQ(f.factory().root_key, RootKey().public_key);
  EXPECT_EQ(f.geometry().size(), 13u * 4096);
  // Everything but the factory block and the key list is erased.
  const std::vector<uint8_t> state = ReadAt(f, 4096, size_t{2} * 4096);
  EXPECT_TRUE(std::ranges::all_of(state, [](uint8_t b) { return b == 0xff; }));
  const std::vector<uint8_t> list = ReadAt(f, size_t{3} * 4096, kKeyListBytes);
  EXPECT_EQ(list, TestKeyList());
  const std::vector<uint8_t> rest = ReadAt(f, size_t{4} * 4096, size_t{9} * 4096);
  EXPECT_TRUE(std::ranges::all_of(rest, [](uint8_t b) { return b == 0xff; }));
}

TEST(FlashDevice, RefusesBadGeometriesAndDamagedFactoryBlocks) {
  ScratchDir dir;
  FactoryInfo info = SmallFactory();
  info.geometry.erase_block = 3000;
  EXPECT_EQ(FlashDevice::Create(dir.path("a"), info, TestKeyList()).error().name, "bad-geometry");
  info = SmallFactory();
  info.geometry.granule = 32;
  EXPECT_EQ(FlashDevice::Create(dir.path("a"), info, TestKeyList()).error().name, "bad-geometry");
  info = SmallFactory();
  info.geometry.blocks = 12;  // two 4-block slots need 13
  EXPECT_EQ(FlashDevice::Create(dir.path("a"), info, TestKeyList()).error().name, "bad-geometry");
  // A key list the root key did not sign.
  info = SmallFactory();
  EXPECT_EQ(FlashDevice::Create(dir.path("a"), info, TestKeyList({}, 1, OtherKey())).error().name,
            "bad-key-list");

  ASSERT_TRUE(FlashDevice::Create(dir.path("f"), SmallFactory(), TestKeyList()).ok());
  {
    FILE* fp = fopen(dir.path("f").c_str(), "r+b");
    ASSERT_NE(fp, nullptr);
    fseek(fp, 40, SEEK_SET);
    fputc(0x5a, fp);  // a key byte: the CRC no longer matches
    fclose(fp);
  }
  FirmwareResult<std::unique_ptr<FlashDevice>> bad = FlashDevice::Open(dir.path("f"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().name, "bad-factory");
  EXPECT_NE(bad.error().message.find("CRC"), std::string::npos);
  EXPECT_EQ(FlashDevice::Open(dir.path("none")).error().name, "flash-io");
}

TEST(FlashDevice, EraseAndProgramRules) {
  ScratchDir dir;
  auto f = std::move(FlashDevice::Create(dir.path("f"), SmallFactory(), TestKeyList())).value();
  const std::vector<uint8_t> g(64, 0x11);
  EXPECT_TRUE(f->Program(4096, g).ok());
  EXPECT_EQ(ReadAt(*f, 4096, 64), g);
  EXPECT_EQ(f->Program(4096, g).error().name, "not-erased");
  EXPECT_EQ(f->Program(4096 + 32, g).error().name, "unaligned");
  EXPECT_EQ(f->Program(8192, std::vector<uint8_t>(65, 0)).error().name, "unaligned");
  EXPECT_EQ(f->Program(0, g).error().name, "protected");
  EXPECT_EQ(f->Erase(0).error().name, "protected");
  EXPECT_EQ(f->Erase(13).error().name, "protected");
  EXPECT_EQ(f->Program(uint64_t{13} * 4096, g).error().name, "out-of-range");
  ASSERT_TRUE(f->Erase(1).ok());
  EXPECT_EQ(ReadAt(*f, 4096, 64), std::vector<uint8_t>(64, 0xff));
  EXPECT_TRUE(f->Program(4096, g).ok());
  std::vector<uint8_t> out(10);
  EXPECT_EQ(f->Read(13 * 4096 - 5, out).error().name, "out-of-range");
}

TEST(FlashDevice, APowerCutTearsTheOperationAndStopsEverything) {
  ScratchDir dir;
  auto f = std::move(FlashDevice::Create(dir.path("f"), SmallFactory(), TestKeyList())).value();
  f->ArmPowerCut(2);
  const std::vector<uint8_t> data(size_t{4} * 64, 0x22);
  FirmwareResult<Ok> r = f->Program(4096, data);  // the third granule is torn
  EXPECT_EQ(r.error().name, "power-lost");
  EXPECT_TRUE(f->power_lost());
  EXPECT_EQ(f->Erase(2).error().name, "power-lost");
  f.reset();
  auto again = std::move(FlashDevice::Open(dir.path("f"))).value();
  const std::vector<uint8_t> got = ReadAt(*again, 4096, size_t{4} * 64);
  EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + 128), std::vector<uint8_t>(128, 0x22));
  // The torn granule: a prefix of it (1 to 63 bytes) programmed, the rest still erased.
  const auto torn = std::find(got.begin() + 128, got.end(), 0xff);
  EXPECT_GT(torn - got.begin(), 128);
  EXPECT_LT(torn - got.begin(), 192);
  EXPECT_TRUE(std::all_of(torn, got.end(), [](uint8_t b) { return b == 0xff; }));
  // A torn erase: a prefix of the block erased, the rest as it was.
  ASSERT_TRUE(again->Program(4096 + 4032, std::vector<uint8_t>(64, 0x33)).ok());
  again->ArmPowerCut(0);
  EXPECT_EQ(again->Erase(1).error().name, "power-lost");
  const std::vector<uint8_t> block = ReadAt(*again, 4096, 4096);
  EXPECT_EQ(block[0], 0xff);
  EXPECT_EQ(block[4095], 0x33);
}

BootState StateNumber(uint32_t n) {
  BootState s;
  s.active = n % 2 == 0 ? Slot::kA : Slot::kB;
  s.trial = n % 3 == 0 ? std::optional<Slot>(OtherSlot(*s.active)) : std::nullopt;
  s.tries_left = static_cast<uint8_t>(n % 4);
  s.min_version = FirmwareVersion::Of(1, 0, n);
  s.slot_state = {SlotState::kGood, n % 2 == 0 ? SlotState::kWritten : SlotState::kBad};
  s.slot_version = {FirmwareVersion::Of(1, 0, n), FirmwareVersion::Of(1, 1, n)};
  return s;
}

TEST(BootState, RecordsRoundTripAndDamagedOnesAreNotRecords) {
  const BootState s = StateNumber(6);
  std::vector<uint8_t> r = EncodeBootState(s, 64);
  std::optional<BootState> back = DecodeBootState(r);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->SameAs(s));
  for (size_t i = 0; i < r.size(); ++i) {
    std::vector<uint8_t> x = r;
    x[i] ^= 0x04;
    EXPECT_FALSE(DecodeBootState(x)) << "byte " << i;
  }
  EXPECT_FALSE(DecodeBootState(std::vector<uint8_t>(64, 0xff)));
}

TEST(BootState, NewestRecordWinsAcrossBlockSwitches) {
  ScratchDir dir;
  auto f = std::move(FlashDevice::Create(dir.path("f"), SmallFactory(), TestKeyList())).value();
  EXPECT_FALSE(ReadBootState(*f).value());
  // 64 records fill a 4 KiB block of 64-byte granules: 200 updates switch blocks three times.
  for (uint32_t n = 0; n < 200; ++n) {
    ASSERT_TRUE(WriteBootState(*f, StateNumber(n)).ok()) << n;
    std::optional<BootState> now = ReadBootState(*f).value();
    ASSERT_TRUE(now);
    EXPECT_TRUE(now->SameAs(StateNumber(n))) << n;
    EXPECT_EQ(now->sequence, n + 1);
  }
}

// A power cut at every operation of 150 updates (appends, block switches): afterwards the state
// is the last one written, or the one being written; a further update then works.
TEST(BootState, EveryUpdateIsAtomicAgainstAPowerCutAtAnyOperation) {
  ScratchDir dir;
  const uint32_t kUpdates = 150;
  // How many operations the whole sequence takes, without cuts.
  uint64_t total_ops = 0;
  {
    auto f =
        std::move(FlashDevice::Create(dir.path("count"), SmallFactory(), TestKeyList())).value();
    const uint64_t created = f->operations();  // the key list Create programmed
    for (uint32_t n = 0; n < kUpdates; ++n) ASSERT_TRUE(WriteBootState(*f, StateNumber(n)).ok());
    total_ops = f->operations() - created;
  }
  ASSERT_GT(total_ops, kUpdates);  // the block switches erase
  for (uint64_t cut = 0; cut < total_ops; ++cut) {
    const std::string path = dir.path("cut" + std::to_string(cut));
    auto f = std::move(FlashDevice::Create(path, SmallFactory(), TestKeyList())).value();
    f->ArmPowerCut(cut);
    uint32_t done = 0;  // updates that returned ok
    while (done < kUpdates && WriteBootState(*f, StateNumber(done)).ok()) ++done;
    ASSERT_LT(done, kUpdates) << "cut " << cut << " never happened";
    f.reset();
    auto g = std::move(FlashDevice::Open(path)).value();
    std::optional<BootState> now = ReadBootState(*g).value();
    if (done == 0) {
      EXPECT_TRUE(!now || now->SameAs(StateNumber(0))) << "cut " << cut;
    } else {
      ASSERT_TRUE(now) << "cut " << cut << ": the state was lost";
      EXPECT_TRUE(now->SameAs(StateNumber(done - 1)) || now->SameAs(StateNumber(done)))
          << "cut " << cut << " during update " << done;
    }
    // The next boot writes again and reads back what it wrote.
    ASSERT_TRUE(WriteBootState(*g, StateNumber(kUpdates)).ok()) << "cut " << cut;
    EXPECT_TRUE(ReadBootState(*g).value()->SameAs(StateNumber(kUpdates))) << "cut " << cut;
    g.reset();
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace dxpu::firmware

namespace dxpu::firmware {
namespace {

using testing::OtherKey;

TEST(KeyList, RotationTakesANewerListSignedByTheRootKeyOnly) {
  testing::ScratchDir dir;
  auto f =
      std::move(FlashDevice::Create(dir.path("f"), testing::SmallFactory(), testing::TestKeyList()))
          .value();
  const std::vector<PublicKey> both = {testing::TestKey().public_key, OtherKey().public_key};
  // Signed by another key than the root (an image key, say): refused, nothing written.
  FirmwareResult<Ok> r = f->RotateKeys(testing::TestKeyList(both, 2, OtherKey()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().name, "bad-key-list");
  // Not newer: refused.
  r = f->RotateKeys(testing::TestKeyList(both, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().name, "stale-key-list");
  EXPECT_EQ(f->factory().keys.size(), 1u);
  // Newer, by the root key: taken, and what the next boot reads.
  ASSERT_TRUE(f->RotateKeys(testing::TestKeyList(both, 2)).ok());
  EXPECT_EQ(f->factory().keys, both);
  f.reset();
  auto again = std::move(FlashDevice::Open(dir.path("f"))).value();
  EXPECT_EQ(again->factory().keys, both);
  EXPECT_EQ(again->factory().key_list_sequence, 2u);
  // And again, into the other block: the newest wins.
  ASSERT_TRUE(again->RotateKeys(testing::TestKeyList({OtherKey().public_key}, 3)).ok());
  again.reset();
  EXPECT_EQ(std::move(FlashDevice::Open(dir.path("f"))).value()->factory().keys,
            std::vector<PublicKey>{OtherKey().public_key});
}

TEST(KeyList, ATamperedListIsRefusedAtBootWithAClearError) {
  testing::ScratchDir dir;
  const std::string path = dir.path("f");
  ASSERT_TRUE(FlashDevice::Create(path, testing::SmallFactory(), testing::TestKeyList()).ok());
  // An attacker with the flash adds their key to the list and fixes up every CRC there is:
  // the list's signature no longer verifies with the root key in the factory block.
  std::vector<uint8_t> list = testing::TestKeyList();
  std::ranges::copy(OtherKey().public_key, list.begin() + 16);
  {
    FILE* fp = fopen(path.c_str(), "r+b");
    ASSERT_NE(fp, nullptr);
    ASSERT_EQ(fseek(fp, 3 * 4096, SEEK_SET), 0);
    ASSERT_EQ(fwrite(list.data(), 1, list.size(), fp), list.size());
    fclose(fp);
  }
  FirmwareResult<std::unique_ptr<FlashDevice>> f = FlashDevice::Open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().name, "bad-key-list");
  EXPECT_NE(f.error().message.find("no list of trusted keys signed by the root key"),
            std::string::npos)
      << f.error().message;
  EXPECT_NE(f.error().message.find("block 3: its signature does not verify"), std::string::npos)
      << f.error().message;
  EXPECT_NE(f.error().message.find("block 4: empty"), std::string::npos) << f.error().message;
}

TEST(KeyList, APowerCutDuringARotationKeepsTheOldList) {
  testing::ScratchDir dir;
  const std::string path = dir.path("f");
  const std::vector<PublicKey> both = {testing::TestKey().public_key, OtherKey().public_key};
  for (uint64_t cut = 0; cut < 6; ++cut) {  // the erase, the 4 granules, after them
    std::filesystem::remove(path);
    auto f = std::move(FlashDevice::Create(path, testing::SmallFactory(), testing::TestKeyList()))
                 .value();
    f->ArmPowerCut(cut);
    const bool done = f->RotateKeys(testing::TestKeyList(both, 2)).ok();
    f.reset();
    auto again = FlashDevice::Open(path);
    ASSERT_TRUE(again.ok()) << cut << ": " << again.error().message;
    // The old list or the whole new one (a cut after its last signature byte landed is a
    // rotation done): never none, never a mixture.
    const std::vector<PublicKey>& keys = again.value()->factory().keys;
    EXPECT_TRUE(keys == both || keys == std::vector<PublicKey>{testing::TestKey().public_key})
        << cut;
    if (done) {
      EXPECT_EQ(keys, both) << cut;
    }
    if (cut == 0) {
      EXPECT_EQ(keys.size(), 1u);
    }
  }
}

}  // namespace
}  // namespace dxpu::firmware
