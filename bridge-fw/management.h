// management.h - the bridge's side of the management messages (include/dxpu/mgmt.h,
// docs/protocol.md section 15): one request datagram in, its response out, applied to a
// BridgeBox. Sans-IO: the daemon reads and writes the socket.
#ifndef DXPU_BRIDGE_FW_MANAGEMENT_H_
#define DXPU_BRIDGE_FW_MANAGEMENT_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bridge-fw/bridge_box.h"
#include "bridge-fw/firmware/firmware_service.h"
#include "bridge-fw/management_auth.h"
#include "lib/util/rate_limited_log.h"

namespace dxpu::bridge {

struct ManagementCounters {
  uint64_t requests = 0;  // decoded requests answered
  uint64_t refused = 0;   // answered with an error status (any)
  uint64_t dropped = 0;   // not answered: too short, not DXMG, or a response
};

// The refusal of a request whose authentication does not pass (docs/protocol.md 15.8):
// answered with UNAUTHENTICATED, STALE_EPOCH or REPLAYED, counted in *counters (refused) and
// by `auth`, logged through `log` at a bounded rate. nullopt: the request goes on (a datagram
// that does not decode goes on too: the handler refuses it as malformed).
std::optional<std::vector<uint8_t>> CheckAuthentication(ManagementAuthenticator& auth,
                                                        std::span<const uint8_t> request,
                                                        uint64_t now, ManagementCounters* counters,
                                                        util::RateLimitedLog* log);

// The response to `request` (untrusted bytes), or empty when it gets none. The request is
// applied to `box` at time `now` before the response is built, so an OK means it is in force.
// Firmware requests go to `firmware`; without one (a bridge not booted from a flash) they are
// answered FW_UNAVAILABLE.
std::vector<uint8_t> HandleManagement(BridgeBox& box, std::span<const uint8_t> request,
                                      uint64_t now, ManagementCounters* counters,
                                      firmware::FirmwareService* firmware = nullptr);

// Whether a datagram's header names a firmware request (FW_BEGIN .. FW_REBOOT): the daemon
// hands those to its firmware worker, off the data path. Only the type byte is looked at.
bool IsFirmwareDatagram(std::span<const uint8_t> request);
// HandleManagement for a firmware request alone (no box): what the firmware worker runs.
std::vector<uint8_t> HandleFirmwareManagement(std::span<const uint8_t> request,
                                              ManagementCounters* counters,
                                              firmware::FirmwareService* firmware);

// The wire status for a BridgeBox answer.
uint16_t ToMgmtStatus(ManageResult r);

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_MANAGEMENT_H_
