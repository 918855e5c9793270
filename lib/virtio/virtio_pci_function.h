// virtio_pci_function.h - a virtio device (virtio_device.h) behind the modern virtio PCI
// transport (OASIS virtio v1.2 section 4.1; no legacy interface), as a pcie::Function of the
// box (lib/pcie/function.h): configuration space with the virtio structure capabilities, BAR4
// with the common configuration, ISR, device configuration and notification regions, BAR1
// with the MSI-X table and PBA, and split virtqueues (split_virtqueue.h) that reach the
// driver's rings only by DMA. docs/virtio.md has the register layout.
//
// Sans-IO like every function: TLPs in (Receive), TLPs out (Poll), time is the caller's. Not
// thread-safe, not re-entrant.
#ifndef DXPU_LIB_VIRTIO_VIRTIO_PCI_FUNCTION_H_
#define DXPU_LIB_VIRTIO_VIRTIO_PCI_FUNCTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpu/config_space.h"
#include "gpu/msix_table.h"
#include "gpu/owned_tlp.h"
#include "pcie/function.h"
#include "virtio/guest_dma.h"
#include "virtio/split_virtqueue.h"
#include "virtio/virtio_device.h"

namespace dxpu::virtio {

struct VirtioPciOptions {
  uint16_t requester_id = 0x0100;  // the function's BDF on the box's PCIe
  uint64_t completion_timeout_ns = 50'000'000;
  uint16_t max_outstanding_reads = 64;  // DMA read tags (1..256)
  uint32_t read_completion_boundary = 64;
  ReleasePolicy release_policy = ReleasePolicy::kZero;  // what Reset(kRelease) does to contents
  VirtqueueLimits limits;
};

// The BAR layout (QEMU's): BAR4, 64-bit prefetchable, holds the virtio structures.
inline constexpr uint8_t kStructuresBar = 4;
inline constexpr uint64_t kStructuresBarSize = 0x4000;
inline constexpr uint32_t kCommonOffset = 0x0000;
inline constexpr uint32_t kIsrOffset = 0x1000;
inline constexpr uint32_t kDeviceCfgOffset = 0x2000;
inline constexpr uint32_t kNotifyOffset = 0x3000;
inline constexpr uint32_t kRegionSize = 0x1000;
inline constexpr uint32_t kNotifyOffMultiplier = 4;
inline constexpr uint16_t kMaxQueues = kRegionSize / kNotifyOffMultiplier;  // one DW each
// BAR1, 32-bit: the MSI-X table at 0, the PBA at 0x800.
inline constexpr uint8_t kMsixBar = 1;
inline constexpr uint64_t kMsixBarSize = 0x1000;
inline constexpr uint32_t kMsixPbaOffset = 0x800;

struct VirtioPciCounters : pcie::FunctionCounters {
  uint64_t notifies = 0;
  uint64_t bad_notifies = 0;      // to a queue that is absent, disabled, or before DRIVER_OK
  uint64_t features_refused = 0;  // FEATURES_OK left clear
  uint64_t needs_reset = 0;       // DEVICE_NEEDS_RESET events
  uint64_t device_resets = 0;     // status 0, FLR, hot reset
  uint64_t guest_reads = 0;       // GuestRead actions
  uint64_t guest_read_errors = 0;
  uint64_t dropped_completions = 0;  // for a queue that is gone (reset) or stopped
};

class VirtioPciFunction final : public pcie::Function {
 public:
  // nullptr, with *error set, for a device with no queues or more than kMaxQueues, a queue
  // maximum that is not a power of two in 1..32768, or options out of range.
  static std::unique_ptr<VirtioPciFunction> Create(std::unique_ptr<VirtioDevice> device,
                                                   const VirtioPciOptions& options,
                                                   std::string* error = nullptr);
  ~VirtioPciFunction() override = default;

  void Receive(const dxpu_tlp& tlp, uint64_t now) override;
  void ReceiveValidated(const dxpu_tlp& tlp, uint64_t now) override;
  size_t Poll(uint64_t now, const Emit& emit) override;
  uint64_t NextDeadline() const override;

  // Configuration space as the box sees it; the virtio PCI_CFG window's registers are the
  // transport's (an access through pci_cfg_data reads or writes the BAR it names).
  uint32_t ConfigReadDw(uint16_t reg) const override;
  void ConfigWriteDw(uint16_t reg, uint32_t value, uint8_t byte_enables) override;
  pcie::ConfigLayout layout() const override;
  std::vector<pcie::Bar> Bars() const override { return config_.bars(); }
  uint32_t max_payload_size() const override { return config_.max_payload_size(); }
  // kFunctionLevel, kHot: the function back to power-on (the device reset; contents stay).
  // kRelease: FLR, then the device's Release with the release policy; its bytes zeroed.
  uint64_t Reset(pcie::ResetKind kind) override;
  pcie::Identity identity() const override;
  void VisitCounters(const CounterVisitor& visit) const override;

  // ---- for tests and status ----
  VirtioDevice& device() { return *device_; }
  const dxpu::gpu::ConfigSpace& config() const { return config_; }
  uint8_t device_status() const { return status_; }
  uint64_t driver_features() const { return driver_features_; }
  // What the transport offers: the device's features plus VERSION_1, ACCESS_PLATFORM and
  // RING_INDIRECT_DESC.
  uint64_t offered_features() const;
  const VirtioPciCounters& counters() const { return counters_; }
  // The reason of the last DEVICE_NEEDS_RESET; empty when none since the last reset.
  const std::string& needs_reset_reason() const { return needs_reset_why_; }
  const SplitVirtqueue* queue(uint16_t index) const;

 private:
  struct QueueRegs {
    uint16_t size = 0;
    uint16_t msix_vector = 0xffff;
    bool enabled = false;
    uint64_t desc = 0;
    uint64_t driver = 0;
    uint64_t device = 0;
  };
  struct PciCfgWindow {
    uint8_t bar = 0;
    uint32_t offset = 0;
    uint32_t length = 0;
    uint32_t data = 0;
  };

  VirtioPciFunction(std::unique_ptr<VirtioDevice> device, const VirtioPciOptions& options,
                    dxpu::gpu::ConfigSpace config, uint16_t pci_cfg_cap);

  void OnConfigRequest(const dxpu_tlp& tlp);
  void OnMemoryRead(const dxpu_tlp& tlp);
  void OnMemoryWrite(const dxpu_tlp& tlp);
  void OnCompletion(const dxpu_tlp& tlp);
  void Complete(const dxpu_tlp& request, uint8_t status, const std::vector<uint8_t>* data);

  // A DW of a BAR: `mask` selects the bytes (0xff per byte). Reads may have side effects (ISR).
  uint32_t ReadBarDw(uint8_t bar, uint64_t offset, uint32_t mask);
  void WriteBarDw(uint8_t bar, uint64_t offset, uint32_t value, uint32_t mask);
  uint32_t ReadCommonDw(uint32_t offset) const;
  void WriteCommonDw(uint32_t offset, uint32_t value, uint32_t mask);
  uint32_t ReadDeviceCfgDw(uint32_t offset, uint32_t mask) const;
  void WriteDeviceCfgDw(uint32_t offset, uint32_t value, uint32_t mask);
  void Notify(uint32_t offset);

  // The PCI_CFG window (4.1.4.9): whether `reg` is its data DW, and the access.
  bool IsPciCfgData(uint16_t reg) const { return pci_cfg_cap_ != 0 && reg == pci_cfg_cap_ + 16; }
  uint32_t PciCfgOverlay(uint16_t reg, uint32_t value) const;
  void PciCfgWrite(uint16_t reg, uint32_t value, uint8_t byte_enables);
  uint32_t PciCfgDataRead();

  void WriteStatus(uint8_t value);
  void EnableQueue(uint16_t index);
  void SetNeedsReset(std::string why);
  void SignalConfig();
  void SignalQueue(uint16_t index);
  void Signal(uint16_t vector);
  // Status 0, FLR, hot reset: the device and the transport's virtio state to power-on.
  void ResetDevice();
  void Step(uint64_t now);
  void RunDevice(uint64_t now);
  void Account(const dxpu::gpu::OwnedTlp& t, const dxpu_tlp& view, uint64_t now);

  VirtioPciOptions options_;
  std::unique_ptr<VirtioDevice> device_;
  dxpu::gpu::ConfigSpace config_;
  uint16_t pci_cfg_cap_ = 0;
  PciCfgWindow pci_cfg_;
  GuestDma dma_;
  dxpu::gpu::MsixTable msix_;
  dxpu::gpu::TlpQueue out_;
  VirtioPciCounters counters_;
  uint64_t now_ = 0;

  // The common configuration.
  uint32_t device_feature_select_ = 0;
  uint32_t driver_feature_select_ = 0;
  uint64_t driver_features_ = 0;
  uint16_t config_msix_vector_ = 0xffff;
  uint8_t status_ = 0;
  uint8_t config_generation_ = 0;
  uint16_t queue_select_ = 0;
  uint8_t isr_ = 0;
  std::vector<QueueRegs> queue_regs_;
  std::vector<std::unique_ptr<SplitVirtqueue>> queues_;  // null until enabled
  std::string needs_reset_why_;
};

}  // namespace dxpu::virtio

#endif  // DXPU_LIB_VIRTIO_VIRTIO_PCI_FUNCTION_H_
