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

const FirmwareVersion kV1 = FirmwareVersion::Of(1, 0, 0);
const FirmwareVersion kV2 = FirmwareVersion::Of(1, 1, 0);
constexpr uint32_t kHwRevision = 7;  // SpecOf's and SmallFactory's
constexpr uint32_t kEraseBlock = 64 * 1024;
constexpr uint32_t kGranule = 4096;

Bytes ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteFile(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

bool WaitFor(const std::function<bool()>& done, int seconds) {
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A bridge's flash with the real dxpu-bridge (debug info stripped: what a release ships) in
// slot A, good, and the boot loader that runs it.
class UpdateRig {
 public:
  UpdateRig() {
    udp_ = test::FreePort(SOCK_DGRAM);
    mgmt_ = test::FreshSocketPath("fw-update-mgmt");
    flash_ = dir_.path("flash");
    std::filesystem::create_directories(dir_.path("work"));
    const std::string stripped = dir_.path("dxpu-bridge");
    const std::string strip =
        fmt::format("objcopy --strip-debug '{}' '{}'", DXPU_BRIDGE_BIN, stripped);
    // NOLINTNEXTLINE(cert-env33-c,concurrency-mt-unsafe): test setup, fixed command
    exe_ = std::system(strip.c_str()) == 0 ? ReadFile(stripped) : ReadFile(DXPU_BRIDGE_BIN);
    config_ = fmt::format(R"({{
      "node_id": "0xb0c5",
      "links": [{{"type": "udp", "listen": "127.0.0.1:{}"}}],
      "management": {{"unix": "{}"}},
      "devices": [{{"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "16MiB"}},
                  {{"profile": "dxgpu", "box_bdf": "02:00.0", "memory": "16MiB"}}],
      "limits": {{"link_down": "2s"}},
      "log": {{"level": "info", "format": "text"}}
    }})",
                          udp_, mgmt_);
    MakeFlash();
  }

  // A new flash whose slot A holds v1, good and active (what `dxpu flash init --image` does).
  void MakeFlash() const {
    std::filesystem::remove(flash_);
    FactoryInfo f;
    f.hw_revision = kHwRevision;
    f.blocks_per_slot = static_cast<uint32_t>((exe_.size() + config_.size()) / kEraseBlock + 2);
    f.geometry = {kEraseBlock, kGranule, 3 + 2 * f.blocks_per_slot};
    f.keys = {testing::TestKey().public_key};
    auto flash = FlashDevice::Create(flash_, f);
    EXPECT_TRUE(flash.ok()) << flash.error().message;
    EXPECT_TRUE(testing::InstallGood(*flash.value(), Slot::kA, Image(kV1)).ok());
  }

  // A signed image of the bridge with this rig's configuration.
  Bytes Image(FirmwareVersion version, const KeyPair& key = testing::TestKey()) const {
    ImageSpec spec = testing::SpecOf(version);
    spec.hw_revision = kHwRevision;
    spec.build_id = "update-test-" + version.ToString();
    spec.sections = {{SectionType::kExecutable, "dxpu-bridge", exe_},
                     {SectionType::kConfig, "bridge.json", {config_.begin(), config_.end()}}};
    FirmwareResult<Bytes> image = BuildImage(spec, key.secret_key);
    EXPECT_TRUE(image.ok());
    return image.ok() ? std::move(image).value() : Bytes{};
  }
  std::string ImageFile(const std::string& name, const Bytes& image) const {
    WriteFile(dir_.path(name), image);
    return dir_.path(name);
  }

  // dxpu-boot with `bridge_args` for every bridge it runs.
  std::unique_ptr<ChildProcess> Boot(const std::vector<std::string>& bridge_args = {}) const {
    std::vector<std::string> argv = {
        DXPU_BOOT_BIN,        "--flash", flash_, "--work-dir",        dir_.path("work"),
        "--restart-delay-ms", "100",     "--",   "--health-delay-ms", "300"};
    argv.insert(argv.end(), bridge_args.begin(), bridge_args.end());
    auto p = std::make_unique<ChildProcess>(argv, dir_.path("boot.log"));
    p->Start();
    return p;
  }

  // `dxpu flash push IMAGE --bridge unix:MGMT ARGS...`: its exit status.
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
  std::string BootLog() const { return ReadTail(dir_.path("boot.log")); }
  // How many times a bridge run by this rig lost power at its --crash-at-flash-op.
  size_t PowerCutsLogged() const {
    const Bytes log = ReadFile(dir_.path("boot.log"));
    const std::string text(log.begin(), log.end());
    size_t n = 0;
    for (size_t at = text.find(kCutLine); at != std::string::npos; at = text.find(kCutLine, at + 1))
      ++n;
    return n;
  }
  static constexpr const char* kCutLine = "power lost at a flash operation";
  static std::string ReadTail(const std::string& path) {
    const Bytes b = ReadFile(path);
    const size_t from = b.size() > 6000 ? b.size() - 6000 : 0;
    return {b.begin() + static_cast<ptrdiff_t>(from), b.end()};
  }

 private:
  ScratchDir dir_;
  uint16_t udp_ = 0;
  std::string mgmt_;
  std::string flash_;
  Bytes exe_;
  std::string config_;
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
    rig.MakeFlash();
    {
      const auto boot = rig.Boot({"--crash-at-flash-op", std::to_string(cut)});
      ASSERT_TRUE(rig.WaitRunning(kV1, true)) << rig.BootLog();
      const size_t cuts_before = rig.PowerCutsLogged();
      EXPECT_NE(rig.Push(v2_file, {"--wait-s", "3", "--timeout-ms", "300"}), 0)
          << "the bridge lost power mid-update";
      EXPECT_TRUE(boot->Terminate().has_value());
      EXPECT_GT(rig.PowerCutsLogged(), cuts_before) << rig.BootLog();
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
