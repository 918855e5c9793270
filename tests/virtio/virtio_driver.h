// virtio_driver.h - an in-process virtio PCI driver for the tests, over lib/gpu's TestHost:
// it finds the virtio structures by walking the capability list, negotiates features, sets
// up split rings in the host's memory, submits descriptor chains (direct or through an
// indirect table), notifies, and waits for the used ring, as Linux's virtio_pci and
// virtio_ring do (without their cleverness: one chain's descriptors are laid out from the
// queue's next free slot, in order).
#ifndef DXPU_TESTS_VIRTIO_VIRTIO_DRIVER_H_
#define DXPU_TESTS_VIRTIO_VIRTIO_DRIVER_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "gpu/test_host.h"

namespace dxpu::virtio::test {

struct Buffer {
  uint64_t address = 0;
  uint32_t length = 0;
  bool writable = false;
};

struct UsedElem {
  uint32_t id = 0;
  uint32_t len = 0;
};

struct StructureLocation {
  uint8_t bar = 0;
  uint32_t offset = 0;
  uint32_t length = 0;
  uint16_t cap = 0;  // where its capability sits
};

class VirtioDriver {
 public:
  explicit VirtioDriver(gpu::TestHost& host) : host_(host) {}

  // Enumerate (BARs, MSI-X) and find the structures; false when one is missing.
  bool Probe();
  std::optional<StructureLocation> common, notify, isr, device, pci_cfg;
  uint32_t notify_multiplier = 0;

  // Accesses of 1, 2 or 4 bytes (8: two 4-byte accesses, low first).
  uint64_t ReadCommon(uint32_t offset, uint32_t size);
  void WriteCommon(uint32_t offset, uint32_t size, uint64_t value);
  uint32_t ReadDeviceConfig(uint32_t offset, uint32_t size);
  uint8_t ReadIsr();
  uint8_t status() { return static_cast<uint8_t>(ReadCommon(0x14, 1)); }

  // Reset, ACKNOWLEDGE, DRIVER, the offered features & `wanted`, FEATURES_OK; the status
  // read back (FEATURES_OK set when the device took them).
  uint64_t device_features();
  uint8_t Negotiate(uint64_t wanted);
  // Queue `q` with `size` entries at `base` (desc, then avail, then used 4 KiB later), its
  // MSI-X vector, enabled.
  void SetupQueue(uint16_t q, uint16_t size, uint64_t base, uint16_t vector);
  void DriverOk();

  // Lays the chain out in the queue's table (or an indirect table at `indirect_table`),
  // makes its head available, and notifies unless `notify` is false. Returns the head.
  uint16_t Submit(uint16_t q, std::span<const Buffer> chain,
                  std::optional<uint64_t> indirect_table = {}, bool kick = true);
  void Kick(uint16_t q);
  // Runs until used->idx reaches `count` (from setup) or nothing moves; whether it did.
  bool WaitUsed(uint16_t q, uint16_t count);
  uint16_t used_idx(uint16_t q);
  UsedElem used(uint16_t q, uint16_t i);

  // Writes raw descriptors (tests that build bad chains).
  void WriteDescriptor(uint64_t table, uint16_t index, const Buffer& b, uint16_t flags,
                       uint16_t next);
  void MakeAvailable(uint16_t q, uint16_t head);

  struct Queue {
    uint16_t size = 0;
    uint64_t desc = 0, avail = 0, used = 0;
    uint16_t next_desc = 0;
    uint16_t avail_idx = 0;
  };
  Queue& queue(uint16_t q) { return queues_.at(q); }
  gpu::TestHost& host() { return host_; }

  void Write(uint64_t address, std::span<const uint8_t> bytes);
  std::vector<uint8_t> Read(uint64_t address, size_t length);

 private:
  uint64_t Address(const StructureLocation& s, uint32_t offset) const;
  uint64_t MmioRead(uint64_t address, uint32_t size);
  void MmioWrite(uint64_t address, uint32_t size, uint64_t value);

  gpu::TestHost& host_;
  std::vector<Queue> queues_ = std::vector<Queue>(64);
};

}  // namespace dxpu::virtio::test

#endif  // DXPU_TESTS_VIRTIO_VIRTIO_DRIVER_H_
