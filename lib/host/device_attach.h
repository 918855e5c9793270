// device_attach.h - what a host does when a borrowed device appears, over the wire only: read
// its whole configuration space into the proxy's shadow, size each BAR (all-ones, read back,
// restore) and place it in the host's address space, set Max Payload / Max Read Request and
// Extended Tag, enable memory space and bus mastering, program every MSI-X vector to the
// proxy's MSI range (data = vector number) and enable MSI-X. The same sequence runs over any
// HostDriver: real time, or the simulator.
#ifndef DXPU_LIB_HOST_DEVICE_ATTACH_H_
#define DXPU_LIB_HOST_DEVICE_ATTACH_H_

#include <array>
#include <cstdint>
#include <optional>

#include "dxgpu/status.h"
#include "host/host_driver.h"

namespace dxpu::host {

// Where the host puts BARs: 32-bit BARs below 4 GiB, 64-bit BARs from a high window. Each
// BAR is naturally aligned. (DMA addresses live elsewhere: host_port.h.)
class BarAllocator {
 public:
  static constexpr uint64_t kLow32 = 0x8000'0000;
  static constexpr uint64_t kHigh32 = 0xf000'0000;  // below the MSI range
  static constexpr uint64_t kLow64 = uint64_t{0x40} << 32;
  static constexpr uint64_t kHigh64 = kLow64 + (uint64_t{1} << 40);  // a 1 TiB window

  std::optional<uint64_t> Allocate(uint64_t size, bool is64);

 private:
  uint64_t next32_ = kLow32;
  uint64_t next64_ = kLow64;
};

struct AttachedBar {
  uint64_t address = 0;
  uint64_t size = 0;  // 0: no BAR at this index
  bool is64 = false;
  bool prefetchable = false;
};

struct AttachedDevice {
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  std::array<AttachedBar, 6> bars{};
  uint16_t msix_vectors = 0;
  uint64_t memory_bytes = 0;  // BAR0 MEM_SIZE
  uint64_t bar0() const { return bars[0].address; }
};

struct AttachOptions {
  uint32_t max_payload = 256;
  // The largest read request PCIe allows: a device's DMA reads keep tags x MRRS bytes in
  // flight per round trip, which is what bounds host-to-device bandwidth over a fabric whose
  // round trip is microseconds (docs/host-proxy.md).
  uint32_t max_read_request = 4096;
  uint64_t msi_address = 0xfee0'0000;
};

dxgpu::Expected<AttachedDevice> AttachDevice(HostAccess& access, DeviceId dev, BarAllocator& bars,
                                             const AttachOptions& options);

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_DEVICE_ATTACH_H_
