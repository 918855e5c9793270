// flash_push.h - `dxpu flash push` and `dxpu flash status`: a firmware image sent to bridges
// over their management sockets, committed, booted and waited for; and the bridges' firmware
// reports in words (docs/firmware.md; docs/protocol.md section 15).
#ifndef DXPU_TOOLS_DXPU_FLASH_PUSH_H_
#define DXPU_TOOLS_DXPU_FLASH_PUSH_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dxpu_mgmt.h"

namespace dxpu::cli {

inline constexpr uint32_t kDefaultChunkBytes = 32768;
inline constexpr uint32_t kMaxChunkBytes = DXPU_MGMT_FW_CHUNK_MAX_DATA;  // 65387

// How to reach the bridges: each --bridge is IP:PORT or unix:PATH, as `dxpu bridge --bridge`.
struct BridgeTargets {
  std::vector<std::string> bridges;
  std::chrono::nanoseconds timeout = std::chrono::seconds(1);  // for each answer
  int attempts = 3;  // sends of one request before giving up
  bool json = false;
  std::string key;  // --key: the management key that signs FW_BEGIN .. FW_REBOOT
};

struct FlashPushOptions {
  BridgeTargets targets;
  std::string image;  // the file's path, for messages
  // --allow-downgrade FILE: a downgrade authorisation (dxpu flash authorize-downgrade), sent
  // before the image in a transfer begun with ALLOW_DOWNGRADE. Empty: none.
  std::string downgrade_file;
  std::vector<uint8_t> downgrade;
  bool no_reboot = false;
  uint32_t chunk_bytes = kDefaultChunkBytes;
  // Write the image even into a bridge that already runs its version (into the other slot,
  // then reboot into it): a bridge reports versions, not builds, so without this an image of
  // the running version is left alone.
  bool reinstall = false;
  // After FW_REBOOT: how long to wait for the bridge to run the image and its health check to
  // mark it good (or for it to fall back). 0: do not wait.
  std::chrono::nanoseconds wait = std::chrono::seconds(30);
};

// Checks the image locally (its header and length: a bridge judges the rest), then
// updates each bridge in turn. Prints a line per bridge (or a JSON array); returns the exit
// status: 0 when every bridge runs the image marked good (with no_reboot: has committed it; with
// a zero wait: accepted the reboot), 1 otherwise, 2 for a bad address.
int RunFlashPush(const FlashPushOptions& o, const std::vector<uint8_t>& image);

// Each bridge's firmware report in words (or a JSON array); 0 when every bridge answered.
int RunFlashStatus(const BridgeTargets& o);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_FLASH_PUSH_H_
