// update_process_test.cc - a firmware update of a real bridge, end to end (docs/firmware.md,
// "Updating over the management socket"): dxpu-boot runs the dxpu-bridge of the flash's slot A,
// `dxpu flash push` writes a signed image of the same dxpu-bridge into slot B over the
// management socket, the bridge reboots into it (on trial) and its health check marks it good.
// Two hosts keep reading their devices throughout: their sessions drop at the reboot and come
// back once their devices are assigned again. Images the bridge must refuse leave it alone.
// Power cuts are power_cut_process_test.cc.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bridge-fw/firmware/downgrade.h"
#include "bridge-fw/management_client.h"
#include "link/udp_link.h"
#include "link/unique_fd.h"
#include "link_host.h"
#include "update_rig.h"

namespace dxpu::firmware {
namespace {

using test::ChildProcess;
using test::LinkHost;
using testing::UpdateRig;
using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

const FirmwareVersion kV1 = testing::kFlashedV1;
const FirmwareVersion kV2 = testing::kUpdateV2;

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
  const bridge::ManagementClient manager(link::LinkAddress::Unix(rig.mgmt()), 300, 3,
                                         rig.key().signer);
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

// The image `dxpu flash init` installed, pushed again: the bridge already runs its version, so
// there is nothing to do, and the push says so (exit 0, nothing written). With --reinstall the
// image goes into the other slot and the bridge boots it there.
TEST(FirmwareUpdateProcess, PushingTheRunningVersionIsNothingToDoUnlessReinstall) {
  UpdateRig rig;
  const auto boot = rig.Boot();
  ASSERT_TRUE(rig.WaitRunning(kV1, true)) << rig.BootLog();
  const std::string v1 = rig.ImageFile("v1.img", rig.Image(kV1));
  ASSERT_EQ(rig.Push(v1), 0) << rig.PushLog();
  EXPECT_NE(rig.PushLog().find(fmt::format(
                "bridge unix:{} already runs 1.0.0 (slot A), the version of {} (build id "
                "flashed-bridge-1.0.0): nothing to do",
                rig.mgmt(), v1)),
            std::string::npos)
      << rig.PushLog();
  auto r = rig.Status();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->running_slot, 0);
  EXPECT_EQ(r->slot_state[1], DXPU_MGMT_FW_SLOT_EMPTY);
  EXPECT_EQ(r->trial_slot, DXPU_MGMT_FW_NO_SLOT);

  ASSERT_EQ(rig.Push(v1, {"--reinstall", "--wait", "30s"}), 0) << rig.PushLog() << rig.BootLog();
  EXPECT_NE(rig.PushLog().find("ok: running 1.0.0 from slot B, good (marked good"),
            std::string::npos)
      << rig.PushLog();
  r = rig.Status();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->running_slot, 1);
  EXPECT_EQ(r->running_version, kV1.packed);
  EXPECT_EQ(r->slot_state[1], DXPU_MGMT_FW_SLOT_GOOD);
  EXPECT_EQ(boot->Terminate(), 0) << rig.BootLog();
}

// --wait: the push ends once the bridge's health check has marked the new image good (not
// while it is still on trial), and says what it waits for on stderr meanwhile.
TEST(FirmwareUpdateProcess, PushWaitsUntilTheImageIsMarkedGood) {
  UpdateRig rig;
  const auto boot = rig.Boot();
  ASSERT_TRUE(rig.WaitRunning(kV1, true)) << rig.BootLog();
  ASSERT_EQ(rig.Push(rig.ImageFile("v2.img", rig.Image(kV2)), {"--wait", "30s"}), 0)
      << rig.PushLog() << rig.BootLog();
  const auto r = rig.Status();  // at once: no waiting here
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->running_version, kV2.packed);
  EXPECT_EQ(r->running_slot, 1);
  EXPECT_EQ(r->trial_slot, DXPU_MGMT_FW_NO_SLOT);
  EXPECT_EQ(r->slot_state[1], DXPU_MGMT_FW_SLOT_GOOD);
  const std::string log = rig.PushLog();
  EXPECT_NE(log.find("ok: running 1.1.0 from slot B, good (marked good"), std::string::npos) << log;
  // Progress lines, plain (the log is not a terminal).
  EXPECT_NE(log.find(fmt::format("dxpu flash push: unix:{}: ", rig.mgmt())), std::string::npos)
      << log;
  EXPECT_NE(log.find(" s of 30 s)\n"), std::string::npos) << log;
  EXPECT_EQ(boot->Terminate(), 0) << rig.BootLog();
}

// An image that never passes its health check (its bridge cannot open its link's port): after
// its tries the boot loader rolls back to the old image, and the push fails saying so.
TEST(FirmwareUpdateProcess, PushWithWaitFailsWhenTheBridgeRollsBack) {
  UpdateRig rig;
  const link::UniqueFd busy(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(busy.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(busy.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string broken =
      UpdateRig::Config(ntohs(a.sin_port), rig.mgmt(), "2s", rig.key().PublicHex());

  const auto boot = rig.Boot();
  ASSERT_TRUE(rig.WaitRunning(kV1, true)) << rig.BootLog();
  const int status = rig.Push(rig.ImageFile("v2.img", rig.Image(kV2, testing::TestKey(), broken)),
                              {"--wait", "60s"});
  EXPECT_EQ(status, 1) << rig.PushLog() << rig.BootLog();
  const std::string log = rig.PushLog();
  EXPECT_NE(log.find("fell-back: 1.1.0 in slot B was not marked good"), std::string::npos) << log;
  EXPECT_NE(log.find("rolled back to 1.0.0 in slot A"), std::string::npos) << log;
  const auto r = rig.Status();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->running_slot, 0);
  EXPECT_EQ(r->running_version, kV1.packed);
  EXPECT_EQ(r->slot_state[1], DXPU_MGMT_FW_SLOT_BAD);
  EXPECT_EQ(boot->Terminate(), 0) << rig.BootLog();
}

}  // namespace
}  // namespace dxpu::firmware

namespace dxpu::firmware {
namespace {

using Clock2 = std::chrono::steady_clock;

TEST(FirmwareUpdateProcess, APushToASlowFlashNeverHoldsUpTheDataPath) {
  // Issue 32 item 4/5: a push used to run the flash work (each erase, each granule, the whole
  // image read back and hashed at the commit) on the bridge's only thread, so a slow part
  // stalled forwarding past link_down. The bridge here has a 250 ms link_down and a flash
  // whose erases take 400 ms each (a real NOR part takes about that for 64 KiB); a host reads
  // its device in a loop, each read given 300 ms, while the 3 MB image goes in. Not one read
  // may fail and the session may not drop.
  testing::UpdateRig rig("250ms");
  const auto boot = rig.Boot({"--flash-erase-delay-ms", "400"});
  ASSERT_TRUE(rig.WaitRunning(testing::kFlashedV1, true)) << rig.BootLog();
  const bridge::ManagementClient manager(link::LinkAddress::Unix(rig.mgmt()), 300, 3,
                                         rig.key().signer);
  ASSERT_TRUE(manager.Assign(0, 0x0100, 0xa1).ok());
  test::LinkHost host(0xa1, link::UdpLink::Open("127.0.0.1", 0).link,
                      *link::LinkAddress::FromIp("127.0.0.1", rig.udp()));
  ASSERT_TRUE(host.ConnectAndReadIds(0x0100, 2000)) << rig.BootLog();

  test::ChildProcess* push = nullptr;
  rig.Push(rig.ImageFile("v2.img", rig.Image(testing::kUpdateV2)), {"--no-reboot"}, &push);
  uint64_t reads = 0;
  uint64_t failed = 0;
  double slowest_ms = 0;
  const auto end = Clock2::now() + std::chrono::seconds(4);
  while (Clock2::now() < end && push->Alive()) {
    const auto t0 = Clock2::now();
    if (host.host().down() || !host.ReadIds(0x0100, 300)) {
      failed++;
      if (host.host().down()) break;
      continue;
    }
    reads++;
    slowest_ms =
        std::max(slowest_ms, std::chrono::duration<double, std::milli>(Clock2::now() - t0).count());
  }
  push->Kill();
  (void)push->Wait(5000);
  std::printf("during the push: %llu reads ok, %llu failed, the slowest %.2f ms\n",
              static_cast<unsigned long long>(reads), static_cast<unsigned long long>(failed),
              slowest_ms);
  EXPECT_FALSE(host.host().down()) << "the session dropped during the push";
  EXPECT_EQ(failed, 0u) << reads << " reads ok, the slowest " << slowest_ms << " ms";
  EXPECT_GT(reads, 20u);
  // The flash really was slow and really was written meanwhile: the transfer got past several
  // erase blocks (each erase 400 ms). FW_STATUS waits behind the chunk in hand.
  const bridge::ManagementClient slow(link::LinkAddress::Unix(rig.mgmt()), 3000, 1);
  const std::optional<dxpu_mgmt_fw_report> r = bridge::DecodeFwReport(slow.FwStatus());
  ASSERT_TRUE(r) << rig.BootLog();
  EXPECT_EQ(r->transfer, DXPU_MGMT_FW_RECEIVING);
  EXPECT_GE(r->next_offset, 4u * testing::FlashedBridge::kEraseBlock) << rig.PushLog();
  EXPECT_TRUE(host.ReadIds(0x0100, 300));
}

TEST(FirmwareUpdateProcess, AnOlderImageNeedsASignedAuthorisation) {
  // The review's case (issue 32): a bridge running 1.1.0 with 1.0.0 good in the other slot
  // took a push of 1.0.x and answered "ok: running 1.0.x". Now it is refused, naming both
  // versions; with an authorisation signed for this bridge and image it goes in and runs.
  testing::UpdateRig rig;
  const auto boot = rig.Boot();
  ASSERT_TRUE(rig.WaitRunning(testing::kFlashedV1, true)) << rig.BootLog();
  ASSERT_EQ(rig.Push(rig.ImageFile("v2.img", rig.Image(testing::kUpdateV2)), {"--wait", "30s"}), 0)
      << rig.PushLog() << rig.BootLog();
  const FirmwareVersion older = FirmwareVersion::Of(1, 0, 5);
  const std::vector<uint8_t> image = rig.Image(older);
  const std::string file = rig.ImageFile("older.img", image);
  EXPECT_EQ(rig.Push(file), 1) << rig.PushLog();
  EXPECT_NE(rig.PushLog().find("downgrade: "), std::string::npos) << rig.PushLog();
  EXPECT_NE(rig.PushLog().find("image 1.0.5 is older than the bridge's 1.1.0 (it runs 1.1.0, "
                               "minimum 1.0.0)"),
            std::string::npos)
      << rig.PushLog();
  ASSERT_TRUE(rig.WaitRunning(testing::kUpdateV2, true));

  // An authorisation for another bridge: refused by the bridge.
  BridgeId other = testing::TestBridgeId();
  other[15] ^= 0xff;
  const auto auth_file = [&](const std::string& name, const BridgeId& bridge) {
    const std::vector<uint8_t> a =
        std::move(SignDowngrade(bridge, image, testing::TestKey().secret_key)).value();
    return rig.ImageFile(name, a);
  };
  EXPECT_EQ(rig.Push(file, {"--allow-downgrade", auth_file("other.auth", other)}), 1)
      << rig.PushLog();
  EXPECT_NE(rig.PushLog().find("the bridge refused the authorisation"), std::string::npos)
      << rig.PushLog();
  EXPECT_NE(rig.BootLog().find("it names bridge"), std::string::npos) << rig.BootLog();
  // This bridge's: the downgrade goes in, boots and is marked good.
  EXPECT_EQ(rig.Push(file, {"--allow-downgrade", auth_file("this.auth", testing::TestBridgeId()),
                            "--wait", "30s"}),
            0)
      << rig.PushLog() << rig.BootLog();
  EXPECT_NE(rig.BootLog().find("DOWNGRADE AUTHORISED"), std::string::npos) << rig.BootLog();
  EXPECT_TRUE(rig.WaitRunning(older, true));
}

}  // namespace
}  // namespace dxpu::firmware
