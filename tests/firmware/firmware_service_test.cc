// firmware_service_test.cc - a firmware update through the management messages
// (firmware_service.h, docs/firmware.md "Updating over the management socket"): the header
// checked at FW_BEGIN before any byte is taken, chunks in order (a repeat ignored, a gap
// refused), resume with the same header, verify at FW_COMMIT, the trial; every refusal leaves
// the running image and the boot choice as they were.
#include "bridge-fw/firmware/firmware_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "bridge-fw/firmware/boot_select.h"
#include "bridge-fw/firmware/downgrade.h"
#include "bridge-fw/firmware/slot_writer.h"
#include "bridge-fw/management.h"
#include "core/crc32c.h"
#include "firmware_testutil.h"
#include "gpu/device_profile.h"

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
using Bytes = std::vector<uint8_t>;

const FirmwareVersion kV1 = FirmwareVersion::Of(1, 0, 0);
const FirmwareVersion kV2 = FirmwareVersion::Of(1, 1, 0);
const FirmwareVersion kV0 = FirmwareVersion::Of(0, 9, 0);

// A flash at `path` whose slot A holds a good v1 and is active (what `dxpu flash init
// --image` leaves), written through the same SlotWriter the service uses.
void MakeFactoryFlash(const std::string& path) {
  auto f = std::move(FlashDevice::Create(path, SmallFactory(), TestKeyList())).value();
  ASSERT_TRUE(testing::InstallGood(*f, Slot::kA, SignedImage(kV1)).ok());
}

// The slot the boot loader would boot next, and whether on trial (without writing anything).
std::pair<std::optional<Slot>, bool> NextBoot(const std::string& path) {
  auto f = std::move(FlashDevice::Open(path)).value();
  const auto state = std::move(ReadBootState(*f)).value();
  const BootChoice c = ChooseBoot(state, {CheckSlot(*f, Slot::kA), CheckSlot(*f, Slot::kB)});
  return {c.slot, c.trial};
}

dxpu_mgmt_msg Begin(const Bytes& image, uint32_t flags = 0) {
  dxpu_mgmt_msg m{};
  m.type = DXPU_MGMT_FW_BEGIN;
  m.body.fw_begin = {flags, image.data()};
  return m;
}

dxpu_mgmt_msg Chunk(const Bytes& image, uint64_t offset, size_t len) {
  dxpu_mgmt_msg m{};
  m.type = DXPU_MGMT_FW_CHUNK;
  const uint8_t* p = image.data() + offset;
  m.body.fw_chunk = {offset, dxpu_crc32c(0, p, len), static_cast<uint16_t>(len), p};
  return m;
}

dxpu_mgmt_msg Bare(uint8_t type) {
  dxpu_mgmt_msg m{};
  m.type = type;
  return m;
}

class FirmwareServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path("flash");
    MakeFactoryFlash(path_);
    service_ = std::move(FirmwareService::Open(path_, Slot::kA)).value();
  }
  // Sends every chunk of `image` from `from`, `piece` bytes at a time.
  void SendAll(const Bytes& image, uint64_t from = 0, size_t piece = 1000) {
    for (uint64_t at = from; at < image.size(); at += piece) {
      const FirmwareAnswer a =
          service_->Handle(Chunk(image, at, std::min<size_t>(piece, image.size() - at)));
      ASSERT_EQ(a.status, DXPU_MGMT_OK) << dxpu_mgmt_status_name(a.status) << " at " << at;
      EXPECT_EQ(a.report->next_offset, std::min<uint64_t>(at + piece, image.size()));
    }
  }
  ScratchDir dir_;
  std::string path_;
  std::unique_ptr<FirmwareService> service_;
};

TEST_F(FirmwareServiceTest, AWholeUpdatePutsTheNewSlotOnTrial) {
  const Bytes image = SignedImage(kV2, 9000, 2);
  FirmwareAnswer a = service_->Handle(Bare(DXPU_MGMT_FW_STATUS));
  ASSERT_EQ(a.status, DXPU_MGMT_OK);
  EXPECT_EQ(a.report->transfer, DXPU_MGMT_FW_IDLE);
  EXPECT_EQ(a.report->running_slot, 0);
  EXPECT_EQ(a.report->running_version, kV1.packed);
  EXPECT_EQ(a.report->slot_state[0], DXPU_MGMT_FW_SLOT_GOOD);
  EXPECT_EQ(a.report->hw_revision, 7u);

  a = service_->Handle(Begin(image));
  ASSERT_EQ(a.status, DXPU_MGMT_OK);
  EXPECT_EQ(a.report->transfer, DXPU_MGMT_FW_RECEIVING);
  EXPECT_EQ(a.report->target_slot, 1);
  EXPECT_EQ(a.report->next_offset, 0u);
  EXPECT_EQ(a.report->total, image.size());

  // Half, a repeat (answered, ignored), a gap (refused), a commit too early, then the rest.
  SendAll(Bytes(image.begin(), image.begin() + 4000));
  a = service_->Handle(Chunk(image, 1000, 1000));
  ASSERT_EQ(a.status, DXPU_MGMT_OK);
  EXPECT_EQ(a.report->next_offset, 4000u);
  EXPECT_EQ(service_->Handle(Chunk(image, 5000, 1000)).status, DXPU_MGMT_OUT_OF_ORDER);
  EXPECT_EQ(service_->Handle(Chunk(image, 3500, 1000)).status, DXPU_MGMT_OUT_OF_ORDER);
  EXPECT_EQ(service_->Handle(Bare(DXPU_MGMT_FW_COMMIT)).status, DXPU_MGMT_INCOMPLETE);
  SendAll(image, 4000);

  a = service_->Handle(Bare(DXPU_MGMT_FW_COMMIT));
  ASSERT_EQ(a.status, DXPU_MGMT_OK);
  EXPECT_EQ(a.report->transfer, DXPU_MGMT_FW_COMMITTED);
  EXPECT_EQ(a.report->trial_slot, 1);
  EXPECT_EQ(a.report->tries_left, kTrialTries);
  EXPECT_EQ(a.report->slot_version[1], kV2.packed);
  EXPECT_EQ(service_->Handle(Bare(DXPU_MGMT_FW_COMMIT)).status, DXPU_MGMT_OK);  // a retry
  EXPECT_EQ(NextBoot(path_), std::make_pair(std::optional(Slot::kB), true));

  EXPECT_FALSE(service_->reboot_requested());
  a = service_->Handle(Bare(DXPU_MGMT_FW_REBOOT));
  EXPECT_EQ(a.status, DXPU_MGMT_OK);
  EXPECT_FALSE(a.report.has_value());
  EXPECT_TRUE(service_->reboot_requested());
}

TEST_F(FirmwareServiceTest, BeginningTheSameImageAgainResumes) {
  const Bytes image = SignedImage(kV2, 9000, 2);
  ASSERT_EQ(service_->Handle(Begin(image)).status, DXPU_MGMT_OK);
  SendAll(Bytes(image.begin(), image.begin() + 6000));
  FirmwareAnswer a = service_->Handle(Begin(image));
  ASSERT_EQ(a.status, DXPU_MGMT_OK);
  EXPECT_EQ(a.report->next_offset, 6000u);
  SendAll(image, 6000);
  ASSERT_EQ(service_->Handle(Bare(DXPU_MGMT_FW_COMMIT)).status, DXPU_MGMT_OK);
  a = service_->Handle(Begin(image));
  ASSERT_EQ(a.status, DXPU_MGMT_OK);
  EXPECT_EQ(a.report->transfer, DXPU_MGMT_FW_COMMITTED);

  // Another image starts over.
  const Bytes other = SignedImage(kV2, 7000, 3);
  a = service_->Handle(Begin(other));
  ASSERT_EQ(a.status, DXPU_MGMT_OK);
  EXPECT_EQ(a.report->next_offset, 0u);
  EXPECT_EQ(a.report->total, other.size());
  EXPECT_EQ(a.report->trial_slot, DXPU_MGMT_FW_NO_SLOT);
}

TEST_F(FirmwareServiceTest, BadImagesAreRefusedAndTheRunningFirmwareIsUntouched) {
  struct Case {
    Bytes image;
    uint16_t status;
    const char* what;
  };
  Bytes edited = SignedImage(kV2);
  edited[20] ^= 1;  // the payload length: the signature no longer matches
  Bytes not_image(300, 0x41);
  auto other_hw_spec = testing::SpecOf(kV2);
  other_hw_spec.hw_revision = 8;
  const Bytes other_hw =
      std::move(BuildImage(other_hw_spec, testing::TestKey().secret_key)).value();
  const Case cases[] = {
      {SignedImage(kV2, 3000, 1, OtherKey()), DXPU_MGMT_IMAGE_UNTRUSTED, "another key"},
      {edited, DXPU_MGMT_IMAGE_UNTRUSTED, "an edited header"},
      {other_hw, DXPU_MGMT_WRONG_HARDWARE, "another hardware revision"},
      {SignedImage(kV0), DXPU_MGMT_DOWNGRADE, "an older version"},
      {not_image, DXPU_MGMT_IMAGE_INVALID, "not an image"},
      {SignedImage(kV2, 40000), DXPU_MGMT_IMAGE_INVALID, "larger than a slot"},
  };
  const uint64_t ops = service_->flash().operations();
  for (const Case& c : cases) {
    EXPECT_EQ(service_->Handle(Begin(c.image)).status, c.status) << c.what;
    EXPECT_EQ(service_->Handle(Chunk(c.image, 0, 256)).status, DXPU_MGMT_NO_TRANSFER) << c.what;
  }
  EXPECT_EQ(service_->flash().operations(), ops) << "a refused header writes nothing";
  EXPECT_EQ(NextBoot(path_), std::make_pair(std::optional(Slot::kA), false));

  // The bare ALLOW_DOWNGRADE flag takes nothing: the image's own bytes where the
  // authorisation belongs are refused, and nothing is written.
  const Bytes old = SignedImage(kV0);
  ASSERT_EQ(service_->Handle(Begin(old, DXPU_MGMT_FW_F_ALLOW_DOWNGRADE)).status, DXPU_MGMT_OK);
  EXPECT_EQ(service_->Handle(Chunk(old, 0, 1000)).status, DXPU_MGMT_DOWNGRADE);
  EXPECT_EQ(service_->Handle(Bare(DXPU_MGMT_FW_STATUS)).report->transfer, DXPU_MGMT_FW_IDLE);
  EXPECT_EQ(service_->flash().operations(), ops);
  EXPECT_EQ(NextBoot(path_), std::make_pair(std::optional(Slot::kA), false));
}

TEST_F(FirmwareServiceTest, AnImageOlderThanTheRunningOneIsRefusedWithoutAuthorisation) {
  // The review's case (issue 32): 1.5.0 runs from B, 1.4.0 is good in A, the minimum is the
  // lower of the two; a push of an image between them (or of 1.4.0 itself) used to answer OK.
  service_.reset();
  {
    auto f = std::move(FlashDevice::Open(path_)).value();
    ASSERT_TRUE(testing::InstallGood(*f, Slot::kB, SignedImage(kV2, 3000, 2)).ok());
  }
  service_ = std::move(FirmwareService::Open(path_, Slot::kB)).value();
  const FirmwareAnswer status = service_->Handle(Bare(DXPU_MGMT_FW_STATUS));
  ASSERT_EQ(status.report->min_version, kV1.packed);
  const uint64_t ops = service_->flash().operations();
  for (const Bytes& image : {SignedImage(kV1, 3000, 3), SignedImage(FirmwareVersion::Of(1, 0, 5))})
    EXPECT_EQ(service_->Handle(Begin(image)).status, DXPU_MGMT_DOWNGRADE);
  EXPECT_EQ(service_->flash().operations(), ops);
  // The same version again (a reinstall) is no downgrade.
  EXPECT_EQ(service_->Handle(Begin(SignedImage(kV2, 3000, 2))).status, DXPU_MGMT_OK);
}

TEST_F(FirmwareServiceTest, ADowngradeNeedsAnAuthorisationSignedForThisBridgeAndThisImage) {
  const Bytes old = SignedImage(kV0, 9000, 5);
  const Bytes header(old.begin(), old.begin() + kHeaderBytes);
  const auto auth = [&](const BridgeId& bridge, const Bytes& image, const KeyPair& key) {
    return std::move(SignDowngrade(bridge, image, key.secret_key)).value();
  };
  BridgeId other_bridge = TestBridgeId();
  other_bridge[0] ^= 1;
  const Bytes other_image = SignedImage(kV0, 9000, 6);
  Bytes forged = auth(TestBridgeId(), old, TestKey());
  forged[30] ^= 1;  // the digest edited after signing
  struct Case {
    Bytes authorisation;
    const char* what;
  };
  const Case refused[] = {
      {auth(other_bridge, old, TestKey()), "another bridge's"},
      {auth(TestBridgeId(), other_image, TestKey()), "another image's"},
      {auth(TestBridgeId(), old, OtherKey()), "signed by an untrusted key"},
      {forged, "edited after signing"},
      {Bytes(kDowngradeBytes, 0x5a), "not an authorisation"},
  };
  const uint64_t ops = service_->flash().operations();
  for (const Case& c : refused) {
    Bytes stream = c.authorisation;
    stream.insert(stream.end(), old.begin(), old.end());
    const FirmwareAnswer begun = service_->Handle(Begin(old, DXPU_MGMT_FW_F_ALLOW_DOWNGRADE));
    ASSERT_EQ(begun.status, DXPU_MGMT_OK) << c.what;
    EXPECT_EQ(begun.report->total, stream.size()) << c.what;
    EXPECT_EQ(service_->Handle(Chunk(stream, 0, 1000)).status, DXPU_MGMT_DOWNGRADE) << c.what;
    EXPECT_EQ(service_->Handle(Chunk(stream, 1000, 1000)).status, DXPU_MGMT_NO_TRANSFER) << c.what;
  }
  EXPECT_EQ(service_->flash().operations(), ops) << "a refused authorisation writes nothing";
  EXPECT_EQ(NextBoot(path_), std::make_pair(std::optional(Slot::kA), false));

  // The right one: the image goes in (chunks straddle the authorisation's end) and boots.
  Bytes stream = auth(TestBridgeId(), old, TestKey());
  stream.insert(stream.end(), old.begin(), old.end());
  ASSERT_EQ(service_->Handle(Begin(old, DXPU_MGMT_FW_F_ALLOW_DOWNGRADE)).status, DXPU_MGMT_OK);
  SendAll(stream);
  const FirmwareAnswer done = service_->Handle(Bare(DXPU_MGMT_FW_COMMIT));
  ASSERT_EQ(done.status, DXPU_MGMT_OK);
  EXPECT_EQ(done.report->transfer, DXPU_MGMT_FW_COMMITTED);
  EXPECT_EQ(done.report->min_version, kV0.packed);
  EXPECT_EQ(NextBoot(path_), std::make_pair(std::optional(Slot::kB), true));
}

TEST_F(FirmwareServiceTest, APayloadCorruptedInTransitFailsTheCommit) {
  Bytes image = SignedImage(kV2, 9000, 2);
  image[5000] ^= 0x80;  // after the header: only the hash can tell
  ASSERT_EQ(service_->Handle(Begin(image)).status, DXPU_MGMT_OK);
  SendAll(image);
  EXPECT_EQ(service_->Handle(Bare(DXPU_MGMT_FW_COMMIT)).status, DXPU_MGMT_IMAGE_INVALID);
  const FirmwareAnswer a = service_->Handle(Bare(DXPU_MGMT_FW_STATUS));
  EXPECT_EQ(a.report->transfer, DXPU_MGMT_FW_IDLE);
  EXPECT_EQ(NextBoot(path_), std::make_pair(std::optional(Slot::kA), false));
  // The chunks of another image begun with this header are another image.
  const Bytes good = SignedImage(kV2, 9000, 2);
  ASSERT_EQ(service_->Handle(Begin(good)).status, DXPU_MGMT_OK);
  SendAll(good);
  EXPECT_EQ(service_->Handle(Bare(DXPU_MGMT_FW_COMMIT)).status, DXPU_MGMT_OK);
}

TEST_F(FirmwareServiceTest, NoUpdateWhileTheRunningImageIsOnTrial) {
  const Bytes image = SignedImage(kV2, 9000, 2);
  ASSERT_EQ(service_->Handle(Begin(image)).status, DXPU_MGMT_OK);
  SendAll(image);
  ASSERT_EQ(service_->Handle(Bare(DXPU_MGMT_FW_COMMIT)).status, DXPU_MGMT_OK);
  service_.reset();
  // The boot loader boots B on trial; the bridge on B may not overwrite A (its fall-back) yet.
  {
    auto f = std::move(FlashDevice::Open(path_)).value();
    const auto state = std::move(ReadBootState(*f)).value();
    const BootChoice c = ChooseBoot(state, {CheckSlot(*f, Slot::kA), CheckSlot(*f, Slot::kB)});
    ASSERT_EQ(c.slot, Slot::kB);
    ASSERT_TRUE(WriteBootState(*f, c.state).ok());
  }
  service_ = std::move(FirmwareService::Open(path_, Slot::kB)).value();
  EXPECT_TRUE(service_->running_on_trial());
  const Bytes next = SignedImage(FirmwareVersion::Of(1, 2, 0), 5000, 4);
  EXPECT_EQ(service_->Handle(Begin(next)).status, DXPU_MGMT_TRIAL_RUNNING);
  ASSERT_TRUE(service_->MarkRunningGood().ok());
  EXPECT_FALSE(service_->running_on_trial());
  const FirmwareAnswer a = service_->Handle(Begin(next));
  ASSERT_EQ(a.status, DXPU_MGMT_OK);
  EXPECT_EQ(a.report->target_slot, 0);
  EXPECT_EQ(a.report->running_version, kV2.packed);
  EXPECT_EQ(a.report->min_version, kV1.packed);  // the lower of the two good images
}

TEST_F(FirmwareServiceTest, TheManagementSocketRoutesFirmwareRequests) {
  // Through HandleManagement's bytes: a firmware report comes back, and a bridge not booted
  // from a flash answers FW_UNAVAILABLE.
  bridge::BridgeBoxConfig config;
  config.node_id = 0xb0;
  bridge::BoxDeviceConfig device;
  device.profile = *gpu::FindProfile("dxgpu");
  device.box_bdf = 0x0100;
  device.memory_bytes = 1 << 20;
  config.devices.push_back(device);
  std::string error;
  auto box = bridge::BridgeBox::Create(config, &error);
  ASSERT_NE(box, nullptr) << error;
  Bytes request(DXPU_MGMT_HDR_SIZE);
  size_t len = 0;
  dxpu_mgmt_msg m = Bare(DXPU_MGMT_FW_STATUS);
  m.request_id = 42;
  ASSERT_EQ(dxpu_mgmt_encode(&m, request.data(), request.size(), &len), DXPU_MGMT_ERR_OK);
  bridge::ManagementCounters counters;
  Bytes reply = bridge::HandleManagement(*box, request, 0, &counters, service_.get());
  dxpu_mgmt_msg r{};
  ASSERT_EQ(dxpu_mgmt_decode(reply.data(), reply.size(), &r), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(r.status, DXPU_MGMT_OK);
  EXPECT_EQ(r.request_id, 42u);
  EXPECT_EQ(r.body.fw_report.running_version, kV1.packed);
  reply = bridge::HandleManagement(*box, request, 0, &counters, nullptr);
  ASSERT_EQ(dxpu_mgmt_decode(reply.data(), reply.size(), &r), DXPU_MGMT_ERR_OK);
  EXPECT_EQ(r.status, DXPU_MGMT_FW_UNAVAILABLE);
  EXPECT_EQ(counters.refused, 1u);
}

}  // namespace
}  // namespace dxpu::firmware
