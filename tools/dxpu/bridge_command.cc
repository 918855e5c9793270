// bridge_command.cc - `dxpu bridge ...`: a management client for dxpu-bridge
// (docs/protocol.md section 15).
#include "bridge_command.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bridge-fw/bridge_config.h"
#include "bridge-fw/management_client.h"
#include "core/dxpu_mgmt.h"
#include "error_report.h"
#include "lib/cli/options.h"
#include "numbers.h"
#include "result.h"

namespace dxpu::cli {
namespace {

struct BridgeOptions {
  std::string to = kDefaultBridgeAddress;
  std::chrono::nanoseconds timeout = std::chrono::seconds(1);
  int attempts = 3;
  bool json = false;
  uint16_t device = 0;
  std::string host_bdf = "01:00.0";
  std::string node;
  std::string device_base, host_base, size;
  std::string key;  // --key: the operator's management key file
  std::string out;  // screenshot: the PNG file to write
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

// Sends the request to the --to bridge, with the options' timeout and attempts.
bridge::ManagementReply Exchange(const BridgeOptions& o, const dxpu_mgmt_msg& request) {
  Result<link::LinkAddress> target = ParseTarget(o.to);
  if (!target.ok()) {
    bridge::ManagementReply r;
    r.error_name = target.error().name;
    r.error = target.error().message;
    return r;
  }
  Result<std::shared_ptr<bridge::ManagementSigner>> signer = LoadManagementSigner(o.key);
  if (!signer.ok()) {
    bridge::ManagementReply r;
    r.error_name = signer.error().name;
    r.error = signer.error().message;
    return r;
  }
  return bridge::ManagementClient(target.value(), TimeoutMs(o.timeout), o.attempts, signer.value())
      .Exchange(request);
}

// Sends a STATUS and returns the node holding `device`, if the bridge says so.
std::optional<uint64_t> HolderOf(const BridgeOptions& o, uint16_t device) {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_STATUS;
  const bridge::ManagementReply reply = Exchange(o, req);
  if (!reply.ok() || reply.msg.type != DXPU_MGMT_STATUS) return std::nullopt;
  const dxpu_mgmt_status_report& r = reply.msg.body.status_report;
  for (size_t i = 0; i < r.device_count; ++i) {
    dxpu_mgmt_device_entry e{};
    if (!dxpu_mgmt_status_entry(&r, i, &e)) break;
    if (e.device == device && e.owner != 0) return e.owner;
  }
  return std::nullopt;
}

int Finish(const BridgeOptions& o, const char* what, const bridge::ManagementReply& reply,
           nlohmann::ordered_json extra) {
  const std::string command = fmt::format("bridge {}", what);
  if (!reply.answered()) {
    std::string message = reply.error;
    if (const std::string hint = UnreachableBridgeHint(reply.error_name, o.to); !hint.empty())
      message += ". " + hint;
    return ReportError(command, Error{reply.error_name, message}, o.json, std::cout, std::cerr,
                       kExitFailure);
  }
  if (reply.msg.status == DXPU_MGMT_DEVICE_BUSY && reply.msg.type == DXPU_MGMT_ASSIGN) {
    // The refusal carries no owner: ask the bridge who holds the device.
    const std::optional<uint64_t> holder = HolderOf(o, o.device);
    const std::string message =
        holder ? fmt::format(
                     "device {} is assigned to another host, node {:#x}; release it "
                     "first (dxpu bridge release --device {})",
                     o.device, *holder, o.device)
               : reply.Problem();
    return ReportError(command, Error{"device-busy", message}, o.json, std::cout, std::cerr,
                       kExitFailure);
  }
  if (reply.msg.status != DXPU_MGMT_OK) {
    return ReportError(command, Error{dxpu_mgmt_status_name(reply.msg.status), reply.Problem()},
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

// "80 GiB", "16 MiB", or bytes when it is not a whole number of MiB.
std::string FormatMemory(uint64_t bytes) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  if (bytes != 0 && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  if (bytes != 0 && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  return fmt::format("{} B", bytes);
}

// One device's DMA windows as `dxpu bridge status` learns them: asked with a DMA_LIST.
struct DmaGrants {
  bool known = false;  // the bridge answered with the windows
  std::vector<bridge::DmaWindow> windows;
  std::string problem;  // why not known, when the bridge does know DMA_LIST
};

// The DMA windows of the assigned devices, by device number (free devices have none). Stops
// asking at the first `unknown-type`: *reported is then false (a bridge older than DMA_LIST).
std::vector<DmaGrants> AskDmaGrants(const BridgeOptions& o, const dxpu_mgmt_status_report& r,
                                    bool* reported) {
  std::vector<DmaGrants> out(r.device_count);
  *reported = true;
  for (size_t i = 0; i < r.device_count; ++i) {
    dxpu_mgmt_device_entry e{};
    if (!dxpu_mgmt_status_entry(&r, i, &e)) break;
    // A quarantined device keeps its owner's windows until it is released.
    if (e.owner == 0 ||
        (e.state != DXPU_MGMT_DEV_ASSIGNED && e.state != DXPU_MGMT_DEV_QUARANTINED)) {
      out[i].known = true;  // the bridge's rule: a free device has no windows
      continue;
    }
    dxpu_mgmt_msg req{};
    req.type = DXPU_MGMT_DMA_LIST;
    req.body.dma_list_request.device = e.device;
    const bridge::ManagementReply reply = Exchange(o, req);
    if (reply.answered() && reply.msg.status == DXPU_MGMT_UNKNOWN_TYPE) {
      *reported = false;
      break;
    }
    std::string why;
    if (const std::optional<bridge::DeviceDmaWindows> list = bridge::DecodeDmaList(reply, &why)) {
      out[i].known = true;
      out[i].windows = list->windows;
    } else {
      out[i].problem = why;
    }
  }
  return out;
}

int RunStatus(const BridgeOptions& o) {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_STATUS;
  const bridge::ManagementReply reply = Exchange(o, req);
  if (!reply.answered() || reply.msg.status != DXPU_MGMT_OK) return Finish(o, "status", reply, {});
  const dxpu_mgmt_msg& m = reply.msg;
  const dxpu_mgmt_status_report& r = m.body.status_report;
  bool reported = true;
  const std::vector<DmaGrants> grants = AskDmaGrants(o, r, &reported);
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  if (!o.json) {
    std::cout << fmt::format("{} devices, {} hosts connected\n", r.device_count, r.host_count);
    std::cout << fmt::format("{:>6}  {:>8}  {:>9}  {:>8}  {:>11}  {}\n", "device", "box BDF",
                             "state", "host BDF", "DMA windows", "owner");
  }
  for (size_t i = 0; i < r.device_count; ++i) {
    dxpu_mgmt_device_entry e{};
    if (!dxpu_mgmt_status_entry(&r, i, &e)) break;
    const std::string box =
        fmt::format("{:02x}:{:02x}.{}", e.box_bdf >> 8, (e.box_bdf >> 3) & 0x1f, e.box_bdf & 7);
    const std::string host =
        fmt::format("{:02x}:{:02x}.{}", e.host_bdf >> 8, (e.host_bdf >> 3) & 0x1f, e.host_bdf & 7);
    const char* state = dxpu_mgmt_device_state_name(e.state);
    const DmaGrants& g = grants[i];
    const bool known = reported && g.known;
    if (o.json) {
      nlohmann::ordered_json windows = nullptr;
      if (known) {
        windows = nlohmann::ordered_json::array();
        for (const bridge::DmaWindow& w : g.windows)
          windows.push_back({{"host_base", fmt::format("{:#x}", w.host_base)},
                             {"size", w.size},
                             {"device_base", fmt::format("{:#x}", w.device_base)}});
      }
      devices.push_back(
          {{"device", e.device},
           {"box_bdf", box},
           {"state", state},
           {"host_bdf", e.owner != 0 ? nlohmann::ordered_json(host) : nullptr},
           {"owner",
            e.owner != 0 ? nlohmann::ordered_json(fmt::format("{:#x}", e.owner)) : nullptr},
           {"dma_windows", windows}});
      continue;
    }
    const bool assigned = e.owner != 0;
    std::cout << fmt::format("{:>6}  {:>8}  {:>9}  {:>8}  {:>11}  {}\n", e.device, box, state,
                             assigned ? host : "-",
                             !assigned ? std::string("-")
                             : known   ? std::to_string(g.windows.size())
                                       : std::string("?"),
                             assigned ? fmt::format("{:#x}", e.owner) : "-");
    for (const bridge::DmaWindow& w : g.windows) {
      std::cout << fmt::format("{:>6}  DMA window: host base {:#x}, size {}, device base {:#x}\n",
                               "", w.host_base, FormatMemory(w.size), w.device_base);
    }
    if (reported && !g.known && assigned)
      std::cout << fmt::format("{:>6}  DMA grants: not known ({})\n", "", g.problem);
  }
  if (o.json) {
    std::cout << nlohmann::ordered_json{{"hosts", r.host_count},
                                        {"dma_windows_reported", reported},
                                        {"devices", devices}}
                     .dump()
              << '\n';
  } else if (!reported) {
    std::cout << "DMA grants: not reported by this bridge (older firmware)\n";
  }
  return kExitOk;
}

int RunInventory(const BridgeOptions& o) {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_INVENTORY;
  const bridge::ManagementReply reply = Exchange(o, req);
  if (!reply.answered() || reply.msg.status != DXPU_MGMT_OK)
    return Finish(o, "inventory", reply, {});
  std::string why;
  const std::optional<bridge::BridgeInventory> inv = bridge::DecodeInventory(reply, &why);
  if (!inv) {
    return ReportError("bridge inventory", Error{"bad-response", why}, o.json, std::cout, std::cerr,
                       kExitFailure);
  }
  if (o.json) {
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    for (const bridge::InventoryEntry& d : inv->devices) {
      devices.push_back({{"device", d.device},
                         {"box_bdf", FormatBdf(d.box_bdf)},
                         {"vendor_id", fmt::format("{:04x}", d.vendor)},
                         {"device_id", fmt::format("{:04x}", d.device_id)},
                         {"memory_bytes", d.memory_bytes},
                         {"profile", d.profile}});
    }
    std::cout << nlohmann::ordered_json{{"node_id", fmt::format("{:#x}", inv->node_id)},
                                        {"devices", devices}}
                     .dump()
              << '\n';
    return kExitOk;
  }
  std::cout << fmt::format("bridge {:#x}: {} devices\n", inv->node_id, inv->devices.size());
  std::cout << fmt::format("{:>6}  {:>8}  {:>9}  {:>10}  {}\n", "device", "box BDF", "PCI ID",
                           "memory", "profile");
  for (const bridge::InventoryEntry& d : inv->devices) {
    std::cout << fmt::format("{:>6}  {:>8}  {:>9}  {:>10}  {}\n", d.device, FormatBdf(d.box_bdf),
                             fmt::format("{:04x}:{:04x}", d.vendor, d.device_id),
                             FormatMemory(d.memory_bytes), d.profile);
  }
  return kExitOk;
}

int RunAssign(const BridgeOptions& o) {
  Result<uint64_t> node = ParseU64("--node-id", o.node);
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
  return Finish(o, "assign", Exchange(o, req), {{"device", o.device}, {"node_id", o.node}});
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

// A virtio-gpu's display, fetched in pieces, written to --out (whole, or not at all).
int RunScreenshot(const BridgeOptions& o) {
  Result<link::LinkAddress> target = ParseTarget(o.to);
  if (!target.ok())
    return ReportError("bridge screenshot", target.error(), o.json, std::cout, std::cerr,
                       kExitUsage);
  Result<std::shared_ptr<bridge::ManagementSigner>> signer = LoadManagementSigner(o.key);
  if (!signer.ok())
    return ReportError("bridge screenshot", signer.error(), o.json, std::cout, std::cerr,
                       kExitUsage);
  const bridge::ScreenshotResult shot =
      bridge::ManagementClient(target.value(), TimeoutMs(o.timeout), o.attempts, signer.value())
          .Screenshot(o.device);
  if (!shot.ok()) {
    if (!shot.reply.answered() || shot.reply.msg.status != DXPU_MGMT_OK)
      return Finish(o, "screenshot", shot.reply, {});
    return ReportError("bridge screenshot", Error{"bad-response", shot.error}, o.json, std::cout,
                       std::cerr, kExitFailure);
  }
  // Written beside the target and renamed: a reader never sees half an image.
  const std::string partial = o.out + ".partial";
  {
    std::ofstream f(partial, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(shot.png.data()),
            static_cast<std::streamsize>(shot.png.size()));
    f.close();
    if (!f || std::rename(partial.c_str(), o.out.c_str()) != 0) {
      const int err = errno;
      std::remove(partial.c_str());
      return ReportError("bridge screenshot",
                         Error{"write", fmt::format("cannot write {}: {}", o.out,
                                                    std::strerror(err != 0 ? err : EIO))},
                         o.json, std::cout, std::cerr, kExitFailure);
    }
  }
  if (o.json) {
    std::cout << nlohmann::ordered_json{{"status", "ok"},
                                        {"device", o.device},
                                        {"file", o.out},
                                        {"bytes", shot.png.size()},
                                        {"frame", shot.frame}}
                     .dump()
              << '\n';
  } else {
    std::cout << fmt::format("screenshot: device {} frame {}: {} bytes of PNG in {}\n", o.device,
                             shot.frame, shot.png.size(), o.out);
  }
  return kExitOk;
}

void CommonOptions(CLI::App* cmd, BridgeOptions& o) {
  cmd->add_option("--bridge,--to", o.to, "the bridge's management socket: IP:PORT or unix:PATH")
      ->capture_default_str();
  AddDurationOption(*cmd, "--timeout", &o.timeout, "how long to wait for each answer (1ms .. 60s)",
                    {{"--timeout-ms", DurationUnit::kMilliseconds}});
  cmd->add_option("--attempts", o.attempts, "sends before giving up")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--json", o.json, "print the result as JSON");
  AddManagementKeyOption(*cmd, &o.key);
}

}  // namespace

void AddManagementKeyOption(CLI::App& cmd, std::string* path) {
  cmd.add_option("--key", *path,
                 fmt::format("the secret key file (dxpu flash keygen) that signs requests which "
                             "change the bridge's state; the bridge trusts its public half "
                             "(management.trusted_keys). Also ${}",
                             kManagementKeyEnv))
      ->envname(kManagementKeyEnv);
}

Result<std::shared_ptr<bridge::ManagementSigner>> LoadManagementSigner(const std::string& path) {
  if (path.empty()) return std::shared_ptr<bridge::ManagementSigner>();
  std::string error;
  std::shared_ptr<bridge::ManagementSigner> signer =
      bridge::ManagementSigner::FromKeyFile(path, bridge::WallClockEpoch(), &error);
  if (!signer) return Error{"key-file", error};
  return signer;
}

std::string UnreachableBridgeHint(std::string_view error_name, std::string_view address) {
  if (error_name != "timeout" && error_name != "refused" && error_name != "no-socket") return "";
  return fmt::format(
      "Is dxpu-bridge running, with its management socket at {} (\"management\" in its "
      "configuration, docs/bridge-config.md)? {}",
      address,
      address == kDefaultBridgeAddress
          ? fmt::format("{} is the default address; --bridge ADDR names another "
                        "(IP:PORT or unix:PATH)",
                        kDefaultBridgeAddress)
          : std::string("--bridge ADDR names the bridge (IP:PORT or unix:PATH)"));
}

int TimeoutMs(std::chrono::nanoseconds timeout) {
  return static_cast<int>(
      std::clamp<int64_t>(std::chrono::ceil<std::chrono::milliseconds>(timeout).count(), 1,
                          std::chrono::milliseconds(kMaxTimeout).count()));
}

std::optional<Error> CheckTimeout(std::chrono::nanoseconds timeout) {
  if (timeout >= std::chrono::milliseconds(1) && timeout <= kMaxTimeout) return std::nullopt;
  return Error{"bad-timeout",
               fmt::format("--timeout {}: from 1ms to 60s", FormatDuration(timeout))};
}

Command AddBridgeCommand(CLI::App& parent) {
  auto o = std::make_shared<BridgeOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "bridge",
      "Manage a dxpu-bridge: inventory, device status, assignment, release, DMA grants, "
      "screenshots");
  cmd->require_subcommand(1);
  auto* status = cmd->add_subcommand(
      "status", "List the bridge's devices, their state, owner and DMA windows (grants)");
  CommonOptions(status, *o);
  auto* inventory = cmd->add_subcommand(
      "inventory", "The bridge's node ID and its devices: PCI IDs, memory and GPU profile");
  CommonOptions(inventory, *o);
  auto* assign = cmd->add_subcommand("assign", "Give a device to a host (by its DxFP node ID)");
  CommonOptions(assign, *o);
  assign->add_option("--device", o->device, "the bridge's device number")->required();
  assign->add_option("--node-id,--node", o->node, "the host's node ID (as in its HELLO), e.g. 0xa1")
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
  auto* screenshot = cmd->add_subcommand(
      "screenshot",
      "Write what a virtio-gpu's display shows as a PNG (a tenant's screen: the request is "
      "signed, as those that change state are)");
  CommonOptions(screenshot, *o);
  screenshot->add_option("--device", o->device, "the bridge's device number (a virtio-gpu)")
      ->required();
  screenshot->add_option("--out,-o", o->out, "the PNG file to write")->required();
  cmd->footer(
      "Examples:\n"
      "  dxpu bridge status --bridge 127.0.0.1:17481\n"
      "  dxpu bridge inventory --json\n"
      "  dxpu bridge assign --device 0 --node-id 0xa1 --host-bdf 01:00.0\n"
      "  dxpu bridge grant --device 0 --device-base 0x100000000 --size 1GiB\n"
      "  dxpu bridge release --device 0 --json\n"
      "  dxpu bridge screenshot --device 2 --out display.png\n"
      "Exit status: 0 done, 1 refused or no answer, 2 bad command line.");
  return {cmd, [o, status, inventory, assign, release, grant, revoke, screenshot]() -> int {
            if (std::optional<Error> bad = CheckTimeout(o->timeout))
              return ReportError("bridge", *bad, o->json, std::cout, std::cerr, kExitUsage);
            if (status->parsed()) return RunStatus(*o);
            if (inventory->parsed()) return RunInventory(*o);
            if (assign->parsed()) return RunAssign(*o);
            if (release->parsed()) return RunDeviceRef(*o, DXPU_MGMT_RELEASE, "release");
            if (grant->parsed()) return RunGrant(*o);
            if (revoke->parsed()) return RunDeviceRef(*o, DXPU_MGMT_DMA_REVOKE_ALL, "revoke");
            if (screenshot->parsed()) return RunScreenshot(*o);
            return kExitUsage;
          }};
}

}  // namespace dxpu::cli
