// bridge_box.h - the GPU box's bridge (DxPU_PROXY), sans-IO: the DxFP sessions of the hosts
// that borrow its devices, the ownership table the management plane programs, the data
// plane between sessions and devices, and the devices themselves: PCIe functions
// (pcie/function.h) on the box's modelled PCIe, made from the configuration's device entries
// by MakeFunction (GPU models today). Time and frames go in; frames, with the peer each goes to,
// come out. The daemon (bridge_daemon.h) runs it over real links; tests run it over in-memory links
// and in the simulator (docs/bridge.md).
//
//   auto box = BridgeBox::Create(config, &error);
//   box->Assign(0, host_node, 0x0100);            // management: device 0 to a host
//   box->ReceiveFrame(now, peer, frame, tx);      // each frame from any link
//   box->Run(now, tx);                            // then: devices, timeouts, sessions
//   wake at box->NextDeadline(), Run again.
#ifndef DXPU_BRIDGE_FW_BRIDGE_BOX_H_
#define DXPU_BRIDGE_FW_BRIDGE_BOX_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "bridge-fw/box_switch.h"
#include "bridge-fw/datapath.h"
#include "bridge-fw/device_kinds.h"
#include "bridge-fw/golden_datapath.h"
#include "bridge-fw/host_auth.h"
#include "bridge-fw/virtual_bars.h"
#include "bridge-fw/write_combiner.h"
#include "core/dxfp_session.h"
#include "fabric/endpoint.h"
#include "gpu/gpu_device.h"
#include "lib/util/rate_limited_log.h"
#include "link/link_address.h"
#include "pcie/function.h"

namespace dxpu::bridge {

// Where a frame came from or goes: one of the bridge's links (numbered by the caller) and
// the peer's address on it.
struct Peer {
  uint32_t link = 0;
  link::LinkAddress address;

  bool operator==(const Peer&) const = default;
};

// A function the box holds (MakeFunction makes each kind: device_kinds.h).
struct BoxDeviceConfig {
  gpu::DeviceProfile profile;  // kGpu: the GPU model's profile
  uint16_t box_bdf = 0;        // its Bus/Device/Function on the box's PCIe
  uint64_t memory_bytes = 0;   // kGpu: 0: the profile's
  DeviceKind kind = DeviceKind::kGpu;
  VirtioBlkSettings blk = {};      // kVirtioBlk
  VirtioGpuSettings display = {};  // kVirtioGpu
};

struct BridgeBoxConfig {
  uint64_t node_id = 0;  // the bridge's identity in HELLO, non-zero
  std::vector<BoxDeviceConfig> devices;
  uint16_t max_hosts = 64;
  uint16_t box_tags = 256;
  uint16_t max_pending_per_host = 64;
  uint64_t completion_timeout_ns = 50'000'000;
  // The box's GPUs' own completion timeout for their DMA reads, which cross the fabric to a
  // host: as a PCIe Device Control 2 range C value (1 s) rather than a local link's 50 ms, so a
  // retransmission or a descheduled host proxy is not a DMA error (docs/bridge.md).
  uint64_t device_dma_timeout_ns = 1'000'000'000;
  uint64_t tag_quarantine_ns = 100'000'000;
  // The sessions' parameters (role, identity and epoch are set per session); zero-filled:
  // dxfp_session_config_defaults().
  std::optional<dxfp_session_config> session;
  uint32_t epoch = 0;  // this start's epoch; 0: drawn at random
  // The largest frame each link (by Peer::link) carries; a session on that link offers no
  // more. Links not listed: the session parameters' max_frame.
  std::vector<uint32_t> link_max_frame;
  // The box's PCIe links as peer-to-peer TLPs cross them (box_switch.h); zero: at once.
  BoxLinkConfig box_links;
  // Refusal log lines: at most `burst` per reason and host per interval.
  uint64_t refusal_log_interval_ns = 1'000'000'000;
  uint32_t refusal_log_burst = 5;
  // The data plane; default: the C++ golden model and lib/core's framing.
  DataPlane plane;
  // Host authentication (docs/protocol.md 4.12): every session authenticated and sealed, each
  // host known by its key. nullopt: plaintext sessions, anyone on the fabric may connect.
  std::optional<BoxIdentity> identity;
  // Each GPU's activity log (gpu/activity.h) with the GPU's index in `devices`; null: off.
  std::function<void(size_t device, const gpu::CommandActivity&)> gpu_activity = nullptr;
};

// What a management request came to (mgmt.h's status codes map onto these).
enum class ManageResult : uint8_t {
  kOk,
  kNoSuchDevice,
  kDeviceBusy,   // assigned to another host
  kNotAssigned,  // a DMA grant for a device no host holds
  kTableFull,    // no room for another DMA window
  kOverlap,      // the window overlaps one the device has
  kBadArgument,  // zero size, a wrapping range, node 0, a BDF the host already uses
  kQuarantined,  // ASSIGN to another node of a device whose owner's session was lost
  kNoDisplay,    // a screenshot of a device that is not a virtio-gpu
};
std::string_view ManageResultName(ManageResult r);

// What a virtio-gpu's display shows, as a PNG; frame changes whenever the image does.
struct DisplayImage {
  std::shared_ptr<const std::vector<uint8_t>> png;
  uint32_t frame = 0;
};

// kQuarantined: its owner's session was lost without RELEASE. The device keeps its owner
// (whose reconnect finds it again, as it was), and goes to no one else until a RELEASE has
// reset it and scrubbed its memory.
enum class DeviceState : uint8_t { kFree, kAssigned, kQuarantined };

// What a factory needs beside the device's own entry: the box-wide settings.
struct FunctionContext {
  uint64_t device_dma_timeout_ns = 1'000'000'000;
  // The GPU's activity log (kGpu), already bound to the device's index; null: off.
  gpu::ActivitySink gpu_activity = nullptr;
};

// The function a device entry describes, at its box BDF; null with *error set when it cannot
// be made. Each DeviceKind is one case here.
std::unique_ptr<pcie::Function> MakeFunction(const BoxDeviceConfig& entry,
                                             const FunctionContext& context, std::string* error);

// Where the box places its devices' BARs on its PCIe: 32-bit BARs from 2 GiB up to 4 GiB,
// 64-bit ones from 1 TiB, each naturally aligned.
struct BoxAddressSpace {
  uint64_t next32 = 0x8000'0000ULL;
  uint64_t next64 = uint64_t{1} << 40;

  // The address for a BAR of `size` bytes; nullopt when a 32-bit one no longer fits.
  std::optional<uint64_t> Place(uint64_t size, bool is_64bit);
};

struct DeviceStatus {
  DeviceIndex index = 0;
  std::string profile;
  uint16_t vendor_id = 0;  // the profile's PCI IDs
  uint16_t device_id = 0;
  uint64_t memory_bytes = 0;  // the device's memory (the configuration's, or the profile's)
  uint16_t box_bdf = 0;
  uint16_t host_bdf = 0;
  DeviceState state = DeviceState::kFree;
  uint64_t owner_node = 0;       // 0 when free
  bool owner_connected = false;  // the owner has a live session
  size_t dma_windows = 0;
  uint64_t resets = 0;          // FLRs on release
  uint64_t scrubbed_bytes = 0;  // device memory zeroed on release, in total
};

struct HostStatus {
  HostSlot slot = 0;
  uint64_t node = 0;
  std::string peer;
  dxfp_session_state state = DXFP_STATE_IDLE;
  size_t deferred = 0;         // requests waiting for a box tag
  bool framed = false;         // the data plane's framing (the RTL port) carries its DATA frames
  bool authenticated = false;  // its handshake proved the host's key; its frames are sealed
  bool pending = false;        // authenticated, waiting for its first sealed DATA
  dxfp_session_counters session{};
};

struct BoxCounters {
  uint64_t frames_in = 0;
  uint64_t frames_bad = 0;         // failed to parse: dropped before any session
  uint64_t frames_no_session = 0;  // for no session here (answered CLOSE, rate-limited)
  uint64_t sessions_opened = 0;
  uint64_t sessions_closed = 0;
  uint64_t hellos_refused = 0;  // no host slot free, or a HELLO the session refused
  uint64_t tlps_from_hosts = 0;
  uint64_t tlps_to_hosts = 0;
  uint64_t tlps_from_devices = 0;
  uint64_t tlps_to_devices = 0;
  uint64_t tlps_peer = 0;          // device to device in the box (peer to peer)
  uint64_t writes_combined = 0;    // device writes joined onto the one before (to a host)
  uint64_t completions_split = 0;  // pieces of host completions larger than a device's MPS
  uint64_t writes_split = 0;       // pieces of writes larger than a device's MPS (a peer's)
  uint64_t config_emulated = 0;    // BAR / Resizable BAR accesses the bridge answered itself
  uint64_t deferred = 0;           // host requests that waited for a box tag
  uint64_t host_queue_full = 0;    // a TLP for a host whose queue was full: dropped
  uint64_t releases = 0;
  uint64_t scrubbed_bytes = 0;
  uint64_t refusal_logs_suppressed = 0;
  uint64_t quarantined = 0;  // devices put in quarantine: their owner's session was lost
};

class BridgeBox {
 public:
  // The Read Completion Boundary the box keeps when it splits a host's completion.
  static constexpr uint32_t kBoxRcb = 64;
  // What a TLP counts against a device's turn besides its payload (a 4-DW header).
  static constexpr uint32_t kTlpTurnHeaderBytes = 16;
  // The most DMA windows a device has (docs/protocol.md section 15.6).
  static constexpr size_t kMaxDmaWindows = 16;
  using Transmit = std::function<void(const Peer& to, link::FramePieces frame)>;

  // Null, with *error set, for an invalid configuration.
  static std::unique_ptr<BridgeBox> Create(const BridgeBoxConfig& config, std::string* error);

  BridgeBox(const BridgeBox&) = delete;
  BridgeBox& operator=(const BridgeBox&) = delete;
  BridgeBox(BridgeBox&&) = delete;
  BridgeBox& operator=(BridgeBox&&) = delete;
  ~BridgeBox();

  // ---- data ----
  // A frame from `from` (untrusted). Stateless answers (CLOSE for an unknown session or an
  // unsupported version) go out through tx at once; everything else waits for Run().
  void ReceiveFrame(uint64_t now, const Peer& from, std::span<const uint8_t> frame,
                    const Transmit& tx);
  // Does the work due at `now`: devices' output, completion timeouts, requests that waited
  // for a tag, ended sessions; sends every frame due.
  void Run(uint64_t now, const Transmit& tx);
  // When Run() must next be called if nothing arrives; UINT64_MAX: never.
  uint64_t NextDeadline() const;

  // ---- management ----
  // Device d to the host whose sessions carry node ID `node`, presented at host_bdf. Again
  // for the same host and BDF: kOk.
  ManageResult Assign(DeviceIndex d, uint64_t node, uint16_t host_bdf);
  // Takes device d from its host: its pending requests complete with UR, then an FLR
  // through its configuration space and a scrub of its memory, so the next host finds
  // nothing of this one's. A free device: kOk.
  ManageResult Release(DeviceIndex d, uint64_t now);
  // Lets device d DMA into its owner's memory through `window` (in force on return).
  ManageResult GrantDma(DeviceIndex d, const DmaWindow& window);
  ManageResult RevokeDma(DeviceIndex d);
  // Device d's DMA windows, in the order they were granted: those of its current assignment
  // (in force while the owner's session is up; none when free). kNoSuchDevice otherwise.
  ManageResult DmaWindows(DeviceIndex d, std::vector<DmaWindow>* out) const;
  // A virtio-gpu's display as a PNG (docs/virtio-gpu.md), rendered once per frame and kept
  // until the display changes. kNoSuchDevice, kNoDisplay (not a virtio-gpu).
  ManageResult Screenshot(DeviceIndex d, DisplayImage* out);
  // Closes every session (CLOSE shutdown goes out on the next Run).
  void Shutdown(uint64_t now);
  // Fault injection: a stalled device's output is not collected (a hung GPU); its hosts'
  // requests then meet the completion timeout.
  void StallDevice(DeviceIndex d, bool stalled) { devices_.at(d).stalled = stalled; }

  // ---- host keys (docs/protocol.md 15.9: the pool manager provisions them) ----
  // For the next HELLOs; live sessions are not touched (HostAuthenticator::SetHostKey).
  HostKeyResult SetHostKey(const crypto::Key& key, uint64_t node) {
    return auth_ ? auth_->SetHostKey(key, node) : HostKeyResult::kNoIdentity;
  }
  // kOk whether or not the node had a key (*had says which); kNoIdentity without identity.
  HostKeyResult RemoveHostKey(uint64_t node, bool* had) {
    if (!auth_) return HostKeyResult::kNoIdentity;
    *had = auth_->RemoveHostKey(node);
    return HostKeyResult::kOk;
  }
  // The bridge's fabric public key, which its hosts authenticate it by; null without identity.
  const crypto::Key* fabric_public_key() const { return auth_ ? &auth_->public_key() : nullptr; }
  size_t host_keys() const { return auth_ ? auth_->host_keys() : 0; }

  // ---- inspection ----
  size_t device_count() const { return devices_.size(); }
  std::vector<DeviceStatus> Devices() const;
  std::vector<HostStatus> Hosts() const;
  uint64_t node_id() const { return config_.node_id; }  // the bridge's identity in HELLO
  const BoxCounters& counters() const { return counters_; }
  // HELLOs refused by the authentication, by reason (enum HelloRefusal); all zero without it.
  // Whether HELLOs need a cookie now (identity only: more handshakes than its budget).
  bool UnderLoad() const { return auth_ && auth_->UnderLoad(now_); }
  std::array<uint64_t, static_cast<size_t>(HelloRefusal::kCount)> hello_refusals() const {
    return auth_ ? auth_->refusals()
                 : std::array<uint64_t, static_cast<size_t>(HelloRefusal::kCount)>{};
  }
  // Sources the HELLO limit forgot early to make room (HostAuthenticator::sources_forgotten).
  uint64_t hello_sources_forgotten() const { return auth_ ? auth_->sources_forgotten() : 0; }
  DatapathCounters datapath_counters() const { return datapath_->counters(); }
  // The box-side function of device d.
  pcie::Function& function(DeviceIndex d) { return *devices_.at(d).function; }
  // Device d as the GPU it is (tests look at its memory and counters); throws
  // std::logic_error when it is another kind of function.
  gpu::GpuDevice& device(DeviceIndex d);
  uint32_t epoch() const { return epoch_; }

 private:
  // What a virtio-gpu's screenshot depends on (BridgeBox::Screenshot).
  struct DisplayKey {
    uint64_t flushes = 0;
    uint32_t resource_id = 0, width = 0, height = 0;
    bool enabled = false, cursor_visible = false;
    int32_t cursor_x = 0, cursor_y = 0;
    uint32_t cursor_resource = 0;

    bool operator==(const DisplayKey&) const = default;
  };
  struct Device {
    std::unique_ptr<pcie::Function> function;
    pcie::Identity identity;  // what it is, as made
    uint16_t box_bdf = 0;
    std::vector<pcie::Bar> box_bars;          // where the box placed its BARs
    uint16_t pcie_cap = 0;                    // PCI Express capability offset (FLR)
    uint16_t rebar_begin = 0, rebar_end = 0;  // Resizable BAR registers, [begin, end)
    // Ownership (kept while the owner's session is down: a reconnect finds it again).
    uint64_t owner_node = 0;
    uint16_t host_bdf = 0;
    VirtualBars bars;
    uint16_t host_command = 0;  // the Command register as the owner last wrote it
    std::vector<DmaWindow> grants;
    uint64_t resets = 0;
    uint64_t scrubbed_bytes = 0;
    bool stalled = false;
    bool quarantined = false;  // DeviceState::kQuarantined
    // A virtio-gpu's last screenshot and the display state it was rendered from.
    DisplayImage screenshot;
    DisplayKey screenshot_key;
  };
  struct Deferred {
    dxpu_tlp tlp{};
    std::vector<uint8_t> payload;
  };
  struct Host {
    std::unique_ptr<fabric::Endpoint> endpoint;
    Peer peer;
    uint64_t node = 0;
    uint32_t peer_session = 0;
    uint32_t peer_epoch = 0;
    bool down = false;
    // Authenticated and not yet confirmed by its first sealed DATA: it holds nothing, and a
    // live session of the same host stays in place until it is confirmed.
    bool pending = false;
    // Authenticated: the HELLO that opened it, byte for byte. Only that HELLO again is a repeat
    // (its WELCOME was lost); another frame naming the same session and epoch, both seen in the
    // clear on the wire, is a new HELLO and is checked as one.
    std::vector<uint8_t> hello;
    std::deque<Deferred> deferred;  // requests refused with kRetry, in arrival order
  };

  BridgeBox(const BridgeBoxConfig& config, std::unique_ptr<Datapath> datapath);
  bool AddDevice(const BoxDeviceConfig& dc, BoxAddressSpace& space, std::string* error);
  static void ProgramBoxBars(Device& dev);

  // Sessions.
  void OnHello(uint64_t now, const Peer& from, const dxfp_frame& f, const Transmit& tx);
  void OnAuthHello(uint64_t now, const Peer& from, const dxfp_frame& f,
                   std::span<const uint8_t> raw, const Transmit& tx);
  void ReceiveSealed(uint64_t now, const Peer& from, std::span<const uint8_t> frame);
  // hs: the opened handshake of an authenticated HELLO (the session starts pending); null:
  // plaintext.
  void OpenSession(uint64_t now, const Peer& from, const dxfp_frame& hello, uint64_t node,
                   const Transmit& tx, dxfp_noise* hs = nullptr);
  // A pending session's first sealed DATA arrived: it takes over from the host's old session.
  void ConfirmSession(HostSlot slot);
  std::optional<HostSlot> SlotOfPeer(uint32_t peer_session, uint32_t peer_epoch) const;
  uint32_t NewSessionId();
  void EndSession(HostSlot slot);
  void BindOwnedDevices(HostSlot slot);
  // Tenant hygiene (docs/bridge.md, "Quarantine"): the devices of a node whose session ended
  // without RELEASE go into quarantine; its own new session takes them out again.
  void QuarantineOwnedDevices(uint64_t node);
  void LiftQuarantine(uint64_t node);
  std::optional<HostSlot> LiveSlot(uint64_t node) const;
  void FlushHosts(uint64_t now, const Transmit& tx);

  // Host TLPs.
  void OnHostTlp(HostSlot slot, const dxpu_tlp& tlp);
  // False when the datapath answered kRetry (the request must wait).
  bool ProcessHostTlp(HostSlot slot, const dxpu_tlp& tlp, uint64_t now);
  bool InterceptConfig(HostSlot slot, const dxpu_tlp& tlp, DeviceIndex d, uint64_t now);
  void AfterConfigWrite(const dxpu_tlp& tlp, DeviceIndex d);
  std::optional<DeviceIndex> OwnedAt(HostSlot slot, uint16_t host_bdf) const;
  void RetryDeferred(uint64_t now);

  // Routing.
  // Carries out a decision about `original`; a refusal is logged naming the original.
  void Dispatch(const Decision& d, uint64_t now, const char* from_what, uint32_t from_id,
                const dxpu_tlp& original);
  bool SendToHost(HostSlot slot, const dxpu_tlp& tlp, uint64_t now);
  // Room in the host's queue for tlp, with `waiting_bytes` of a combined write before it.
  bool HostHasRoom(HostSlot slot, const dxpu_tlp& tlp, uint32_t waiting_bytes = 0) const;
  // The largest combined write one frame of the host's session carries.
  uint32_t WriteCap(HostSlot slot) const;
  // The combined write, if one is pending, into its host's queue.
  void FlushCombined(uint64_t now);
  // Every device's TLPs towards its host, the devices taking turns; whether any was sent.
  bool PumpDevices(uint64_t now);
  struct DeviceTurn {
    bool sent = false;     // it sent something
    bool more = false;     // its turn ended with more to send
    bool refused = false;  // it had more to send and its host's queue no room
  };
  // One turn of device d.
  DeviceTurn PumpDevice(DeviceIndex d, uint64_t now);
  // A TLP onto the box's PCIe to device d; a completion above its MPS in pieces.
  void DeliverToDevice(DeviceIndex d, const dxpu_tlp& tlp, uint64_t now);
  // A write of whole DWs larger than the device's MPS, cut into pieces within it; false (nothing
  // delivered) when it is not such a write.
  bool DeliverSplitWrite(DeviceIndex d, const dxpu_tlp& tlp, uint64_t now);
  // Peer-to-peer TLPs whose time has come, into their devices; true if any.
  bool DeliverPeers(uint64_t now);
  void ExpireRequests(uint64_t now);
  void LogRefusal(uint64_t now, Refusal why, const char* from_what, uint32_t from_id,
                  const dxpu_tlp& tlp);
  void UpdateBarWindows(DeviceIndex d);
  // Drops the windows of the owner's other devices that overlap `w`; whether any went.
  bool DropOverlappingWindows(DeviceIndex d, const BarWindow& w);

  BridgeBoxConfig config_;
  dxfp_session_config session_template_{};
  uint32_t epoch_ = 0;
  std::unique_ptr<Datapath> datapath_;
  std::vector<Device> devices_;
  std::vector<Host> hosts_;                            // by slot; endpoint null: free
  std::unordered_map<uint32_t, HostSlot> by_session_;  // our session ID -> slot
  std::unordered_map<uint64_t, HostSlot> by_node_;     // live sessions only
  BoxSwitch switch_;
  WriteCombiner combiner_;  // for the device being polled; empty between devices
  size_t pump_next_ = 0;    // the device whose turn comes first in the next pump
  util::RateLimitedLog refusal_log_;
  uint64_t last_close_reply_ = 0;
  uint64_t now_ = 0;  // the time of the call in progress (for callbacks)
  BoxCounters counters_;
  std::unique_ptr<HostAuthenticator> auth_;  // null: plaintext sessions
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_BRIDGE_BOX_H_
