// virtio_driver.h - the virtio driver of lib/virtio (VirtioPciDriver) over lib/gpu's TestHost:
// the tests' function runs in this thread, each wait runs it until the used ring moves or
// nothing is left to do.
#ifndef DXPU_TESTS_VIRTIO_VIRTIO_DRIVER_H_
#define DXPU_TESTS_VIRTIO_VIRTIO_DRIVER_H_

#include <cstdint>
#include <span>

#include "gpu/test_host.h"
#include "virtio/virtio_pci_driver.h"

namespace dxpu::virtio::test {

using virtio::Buffer;
using virtio::StructureLocation;
using virtio::UsedElem;

class TestHostBus final : public DriverBus {
 public:
  explicit TestHostBus(gpu::TestHost& host) : host_(host) {}
  uint32_t ConfigRead32(uint16_t offset) override { return host_.ConfigRead32(offset); }
  uint64_t BarAddress(uint8_t bar) const override { return host_.bar_address(bar); }
  uint64_t MmioRead(uint64_t address, uint32_t size) override;
  void MmioWrite(uint64_t address, std::span<const uint8_t> bytes) override {
    host_.MemWrite(address, bytes);
  }
  void MemoryWrite(uint64_t address, std::span<const uint8_t> bytes) override {
    host_.memory().Write(address, bytes);
  }
  void MemoryRead(uint64_t address, std::span<uint8_t> out) override {
    host_.memory().Read(address, out);
  }
  bool WaitUntil(const std::function<bool()>& done) override { return host_.RunUntil(done); }
  void Settle() override { host_.Pump(); }

 private:
  gpu::TestHost& host_;
};

// The bus, built before the driver that keeps a reference to it (a base from member).
struct TestHostBusHolder {
  explicit TestHostBusHolder(gpu::TestHost& host) : test_bus(host) {}
  TestHostBus test_bus;
};

class VirtioDriver : private TestHostBusHolder, public VirtioPciDriver {
 public:
  explicit VirtioDriver(gpu::TestHost& host)
      : TestHostBusHolder(host), VirtioPciDriver(test_bus), host_(host) {}
  // Enumerates (BARs, MSI-X), then probes.
  bool Probe() {
    host_.Enumerate();
    return VirtioPciDriver::Probe();
  }
  gpu::TestHost& host() { return host_; }

 private:
  gpu::TestHost& host_;
};

}  // namespace dxpu::virtio::test

#endif  // DXPU_TESTS_VIRTIO_VIRTIO_DRIVER_H_
