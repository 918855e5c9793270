// port.h - what libdxgpu needs from the machinery that reaches a GPU: a "port". Three exist:
//   direct  the GPU model on an ideal local PCIe link in this process: the native baseline
//           (lib/host/direct_port.h);
//   dxpu    the userspace host proxy, DxFP sessions to one or more bridges (lib/host/proxy_port.h);
//   kernel  GPUs dxgpu.ko drives, through its character devices /dev/dxgpuN
//           (lib/host/kernel_port.h).
// A port attaches its devices before the runtime sees them: BARs placed, memory space and bus
// mastering enabled, MSI-X programmed. The runtime then drives each device through its BAR0
// registers (docs/dxgpu.md) and host memory the device can DMA.
//
// Every method is safe to call from several threads at once.
#ifndef DXPU_LIB_DXGPU_PORT_H_
#define DXPU_LIB_DXGPU_PORT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dxgpu/status.h"

namespace dxpu::dxgpu {

struct PortDeviceInfo {
  std::string profile;   // the model's profile: "dxgpu", "a100-40g", "h100-80g"
  std::string location;  // where it is: "direct", "udp:127.0.0.1:17480 dev 01:00.0"
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  uint64_t memory_bytes = 0;  // device memory (the MEM_SIZE register)
  uint16_t msix_vectors = 0;
  // Where other devices of the port reach this one's memory (from address 0) by DMA: the bus
  // address of its memory window (a BAR) and the window's size; size 0: no peer access.
  uint64_t memory_window = 0;
  uint64_t memory_window_size = 0;
};

// Pinned host memory that every device of the port may read and write by DMA: `data` for the
// host, IovaFor(device) (the same bytes) for that device's commands. Where every device reaches
// the buffer at one address (the direct and dxpu ports) that is `iova` and `device_iovas` is
// empty; where each device has its own (the kernel port: the DMA API maps a buffer for each
// device), `device_iovas` holds one per device of the port and `iova` is not an address any
// device is promised.
struct HostBuffer {
  uint8_t* data = nullptr;
  uint64_t iova = 0;
  uint64_t size = 0;
  std::vector<uint64_t> device_iovas;  // empty, or one per device of the port

  uint64_t IovaFor(size_t device) const {
    return device_iovas.empty() ? iova : device_iovas.at(device);
  }
};

class Port {
 public:
  Port() = default;
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;
  virtual ~Port() = default;

  virtual std::string_view kind() const = 0;  // "direct", "dxpu", "kernel"
  virtual size_t device_count() const = 0;
  // device < device_count().
  virtual const PortDeviceInfo& device_info(size_t device) const = 0;

  // BAR0 registers: a read is a non-posted round trip to the device, a write is posted (it
  // returns once queued; writes to one device arrive in order).
  virtual Expected<uint32_t> ReadRegister(size_t device, uint32_t offset) = 0;
  virtual Status WriteRegister(size_t device, uint32_t offset, uint32_t value) = 0;

  // Pinned host memory, zero-filled, DMA-able by every device of the port. FreeHost takes
  // what AllocHost returned; after it the devices' DMA there is refused.
  virtual Expected<HostBuffer> AllocHost(uint64_t bytes) = 0;
  virtual Status FreeHost(const HostBuffer& buffer) = 0;

  // Returns once ready() holds (ok), the device is lost (kDeviceLost), or timeout_ns passed
  // on the port's clock (kTimeout). ready() is evaluated with the device's writes to host
  // memory visible; it must be quick and must not call the port. In a simulated port this
  // is where the simulated world runs.
  virtual Status Wait(size_t device, const std::function<bool()>& ready, uint64_t timeout_ns) = 0;

  // The port's clock in ns: monotonic in real time, virtual in a simulation.
  virtual uint64_t Now() const = 0;
  // Ok while the device is usable; kDeviceLost, with why, once it is not.
  virtual Status Health(size_t device) const = 0;

  // True when Wait wakes only on the device's interrupts (a kernel driver's poll()), not on
  // its writes to host memory: the runtime's semaphore releases then ask for an interrupt
  // (SEMAPHORE_RELEASE flag bit 1, docs/dxgpu.md "Interrupts"), and INTR_ENABLE and
  // INTR_STATUS belong to the port (the runtime writes neither).
  virtual bool completion_interrupts() const { return false; }
};

}  // namespace dxpu::dxgpu

#endif  // DXPU_LIB_DXGPU_PORT_H_
