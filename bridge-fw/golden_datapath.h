// golden_datapath.h - the C++ golden model of the bridge's data plane (datapath.h): plain
// tables, the reference the RTL is checked against bit for bit.
#ifndef DXPU_BRIDGE_FW_GOLDEN_DATAPATH_H_
#define DXPU_BRIDGE_FW_GOLDEN_DATAPATH_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "bridge-fw/datapath.h"
#include "fabric/data_framing.h"

namespace dxpu::bridge {

struct GoldenDatapathConfig {
  uint16_t bridge_rid = 0x0008;  // the bridge's requester/completer ID on the box's PCIe
  uint16_t devices = 32;
  uint16_t host_slots = 64;
  uint16_t box_tags = 256;  // tags the bridge uses toward the devices, 1..1024 (10-bit tags)
  uint16_t max_pending_per_host = 64;  // one host cannot take every tag
  uint16_t dma_windows_per_device = 16;
  // A request the device has not completed by then is answered to its host with UR. PCIe's
  // default completion timeout range is 50 us to 50 ms.
  uint64_t completion_timeout_ns = 50'000'000;
  // A timed-out tag is not reused for this long, so that a late completion is recognised as
  // late (and dropped) instead of answering the tag's next request.
  uint64_t tag_quarantine_ns = 100'000'000;
};

// Why a configuration is refused, or empty.
std::string CheckConfig(const GoldenDatapathConfig& config);

// Makes a data plane configured as `config`; null with *error set when it cannot. The bridge
// takes one (BridgeBoxConfig::plane): the golden model's, or the RTL's (rtl-sim/).
using DatapathFactory = std::unique_ptr<Datapath> (*)(const GoldenDatapathConfig& config,
                                                      std::string* error);

// What a bridge's data plane is made of: the translation and checks of every TLP, and the DxFP
// framing of its hosts' sessions (datapath_choice.h names them).
struct DataPlane {
  DatapathFactory datapath = nullptr;  // null: the golden model (MakeGoldenDatapath)
  fabric::DataFramingFactory framing;  // empty: lib/core's sessions frame
};
std::unique_ptr<Datapath> MakeGoldenDatapath(const GoldenDatapathConfig& config,
                                             std::string* error);

class GoldenDatapath final : public Datapath {
 public:
  // Null, with *error set, for an invalid configuration.
  static std::unique_ptr<GoldenDatapath> Create(const GoldenDatapathConfig& config,
                                                std::string* error = nullptr);

  bool SetDevice(DeviceIndex d, const DeviceEntry& entry) override;
  bool SetBarWindow(DeviceIndex d, size_t bar, const BarWindow& window) override;
  bool AddDmaWindow(DeviceIndex d, const DmaWindow& window) override;
  void ClearDmaWindows(DeviceIndex d) override;
  size_t ReleaseDevice(DeviceIndex d, uint64_t now, std::span<Decision> out) override;
  void ReleaseHost(HostSlot host) override;

  Decision FromHost(HostSlot host, const dxpu_tlp& tlp, uint64_t now) override;
  Decision FromDevice(DeviceIndex d, const dxpu_tlp& tlp, uint64_t now) override;
  size_t Expire(uint64_t now, std::span<Decision> out) override;
  uint64_t NextDeadline() const override;

  DatapathCounters counters() const override;

 private:
  // A host's request waiting for a device, indexed by its box tag.
  struct Pending {
    bool in_use = false;
    HostSlot host = kNoHost;
    DeviceIndex device = 0;
    uint16_t host_requester = 0;
    uint16_t host_tag = 0;
    uint16_t remaining = 0;  // bytes still to complete (Byte Count of the next completion)
    uint8_t lower_addr = 0;  // Lower Address of the next completion
    uint64_t deadline = 0;   // completion timeout
  };
  struct Device {
    DeviceEntry entry;
    std::array<BarWindow, kMaxBars> bars{};
    std::vector<DmaWindow> dma;  // sorted by device_base, disjoint
  };
  // One BAR window in a host's sorted lookup table.
  struct HostWindow {
    uint64_t host_base = 0;
    uint64_t size = 0;
    uint64_t device_base = 0;
    DeviceIndex device = 0;
  };
  struct Quarantined {
    uint16_t tag = 0;
    uint64_t until = 0;
  };

  explicit GoldenDatapath(const GoldenDatapathConfig& config);

  // At most 4096 (CheckConfig), so a DeviceIndex counts them.
  DeviceIndex device_count() const { return static_cast<DeviceIndex>(devices_.size()); }

  Decision HostConfig(HostSlot host, const dxpu_tlp& tlp, uint64_t now);
  Decision HostMemory(HostSlot host, const dxpu_tlp& tlp, uint64_t now);
  Decision HostCompletion(HostSlot host, const dxpu_tlp& tlp);
  Decision DeviceCompletion(DeviceIndex d, const dxpu_tlp& tlp);
  Decision DeviceMemory(DeviceIndex d, const dxpu_tlp& tlp);
  Decision PeerCompletion(DeviceIndex d, const dxpu_tlp& tlp);

  // A device `host` holds and presents at host_rid, or nullptr.
  const Device* HostDevice(HostSlot host, uint16_t host_rid, DeviceIndex* index) const;
  // The window of `host`'s devices holding [addr, addr + len), or nullptr.
  const HostWindow* FindBarWindow(HostSlot host, uint64_t addr, uint64_t len) const;
  void RebuildHostWindows(HostSlot host);
  // Takes a box tag for a request of host's, recording what its completions need.
  bool AllocTag(HostSlot host, DeviceIndex d, const dxpu_tlp& request, uint64_t now, uint16_t* tag);
  // A request completed: its tag is free at once.
  void FreeTag(uint16_t tag);
  // A request ended without its last completion (timeout, release): its tag rests in
  // quarantine, so that a late completion is dropped instead of answering a new request.
  void Abandon(Pending& p);
  // The UR completion answering the rest of a pending request, to its host.
  Decision TimeoutCompletion(const Pending& p);

  Decision Refuse(const dxpu_tlp& request, Refusal why, Route answer_to, uint16_t port,
                  uint16_t completer);
  Decision Drop(Refusal why);
  Decision Count(Decision d);

  GoldenDatapathConfig config_;
  std::vector<Device> devices_;
  std::vector<std::vector<HostWindow>> host_windows_;  // per host, sorted by host_base
  std::vector<uint16_t> host_pending_;                 // per host: requests outstanding
  std::vector<Pending> pending_;                       // per box tag
  std::vector<uint16_t> free_tags_;
  std::deque<Quarantined> quarantine_;
  DatapathCounters counters_;
  uint64_t now_ = 0;  // the latest time any call brought (control calls have none)
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_GOLDEN_DATAPATH_H_
