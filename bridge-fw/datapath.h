// datapath.h - the bridge's data plane: what happens to one TLP between a host's DxFP session
// and the box's PCIe (docs/bridge.md). Two implementations share this interface: the C++
// golden model (golden_datapath.h) and the Verilated RTL (rtl-sim/datapath/rtl_datapath.h, which
// builds on this header; rtl-sim/datapath_choice.h picks one by name).
//
// The control plane programs the tables (devices, BAR windows, DMA windows, host limits); the
// data plane then decides, per TLP, where it goes and how it is rewritten:
//
//   host -> box:  ID translation (host's virtual BDF -> box BDF, requester -> the bridge),
//                 tag remapping for non-posted requests, host BAR address -> device BAR
//                 address, access control (only the owner's TLPs reach a device)
//   box -> host:  completions routed back to the session and tag that asked; device DMA
//                 translated into the owner's address space, only inside its granted windows
//   box -> box:   a device's memory request to a BAR of a device the same host holds (at the
//                 address that host gave it) goes to that device, and the completions of such
//                 a read back to the requester: peer to peer stays in the box, as behind a
//                 PCIe switch
//
// A refused non-posted request is answered with an Unsupported Request completion; a refused
// posted request or completion is dropped. Both are counted by reason.
#ifndef DXPU_BRIDGE_FW_DATAPATH_H_
#define DXPU_BRIDGE_FW_DATAPATH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/tlp_codec.h"

namespace dxpu::bridge {

// A host's session on this bridge, numbered by the bridge when the session comes up.
using HostSlot = uint16_t;
// A device behind this bridge, numbered by its configuration.
using DeviceIndex = uint16_t;

inline constexpr HostSlot kNoHost = 0xffff;
inline constexpr size_t kMaxBars = 6;

// Where a decision sends its TLP.
enum class Route : uint8_t {
  kDevice,  // onto the box's PCIe, to device `port`
  kHost,    // into host `port`'s session
  kDrop,    // nowhere (counted under `refusal`)
  kRetry,   // not now: the host holds its quota of outstanding requests; offer it again later
};

// Why a TLP was refused: answered with UR (non-posted) or dropped (posted, completions).
enum class Refusal : uint8_t {
  kNone = 0,
  kNotOwner,           // a host's TLP for a device it does not hold
  kNoBarWindow,        // a host's memory request outside its devices' BAR windows
  kNoDmaWindow,        // a device's memory request outside its owner's granted windows
  kUnowned,            // a device's request while no host holds it
  kUnexpectedCpl,      // a completion no pending request waits for (or a late one)
  kUnsupported,        // a kind the bridge does not carry (messages, Type 1 configuration)
  kCompletionTimeout,  // the device did not complete in time: UR to the host
  kMalformed,          // fields the bridge cannot route (e.g. a DMA request crossing a window)
  kCount
};

std::string_view RefusalName(Refusal r);

// One TLP's fate. `tlp` is what to send: the translated TLP (its payload pointer is the
// input's), or the completion answering a refused request.
struct Decision {
  Route route = Route::kDrop;
  uint16_t port = 0;  // DeviceIndex for kDevice, HostSlot for kHost
  Refusal refusal = Refusal::kNone;
  dxpu_tlp tlp{};
};

// A device as the control plane configures it.
struct DeviceEntry {
  uint16_t box_rid = 0;      // its Bus/Device/Function on the box's PCIe
  uint16_t host_rid = 0;     // the BDF its owner's host proxy presents
  HostSlot owner = kNoHost;  // kNoHost: in the pool, reachable by no one
};

// Host MMIO to a BAR: [host_base, host_base + size) in the owner's address space lands at
// device_base on the box's PCIe. size 0: the BAR is not mapped.
struct BarWindow {
  uint64_t host_base = 0;
  uint64_t device_base = 0;
  uint64_t size = 0;
};

// Device DMA granted by the owner: [device_base, device_base + size) as the device addresses
// it lands at host_base in the owner's address space (identity when the two are equal).
struct DmaWindow {
  uint64_t device_base = 0;
  uint64_t host_base = 0;
  uint64_t size = 0;
};

struct DatapathCounters {
  uint64_t to_device = 0;
  uint64_t to_host = 0;
  uint64_t peer = 0;       // device to device in the box (peer to peer; also in to_device)
  uint64_t retries = 0;    // kRetry decisions
  uint64_t ur_sent = 0;    // UR completions generated (refusals and timeouts)
  uint64_t dropped = 0;    // all kDrop decisions
  uint64_t pending = 0;    // requests waiting for the device now
  uint64_t tags_free = 0;  // box tags free now (quarantined ones are not free)
  std::array<uint64_t, static_cast<size_t>(Refusal::kCount)> refused{};  // by reason
};

class Datapath {
 public:
  Datapath() = default;
  Datapath(const Datapath&) = delete;
  Datapath& operator=(const Datapath&) = delete;
  Datapath(Datapath&&) = delete;
  Datapath& operator=(Datapath&&) = delete;
  virtual ~Datapath() = default;

  // ---- control plane ----
  // Adds or replaces device d's entry (ownership included). Changing the owner first
  // forgets the device's windows and fails its pending requests (see ReleaseDevice).
  virtual bool SetDevice(DeviceIndex d, const DeviceEntry& entry) = 0;
  // Maps (size 0: unmaps) BAR `bar` of device d for its owner's MMIO.
  virtual bool SetBarWindow(DeviceIndex d, size_t bar, const BarWindow& window) = 0;
  // Grants device d DMA into its owner's memory through `window`; false when the table is
  // full or the window overlaps one the device has.
  virtual bool AddDmaWindow(DeviceIndex d, const DmaWindow& window) = 0;
  virtual void ClearDmaWindows(DeviceIndex d) = 0;
  // Takes device d from its owner: windows cleared, its pending requests completed to the
  // owner with UR, owner kNoHost. `out` receives those completions (at most the pending
  // count); returns how many.
  virtual size_t ReleaseDevice(DeviceIndex d, uint64_t now, std::span<Decision> out) = 0;
  // A host's session ended: its pending requests are forgotten (their completions will be
  // dropped as unexpected) and the devices it held return to the pool.
  virtual void ReleaseHost(HostSlot host) = 0;

  // ---- data plane ----
  // A TLP from host `host`'s session (decoded and validated by lib/core).
  virtual Decision FromHost(HostSlot host, const dxpu_tlp& tlp, uint64_t now) = 0;
  // A TLP from device d on the box's PCIe.
  virtual Decision FromDevice(DeviceIndex d, const dxpu_tlp& tlp, uint64_t now) = 0;
  // Requests whose completion timeout passed: each becomes a UR completion to its host,
  // written to `out` (up to its size); returns how many. Call again while it fills `out`.
  virtual size_t Expire(uint64_t now, std::span<Decision> out) = 0;
  // When Expire() next has work; UINT64_MAX: never.
  virtual uint64_t NextDeadline() const = 0;

  virtual DatapathCounters counters() const = 0;
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_DATAPATH_H_
