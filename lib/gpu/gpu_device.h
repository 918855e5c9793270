// gpu_device.h - the GPU model as a PCIe function, sans-IO: TLPs in (Receive), TLPs out
// (Poll), time given by the caller. Behind the configuration space (ConfigSpace) it has BAR0
// registers (gpu_registers.h) with the MSI-X table, a window onto device memory through its
// largest 64-bit prefetchable BAR, a command channel that fetches GPFIFO entries and
// pushbuffers from host memory by DMA, a copy engine, a compute engine timed by the profile's
// roofline, semaphores and MSI-X (docs/dxgpu.md).
//
// It is a pcie::Function (pcie/function.h): the box's data plane holds it by that interface;
// what only a GPU has (device memory, the channel) is reached through AsGpu.
//
// Not thread-safe, and not re-entrant: `emit` must not call back into the device.
#ifndef DXPU_LIB_GPU_GPU_DEVICE_H_
#define DXPU_LIB_GPU_GPU_DEVICE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/tlp_codec.h"
#include "gpu/activity.h"
#include "gpu/channel.h"
#include "gpu/config_space.h"
#include "gpu/device_profile.h"
#include "gpu/dma_engine.h"
#include "gpu/gpu_counters.h"
#include "gpu/gpu_registers.h"
#include "gpu/msix_table.h"
#include "gpu/owned_tlp.h"
#include "gpu/sparse_memory.h"
#include "pcie/function.h"

namespace dxpu::gpu {

struct GpuOptions {
  uint16_t requester_id = 0x0100;  // the function's BDF on the box's PCIe: Requester ID of its
                                   // DMA, Completer ID of its completions
  uint64_t memory_bytes = 0;       // device memory; 0: the profile's roofline.memory_bytes.
                                   // Stored sparsely (pages allocated on first write; reads of
                                   // never-written memory return zeros)
  uint16_t max_outstanding_reads = 256;         // DMA read tags in flight (1..256)
  uint64_t completion_timeout_ns = 50'000'000;  // for the device's own DMA reads
  uint32_t read_completion_boundary = 64;       // 64 or 128
  uint32_t pushbuffer_prefetch = 4;  // GPFIFO entries after the running one whose pushbuffers
                                     // the channel may fetch ahead (0..64); 0: fetching does
                                     // not overlap execution
  // The activity log (activity.h): called as each kernel and COPY finishes, with its GPFIFO
  // entry, kind, bytes and times on the channel's clock. Null (the default): nothing recorded.
  ActivitySink activity = nullptr;
};

class GpuDevice final : public pcie::Function {
 public:
  // nullptr, with *error set, for a profile ConfigSpace refuses, one without a BAR0 of at
  // least 4 KiB or with its MSI-X table or PBA outside BAR0, or options out of range.
  static std::unique_ptr<GpuDevice> Create(const DeviceProfile& profile, const GpuOptions& options,
                                           std::string* error = nullptr);

  ~GpuDevice() override = default;

  // A TLP from the box's PCIe. CfgRd0/CfgWr0 are answered with CplD/Cpl through ConfigSpace.
  // MRd/MWr are decoded against the BARs: an MRd is answered with CplDs split at the Read
  // Completion Boundary and MPS; one hitting no BAR, or with Memory Space disabled, gets UR;
  // such an MWr is dropped and counted. Cpl/CplD answer the device's own DMA reads (matched by
  // tag); anything else is counted unexpected and dropped. TLPs that fail dxpu_tlp_validate are
  // counted malformed and dropped; other kinds get UR (non-posted) or are dropped and counted.
  void Receive(const dxpu_tlp& tlp, uint64_t now) override;
  // Receive() of a TLP that is known to pass dxpu_tlp_validate: a piece the caller cut with
  // the codec's split routines from a TLP that passed it (the bridge's MPS split), so the
  // device does not check it again. Everything else goes through Receive().
  void ReceiveValidated(const dxpu_tlp& tlp, uint64_t now) override;
  // A CplD larger than MPS that passed dxpu_tlp_validate, which the box's PCIe carries to the
  // device as `pieces` TLPs (split at RCB and MPS, each as a completer would send it). When the
  // device's DMA engine takes it as the next data of a read in flight, the device takes it in
  // one step, with the same result as the pieces one by one (data, read state, counters), and
  // true is returned. Otherwise nothing happens and false is returned: the caller delivers
  // the pieces one by one, so that every error is counted as the device counts it. A
  // simulation speed-up (a burst instead of its beats); the wire does not change.
  bool ReceiveSplitCompletion(const dxpu_tlp& cpld, uint32_t pieces, uint64_t now) override;

  // Offers the TLPs the device sends now (completions, DMA reads and writes, MSI-X writes),
  // in order. `emit` returns false to stop (back-pressure: that TLP is offered again on the
  // next Poll). tlp.payload is valid during the call only. Returns how many were taken.
  size_t Poll(uint64_t now, const Emit& emit) override;

  // The earliest time Poll will have something new to do because time passed (a kernel's
  // roofline end, a DMA completion timeout); UINT64_MAX when none. Work that is ready now is
  // found by calling Poll.
  uint64_t NextDeadline() const override;

  ConfigSpace& config() { return config_; }
  const ConfigSpace& config() const { return config_; }

  // pcie::Function's configuration space, reset and status, on the model's ConfigSpace.
  // Reset: kFunctionLevel and kHot put every register back to power-on and reset the
  // engines (the model has no link state); kRelease writes Initiate FLR, then ScrubMemory.
  uint32_t ConfigReadDw(uint16_t reg) const override;
  void ConfigWriteDw(uint16_t reg, uint32_t value, uint8_t byte_enables) override;
  pcie::ConfigLayout layout() const override;
  std::vector<pcie::Bar> Bars() const override { return config_.bars(); }
  uint32_t max_payload_size() const override { return config_.max_payload_size(); }
  uint64_t Reset(pcie::ResetKind kind) override;
  pcie::Identity identity() const override;
  void VisitCounters(const CounterVisitor& visit) const override;

  // Box-management side (not reachable by hosts): zeroes all device memory and resets the
  // engines as an FLR does; returns the bytes it covered (memory_bytes()).
  uint64_t ScrubMemory();

  // Direct access to device memory (tests, the bridge's scrub check). Out of range: false.
  bool ReadMemory(uint64_t offset, std::span<uint8_t> out) const;
  bool WriteMemory(uint64_t offset, std::span<const uint8_t> in);
  uint64_t memory_bytes() const { return memory_.size(); }
  // Bytes of device memory actually allocated (touched pages).
  uint64_t resident_memory_bytes() const { return memory_.resident_bytes(); }

  const GpuCounters& counters() const { return counters_; }
  const GpuOptions& options() const { return options_; }
  // The BAR that windows device memory from offset 0: the largest 64-bit prefetchable BAR
  // other than BAR0 (dxgpu BAR2, a100-40g BAR1, h100-80g BAR2); nullopt if the profile has none.
  std::optional<uint8_t> memory_bar() const { return memory_bar_; }
  // TLPs queued for Poll.
  size_t queued_tlps() const { return out_.size(); }
  // The channel's STATUS and ERROR_CODE registers, without a bus access.
  uint32_t channel_status() const { return channel_.status(); }
  ChannelError channel_error() const { return channel_.error(); }

 private:
  GpuDevice(const GpuOptions& options, ConfigSpace config, uint64_t memory_bytes,
            std::optional<uint8_t> memory_bar);

  void OnConfigRequest(const dxpu_tlp& tlp);
  void OnMemoryRead(const dxpu_tlp& tlp, uint64_t now);
  void OnMemoryWrite(const dxpu_tlp& tlp);
  void OnCompletion(const dxpu_tlp& tlp);

  uint32_t ReadBar0(uint64_t offset, uint64_t now);
  void WriteBar0(uint64_t offset, uint32_t value, uint32_t byte_mask);
  std::optional<uint32_t> ReadDeviceRegister(uint64_t offset, uint64_t now) const;
  void WriteMemoryWindow(const dxpu_tlp& tlp, uint64_t offset);

  // Completions: CplDs of `data` (a memory read's length_dw * 4 bytes from its DW address)
  // split at the RCB and MPS, or a Cpl with `status`. Completion: the header
  // dxpu_tlp_completion_for builds (the whole request's; CplD for a read with SC).
  dxpu_tlp Completion(const dxpu_tlp& request, uint8_t status) const;
  void CompleteWithData(const dxpu_tlp& request, const std::vector<uint8_t>& data);
  void CompleteWithoutData(const dxpu_tlp& request, uint8_t status);
  void Unsupported(const dxpu_tlp& request);

  void Step(uint64_t now);
  void Signal(uint16_t vector);
  void Account(const OwnedTlp& t, const dxpu_tlp& view, uint64_t now);
  // FLR and scrub: channel registers, MSI-X table and in-flight work back to power-on.
  void ResetEngines();

  GpuOptions options_;
  ConfigSpace config_;
  SparseMemory memory_;
  std::optional<uint8_t> memory_bar_;
  GpuCounters counters_;
  GpuCounters counters_at_reset_;  // the COUNTERS registers count from here
  DmaEngine dma_;
  MsixTable msix_;
  TlpQueue out_;
  Channel channel_;
  uint64_t now_ = 0;
};

// The GPU behind a pcie::Function, or nullptr when it is another kind of function.
GpuDevice* AsGpu(pcie::Function& function);
const GpuDevice* AsGpu(const pcie::Function& function);

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_GPU_DEVICE_H_
