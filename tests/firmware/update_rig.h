// update_rig.h - a firmware update of a real bridge, for the process tests
// (update_process_test.cc, power_cut_process_test.cc): a flashed bridge (flashed_bridge.h) run
// by dxpu-boot, with a UDP link and an AF_UNIX management socket, two model GPUs;
// `dxpu flash push` and FW_STATUS to it.
#ifndef DXPU_TESTS_FIRMWARE_UPDATE_RIG_H_
#define DXPU_TESTS_FIRMWARE_UPDATE_RIG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bridge-fw/firmware/image.h"
#include "child_process.h"
#include "core/dxpu_mgmt.h"
#include "firmware_testutil.h"
#include "flashed_bridge.h"
#include "management_keys.h"

namespace dxpu::firmware::testing {

inline const FirmwareVersion kUpdateV2 = FirmwareVersion::Of(1, 1, 0);

// Polls `done` every 20 ms for up to `seconds`.
bool WaitFor(const std::function<bool()>& done, int seconds);

class UpdateRig {
 public:
  // `link_down`: the bridge's limits.link_down (docs/bridge-config.md).
  explicit UpdateRig(const std::string& link_down = "2s");

  // The bridge's configuration; it trusts the management key `trusted_key` (hex).
  static std::string Config(uint16_t udp, const std::string& mgmt, const std::string& link_down,
                            const std::string& trusted_key);

  FlashedBridge& bridge() { return bridge_; }
  std::vector<uint8_t> Image(FirmwareVersion version, const KeyPair& key = TestKey(),
                             const std::string& config_json = "") const {
    return bridge_.Image(version, key, config_json);
  }
  std::string ImageFile(const std::string& name, const std::vector<uint8_t>& image) const {
    return bridge_.ImageFile(name, image);
  }
  std::unique_ptr<test::ChildProcess> Boot(const std::vector<std::string>& bridge_args = {}) const {
    return bridge_.Boot(bridge_args);
  }
  std::string BootLog() const { return bridge_.BootLog(); }

  // The operator's management key, which the bridge trusts: Push signs with it, and so do the
  // tests' own management clients.
  const test::TestManagementKey& key() const { return key_; }

  // `dxpu flash push IMAGE --bridge unix:MGMT --key KEY ARGS...`: its exit status; with `running`,
  // the push is left running and returned there instead.
  int Push(const std::string& image, const std::vector<std::string>& args = {},
           test::ChildProcess** running = nullptr);
  std::string PushLog() const { return push_ ? push_->LogTail() : ""; }

  std::optional<dxpu_mgmt_fw_report> Status() const;
  // Waits until the bridge answers running `version`, and (with `good`) marked good.
  bool WaitRunning(FirmwareVersion version, bool good, int seconds = 30) const;

  const std::string& mgmt() const { return mgmt_; }
  uint16_t udp() const { return udp_; }

 private:
  ScratchDir dir_;
  test::TestManagementKey key_ = test::MakeTestManagementKey();
  std::string key_file_;
  uint16_t udp_;
  std::string mgmt_;
  FlashedBridge bridge_;
  std::unique_ptr<test::ChildProcess> push_;
};

}  // namespace dxpu::firmware::testing

#endif  // DXPU_TESTS_FIRMWARE_UPDATE_RIG_H_
