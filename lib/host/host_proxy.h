// host_proxy.h - the userspace host proxy, sans-IO: what dxpu.ko does for a host, in a
// process (docs/host-proxy.md). Remote devices are reached over paths:
//   a bridge path  one DxFP session to a bridge (frames in with ReceiveFrame, out through
//                  Flush's transmit); the bridge presents each of this host's devices at a
//                  host BDF;
//   a direct path  a GPU model in this process on an ideal PCIe link (no fabric at all):
//                  the native baseline the demo and the benchmarks compare against.
// Each path is one lib/core host path (core/dxpu_hostpath.h, the code dxpu.ko runs): the
// session, tags, completion matching, request timeouts, the ordering queue, the device's DMA
// served only inside registered windows, MSI-X writes turned into interrupts, peer TLPs held
// for the proxy to forward. The proxy is its driver: it moves frames and TLPs, pulls events,
// and adds devices, a shadow of each device's configuration space, requests with results to
// collect, and DMA windows for every device.
//
// Not thread-safe: RealTimeHost (realtime_host.h) and the simulator serialise the calls.
#ifndef DXPU_LIB_HOST_HOST_PROXY_H_
#define DXPU_LIB_HOST_HOST_PROXY_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/dxpu_cfg_shadow.h"
#include "core/dxpu_hostpath.h"
#include "core/dxpu_peer.h"
#include "gpu/gpu_device.h"
#include "link/link.h"
#include "pcie/function.h"
#include "pcie/owned_tlp.h"

namespace dxpu::host {

using PathId = uint32_t;
using DeviceId = uint32_t;
using RequestId = uint64_t;

struct HostProxyOptions {
  uint64_t node_id = 1;            // this host's identity in every HELLO (bridges own by it)
  uint16_t requester_id = 0x0000;  // the host's root port
  uint32_t read_completion_boundary = 64;
  uint32_t max_payload =
      256;  // the most data a host write or a completion on a direct path carries
  // The most data one of the host's completions carries over a DxFP session, as far as the
  // session's frames allow (1024 in a 1472-byte UDP datagram, 4096 in a 9216-byte frame): a
  // device's DMA read is answered in fewer, larger TLPs, and the bridge splits them to the
  // device's MPS on the box's PCIe (docs/host-proxy.md).
  uint32_t fabric_max_payload = 4096;
  uint64_t request_timeout_ns = 1'000'000'000;  // configuration and MMIO reads
  uint64_t msi_base = 0xfee0'0000;              // the MSI range: device writes there are interrupts
  uint64_t msi_size = 0x10'0000;
  size_t queue_tlps = 4096;              // per class, in front of each session
  size_t queue_bytes = size_t{8} << 20;  // per class
};

// The result of a request once it ended.
struct RequestResult {
  uint8_t status = DXPU_TLP_CPL_SC;  // DXPU_TLP_CPL_*: UR after a timeout or link down
  std::vector<uint8_t> data;         // read data (all-ones where none arrived)
};

struct PathState {
  std::string name;  // "udp:127.0.0.1:17480", "direct"
  bool direct = false;
  bool up = false;    // established (a direct path always is)
  bool down = false;  // went down; its devices are lost
  std::string down_reason;
};

struct DeviceState {
  PathId path = 0;
  uint16_t host_bdf = 0;  // where the bridge presents it (its Requester ID on this host)
  bool lost = false;
  // Configuration space as read at attach, kept in step with every write as the device
  // applies it (lib/core/dxpu_cfg_shadow.h, what dxpu.ko's pci_ops read too).
  dxpu_cfg_shadow shadow{};
  std::map<uint32_t, uint64_t> interrupts;  // MSI-X messages received: data (vector) -> count
};

// How a direct path's TLPs travel. Unset (the default): the ideal link, handed over at once.
// Set: each TLP is given to the carrier (the simulator's modelled PCIe link), which brings it
// back later through HostProxy::DeliverToDevice / DeliverToHost. Called with the proxy
// mid-call: a carrier only queues.
struct DirectWire {
  std::function<void(const dxpu_tlp& tlp)> to_device;
  std::function<void(const dxpu_tlp& tlp)> to_host;
};

class HostProxy {
 public:
  // A frame for a bridge path's peer (valid during the call only).
  using Transmit = std::function<void(PathId path, link::FramePieces frame)>;

  explicit HostProxy(const HostProxyOptions& options);
  HostProxy(const HostProxy&) = delete;
  HostProxy& operator=(const HostProxy&) = delete;
  ~HostProxy();

  // ---- paths ----
  // A session to a bridge (this end initiates). Null id with *error on a bad configuration.
  std::optional<PathId> AddBridgePath(std::string name, const dxfp_session_config& session,
                                      std::string* error);
  // A GPU model on an ideal link; its one device is presented at host_bdf (the model's
  // Requester ID is set to it). Returns the path; the device is DeviceId device_of(path).
  std::optional<PathId> AddDirectPath(const gpu::DeviceProfile& profile, gpu::GpuOptions options,
                                      uint16_t host_bdf, std::string* error, DirectWire wire = {});
  // Any PCIe function on an ideal link (a virtio device, say), presented at host_bdf; its
  // Requester ID must be host_bdf already.
  std::optional<PathId> AddDirectFunction(std::unique_ptr<pcie::Function> device, uint16_t host_bdf,
                                          std::string* error, DirectWire wire = {});
  // A direct path's carrier delivering a TLP it was given (see DirectWire).
  void DeliverToDevice(PathId path, const dxpu_tlp& tlp, uint64_t now);
  void DeliverToHost(PathId path, const dxpu_tlp& tlp, uint64_t now);
  void Connect(PathId path, uint64_t now);
  // Closes a bridge path's session (CLOSE shutdown); its devices are lost.
  void Close(PathId path, uint64_t now);
  const PathState& path(PathId id) const { return paths_.at(id)->state; }
  size_t path_count() const { return paths_.size(); }
  // The path's lib/core state: its session, transaction layer and queues, with their counters.
  const dxpu_hostpath& core(PathId id) const { return paths_.at(id)->hp; }

  // ---- running ----
  void ReceiveFrame(PathId path, uint64_t now, std::span<const uint8_t> frame);
  // Moves everything that can move now: direct devices run, requests past their deadline
  // end, each session offers its queue and transmits the frames due.
  void Flush(uint64_t now, const Transmit& transmit);
  // When Flush next has something to do because time passed; UINT64_MAX when never.
  uint64_t NextDeadline() const;
  // Bumped whenever a request ends, an interrupt arrives or a path changes state.
  uint64_t generation() const { return generation_; }
  // Moves whenever something a waiter may be waiting for happens: generation() moves or a
  // device writes host memory (a semaphore, say). A driver wakes its waiters when it moved.
  uint64_t progress() const;

  // ---- devices ----
  DeviceId AddDevice(PathId path, uint16_t host_bdf);
  size_t device_count() const { return devices_.size(); }
  DeviceState& device(DeviceId id) { return devices_.at(id); }
  const DeviceState& device(DeviceId id) const { return devices_.at(id); }

  // ---- requests (nullopt: not sent now — the session's queue is full or the path down) ----
  std::optional<RequestId> ConfigRead(DeviceId dev, uint16_t reg, uint64_t now);
  std::optional<RequestId> ConfigWrite(DeviceId dev, uint16_t reg, uint32_t value, uint8_t be,
                                       uint64_t now);
  // One MRd: [addr, addr + len) inside one 4 KiB page, len 1..4096.
  std::optional<RequestId> MemRead(DeviceId dev, uint64_t addr, uint32_t len, uint64_t now);
  // Posted writes (split at MPS and 4 KiB), in order: the bytes queued, whole writes only (all
  // of them, or fewer when the path's queue filled: write the rest once it moved; 0 when the
  // device is lost).
  size_t MemWrite(DeviceId dev, uint64_t addr, std::span<const uint8_t> bytes);
  // The result once the request ended (and forgets it); nullopt while it is outstanding.
  std::optional<RequestResult> TakeResult(RequestId id);
  bool Done(RequestId id) const;

  // ---- peer to peer ----
  // Device `dev`'s memory window, once its BAR is programmed (size 0: none). A device's
  // memory request inside another device's window goes to that device instead of host
  // memory, and the completions of such a read go back to the device that asked: the routing
  // a root complex does between its ports (docs/host-proxy.md, "Peer to peer").
  void SetMemoryWindow(DeviceId dev, uint64_t base, uint64_t size);
  // TLPs routed peer to peer; those dropped (beyond a path's peer queue, or waiting when their
  // target's path went down).
  uint64_t peer_tlps() const;
  uint64_t peer_dropped() const;

  // ---- DMA windows: host memory every device may reach at iova ----
  // False (nothing added) if any device's path refuses it (overlap, table full).
  bool AddWindow(uint64_t iova, std::span<uint8_t> memory);
  void RemoveWindow(uint64_t iova);
  // A window only device `dev` may reach (as an IOMMU maps a buffer for one device); false if
  // its path refuses it. Not given to devices added later.
  bool AddDeviceWindow(DeviceId dev, uint64_t iova, std::span<uint8_t> memory);
  void RemoveDeviceWindow(DeviceId dev, uint64_t iova);

  // The device of a direct path.
  std::optional<DeviceId> device_of(PathId path) const;
  // Every path's counters summed.
  dxpu_host_counters Counters() const;

 private:
  struct Path {
    PathState state;
    // The host path's, 8-byte aligned; not zeroed (lib/core clears what it reads before writing:
    // tens of MiB of queues are touched only as they fill).
    std::unique_ptr<uint64_t[]> memory;
    std::unique_ptr<pcie::Function> device;  // direct path: the device on its ideal link
    DirectWire wire;                         // direct: how TLPs travel
    dxpu_hostpath hp{};
  };
  struct Pending {
    bool done = false;
    RequestResult result;
  };

  // A path's lib/core host path with the proxy's options; null (and *error) if refused.
  std::unique_ptr<Path> MakePath(const dxfp_session_config* session, std::string* error);
  void PollEvents(PathId id);
  void OnInterrupt(PathId path, uint16_t bdf, uint32_t data);
  void OnPathDown(PathId path, std::string reason);
  std::optional<RequestId> Issue(DeviceId dev, dxpu_tlp tlp, uint32_t data_bytes, uint64_t now);
  // One turn of a direct path's link: the TLPs for the device, a batch of the device's for the
  // host. True when something moved.
  bool PumpDirect(PathId id, uint64_t now);
  // A bridge path's frames due now, transmitted. True when there was one.
  bool SendFrames(PathId id, uint64_t now, const Transmit& transmit);
  // Forwards the TLPs every path holds for other paths' devices, while their targets take them.
  // True when one was forwarded (or dropped).
  bool ForwardPeers(uint64_t now);
  struct PeerTurn {
    bool moved = false;  // it forwarded (or dropped) one or more
    bool more = false;   // its turn ended with more held
  };
  // One turn of `from`'s held peer TLPs.
  PeerTurn ForwardPeersOf(Path& from, uint64_t now);
  // What one path forwards in a turn (about one jumbo frame), and what a TLP counts besides
  // its payload.
  static constexpr size_t kPeerTurnBytes = 8192;
  static constexpr size_t kPeerTurnHeaderBytes = 16;
  // Every path's host path reads the current peer table (after it moved or changed).
  void SharePeers();
  std::optional<DeviceId> FindDevice(PathId path, uint16_t bdf) const;

  HostProxyOptions options_;
  std::vector<std::unique_ptr<Path>> paths_;  // by PathId
  std::vector<DeviceState> devices_;
  // Per device (same index): its memory window (a BAR) on this host, where other devices reach
  // its memory peer to peer (size 0: none set), and its BDF; lib/core routes by it.
  std::vector<dxpu_peer> peers_;
  std::map<RequestId, Pending> requests_;
  RequestId next_request_ = 1;
  std::map<uint64_t, std::span<uint8_t>> windows_;  // by iova
  uint64_t generation_ = 0;
  size_t peer_next_ = 0;       // the path whose turn comes first in ForwardPeers
  uint64_t peer_dropped_ = 0;  // held for a target whose path went down
};

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_HOST_PROXY_H_
