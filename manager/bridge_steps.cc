// bridge_steps.cc - the manager's steps on a bridge (bridge_steps.h).
#include "manager/bridge_steps.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "bridge-fw/bridge_config.h"
#include "crypto/fabric_keys.h"
#include "host/proxy_port.h"
#include "link/link_address.h"

namespace dxpu::manager {

namespace {

ActionResult Failed(const Action& action, const bridge::ManagementReply& reply,
                    std::string_view what) {
  ActionResult r;
  r.id = action.id;
  r.outcome = reply.answered() ? ActionOutcome::kRefused : ActionOutcome::kUnreachable;
  r.error = fmt::format("{} {}: {}", what, action.box.id, reply.Problem());
  return r;
}

ActionResult Ok(const Action& action) {
  ActionResult r;
  r.id = action.id;
  r.outcome = ActionOutcome::kDone;
  return r;
}

dxpu_mgmt_msg Request(uint8_t type) {
  dxpu_mgmt_msg m{};
  m.type = type;
  return m;
}

// A device whose owner's session was lost is quarantined on its bridge: before it goes to
// anyone else, RELEASE resets it and scrubs its memory (the manager holds no lease for that
// owner, or it would not be lending the device), then the ASSIGN is made again.
bridge::ManagementReply ScrubQuarantined(const Action& a, const ManagementExchange& exchange,
                                         const dxpu_mgmt_msg& assign,
                                         bridge::ManagementReply reply) {
  if (!reply.answered() || reply.msg.status != DXPU_MGMT_QUARANTINED) return reply;
  spdlog::warn(
      "pool: {} device {} is quarantined (its owner's session was lost): resetting "
      "and scrubbing it before it goes to {}",
      a.box.id, a.device, a.host.id);
  dxpu_mgmt_msg release = Request(DXPU_MGMT_RELEASE);
  release.body.release = {a.device};
  const bridge::ManagementReply released = exchange(release);
  if (!released.ok()) return released;
  return exchange(assign);
}

// HOST_KEY_SET of a host's key (64 hex digits, as registered) for its node; nullopt when the
// text is no key (the manager checked it at registration: a corrupt store).
std::optional<dxpu_mgmt_msg> HostKeySet(uint64_t node, const std::string& key) {
  crypto::KeyResult<crypto::Key> parsed = crypto::ParseFabricPublicKey(key);
  if (!parsed.ok()) return std::nullopt;
  dxpu_mgmt_msg set = Request(DXPU_MGMT_HOST_KEY_SET);
  set.body.host_key.node_id = node;
  std::copy(parsed.value().begin(), parsed.value().end(), set.body.host_key.public_key);
  return set;
}

ActionResult BadKey(const Action& a, const std::string& key) {
  ActionResult r;
  r.id = a.id;
  r.outcome = ActionOutcome::kRefused;
  r.error = fmt::format("'{}' is not a fabric public key", key);
  return r;
}

ActionResult Assign(const Action& a, const ManagementExchange& exchange) {
  // Which hosts may reach which bridge: before its GPU is assigned there, the host's key.
  if (!a.box.fabric_key.empty() && !a.host.fabric_key.empty()) {
    std::optional<dxpu_mgmt_msg> set = HostKeySet(a.host.node_id, a.host.fabric_key);
    if (!set) return BadKey(a, a.host.fabric_key);
    const bridge::ManagementReply keyed = exchange(*set);
    if (!keyed.ok()) return Failed(a, keyed, "HOST_KEY_SET on");
  }
  dxpu_mgmt_msg assign = Request(DXPU_MGMT_ASSIGN);
  assign.body.assign = {a.device, a.host_bdf, a.host.node_id};
  bridge::ManagementReply reply = ScrubQuarantined(a, exchange, assign, exchange(assign));
  if (reply.answered() && reply.msg.status == DXPU_MGMT_DEVICE_BUSY) {
    // Another node has it: which one, so that the manager can say who holds it.
    ActionResult r = Failed(a, reply, "ASSIGN on");
    const bridge::ManagementReply status = exchange(Request(DXPU_MGMT_STATUS));
    dxpu_mgmt_msg decoded{};
    if (status.ok() &&
        dxpu_mgmt_decode(status.bytes.data(), status.bytes.size(), &decoded) == DXPU_MGMT_ERR_OK) {
      for (size_t i = 0; i < decoded.body.status_report.device_count; ++i) {
        dxpu_mgmt_device_entry e{};
        if (dxpu_mgmt_status_entry(&decoded.body.status_report, i, &e) && e.device == a.device)
          r.busy_owner = e.owner;
      }
    }
    return r;
  }
  if (!reply.ok()) return Failed(a, reply, "ASSIGN on");
  // The host's address map, identity mapped (docs/host-proxy.md): the same grant again is OK.
  for (const host::HostDmaGrant& g : host::HostDmaGrants()) {
    dxpu_mgmt_msg grant = Request(DXPU_MGMT_DMA_GRANT);
    grant.body.dma_grant = {a.device, g.base, g.base, g.size};
    reply = exchange(grant);
    if (!reply.ok()) return Failed(a, reply, "DMA_GRANT on");
  }
  return Ok(a);
}

ActionResult Release(const Action& a, const ManagementExchange& exchange) {
  dxpu_mgmt_msg release = Request(DXPU_MGMT_RELEASE);
  release.body.release = {a.device};
  const bridge::ManagementReply reply = exchange(release);
  // A device no host holds is what a release wants: done (a repeated release after a crash).
  const bool released =
      reply.ok() || (reply.answered() && reply.msg.status == DXPU_MGMT_NOT_ASSIGNED);
  if (!released) return Failed(a, reply, "RELEASE on");
  // The host's last GPU on this box: its key goes, so that it opens no more sessions there.
  if (a.remove_host_key && !a.box.fabric_key.empty() && a.host.node_id != 0) {
    dxpu_mgmt_msg remove = Request(DXPU_MGMT_HOST_KEY_REMOVE);
    remove.body.host_key.node_id = a.host.node_id;
    const bridge::ManagementReply removed = exchange(remove);
    if (!removed.ok()) return Failed(a, removed, "HOST_KEY_REMOVE on");
  }
  return Ok(a);
}

ActionResult Probe(const Action& a, const ManagementExchange& exchange) {
  // First the keys of the hosts holding GPUs here (a rotated key; a restarted bridge's).
  for (const auto& [node, key] : a.host_keys) {
    std::optional<dxpu_mgmt_msg> set = HostKeySet(node, key);
    if (!set) return BadKey(a, key);
    const bridge::ManagementReply keyed = exchange(*set);
    // A bridge without identity: nothing to set (the manager learns it from this inventory).
    if (keyed.answered() && keyed.msg.status == DXPU_MGMT_NO_IDENTITY) break;
    if (!keyed.ok()) return Failed(a, keyed, "HOST_KEY_SET on");
  }
  const bridge::ManagementReply inventory_reply = exchange(Request(DXPU_MGMT_INVENTORY));
  if (!inventory_reply.ok()) return Failed(a, inventory_reply, "INVENTORY of");
  std::string why;
  std::optional<bridge::BridgeInventory> inventory = bridge::DecodeInventory(inventory_reply, &why);
  if (!inventory) {
    ActionResult r;
    r.id = a.id;
    r.outcome = ActionOutcome::kRefused;
    r.error = fmt::format("INVENTORY of {}: {}", a.box.id, why);
    return r;
  }
  const bridge::ManagementReply status = exchange(Request(DXPU_MGMT_STATUS));
  if (!status.ok()) return Failed(a, status, "STATUS of");
  // Decoded again from the reply's own bytes: a report's entries point into them.
  dxpu_mgmt_msg decoded{};
  if (dxpu_mgmt_decode(status.bytes.data(), status.bytes.size(), &decoded) != DXPU_MGMT_ERR_OK) {
    ActionResult r;
    r.id = a.id;
    r.outcome = ActionOutcome::kRefused;
    r.error = fmt::format("STATUS of {}: a malformed answer", a.box.id);
    return r;
  }
  std::map<uint16_t, dxpu_mgmt_device_entry> owners;
  const dxpu_mgmt_status_report& report = decoded.body.status_report;
  for (size_t i = 0; i < report.device_count; ++i) {
    dxpu_mgmt_device_entry e{};
    if (dxpu_mgmt_status_entry(&report, i, &e)) owners[e.device] = e;
  }
  ActionResult r = Ok(a);
  if (inventory->fabric_key) r.box_fabric_key = crypto::KeyHex(*inventory->fabric_key);
  for (const bridge::InventoryEntry& d : inventory->devices) {
    ProbedDevice p;
    p.device = d.device;
    p.box_bdf = d.box_bdf;
    p.profile = d.profile;
    if (auto o = owners.find(d.device); o != owners.end() && o->second.owner != 0) {
      p.owner_node = o->second.owner;
      p.host_bdf = o->second.host_bdf;
    }
    r.devices.push_back(std::move(p));
  }
  return r;
}

}  // namespace

ActionResult RunBridgeAction(const Action& action, const ManagementExchange& exchange) {
  switch (action.kind) {
    case ActionKind::kBridgeAssign:
      return Assign(action, exchange);
    case ActionKind::kBridgeRelease:
      return Release(action, exchange);
    case ActionKind::kBridgeProbe:
      return Probe(action, exchange);
    default:
      break;
  }
  ActionResult r;
  r.id = action.id;
  r.outcome = ActionOutcome::kRefused;
  r.error = fmt::format("{} is not a bridge step", ActionKindName(action.kind));
  return r;
}

std::optional<link::LinkAddress> ParseManagementAddress(std::string_view text) {
  if (text.starts_with("unix:") && text.size() > 5)
    return link::LinkAddress::Unix(std::string(text.substr(5)));
  if (text.starts_with("udp:")) text.remove_prefix(4);
  return bridge::ParseIpPort(text);
}

ManagementExchange SocketExchange(const std::string& management, int timeout_ms, int attempts,
                                  std::shared_ptr<bridge::ManagementSigner> signer) {
  std::optional<link::LinkAddress> target = ParseManagementAddress(management);
  return [target, management, timeout_ms, attempts, signer](dxpu_mgmt_msg request) {
    if (!target) {
      bridge::ManagementReply r;
      r.error_name = "bad-address";
      r.error = fmt::format("'{}' is not a management address", management);
      return r;
    }
    return bridge::ManagementClient(*target, timeout_ms, attempts, signer).Exchange(request);
  };
}

}  // namespace dxpu::manager
