// bridge_command.cc - `dxpu bridge ...`: a management client for dxpu-bridge
// (docs/protocol.md section 15).
#include "bridge_command.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bridge-fw/bridge_config.h"
#include "core/dxpu_mgmt.h"
#include "error_report.h"
#include "link/unique_fd.h"
#include "result.h"

namespace dxpu::cli {
namespace {

struct BridgeOptions {
  std::string to = "127.0.0.1:17481";
  int timeout_ms = 1000;
  int attempts = 3;
  bool json = false;
  uint16_t device = 0;
  std::string host_bdf = "01:00.0";
  std::string node;
  std::string device_base, host_base, size;
};

Result<link::LinkAddress> ParseTarget(const std::string& to) {
  if (to.rfind("unix:", 0) == 0) return link::LinkAddress::Unix(to.substr(5));
  if (auto ip = bridge::ParseIpPort(to)) return *ip;
  return Error{"bad-address", fmt::format("'{}' is neither IP:PORT nor unix:PATH", to)};
}

Result<uint64_t> ParseU64(const std::string& what, const std::string& text) {
  try {
    size_t used = 0;
    const uint64_t v = std::stoull(text, &used, 0);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return Error{"bad-number", fmt::format("{}: '{}' is not a number", what, text)};
}

// Sends the request and waits for the response with its ID, retrying on silence.
Result<std::vector<uint8_t>> Exchange(const BridgeOptions& o, dxpu_mgmt_msg request) {
  Result<link::LinkAddress> target = ParseTarget(o.to);
  if (!target.ok()) return target.error();
  sockaddr_storage to{};
  const socklen_t to_len = target.value().ToSockaddr(&to);
  if (to_len == 0) return Error{"bad-address", "the address has no socket form"};
  link::UniqueFd fd(socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error{"socket", std::error_code(errno, std::system_category()).message()};
  std::string client_path;
  if (to.ss_family == AF_UNIX) {
    // A datagram client needs its own address for the answer.
    client_path = fmt::format("/tmp/dxpu-cli-{}.sock", getpid());
    sockaddr_un me{};
    me.sun_family = AF_UNIX;
    std::snprintf(me.sun_path, sizeof(me.sun_path), "%s", client_path.c_str());
    unlink(client_path.c_str());
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&me), sizeof(me)) != 0)
      return Error{"socket", fmt::format("bind {}: {}", client_path,
                                         std::error_code(errno, std::system_category()).message())};
  }
  request.request_id = static_cast<uint32_t>(std::random_device{}());
  std::vector<uint8_t> out(DXPU_MGMT_HDR_SIZE + 64);
  size_t len = 0;
  if (dxpu_mgmt_encode(&request, out.data(), out.size(), &len) != DXPU_MGMT_ERR_OK)
    return Error{"internal", "cannot encode the request"};
  std::vector<uint8_t> in(DXPU_MGMT_MAX_MSG);
  Result<std::vector<uint8_t>> result =
      Error{"timeout", fmt::format("no answer from {} after {} attempts", o.to, o.attempts)};
  for (int attempt = 0; attempt < o.attempts; ++attempt) {
    spdlog::debug("{} request {:#x} to {} (attempt {})", dxpu_mgmt_type_name(request.type),
                  request.request_id, o.to, attempt + 1);
    if (sendto(fd.get(), out.data(), len, 0, reinterpret_cast<sockaddr*>(&to), to_len) < 0) {
      result = Error{"send", fmt::format("{}: {}", o.to,
                                         std::error_code(errno, std::system_category()).message())};
      break;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.timeout_ms);
    bool answered = false;
    while (!answered) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd.get(), POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) != 1) break;
      const ssize_t n = recv(fd.get(), in.data(), in.size(), 0);
      dxpu_mgmt_msg m{};
      if (n > 0 && dxpu_mgmt_decode(in.data(), static_cast<size_t>(n), &m) == DXPU_MGMT_ERR_OK &&
          dxpu_mgmt_is_response(&m) && m.request_id == request.request_id) {
        in.resize(static_cast<size_t>(n));
        result = in;
        answered = true;
      }
    }
    if (answered) break;
  }
  if (!client_path.empty()) unlink(client_path.c_str());
  return result;
}

// What a refusal means, for people (scripts match the status name).
std::string RefusalSentence(uint16_t status) {
  switch (status) {
    case DXPU_MGMT_NO_SUCH_DEVICE:
      return "the bridge has no device with that number";
    case DXPU_MGMT_DEVICE_BUSY:
      return "the device is assigned to another host; release it first";
    case DXPU_MGMT_NOT_ASSIGNED:
      return "no host holds the device";
    case DXPU_MGMT_TABLE_FULL:
      return "the device's DMA window table is full";
    case DXPU_MGMT_OVERLAP:
      return "the window overlaps one the device already has";
    case DXPU_MGMT_BAD_ARGUMENT:
      return "bad arguments: node 0, a zero size, a wrapping range, or a BDF the host already "
             "uses";
    default:
      return fmt::format("the bridge refused: {}", dxpu_mgmt_status_name(status));
  }
}

int Finish(const BridgeOptions& o, const char* what, const Result<std::vector<uint8_t>>& reply,
           nlohmann::ordered_json extra) {
  const std::string command = fmt::format("bridge {}", what);
  if (!reply.ok())
    return ReportError(command, reply.error(), o.json, std::cout, std::cerr, kExitFailure);
  dxpu_mgmt_msg m{};
  dxpu_mgmt_decode(reply.value().data(), reply.value().size(), &m);
  if (m.status != DXPU_MGMT_OK) {
    return ReportError(command, Error{dxpu_mgmt_status_name(m.status), RefusalSentence(m.status)},
                       o.json, std::cout, std::cerr, kExitFailure);
  }
  if (o.json) {
    extra["status"] = "ok";
    std::cout << extra.dump() << '\n';
  } else {
    std::cout << what << ": ok\n";
  }
  return kExitOk;
}

int RunStatus(const BridgeOptions& o) {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_STATUS;
  const Result<std::vector<uint8_t>> reply = Exchange(o, req);
  if (!reply.ok())
    return ReportError("bridge status", reply.error(), o.json, std::cout, std::cerr, kExitFailure);
  dxpu_mgmt_msg m{};
  dxpu_mgmt_decode(reply.value().data(), reply.value().size(), &m);
  if (m.status != DXPU_MGMT_OK) return Finish(o, "status", reply, {});
  const dxpu_mgmt_status_report& r = m.body.status_report;
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  if (!o.json) {
    std::cout << fmt::format("{} devices, {} hosts connected\n", r.device_count, r.host_count);
    std::cout << fmt::format("{:>6}  {:>8}  {:>9}  {:>8}  {}\n", "device", "box BDF", "state",
                             "host BDF", "owner");
  }
  for (size_t i = 0; i < r.device_count; ++i) {
    dxpu_mgmt_device_entry e{};
    if (!dxpu_mgmt_status_entry(&r, i, &e)) break;
    const std::string box =
        fmt::format("{:02x}:{:02x}.{}", e.box_bdf >> 8, (e.box_bdf >> 3) & 0x1f, e.box_bdf & 7);
    const std::string host =
        fmt::format("{:02x}:{:02x}.{}", e.host_bdf >> 8, (e.host_bdf >> 3) & 0x1f, e.host_bdf & 7);
    const char* state = dxpu_mgmt_device_state_name(e.state);
    if (o.json) {
      devices.push_back(
          {{"device", e.device},
           {"box_bdf", box},
           {"state", state},
           {"host_bdf", e.owner != 0 ? nlohmann::ordered_json(host) : nullptr},
           {"owner",
            e.owner != 0 ? nlohmann::ordered_json(fmt::format("{:#x}", e.owner)) : nullptr}});
    } else {
      std::cout << fmt::format("{:>6}  {:>8}  {:>9}  {:>8}  {}\n", e.device, box, state,
                               e.owner != 0 ? host : "-",
                               e.owner != 0 ? fmt::format("{:#x}", e.owner) : "-");
    }
  }
  if (o.json)
    std::cout << nlohmann::ordered_json{{"hosts", r.host_count}, {"devices", devices}}.dump()
              << '\n';
  return kExitOk;
}

int RunAssign(const BridgeOptions& o) {
  Result<uint64_t> node = ParseU64("--node", o.node);
  if (!node.ok())
    return ReportError("bridge assign", node.error(), o.json, std::cout, std::cerr, kExitUsage);
  const std::optional<uint16_t> bdf = bridge::ParseBdf(o.host_bdf);
  if (!bdf)
    return ReportError("bridge assign",
                       Error{"bad-bdf", fmt::format("'{}' is not a BDF (bus:dev.fn)", o.host_bdf)},
                       o.json, std::cout, std::cerr, kExitUsage);
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_ASSIGN;
  req.body.assign = {o.device, *bdf, node.value()};
  return Finish(o, "assign", Exchange(o, req), {{"device", o.device}, {"node", o.node}});
}

int RunDeviceRef(const BridgeOptions& o, uint8_t type, const char* what) {
  dxpu_mgmt_msg req{};
  req.type = type;
  req.body.release.device = o.device;
  return Finish(o, what, Exchange(o, req), {{"device", o.device}});
}

int RunGrant(const BridgeOptions& o) {
  Result<uint64_t> dev = ParseU64("--device-base", o.device_base);
  Result<uint64_t> host =
      ParseU64("--host-base", o.host_base.empty() ? o.device_base : o.host_base);
  std::optional<uint64_t> size = bridge::ParseByteSize(o.size);
  if (!size) {
    if (Result<uint64_t> plain = ParseU64("--size", o.size); plain.ok()) size = plain.value();
  }
  if (!dev.ok())
    return ReportError("bridge grant", dev.error(), o.json, std::cout, std::cerr, kExitUsage);
  if (!host.ok())
    return ReportError("bridge grant", host.error(), o.json, std::cout, std::cerr, kExitUsage);
  if (!size)
    return ReportError("bridge grant",
                       Error{"bad-size", fmt::format("--size: '{}' is not a size", o.size)}, o.json,
                       std::cout, std::cerr, kExitUsage);
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_DMA_GRANT;
  req.body.dma_grant = {o.device, dev.value(), host.value(), *size};
  return Finish(o, "grant", Exchange(o, req), {{"device", o.device}});
}

void CommonOptions(CLI::App* cmd, BridgeOptions& o) {
  cmd->add_option("--to", o.to, "the bridge's management socket: IP:PORT or unix:PATH")
      ->capture_default_str();
  cmd->add_option("--timeout-ms", o.timeout_ms, "how long to wait for each answer")
      ->capture_default_str()
      ->check(CLI::Range(1, 60000));
  cmd->add_option("--attempts", o.attempts, "sends before giving up")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--json", o.json, "print the result as JSON");
}

}  // namespace

Command AddBridgeCommand(CLI::App& parent) {
  auto o = std::make_shared<BridgeOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "bridge", "Manage a dxpu-bridge: device status, assignment, release, DMA grants");
  cmd->require_subcommand(1);
  auto* status = cmd->add_subcommand("status", "List the bridge's devices, their state and owner");
  CommonOptions(status, *o);
  auto* assign = cmd->add_subcommand("assign", "Give a device to a host (by its DxFP node ID)");
  CommonOptions(assign, *o);
  assign->add_option("--device", o->device, "the bridge's device number")->required();
  assign->add_option("--node", o->node, "the host's node ID (as in its HELLO), e.g. 0xa1")
      ->required();
  assign->add_option("--host-bdf", o->host_bdf, "the BDF the host presents the device at")
      ->capture_default_str();
  auto* release = cmd->add_subcommand(
      "release", "Take a device from its host: FLR, then its memory is scrubbed");
  CommonOptions(release, *o);
  release->add_option("--device", o->device, "the bridge's device number")->required();
  auto* grant = cmd->add_subcommand("grant", "Let a device DMA into its owner's memory");
  CommonOptions(grant, *o);
  grant->add_option("--device", o->device, "the bridge's device number")->required();
  grant->add_option("--device-base", o->device_base, "first address as the device uses it")
      ->required();
  grant->add_option("--host-base", o->host_base, "where that lands on the host (default: same)");
  grant->add_option("--size", o->size, "bytes: 4096, 0x1000, 64MiB")->required();
  auto* revoke = cmd->add_subcommand("revoke", "Remove every DMA window of a device");
  CommonOptions(revoke, *o);
  revoke->add_option("--device", o->device, "the bridge's device number")->required();
  cmd->footer(
      "Examples:\n"
      "  dxpu bridge status --to 127.0.0.1:17481\n"
      "  dxpu bridge assign --device 0 --node 0xa1 --host-bdf 01:00.0\n"
      "  dxpu bridge grant --device 0 --device-base 0x100000000 --size 1GiB\n"
      "  dxpu bridge release --device 0 --json\n"
      "Exit status: 0 done, 1 refused or no answer, 2 bad command line.");
  return {cmd, [o, status, assign, release, grant, revoke]() -> int {
            if (status->parsed()) return RunStatus(*o);
            if (assign->parsed()) return RunAssign(*o);
            if (release->parsed()) return RunDeviceRef(*o, DXPU_MGMT_RELEASE, "release");
            if (grant->parsed()) return RunGrant(*o);
            if (revoke->parsed()) return RunDeviceRef(*o, DXPU_MGMT_DMA_REVOKE_ALL, "revoke");
            return kExitUsage;
          }};
}

}  // namespace dxpu::cli
