// management.cc - management requests applied to a BridgeBox (management.h).
#include "bridge-fw/management.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/dxpu_mgmt.h"
#include "crypto/fabric_keys.h"

namespace dxpu::bridge {
namespace {

std::vector<uint8_t> Reply(const dxpu_mgmt_msg& request, uint16_t status) {
  dxpu_mgmt_msg r{};
  r.type = request.type;
  r.flags = DXPU_MGMT_F_RESPONSE;
  r.request_id = request.request_id;
  r.status = status;
  std::vector<uint8_t> out(DXPU_MGMT_HDR_SIZE);
  size_t len = 0;
  if (dxpu_mgmt_encode(&r, out.data(), out.size(), &len) != DXPU_MGMT_ERR_OK) return {};
  out.resize(len);
  return out;
}

std::vector<uint8_t> StatusReport(const BridgeBox& box, uint32_t request_id) {
  std::vector<dxpu_mgmt_device_entry> entries;
  for (const DeviceStatus& d : box.Devices()) {
    dxpu_mgmt_device_entry e{};
    e.device = d.index;
    e.box_bdf = d.box_bdf;
    e.host_bdf = d.owner_node != 0 ? d.host_bdf : 0;
    e.state = d.state == DeviceState::kQuarantined ? DXPU_MGMT_DEV_QUARANTINED
              : d.state == DeviceState::kAssigned  ? DXPU_MGMT_DEV_ASSIGNED
                                                   : DXPU_MGMT_DEV_FREE;
    e.owner = d.owner_node;
    entries.push_back(e);
  }
  std::vector<uint8_t> out(DXPU_MGMT_HDR_SIZE + DXPU_MGMT_STATUS_FIXED_SIZE +
                           entries.size() * DXPU_MGMT_STATUS_ENTRY_SIZE);
  size_t len = 0;
  const auto hosts = static_cast<uint16_t>(box.Hosts().size());
  if (dxpu_mgmt_encode_status_report(request_id, hosts, entries.data(), entries.size(), out.data(),
                                     out.size(), &len) != DXPU_MGMT_ERR_OK)
    return {};
  out.resize(len);
  return out;
}

// The bridge's identity and its devices with their profiles. A profile name is sent as at most
// 31 printable ASCII characters (mgmt.h): a longer one is cut to its first 31, other
// bytes become '?'. More devices than one datagram holds: INTERNAL.
std::vector<uint8_t> Inventory(const BridgeBox& box, const dxpu_mgmt_msg& request,
                               ManagementCounters* counters) {
  std::vector<dxpu_mgmt_inventory_device> entries;
  for (const DeviceStatus& d : box.Devices()) {
    dxpu_mgmt_inventory_device e{};
    e.device = d.index;
    e.box_bdf = d.box_bdf;
    e.vendor_id = d.vendor_id;
    e.device_id = d.device_id;
    e.memory_bytes = d.memory_bytes;
    const std::string_view name = d.profile.empty() ? std::string_view("?") : d.profile;
    for (size_t i = 0; i < name.size() && i + 1 < sizeof(e.profile); ++i) {
      const char c = name[i];
      e.profile[i] = c >= 0x20 && c <= 0x7e ? c : '?';
    }
    entries.push_back(e);
  }
  std::vector<uint8_t> out(DXPU_MGMT_HDR_SIZE + DXPU_MGMT_INVENTORY_FIXED_SIZE +
                           entries.size() * DXPU_MGMT_INVENTORY_ENTRY_SIZE);
  size_t len = 0;
  const crypto::Key* key = box.fabric_public_key();
  out.resize(out.size() + (key != nullptr ? DXPU_MGMT_FABRIC_KEY_SIZE : 0));
  const dxpu_mgmt_err err = dxpu_mgmt_encode_inventory(
      request.request_id, box.node_id(), key != nullptr ? key->data() : nullptr, entries.data(),
      entries.size(), out.data(), out.size(), &len);
  if (err != DXPU_MGMT_ERR_OK) {
    spdlog::error("management: cannot report {} devices in an inventory ({})", entries.size(),
                  dxpu_mgmt_err_name(err));
    counters->refused++;
    return Reply(request, DXPU_MGMT_INTERNAL);
  }
  out.resize(len);
  return out;
}

static_assert(BridgeBox::kMaxDmaWindows == DXPU_MGMT_DMA_LIST_MAX_WINDOWS,
              "a DMA_LIST answer holds every window a device may have");

// The device's DMA windows, as DMA_GRANT gave them. A free device has none: OK, empty.
std::vector<uint8_t> DmaList(const BridgeBox& box, const dxpu_mgmt_msg& request,
                             ManagementCounters* counters) {
  const uint16_t device = request.body.dma_list_request.device;
  std::vector<DmaWindow> grants;
  if (const ManageResult r = box.DmaWindows(device, &grants); r != ManageResult::kOk) {
    counters->refused++;
    return Reply(request, ToMgmtStatus(r));
  }
  std::vector<dxpu_mgmt_dma_window> windows;
  windows.reserve(grants.size());
  for (const DmaWindow& g : grants) windows.push_back({g.device_base, g.host_base, g.size});
  std::vector<uint8_t> out(DXPU_MGMT_HDR_SIZE + DXPU_MGMT_DMA_LIST_FIXED_SIZE +
                           windows.size() * DXPU_MGMT_DMA_WINDOW_SIZE);
  size_t len = 0;
  if (const dxpu_mgmt_err err = dxpu_mgmt_encode_dma_list(
          request.request_id, device, windows.data(), windows.size(), out.data(), out.size(), &len);
      err != DXPU_MGMT_ERR_OK) {
    spdlog::error("management: cannot list the {} DMA windows of device {} ({})", windows.size(),
                  device, dxpu_mgmt_err_name(err));
    counters->refused++;
    return Reply(request, DXPU_MGMT_INTERNAL);
  }
  out.resize(len);
  return out;
}

// A piece of a virtio-gpu's display as a PNG: from the request's offset, as much as one answer
// holds. The frame counter lets the client see that the image changed between its pieces.
std::vector<uint8_t> Screenshot(BridgeBox& box, const dxpu_mgmt_msg& request,
                                ManagementCounters* counters) {
  const dxpu_mgmt_screenshot_request& q = request.body.screenshot_request;
  DisplayImage image;
  if (const ManageResult r = box.Screenshot(q.device, &image); r != ManageResult::kOk) {
    counters->refused++;
    return Reply(request, ToMgmtStatus(r));
  }
  const std::vector<uint8_t>& png = *image.png;
  if (q.offset > png.size()) {
    counters->refused++;
    return Reply(request, DXPU_MGMT_BAD_ARGUMENT);
  }
  dxpu_mgmt_msg r{};
  r.type = DXPU_MGMT_SCREENSHOT;
  r.flags = DXPU_MGMT_F_RESPONSE;
  r.request_id = request.request_id;
  r.status = DXPU_MGMT_OK;
  dxpu_mgmt_screenshot& s = r.body.screenshot;
  s.device = q.device;
  s.total = static_cast<uint32_t>(png.size());
  s.offset = q.offset;
  s.frame = image.frame;
  s.data_len =
      static_cast<uint16_t>(std::min<size_t>(DXPU_MGMT_SCREENSHOT_MAX_DATA, png.size() - q.offset));
  s.data = png.data() + q.offset;
  std::vector<uint8_t> out(DXPU_MGMT_HDR_SIZE + DXPU_MGMT_SCREENSHOT_FIXED_SIZE + s.data_len);
  size_t len = 0;
  if (const dxpu_mgmt_err err = dxpu_mgmt_encode(&r, out.data(), out.size(), &len);
      err != DXPU_MGMT_ERR_OK) {
    spdlog::error("management: cannot encode a screenshot piece of device {} ({})", q.device,
                  dxpu_mgmt_err_name(err));
    counters->refused++;
    return Reply(request, DXPU_MGMT_INTERNAL);
  }
  out.resize(len);
  return out;
}

uint16_t HostKeyStatus(HostKeyResult r) {
  switch (r) {
    case HostKeyResult::kOk:
      return DXPU_MGMT_OK;
    case HostKeyResult::kBadKey:
    case HostKeyResult::kBadNode:
      return DXPU_MGMT_BAD_ARGUMENT;
    case HostKeyResult::kKeyInUse:
      return DXPU_MGMT_KEY_IN_USE;
    case HostKeyResult::kNoIdentity:
      return DXPU_MGMT_NO_IDENTITY;
  }
  return DXPU_MGMT_INTERNAL;
}

// HOST_KEY_SET and HOST_KEY_REMOVE: which hosts may open a session from the next HELLO on.
std::vector<uint8_t> HostKeyRequest(BridgeBox& box, const dxpu_mgmt_msg& request,
                                    ManagementCounters* counters) {
  const dxpu_mgmt_host_key& k = request.body.host_key;
  HostKeyResult r = HostKeyResult::kOk;
  if (request.type == DXPU_MGMT_HOST_KEY_SET) {
    crypto::Key key{};
    std::copy(std::begin(k.public_key), std::end(k.public_key), key.begin());
    r = box.SetHostKey(key, k.node_id);
    spdlog::info("management: host-key-set node {:#x} key {}... -> {} ({} host keys)", k.node_id,
                 crypto::KeyHex(key).substr(0, 16), HostKeyResultName(r), box.host_keys());
  } else {
    bool had = false;
    r = box.RemoveHostKey(k.node_id, &had);
    spdlog::info("management: host-key-remove node {:#x} -> {}{} ({} host keys)", k.node_id,
                 HostKeyResultName(r), had ? "" : " (it had none)", box.host_keys());
  }
  if (r != HostKeyResult::kOk) counters->refused++;
  return Reply(request, HostKeyStatus(r));
}

bool IsFirmwareRequest(uint8_t type) {
  return type >= DXPU_MGMT_FW_BEGIN && type <= DXPU_MGMT_FW_REBOOT;
}

std::vector<uint8_t> FirmwareReply(const dxpu_mgmt_msg& request,
                                   firmware::FirmwareService* firmware,
                                   ManagementCounters* counters) {
  if (firmware == nullptr) {
    counters->refused++;
    return Reply(request, DXPU_MGMT_FW_UNAVAILABLE);
  }
  const firmware::FirmwareAnswer answer = firmware->Handle(request);
  if (answer.status != DXPU_MGMT_OK) counters->refused++;
  if (answer.status != DXPU_MGMT_OK || !answer.report) return Reply(request, answer.status);
  dxpu_mgmt_msg r{};
  r.type = request.type;
  r.flags = DXPU_MGMT_F_RESPONSE;
  r.request_id = request.request_id;
  r.body.fw_report = *answer.report;
  std::vector<uint8_t> out(DXPU_MGMT_HDR_SIZE + DXPU_MGMT_FW_REPORT_SIZE);
  size_t len = 0;
  if (const dxpu_mgmt_err err = dxpu_mgmt_encode(&r, out.data(), out.size(), &len);
      err != DXPU_MGMT_ERR_OK) {
    spdlog::error("management: cannot encode a firmware report ({})", dxpu_mgmt_err_name(err));
    return Reply(request, DXPU_MGMT_INTERNAL);
  }
  out.resize(len);
  return out;
}

}  // namespace

uint16_t ToMgmtStatus(ManageResult r) {
  switch (r) {
    case ManageResult::kOk:
      return DXPU_MGMT_OK;
    case ManageResult::kNoSuchDevice:
      return DXPU_MGMT_NO_SUCH_DEVICE;
    case ManageResult::kDeviceBusy:
      return DXPU_MGMT_DEVICE_BUSY;
    case ManageResult::kNotAssigned:
      return DXPU_MGMT_NOT_ASSIGNED;
    case ManageResult::kTableFull:
      return DXPU_MGMT_TABLE_FULL;
    case ManageResult::kOverlap:
      return DXPU_MGMT_OVERLAP;
    case ManageResult::kBadArgument:
      return DXPU_MGMT_BAD_ARGUMENT;
    case ManageResult::kQuarantined:
      return DXPU_MGMT_QUARANTINED;
    case ManageResult::kNoDisplay:
      return DXPU_MGMT_NO_DISPLAY;
  }
  return DXPU_MGMT_INTERNAL;
}

namespace {

// Decodes and checks `request` into *m. nullopt: a request to apply; otherwise the reply to
// send instead (empty: none, the datagram is dropped).
std::optional<std::vector<uint8_t>> DecodeRequest(std::span<const uint8_t> request,
                                                  dxpu_mgmt_msg* m, ManagementCounters* counters) {
  const dxpu_mgmt_err err = dxpu_mgmt_decode(request.data(), request.size(), m);
  if (err != DXPU_MGMT_ERR_OK) {
    dxpu_mgmt_status status = DXPU_MGMT_OK;
    if (!dxpu_mgmt_error_reply(err, m, &status)) {
      counters->dropped++;
      return std::vector<uint8_t>{};
    }
    counters->refused++;
    spdlog::warn("management: refused a request ({})", dxpu_mgmt_err_name(err));
    return Reply(*m, status);
  }
  if (dxpu_mgmt_is_response(m)) {
    counters->dropped++;
    return std::vector<uint8_t>{};
  }
  counters->requests++;
  if (const dxpu_mgmt_status bad = dxpu_mgmt_check_args(m); bad != DXPU_MGMT_OK) {
    counters->refused++;
    return Reply(*m, bad);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<uint8_t>> CheckAuthentication(ManagementAuthenticator& auth,
                                                        std::span<const uint8_t> request,
                                                        uint64_t now, ManagementCounters* counters,
                                                        util::RateLimitedLog* log) {
  dxpu_mgmt_msg m{};
  if (dxpu_mgmt_decode(request.data(), request.size(), &m) != DXPU_MGMT_ERR_OK ||
      dxpu_mgmt_is_response(&m))
    return std::nullopt;
  const AuthVerdict v = auth.Check(m, request);
  if (v == AuthVerdict::kOk) return std::nullopt;
  counters->requests++;
  counters->refused++;
  uint64_t suppressed = 0;
  if (log->Allow(static_cast<uint64_t>(v), now, &suppressed)) {
    spdlog::warn(
        "management: refused {} request {:#x}: {} (epoch {}, sequence {}; {} more "
        "refusals for this reason suppressed)",
        dxpu_mgmt_type_name(m.type), m.request_id, AuthVerdictName(v), m.auth.epoch,
        m.auth.sequence, suppressed);
  }
  return Reply(m, AuthVerdictStatus(v));
}

bool IsFirmwareDatagram(std::span<const uint8_t> request) {
  return request.size() > DXPU_MGMT_OFF_TYPE && IsFirmwareRequest(request[DXPU_MGMT_OFF_TYPE]);
}

std::vector<uint8_t> HandleFirmwareManagement(std::span<const uint8_t> request,
                                              ManagementCounters* counters,
                                              firmware::FirmwareService* firmware) {
  dxpu_mgmt_msg m{};
  if (std::optional<std::vector<uint8_t>> refused = DecodeRequest(request, &m, counters))
    return std::move(*refused);
  if (!IsFirmwareRequest(m.type)) {
    counters->refused++;
    return Reply(m, DXPU_MGMT_INTERNAL);
  }
  return FirmwareReply(m, firmware, counters);
}

std::vector<uint8_t> HandleManagement(BridgeBox& box, std::span<const uint8_t> request,
                                      uint64_t now, ManagementCounters* counters,
                                      firmware::FirmwareService* firmware) {
  dxpu_mgmt_msg m{};
  if (std::optional<std::vector<uint8_t>> refused = DecodeRequest(request, &m, counters))
    return std::move(*refused);
  if (IsFirmwareRequest(m.type)) return FirmwareReply(m, firmware, counters);
  ManageResult r = ManageResult::kOk;
  switch (m.type) {
    case DXPU_MGMT_ASSIGN:
      r = box.Assign(m.body.assign.device, m.body.assign.host_node_id, m.body.assign.host_bdf);
      break;
    case DXPU_MGMT_RELEASE:
      r = box.Release(m.body.release.device, now);
      break;
    case DXPU_MGMT_DMA_GRANT: {
      const dxpu_mgmt_dma_grant& g = m.body.dma_grant;
      r = box.GrantDma(g.device, DmaWindow{g.device_base, g.host_base, g.size});
      break;
    }
    case DXPU_MGMT_DMA_REVOKE_ALL:
      r = box.RevokeDma(m.body.dma_revoke_all.device);
      break;
    case DXPU_MGMT_STATUS:
      return StatusReport(box, m.request_id);
    case DXPU_MGMT_INVENTORY:
      return Inventory(box, m, counters);
    case DXPU_MGMT_DMA_LIST:
      return DmaList(box, m, counters);
    case DXPU_MGMT_HOST_KEY_SET:
    case DXPU_MGMT_HOST_KEY_REMOVE:
      return HostKeyRequest(box, m, counters);
    case DXPU_MGMT_SCREENSHOT:
      return Screenshot(box, m, counters);
    default:
      r = ManageResult::kBadArgument;
      break;
  }
  if (m.type == DXPU_MGMT_ASSIGN && r == ManageResult::kDeviceBusy) {
    uint64_t holder = 0;
    for (const DeviceStatus& d : box.Devices())
      if (d.index == m.body.assign.device) holder = d.owner_node;
    spdlog::info(
        "management: assign of device {} to node {:#x} -> device-busy: node {:#x} holds it",
        m.body.assign.device, m.body.assign.host_node_id, holder);
  } else {
    spdlog::info("management: {} -> {}", dxpu_mgmt_type_name(m.type), ManageResultName(r));
  }
  if (r != ManageResult::kOk) counters->refused++;
  return Reply(m, ToMgmtStatus(r));
}

}  // namespace dxpu::bridge
