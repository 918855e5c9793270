// bridge_command.h - `dxpu bridge ...`: management requests to a dxpu-bridge (status,
// assign, release, grant, revoke) over its management socket.
#ifndef DXPU_TOOLS_DXPU_BRIDGE_COMMAND_H_
#define DXPU_TOOLS_DXPU_BRIDGE_COMMAND_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "bridge-fw/management_auth.h"
#include "command.h"
#include "result.h"

namespace dxpu::cli {

Command AddBridgeCommand(CLI::App& parent);

// Where `dxpu bridge` sends its requests unless --bridge says otherwise (the bridge
// configuration's default management socket, docs/bridge-config.md).
inline constexpr char kDefaultBridgeAddress[] = "127.0.0.1:17481";

// For a request nothing answered (error names "timeout", "refused", "no-socket"): what to check,
// naming the address, to follow the client's sentence; "" for other errors.
std::string UnreachableBridgeHint(std::string_view error_name, std::string_view address);

// --timeout of `dxpu bridge` and `dxpu flash push|status`: 1ms .. 60s for each answer.
inline constexpr std::chrono::seconds kMaxTimeout{60};
// The timeout in whole milliseconds (rounded up) for the management client.
int TimeoutMs(std::chrono::nanoseconds timeout);
// A usage error when the timeout is out of range.
std::optional<Error> CheckTimeout(std::chrono::nanoseconds timeout);

// --key FILE, or $DXPU_MANAGEMENT_KEY: the secret key file (`dxpu flash keygen`) that signs
// the requests which change a bridge's state (docs/protocol.md 15.8).
inline constexpr char kManagementKeyEnv[] = "DXPU_MANAGEMENT_KEY";
void AddManagementKeyOption(CLI::App& cmd, std::string* path);
// The signer of that file, its epoch this moment; null when no file was given.
Result<std::shared_ptr<bridge::ManagementSigner>> LoadManagementSigner(const std::string& path);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_BRIDGE_COMMAND_H_
