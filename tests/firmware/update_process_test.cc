// update_process_test.cc - a firmware update of a real bridge, end to end (docs/firmware.md,
// "Updating over the management socket"): dxpu-boot runs the dxpu-bridge of the flash's slot A,
// `dxpu flash push` writes a signed image of the same dxpu-bridge into slot B over the
// management socket, the bridge reboots into it (on trial) and its health check marks it good.
// Two hosts keep reading their devices throughout: their sessions drop at the reboot and come
// back once their devices are assigned again. Then power cuts: the bridge killed at each step
// of writing and activating always boots a valid, signed image, and the update completes when
// pushed again.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bridge-fw/firmware/boot_select.h"
#include "bridge-fw/firmware/image.h"
#include "bridge-fw/management_client.h"
#include "bridge_process.h"
#include "child_process.h"
#include "firmware_testutil.h"
#include "flashed_bridge.h"
#include "gpu/device_profile.h"
#include "link/udp_link.h"
#include "link_host.h"

namespace dxpu::firmware {
namespace {

using test::ChildProcess;
using test::LinkHost;
using testing::ScratchDir;
using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

const FirmwareVersion kV1 = testing::kFlashedV1;
const FirmwareVersion kV2 = FirmwareVersion::Of(1, 1, 0);
constexpr uint32_t kEraseBlock = testing::FlashedBridge::kEraseBlock;
constexpr uint32_t kGranule = testing::FlashedBridge::kGranule;

bool WaitFor(const std::function<bool()>& done, int seconds) {
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A flashed bridge (flashed_bridge.h) with a UDP link and an AF_UNIX management socket, two
// model GPUs; `dxpu flash push` and FW_STATUS to it.
class UpdateRig {
 public:
  UpdateRig()
      : udp_(test::FreePort(SOCK_DGRAM)),
        mgmt_(test::FreshSocketPath("fw-update-mgmt")),
        bridge_(dir_.path("bridge"), Config(udp_, mgmt_)) {}

  static std::string Config(uint16_t udp, const std::string& mgmt) {
    return fmt::format(R"({{
      "node_id": "0xb0c5",
      "links": [{{"type": "udp", "listen": "127.0.0.1:{}"}}],
      "management": {{"unix": "{}"}},
      "devices": [{{"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "16MiB"}},
                  {{"profile": "dxgpu", "box_bdf": "02:00.0", "memory": "16MiB"}}],
      "limits": {{"link_down": "2s"}},
      "log": {{"level": "info", "format": "text"}}
    }})",
                       udp, mgmt);
  }

  testing::FlashedBridge& bridge() { return bridge_; }
  Bytes Image(FirmwareVersion version, const KeyPair& key = testing::TestKey()) const {
    return bridge_.Image(version, key);
  }
  std::string ImageFile(const std::string& name, const Bytes& image) const {
    return bridge_.ImageFile(name, image);
  }
  std::unique_ptr<ChildProcess> Boot(const std::vector<std::string>& bridge_args = {}) const {
    return bridge_.Boot(bridge_args);
  }
  std::string BootLog() const { return bridge_.BootLog(); }

  // `dxpu flash push IMAGE --bridge unix:MGMT ARGS...`: its exit status; with `running`, the
  // push is left running and returned there instead.
  int Push(const std::string& image, const std::vector<std::string>& args = {},
           ChildProcess** running = nullptr) {
    std::vector<std::string> argv = {DXPU_CLI_BIN, "flash",    "push",
                                     image,        "--bridge", "unix:" + mgmt_};
    argv.insert(argv.end(), args.begin(), args.end());
    push_ = std::make_unique<ChildProcess>(argv, dir_.path("push.log"));
    push_->Start();
    if (running != nullptr) {
      *running = push_.get();
      return -1;
    }
    return push_->Wait(120'000).value_or(-1);
  }
  std::string PushLog() const { return push_ ? push_->LogTail() : ""; }

  std::optional<dxpu_mgmt_fw_report> Status() const {
    const bridge::ManagementClient client(link::LinkAddress::Unix(mgmt_), 300, 1);
    return bridge::DecodeFwReport(client.FwStatus());
  }
  // Waits until the bridge answers running `version`, and (with `good`) marked good.
  bool WaitRunning(FirmwareVersion version, bool good, int seconds = 30) const {
    return WaitFor(
        [&] {
          const auto r = Status();
          return r && r->running_version == version.packed &&
                 (!good || (r->trial_slot == DXPU_MGMT_FW_NO_SLOT &&
                            r->slot_state[r->running_slot] == DXPU_MGMT_FW_SLOT_GOOD));
        },
        seconds);
  }

  const std::string& mgmt() const { return mgmt_; }
  uint16_t udp() const { return udp_; }

 private:
  ScratchDir dir_;
  uint16_t udp_;
  std::string mgmt_;
  testing::FlashedBridge bridge_;
  std::unique_ptr<ChildProcess> push_;
};

// A host reading its device's IDs over and over; a new session when the old one went down.
class BusyHost {
 public:
  BusyHost(uint64_t node, uint16_t bdf, uint16_t bridge_port)
      : node_(node), bdf_(bdf), port_(bridge_port) {}
  // One step: connect if needed, then one read. Counts what happened.
  void Step() {
    if (!host_ || host_->host().down()) {
      if (host_) sessions_lost_++;
      host_ =
          std::make_unique<LinkHost>(node_, link::UdpLink::Open("127.0.0.1", 0).link,
                                     *link::LinkAddress::FromIp("127.0.0.1", port_), ++session_id_);
      if (!host_->ConnectAndReadIds(bdf_, 300)) {
        failed_++;
        return;
      }
      reads_ok_++;
      if (sessions_lost_ > 0) recovered_ = true;
      return;
    }
    if (host_->ReadIds(bdf_, 300)) {
      reads_ok_++;
      if (sessions_lost_ > 0) recovered_ = true;
    } else {
      failed_++;
    }
  }
  uint64_t reads_ok() const { return reads_ok_; }
  uint64_t failed() const { return failed_; }
  uint64_t sessions_lost() const { return sessions_lost_; }
  bool recovered() const { return recovered_; }

 private:
  uint64_t node_;
  uint16_t bdf_;
  uint16_t port_;
  uint32_t session_id_ = 7;
  std::unique_ptr<LinkHost> host_;
  uint64_t reads_ok_ = 0, failed_ = 0, sessions_lost_ = 0;
  bool recovered_ = false;
};

TEST(FirmwareUpdateProcess, UpdateUnderTrafficRecoversEveryHostSession) {
  UpdateRig rig;
  const auto boot = rig.Boot();
  ASSERT_TRUE(rig.WaitRunning(kV1, true)) << rig.BootLog();

  // The manager's part: each host owns a device; it assigns them again after the reboot (the
  // pool manager's probe does that, docs/manager.md).
  const bridge::ManagementClient manager(link::LinkAddress::Unix(rig.mgmt()), 300, 3);
  const auto assign_all = [&] {
    return manager.Assign(0, 0x0100, 0xa1).ok() && manager.Assign(1, 0x0200, 0xa2).ok();
  };
  ASSERT_TRUE(assign_all());
  std::vector<BusyHost> hosts;
  hosts.emplace_back(0xa1, 0x0100, rig.udp());
  hosts.emplace_back(0xa2, 0x0200, rig.udp());
  for (BusyHost& h : hosts) h.Step();
  for (const BusyHost& h : hosts) ASSERT_EQ(h.reads_ok(), 1u) << "a host could not connect";

  ChildProcess* push = nullptr;
  rig.Push(rig.ImageFile("v2.img", rig.Image(kV2)), {}, &push);
  bool pushed = false;
  const auto end = Clock::now() + std::chrono::seconds(90);
  while (Clock::now() < end) {
    for (BusyHost& h : hosts) h.Step();
    if (!pushed && !push->Alive()) {
      ASSERT_EQ(push->exit_status(), 0) << rig.PushLog() << rig.BootLog();
      pushed = true;
    }
    if (pushed) {
      (void)assign_all();  // idempotent; after the reboot, the devices are free again
      if (hosts[0].recovered() && hosts[1].recovered()) break;
    }
  }
  ASSERT_TRUE(pushed) << rig.PushLog();
  for (const BusyHost& h : hosts) {
    EXPECT_GE(h.sessions_lost(), 1u) << "the reboot did not drop the session";
    EXPECT_TRUE(h.recovered()) << "the session did not come back";
    EXPECT_GT(h.reads_ok(), 2u);
  }
  // The new image runs from slot B, and its health check marks it good.
  ASSERT_TRUE(rig.WaitRunning(kV2, true)) << rig.BootLog();
  const auto report = rig.Status();
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->running_slot, 1);
  EXPECT_EQ(report->slot_state[0], DXPU_MGMT_FW_SLOT_GOOD);
  EXPECT_EQ(report->min_version, kV1.packed);
  for (BusyHost& h : hosts) {
    const uint64_t before = h.reads_ok();
    h.Step();
    EXPECT_EQ(h.reads_ok(), before + 1);
  }
  EXPECT_EQ(boot->Terminate(), 0) << rig.BootLog();
}

TEST(FirmwareUpdateProcess, RefusedImagesLeaveTheRunningBridgeAlone) {
  UpdateRig rig;
  const auto boot = rig.Boot();
  ASSERT_TRUE(rig.WaitRunning(kV1, true)) << rig.BootLog();
  struct Case {
    Bytes image;
    std::string expect;
  };
  Bytes corrupt = rig.Image(kV2);
  corrupt[corrupt.size() / 2] ^= 0x01;  // the payload: only the hash at the commit tells
  const Case cases[] = {
      {rig.Image(kV2, testing::OtherKey()), "image-untrusted"},
      {rig.Image(FirmwareVersion::Of(0, 9, 0)), "downgrade"},
      {corrupt, "image-invalid"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const int status = rig.Push(rig.ImageFile(fmt::format("bad{}.img", i++), c.image));
    EXPECT_EQ(status, 1) << c.expect << "\n" << rig.PushLog();
    EXPECT_NE(rig.PushLog().find(c.expect), std::string::npos) << rig.PushLog();
    const auto r = rig.Status();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->running_version, kV1.packed);
    EXPECT_EQ(r->running_slot, 0);
    EXPECT_EQ(r->trial_slot, DXPU_MGMT_FW_NO_SLOT);
  }
  EXPECT_EQ(boot->Terminate(), 0) << rig.BootLog();
}

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
      EXPECT_NE(rig.Push(v2_file, {"--wait-s", "3", "--timeout-ms", "300"}), 0)
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
