// virtio_driver.cc - the test host's MMIO reads as the driver wants them.
#include "virtio_driver.h"

#include "virtio/little_endian.h"

namespace dxpu::virtio::test {

uint64_t TestHostBus::MmioRead(uint64_t address, uint32_t size) {
  const gpu::HostRead r = host_.MemRead(address, size);
  if (r.status != DXPU_TLP_CPL_SC || r.data.size() != size) return ~uint64_t{0};
  return LoadLe(r.data, 0, static_cast<int>(size));
}

}  // namespace dxpu::virtio::test
