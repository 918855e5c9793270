// management_client.cc - the controller's side of a bridge's management socket
// (management_client.h).
#include "bridge-fw/management_client.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <utility>

#include "core/crc32c.h"
#include "link/unique_fd.h"

namespace dxpu::bridge {
namespace {

// A request whose body is empty (STATUS, INVENTORY, FW_STATUS, FW_COMMIT, FW_REBOOT).
dxpu_mgmt_msg BodilessRequest(uint8_t type) {
  dxpu_mgmt_msg req{};
  req.type = type;
  return req;
}

std::string ErrnoText() { return std::error_code(errno, std::system_category()).message(); }

ManagementReply Failure(std::string name, std::string sentence) {
  ManagementReply r;
  r.error_name = std::move(name);
  r.error = std::move(sentence);
  return r;
}

// Why a send or receive failed, named: nothing listens there ("refused"), no socket file at an
// AF_UNIX path ("no-socket"), anything else ("send").
ManagementReply Unreachable(const std::string& where, int err) {
  const std::string why = std::error_code(err, std::system_category()).message();
  if (err == ECONNREFUSED)
    return Failure(
        "refused",
        where.starts_with("unix:")
            ? fmt::format("nothing listens at {}: the socket file is there, but no "
                          "process has it open ({}; a bridge that died without "
                          "removing it?)",
                          where, why)
            : fmt::format("nothing listens at {} ({}: no process has that port open)", where, why));
  if (err == ENOENT || err == ENOTDIR)
    return Failure("no-socket", fmt::format("no socket file at {} ({})", where, why));
  return Failure("send", fmt::format("{}: {}", where, why));
}

// A datagram client on AF_UNIX needs an address of its own for the answer: unique per
// process and call, removed when the call ends.
std::string ClientPath() {
  static std::atomic<uint32_t> calls{0};
  return fmt::format("/tmp/dxpu-mgmt-{}-{}.sock", getpid(), calls.fetch_add(1));
}

}  // namespace

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
    case DXPU_MGMT_UNKNOWN_TYPE:
      return "the bridge does not know this request: its firmware is older than the request";
    case DXPU_MGMT_UNAUTHENTICATED:
      return "the bridge refuses requests that change its state unless they are signed by a key "
             "its configuration trusts (management.trusted_keys): give the key (--key), or add "
             "its public half to the bridge's configuration";
    case DXPU_MGMT_STALE_EPOCH:
      return "the bridge has accepted requests from a newer epoch under this key (a newer "
             "manager took over): this one is fenced out";
    case DXPU_MGMT_REPLAYED:
      return "the bridge has seen this request's sequence number already (a replay)";
    case DXPU_MGMT_QUARANTINED:
      return "the device is quarantined: its owner's session was lost; release it (reset and "
             "scrub) before assigning it to another host";
    case DXPU_MGMT_NO_IDENTITY:
      return "the bridge has no identity (its configuration has no `identity`): its sessions "
             "are plaintext and it lists no host keys";
    case DXPU_MGMT_KEY_IN_USE:
      return "the bridge has this key bound to another node: a key is one host's";
    case DXPU_MGMT_NO_DISPLAY:
      return "the device has no display: only a virtio-gpu has a screenshot";
    case DXPU_MGMT_FW_UNAVAILABLE:
      return "the bridge was not started from a flash by its boot loader, so it cannot take a "
             "firmware update";
    case DXPU_MGMT_IMAGE_UNTRUSTED:
      return "the bridge does not trust the image: it is signed with a key the bridge does not "
             "hold, or its signature does not verify";
    case DXPU_MGMT_WRONG_HARDWARE:
      return "the image is built for another hardware revision than the bridge's";
    case DXPU_MGMT_DOWNGRADE:
      return "the bridge refuses the image as a rollback (anti-rollback): its version is below "
             "the bridge's running or minimum version, or its security version below the "
             "bridge's counter";
    case DXPU_MGMT_IMAGE_INVALID:
      return "the image failed the bridge's checks (format, size, payload hash or sections), "
             "or did not verify when read back from the flash";
    case DXPU_MGMT_NO_TRANSFER:
      return "no firmware transfer is in progress on the bridge (it may have restarted); begin "
             "again";
    case DXPU_MGMT_OUT_OF_ORDER:
      return "the chunk is not where the bridge expects the next bytes; ask for the firmware "
             "status to learn where to resume";
    case DXPU_MGMT_BAD_CRC:
      return "the chunk's data does not match its CRC32C: it was corrupted on the way";
    case DXPU_MGMT_INCOMPLETE:
      return "the bridge has not received every byte of the image yet";
    case DXPU_MGMT_TRIAL_RUNNING:
      return "the bridge's running image is itself on trial (its other slot holds the fall-back): "
             "update it after its health check has marked it good";
    case DXPU_MGMT_FLASH_ERROR:
      return "the bridge's flash refused an operation; the transfer was dropped (see the "
             "bridge's log)";
    default:
      return fmt::format("the bridge refused: {}", dxpu_mgmt_status_name(status));
  }
}

std::string ManagementReply::Problem() const {
  if (!answered()) return error;
  if (msg.status != DXPU_MGMT_OK) return RefusalSentence(msg.status);
  return "";
}

std::vector<uint8_t> ManagementClient::Encode(dxpu_mgmt_msg request) const {
  if (signer_) signer_->Prepare(&request);
  std::vector<uint8_t> out(DXPU_MGMT_MAX_MSG);  // a FW_CHUNK fills a whole datagram
  size_t len = 0;
  if (dxpu_mgmt_encode(&request, out.data(), out.size(), &len) != DXPU_MGMT_ERR_OK) return {};
  out.resize(len);
  if (signer_) signer_->Sign(out);
  return out;
}

ManagementReply ManagementClient::Exchange(dxpu_mgmt_msg request) const {
  const std::string where = target_.ToString();
  sockaddr_storage to{};
  const socklen_t to_len = target_.ToSockaddr(&to);
  if (to_len == 0) return Failure("bad-address", where + " has no socket form");
  link::UniqueFd fd(socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Failure("socket", ErrnoText());
  // Over UDP, an ICMP port unreachable (nobody at that port) comes back as ECONNREFUSED from
  // recv: "refused" at once instead of silence until the timeout.
  const int on = 1;
  if (to.ss_family == AF_INET) setsockopt(fd.get(), IPPROTO_IP, IP_RECVERR, &on, sizeof on);
  if (to.ss_family == AF_INET6) setsockopt(fd.get(), IPPROTO_IPV6, IPV6_RECVERR, &on, sizeof on);
  std::string client_path;
  if (to.ss_family == AF_UNIX) {
    client_path = ClientPath();
    sockaddr_un me{};
    me.sun_family = AF_UNIX;
    std::snprintf(me.sun_path, sizeof(me.sun_path), "%s", client_path.c_str());
    unlink(client_path.c_str());
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&me), sizeof(me)) != 0)
      return Failure("socket", fmt::format("bind {}: {}", client_path, ErrnoText()));
  }
  request.request_id = static_cast<uint32_t>(std::random_device{}());
  std::vector<uint8_t> in(DXPU_MGMT_MAX_MSG);
  ManagementReply result = Failure(
      "timeout", fmt::format("no answer from {}: nothing answered {} request{} there, {} ms each",
                             where, attempts_, attempts_ == 1 ? "" : "s", timeout_ms_));
  for (int attempt = 0; attempt < attempts_; ++attempt) {
    spdlog::debug("{} request {:#x} to {} (attempt {})", dxpu_mgmt_type_name(request.type),
                  request.request_id, where, attempt + 1);
    // Each attempt signed afresh: a bridge refuses a sequence number it has seen.
    const std::vector<uint8_t> out = Encode(request);
    if (out.empty()) {
      result = Failure("internal", "cannot encode the request");
      break;
    }
    if (sendto(fd.get(), out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&to), to_len) < 0) {
      result = Unreachable(where, errno);
      break;
    }
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
    bool answered = false;
    bool refused = false;
    while (!answered && !refused) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd.get(), POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) != 1) break;
      const ssize_t n = recv(fd.get(), in.data(), in.size(), 0);
      if (n < 0 && errno == ECONNREFUSED) {
        result = Unreachable(where, ECONNREFUSED);
        refused = true;
        break;
      }
      dxpu_mgmt_msg m{};
      if (n > 0 && dxpu_mgmt_decode(in.data(), static_cast<size_t>(n), &m) == DXPU_MGMT_ERR_OK &&
          dxpu_mgmt_is_response(&m) && m.request_id == request.request_id) {
        result = ManagementReply{};
        result.bytes.assign(in.begin(), in.begin() + n);
        // Decoded again from the bytes it keeps: entries of a STATUS point into them.
        dxpu_mgmt_decode(result.bytes.data(), result.bytes.size(), &result.msg);
        answered = true;
      }
    }
    if (answered || refused) break;
  }
  if (!client_path.empty()) unlink(client_path.c_str());
  return result;
}

ManagementReply ManagementClient::Assign(uint16_t device, uint16_t host_bdf, uint64_t node) const {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_ASSIGN;
  req.body.assign = {device, host_bdf, node};
  return Exchange(req);
}

ManagementReply ManagementClient::Release(uint16_t device) const {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_RELEASE;
  req.body.release.device = device;
  return Exchange(req);
}

ManagementReply ManagementClient::Grant(uint16_t device, uint64_t device_base, uint64_t host_base,
                                        uint64_t size) const {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_DMA_GRANT;
  req.body.dma_grant = {device, device_base, host_base, size};
  return Exchange(req);
}

ManagementReply ManagementClient::RevokeAll(uint16_t device) const {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_DMA_REVOKE_ALL;
  req.body.release.device = device;
  return Exchange(req);
}

ManagementReply ManagementClient::Status() const {
  return Exchange(BodilessRequest(DXPU_MGMT_STATUS));
}

ManagementReply ManagementClient::Inventory() const {
  return Exchange(BodilessRequest(DXPU_MGMT_INVENTORY));
}

ManagementReply ManagementClient::DmaList(uint16_t device) const {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_DMA_LIST;
  req.body.dma_list_request.device = device;
  return Exchange(req);
}

ManagementReply ManagementClient::ScreenshotPiece(uint16_t device, uint32_t offset) const {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_SCREENSHOT;
  req.body.screenshot_request.device = device;
  req.body.screenshot_request.offset = offset;
  return Exchange(req);
}

ScreenshotResult ManagementClient::Screenshot(uint16_t device) const {
  ScreenshotResult result;
  for (int attempt = 0; attempt < 3; ++attempt) {
    result.png.clear();
    bool changed = false;
    uint32_t total = 0;
    do {
      result.reply = ScreenshotPiece(device, static_cast<uint32_t>(result.png.size()));
      if (!result.reply.ok()) {
        result.png.clear();
        result.error = result.reply.Problem();
        return result;
      }
      dxpu_mgmt_msg m{};
      if (dxpu_mgmt_decode(result.reply.bytes.data(), result.reply.bytes.size(), &m) !=
              DXPU_MGMT_ERR_OK ||
          m.type != DXPU_MGMT_SCREENSHOT || m.body.screenshot.device != device ||
          m.body.screenshot.offset != result.png.size()) {
        result.png.clear();
        result.error = "the bridge answered with another piece than the one asked for";
        return result;
      }
      const dxpu_mgmt_screenshot& s = m.body.screenshot;
      if (result.png.empty()) {
        total = s.total;
        result.frame = s.frame;
      } else if (s.frame != result.frame || s.total != total) {
        changed = true;  // the display changed meanwhile: begin again
        break;
      }
      if (s.data_len == 0 && result.png.size() < total) {
        result.png.clear();
        result.error = "the bridge sent an empty piece before the image's end";
        return result;
      }
      result.png.insert(result.png.end(), s.data, s.data + s.data_len);
    } while (result.png.size() < total);
    if (!changed) {
      result.error.clear();
      return result;
    }
  }
  result.png.clear();
  result.error = "the display changed while each of 3 screenshots was being fetched";
  return result;
}

ManagementReply ManagementClient::SetHostKey(uint64_t node, const FabricPublicKey& key) const {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_HOST_KEY_SET;
  req.body.host_key.node_id = node;
  std::copy(key.begin(), key.end(), req.body.host_key.public_key);
  return Exchange(req);
}

ManagementReply ManagementClient::RemoveHostKey(uint64_t node) const {
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_HOST_KEY_REMOVE;
  req.body.host_key.node_id = node;
  return Exchange(req);
}

ManagementReply ManagementClient::FwBegin(std::span<const uint8_t> header,
                                          bool allow_downgrade) const {
  if (header.size() != DXPU_MGMT_FW_IMAGE_HEADER_SIZE)
    return Failure("bad-argument", fmt::format("an image header is {} bytes, not {}",
                                               DXPU_MGMT_FW_IMAGE_HEADER_SIZE, header.size()));
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_FW_BEGIN;
  req.body.fw_begin.flags = allow_downgrade ? DXPU_MGMT_FW_F_ALLOW_DOWNGRADE : 0;
  req.body.fw_begin.header = header.data();
  return Exchange(req);
}

ManagementReply ManagementClient::FwChunk(uint64_t offset, std::span<const uint8_t> data) const {
  if (data.empty() || data.size() > DXPU_MGMT_FW_CHUNK_MAX_DATA)
    return Failure("bad-argument", fmt::format("a chunk is 1 to {} bytes, not {}",
                                               DXPU_MGMT_FW_CHUNK_MAX_DATA, data.size()));
  dxpu_mgmt_msg req{};
  req.type = DXPU_MGMT_FW_CHUNK;
  req.body.fw_chunk.offset = offset;
  req.body.fw_chunk.crc = dxpu_crc32c(0, data.data(), data.size());
  req.body.fw_chunk.length = static_cast<uint16_t>(data.size());
  req.body.fw_chunk.data = data.data();
  return Exchange(req);
}

ManagementReply ManagementClient::FwStatus() const {
  return Exchange(BodilessRequest(DXPU_MGMT_FW_STATUS));
}

ManagementReply ManagementClient::FwCommit() const {
  return Exchange(BodilessRequest(DXPU_MGMT_FW_COMMIT));
}

ManagementReply ManagementClient::FwReboot() const {
  return Exchange(BodilessRequest(DXPU_MGMT_FW_REBOOT));
}

namespace {

// The reply's datagram decoded again (its body's pointers then point into reply.bytes), when it
// is an OK response of `type` (or, for the firmware report, of any type that carries one);
// nullopt, with *why set when given, otherwise. `what` names what was expected, for people.
std::optional<dxpu_mgmt_msg> DecodeOkAnswer(const ManagementReply& reply,
                                            std::initializer_list<uint8_t> types, const char* what,
                                            std::string* why) {
  const auto fail = [why](std::string sentence) -> std::optional<dxpu_mgmt_msg> {
    if (why != nullptr) *why = std::move(sentence);
    return std::nullopt;
  };
  if (!reply.ok()) return fail(reply.Problem());
  dxpu_mgmt_msg m{};
  const dxpu_mgmt_err err = dxpu_mgmt_decode(reply.bytes.data(), reply.bytes.size(), &m);
  if (err != DXPU_MGMT_ERR_OK)
    return fail(fmt::format("not a management message ({})", dxpu_mgmt_err_name(err)));
  const bool wanted = std::find(types.begin(), types.end(), m.type) != types.end();
  if (!dxpu_mgmt_is_response(&m) || !wanted || m.status != DXPU_MGMT_OK)
    return fail(fmt::format("not {}: a {} {}", what, dxpu_mgmt_type_name(m.type),
                            dxpu_mgmt_is_response(&m) ? "response" : "request"));
  return m;
}

}  // namespace

std::optional<BridgeInventory> DecodeInventory(const ManagementReply& reply, std::string* why) {
  const std::optional<dxpu_mgmt_msg> m =
      DecodeOkAnswer(reply, {DXPU_MGMT_INVENTORY}, "an inventory", why);
  if (!m) return std::nullopt;
  BridgeInventory inv;
  inv.node_id = m->body.inventory.node_id;
  if (m->body.inventory.has_fabric_key) {
    inv.fabric_key.emplace();
    std::copy(std::begin(m->body.inventory.fabric_key), std::end(m->body.inventory.fabric_key),
              inv.fabric_key->begin());
  }
  for (size_t i = 0; i < m->body.inventory.device_count; ++i) {
    dxpu_mgmt_inventory_device e{};
    if (!dxpu_mgmt_inventory_entry(&m->body.inventory, i, &e)) break;
    inv.devices.push_back(InventoryEntry{e.device, e.box_bdf, e.vendor_id, e.device_id,
                                         e.memory_bytes, std::string(e.profile)});
  }
  return inv;
}

std::optional<DeviceDmaWindows> DecodeDmaList(const ManagementReply& reply, std::string* why) {
  const std::optional<dxpu_mgmt_msg> m =
      DecodeOkAnswer(reply, {DXPU_MGMT_DMA_LIST}, "a DMA window list", why);
  if (!m) return std::nullopt;
  DeviceDmaWindows list;
  list.device = m->body.dma_list.device;
  for (size_t i = 0; i < m->body.dma_list.window_count; ++i) {
    dxpu_mgmt_dma_window w{};
    if (!dxpu_mgmt_dma_list_window(&m->body.dma_list, i, &w)) break;
    list.windows.push_back(DmaWindow{w.device_base, w.host_base, w.size});
  }
  return list;
}

std::optional<dxpu_mgmt_fw_report> DecodeFwReport(const ManagementReply& reply, std::string* why) {
  const std::optional<dxpu_mgmt_msg> m = DecodeOkAnswer(
      reply, {DXPU_MGMT_FW_BEGIN, DXPU_MGMT_FW_CHUNK, DXPU_MGMT_FW_STATUS, DXPU_MGMT_FW_COMMIT},
      "a firmware report", why);
  if (!m) return std::nullopt;
  // The decoder checked the report (slots, states, next offset within total).
  return m->body.fw_report;
}

}  // namespace dxpu::bridge
