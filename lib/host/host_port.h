// host_port.h - a libdxgpu Port (dxgpu/port.h) over a HostProxy and whatever runs it: the
// direct port and the dxpu port are both this class; they differ only in their paths
// (direct_port.h, proxy_port.h). Pinned host memory is page-aligned anonymous memory, given a
// bus address (IOVA) from the host's DMA range and registered as a DMA window of every device
// (or, after SeparateDeviceIovas, of each device at an IOVA of its own).
#ifndef DXPU_LIB_HOST_HOST_PORT_H_
#define DXPU_LIB_HOST_HOST_PORT_H_

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "dxgpu/port.h"
#include "host/device_attach.h"
#include "host/host_driver.h"

namespace dxpu::host {

// The host's DMA range: bus addresses pinned buffers get (above 4 GiB, below the 64-bit BARs).
inline constexpr uint64_t kDmaRangeBase = uint64_t{1} << 32;
inline constexpr uint64_t kDmaRangeSize = BarAllocator::kLow64 - kDmaRangeBase;

struct PortDevice {
  DeviceId id = 0;
  AttachedDevice attached;
  dxgpu::PortDeviceInfo info;
};

class HostPort final : public dxgpu::Port {
 public:
  // keep_alive: whatever else must outlive the port (an in-process bridge), released last.
  HostPort(std::string kind, std::unique_ptr<HostDriver> driver, std::vector<PortDevice> devices,
           std::shared_ptr<void> keep_alive = nullptr);
  ~HostPort() override;

  std::string_view kind() const override { return kind_; }
  size_t device_count() const override { return devices_.size(); }
  const dxgpu::PortDeviceInfo& device_info(size_t device) const override {
    return devices_.at(device).info;
  }
  dxgpu::Expected<uint32_t> ReadRegister(size_t device, uint32_t offset) override;
  dxgpu::Status WriteRegister(size_t device, uint32_t offset, uint32_t value) override;
  dxgpu::Expected<dxgpu::HostBuffer> AllocHost(uint64_t bytes) override;
  dxgpu::Status FreeHost(const dxgpu::HostBuffer& buffer) override;
  dxgpu::Status Wait(size_t device, const std::function<bool()>& ready,
                     uint64_t timeout_ns) override;
  uint64_t Now() const override { return driver_->Now(); }
  dxgpu::Status Health(size_t device) const override;
  bool completion_interrupts() const override { return completion_interrupts_; }

  // What completion_interrupts() says (false unless set: Wait sees the devices' writes).
  void set_completion_interrupts(bool on) { completion_interrupts_ = on; }
  // From now on each device reaches a pinned buffer at an IOVA of its own, as through an
  // IOMMU (HostBuffer::device_iovas): buffers are placed in the first `stride` bytes of the DMA
  // range, at IOVAs no device reaches, and device d reaches one at its IOVA + (d + 1) * stride.
  // A test of the runtime's per-device addresses (the kernel port's kind); call it before the
  // first AllocHost. kInvalidArgument when the devices' ranges do not fit the DMA range.
  dxgpu::Status SeparateDeviceIovas(uint64_t stride);

  HostDriver& driver() { return *driver_; }
  const PortDevice& port_device(size_t device) const { return devices_.at(device); }

 private:
  struct Pinned {
    uint8_t* data = nullptr;
    uint64_t size = 0;  // mapped bytes (whole pages)
  };

  std::string kind_;
  std::unique_ptr<HostDriver> driver_;
  std::vector<PortDevice> devices_;
  std::shared_ptr<void> keep_alive_;
  // Adds (or, with add false, removes) the buffer's DMA windows; false if one was refused
  // (none is left then).
  bool MapWindows(uint64_t iova, std::span<uint8_t> memory, bool add);

  std::mutex mu_;                      // the pinned table and the DMA range
  std::map<uint64_t, Pinned> pinned_;  // by IOVA
  uint64_t device_iova_stride_ = 0;    // 0: one IOVA for every device
  bool completion_interrupts_ = false;
};

// The model's memory window (docs/dxgpu.md): its largest 64-bit prefetchable BAR other than
// BAR0; size 0 when it has none.
AttachedBar MemoryWindow(const AttachedDevice& device);

// Attaches each device of the driver's proxy in turn (device_attach.h), describes it, and
// gives the proxy its memory window for peer-to-peer routing.
dxgpu::Expected<std::vector<PortDevice>> AttachAll(HostDriver& driver,
                                                   const std::vector<DeviceId>& devices,
                                                   const AttachOptions& options);

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_HOST_PORT_H_
