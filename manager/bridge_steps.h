// bridge_steps.h - the pool manager's steps on a bridge, over its management messages
// (docs/protocol.md section 15): assign a GPU to a host's node and grant its DMA, release it
// (reset, scrub, free), probe the box (INVENTORY: its GPUs and profiles; STATUS: who owns
// each). Each is idempotent on the bridge, so a step repeated after a crash does no harm. The
// messages go through an exchange function: a ManagementClient on a real socket in the daemon,
// a BridgeBox's HandleManagement in the simulator.
#ifndef DXPU_MANAGER_BRIDGE_STEPS_H_
#define DXPU_MANAGER_BRIDGE_STEPS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bridge-fw/management_client.h"
#include "link/link_address.h"
#include "manager/pool_manager.h"

namespace dxpu::manager {

// Sends one request to the bridge and returns its answer (or why there is none).
using ManagementExchange = std::function<bridge::ManagementReply(dxpu_mgmt_msg)>;

// Runs a kBridgeAssign, kBridgeRelease or kBridgeProbe action.
ActionResult RunBridgeAction(const Action& action, const ManagementExchange& exchange);

// A bridge's management address: "IP:PORT" or "unix:PATH" (as `dxpu bridge --to`).
std::optional<link::LinkAddress> ParseManagementAddress(std::string_view text);

// An exchange with a bridge's management socket (a fresh socket per request; the timeout
// and attempts of ManagementClient), signing what changes state when given a signer.
ManagementExchange SocketExchange(const std::string& management, int timeout_ms, int attempts,
                                  std::shared_ptr<bridge::ManagementSigner> signer = nullptr);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_BRIDGE_STEPS_H_
