// update_rig.cc - a firmware update of a real bridge, for the process tests (update_rig.h).
#include "update_rig.h"

#include <sys/socket.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "bridge-fw/management_client.h"
#include "bridge_process.h"
#include "link/link.h"

namespace dxpu::firmware::testing {

bool WaitFor(const std::function<bool()>& done, int seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

UpdateRig::UpdateRig(const std::string& link_down)
    : key_file_(key_.WriteFiles(dir_.path("operator"))),
      udp_(test::FreePort(SOCK_DGRAM)),
      mgmt_(test::FreshSocketPath("fw-update-mgmt")),
      bridge_(dir_.path("bridge"), Config(udp_, mgmt_, link_down, key_.PublicHex())) {}

std::string UpdateRig::Config(uint16_t udp, const std::string& mgmt, const std::string& link_down,
                              const std::string& trusted_key) {
  return fmt::format(R"({{
      "node_id": "0xb0c5",
      "links": [{{"type": "udp", "listen": "127.0.0.1:{}"}}],
      "management": {{"unix": "{}", "trusted_keys": ["{}"]}},
      "devices": [{{"profile": "dxgpu", "box_bdf": "01:00.0", "memory": "16MiB"}},
                  {{"profile": "dxgpu", "box_bdf": "02:00.0", "memory": "16MiB"}}],
      "limits": {{"link_down": "{}"}},
      "log": {{"level": "info", "format": "text"}}
    }})",
                     udp, mgmt, trusted_key, link_down);
}

int UpdateRig::Push(const std::string& image, const std::vector<std::string>& args,
                    test::ChildProcess** running) {
  std::vector<std::string> argv = {DXPU_CLI_BIN, "flash",         "push",  image,
                                   "--bridge",   "unix:" + mgmt_, "--key", key_file_};
  argv.insert(argv.end(), args.begin(), args.end());
  push_ = std::make_unique<test::ChildProcess>(argv, dir_.path("push.log"));
  push_->Start();
  if (running != nullptr) {
    *running = push_.get();
    return -1;
  }
  return push_->Wait(120'000).value_or(-1);
}

std::optional<dxpu_mgmt_fw_report> UpdateRig::Status() const {
  const bridge::ManagementClient client(link::LinkAddress::Unix(mgmt_), 300, 1);
  return bridge::DecodeFwReport(client.FwStatus());
}

bool UpdateRig::WaitRunning(FirmwareVersion version, bool good, int seconds) const {
  return WaitFor(
      [&] {
        const auto r = Status();
        return r && r->running_version == version.packed &&
               (!good || (r->trial_slot == DXPU_MGMT_FW_NO_SLOT &&
                          r->slot_state[r->running_slot] == DXPU_MGMT_FW_SLOT_GOOD));
      },
      seconds);
}

}  // namespace dxpu::firmware::testing
