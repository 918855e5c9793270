// management_client.h - the controller's side of a bridge's management socket (docs/protocol.md
// section 15): one request, one answer, over UDP or an AF_UNIX datagram socket, retried on
// silence. Used by `dxpu bridge`, the demo and the tests; the pool manager's agent later.
#ifndef DXPU_BRIDGE_FW_MANAGEMENT_CLIENT_H_
#define DXPU_BRIDGE_FW_MANAGEMENT_CLIENT_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bridge-fw/datapath.h"
#include "bridge-fw/management_auth.h"
#include "core/dxpu_mgmt.h"
#include "link/link_address.h"

namespace dxpu::bridge {

// The answer to one request, or why there is none.
struct ManagementReply {
  std::vector<uint8_t> bytes;  // the response datagram (empty on error)
  dxpu_mgmt_msg msg{};         // decoded; msg.status is the bridge's verdict
  // "" when an answer came; otherwise "timeout" (nothing answered), "refused" (nothing listens
  // at the address: ICMP port unreachable, or an AF_UNIX socket file nobody has open),
  // "no-socket" (no socket file at an AF_UNIX path), "send", "socket", "bad-address", ...
  std::string error_name;
  std::string error;  // a sentence for people

  bool answered() const { return error_name.empty(); }
  // Answered with DXPU_MGMT_OK.
  bool ok() const { return answered() && msg.status == DXPU_MGMT_OK; }
  // "" when ok(); otherwise what went wrong, for people.
  std::string Problem() const;
};

// One device of a bridge's INVENTORY.
struct InventoryEntry {
  uint16_t device = 0;     // the bridge's device number
  uint16_t box_bdf = 0;    // where it sits on the box's PCIe
  uint16_t vendor = 0;     // PCI vendor ID
  uint16_t device_id = 0;  // PCI device ID
  uint64_t memory_bytes = 0;
  std::string profile;  // the GPU model's profile name (at most 31 characters on the wire)
};

// An X25519 public key as the management messages carry it (a host's, or the bridge's).
using FabricPublicKey = std::array<uint8_t, DXPU_MGMT_FABRIC_KEY_SIZE>;

// What a bridge says it is: its node ID (as in its HELLO), its fabric public key (a bridge with
// identity; its hosts authenticate it by that key), and its devices, in device order.
struct BridgeInventory {
  uint64_t node_id = 0;
  std::optional<FabricPublicKey> fabric_key;
  std::vector<InventoryEntry> devices;
};

// The inventory an answer to an INVENTORY request carries, decoded again from reply.bytes (so
// a copied reply is fine); nullopt, with *why set when given, when the reply has none: no
// answer, a refusal, or a response to another type.
std::optional<BridgeInventory> DecodeInventory(const ManagementReply& reply,
                                               std::string* why = nullptr);

// A device's DMA windows, from an answer to DMA_LIST: each as DMA_GRANT gave it.
struct DeviceDmaWindows {
  uint16_t device = 0;
  std::vector<DmaWindow> windows;  // at most DXPU_MGMT_DMA_LIST_MAX_WINDOWS
};

// The windows an OK answer to DMA_LIST carries, decoded again from reply.bytes; nullopt, with
// *why set when given, when the reply has none: no answer, a refusal (`unknown-type` from a
// bridge older than DMA_LIST), or a response to another type.
std::optional<DeviceDmaWindows> DecodeDmaList(const ManagementReply& reply,
                                              std::string* why = nullptr);

// The firmware report an OK answer to FW_BEGIN, FW_CHUNK, FW_STATUS or FW_COMMIT carries,
// decoded again from reply.bytes; nullopt, with *why set when given, when the reply has none:
// no answer, a refusal, or a response to another type (an OK FW_REBOOT has no report).
std::optional<dxpu_mgmt_fw_report> DecodeFwReport(const ManagementReply& reply,
                                                  std::string* why = nullptr);

// A virtio-gpu's display as a PNG, fetched in pieces; on failure `png` is empty and `reply` is
// the answer that ended it (a refusal, no answer), or `error` says what was inconsistent.
struct ScreenshotResult {
  std::vector<uint8_t> png;
  uint32_t frame = 0;  // the display's frame counter for this image
  ManagementReply reply;
  std::string error;  // for people; "" when png holds the image

  bool ok() const { return error.empty(); }
};

// What a refusal status means, for people (scripts match dxpu_mgmt_status_name).
std::string RefusalSentence(uint16_t status);

class ManagementClient {
 public:
  // With a signer, every request that changes state is signed (docs/protocol.md 15.8), each
  // attempt with a sequence number of its own; without one it goes unsigned, and a bridge
  // that trusts a key refuses it (`unauthenticated`).
  explicit ManagementClient(link::LinkAddress target, int timeout_ms = 1000, int attempts = 3,
                            std::shared_ptr<ManagementSigner> signer = nullptr)
      : target_(std::move(target)),
        timeout_ms_(timeout_ms),
        attempts_(attempts),
        signer_(std::move(signer)) {}

  // Sends the request (a fresh request ID) and waits for the response with that ID.
  ManagementReply Exchange(dxpu_mgmt_msg request) const;

  ManagementReply Assign(uint16_t device, uint16_t host_bdf, uint64_t node) const;
  ManagementReply Release(uint16_t device) const;
  ManagementReply Grant(uint16_t device, uint64_t device_base, uint64_t host_base,
                        uint64_t size) const;
  ManagementReply RevokeAll(uint16_t device) const;
  ManagementReply Status() const;
  // The bridge's node ID and devices with their profiles (DecodeInventory reads it).
  ManagementReply Inventory() const;
  // The device's DMA windows (DecodeDmaList reads them).
  ManagementReply DmaList(uint16_t device) const;
  // Which hosts may open a session (docs/protocol.md 15.9): `key` opens the next HELLOs of
  // `node` (its previous key no more); removed, the node's key opens none. Live sessions stay.
  ManagementReply SetHostKey(uint64_t node, const FabricPublicKey& key) const;
  ManagementReply RemoveHostKey(uint64_t node) const;
  // One piece of a virtio-gpu's display as a PNG, from offset (docs/protocol.md 15.10).
  ManagementReply ScreenshotPiece(uint16_t device, uint32_t offset) const;
  // The whole PNG, piece by piece; begun again (at most 3 times) when the display changed
  // between two pieces.
  ScreenshotResult Screenshot(uint16_t device) const;

  // Firmware update (docs/firmware.md). FW_BEGIN with the image's first 256 bytes; the OK
  // answer's report says where to send from (next_offset: 0, or where a transfer of the same
  // header stopped).
  ManagementReply FwBegin(std::span<const uint8_t> header, bool allow_downgrade) const;
  // 1 .. DXPU_MGMT_FW_CHUNK_MAX_DATA bytes of the image at offset, with their CRC32C.
  ManagementReply FwChunk(uint64_t offset, std::span<const uint8_t> data) const;
  ManagementReply FwStatus() const;
  ManagementReply FwCommit() const;
  // OK, then the bridge exits and its boot loader starts the committed slot.
  ManagementReply FwReboot() const;

  const link::LinkAddress& target() const { return target_; }

 private:
  // The datagram of one attempt: encoded, and signed when there is a signer; empty when it
  // cannot be encoded.
  std::vector<uint8_t> Encode(dxpu_mgmt_msg request) const;

  link::LinkAddress target_;
  int timeout_ms_;
  int attempts_;
  std::shared_ptr<ManagementSigner> signer_;
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_MANAGEMENT_CLIENT_H_
