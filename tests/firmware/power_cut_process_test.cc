// power_cut_process_test.cc - power cuts during a firmware update of a real bridge
// (docs/firmware.md): dxpu-boot runs the flash's dxpu-bridge with a hidden option that tears
// flash operation N and exits the process there. Killed at each step of writing and of
// activating, the bridge always boots a valid, signed image, and the update completes when
// pushed again. Release build only (tests/CMakeLists.txt): under ASan every image holds a 44 MB
// dxpu-bridge, which made these two tests 200 s of `make test`; the same code is covered under
// ASan in-process (firmware_test cuts power at every operation of an update,
// firmware_service_test) and by boot_loader_test.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "update_rig.h"

namespace dxpu::firmware {
namespace {

using testing::UpdateRig;
using Bytes = std::vector<uint8_t>;

const FirmwareVersion kV1 = testing::kFlashedV1;
const FirmwareVersion kV2 = testing::kUpdateV2;
constexpr uint32_t kEraseBlock = testing::FlashedBridge::kEraseBlock;
constexpr uint32_t kGranule = testing::FlashedBridge::kGranule;

// The flash operations of writing an image of `image_bytes` into a slot: the boot-state record
// that empties the slot, the erases and granules, the record that puts it on trial.
uint64_t UpdateOperations(size_t image_bytes) {
  const uint64_t granules = (image_bytes + kGranule - 1) / kGranule;
  const uint64_t blocks = (image_bytes + kEraseBlock - 1) / kEraseBlock;
  return 1 + blocks + granules + 1;
}

// After a power cut, whatever it hit: the bridge boots a valid, signed image (v1 or v2), and
// the update completes when pushed again.
void ExpectRecovered(UpdateRig& rig, const std::string& v2_file) {
  const auto boot = rig.Boot();
  ASSERT_TRUE(rig.WaitRunning(kV1, true, 20) || rig.WaitRunning(kV2, true, 20)) << rig.BootLog();
  EXPECT_EQ(rig.Push(v2_file), 0) << rig.PushLog();
  EXPECT_TRUE(rig.WaitRunning(kV2, true)) << rig.BootLog();
  EXPECT_EQ(boot->Terminate(), 0);
}

TEST(FirmwareUpdateProcess, PowerLostAtEachStepOfWritingAlwaysBootsASignedImage) {
  UpdateRig rig;
  const Bytes v2 = rig.Image(kV2);
  const std::string v2_file = rig.ImageFile("v2.img", v2);
  const uint64_t total = UpdateOperations(v2.size());
  // The record that empties slot B, the first erase, the first granule, the middle, the last
  // granule, the record that puts B on trial.
  for (const uint64_t cut : {uint64_t{1}, uint64_t{2}, uint64_t{3}, total / 2, total - 1, total}) {
    SCOPED_TRACE(fmt::format("power cut at flash operation {} of {}", cut, total));
    rig.bridge().MakeFlash();
    {
      const auto boot = rig.Boot({"--crash-at-flash-op", std::to_string(cut)});
      ASSERT_TRUE(rig.WaitRunning(kV1, true)) << rig.BootLog();
      const size_t cuts_before = rig.bridge().PowerCutsLogged();
      EXPECT_NE(rig.Push(v2_file, {"--wait", "3s", "--timeout", "300ms"}), 0)
          << "the bridge lost power mid-update";
      EXPECT_TRUE(boot->Terminate().has_value());
      EXPECT_GT(rig.bridge().PowerCutsLogged(), cuts_before) << rig.BootLog();
    }
    ExpectRecovered(rig, v2_file);
  }
}

TEST(FirmwareUpdateProcess, PowerLostWhileActivatingFallsBackToTheGoodImage) {
  UpdateRig rig;
  const std::string v2_file = rig.ImageFile("v2.img", rig.Image(kV2));
  {
    const auto boot = rig.Boot();
    ASSERT_TRUE(rig.WaitRunning(kV1, true)) << rig.BootLog();
    ASSERT_EQ(rig.Push(v2_file, {"--no-reboot"}), 0) << rig.PushLog();
    EXPECT_EQ(boot->Terminate(), 0);
  }
  {
    // Every boot of the new image loses power as it marks itself good (its first flash
    // operation): after its 3 tries, the boot loader falls back to v1 and marks B bad.
    const auto boot = rig.Boot({"--crash-at-flash-op", "1"});
    ASSERT_TRUE(rig.WaitRunning(kV1, false, 60)) << rig.BootLog();
    const auto r = rig.Status();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->running_slot, 0);
    EXPECT_EQ(r->slot_state[1], DXPU_MGMT_FW_SLOT_BAD);
    EXPECT_EQ(r->trial_slot, DXPU_MGMT_FW_NO_SLOT);
    EXPECT_EQ(boot->Terminate(), 0);
  }
  ExpectRecovered(rig, v2_file);
}

}  // namespace
}  // namespace dxpu::firmware
