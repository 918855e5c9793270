// virtio_pci_driver.h - the driver's side of the modern virtio PCI transport, over any bus that
// reaches a function: it finds the virtio structures by walking the capability list,
// negotiates features, lays split rings out in the host's memory, submits descriptor chains
// (direct or through an indirect table), notifies, and reads the used ring, as Linux's
// virtio_pci and virtio_ring do (without their cleverness: one chain's descriptors are laid out
// from the queue's next free slot, in order). The virtio tests drive the devices with it over
// lib/gpu's TestHost; `dxpu bench virtio` over a host port, natively and through DxPU.
#ifndef DXPU_LIB_VIRTIO_VIRTIO_PCI_DRIVER_H_
#define DXPU_LIB_VIRTIO_VIRTIO_PCI_DRIVER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace dxpu::virtio {

// How the driver reaches its function: configuration reads, MMIO to its BARs (placed, memory
// space and bus mastering enabled, MSI-X programmed by whoever made the bus), and the host
// memory the function reaches by DMA at the same addresses.
class DriverBus {
 public:
  DriverBus() = default;
  DriverBus(const DriverBus&) = delete;
  DriverBus& operator=(const DriverBus&) = delete;
  virtual ~DriverBus() = default;

  // The DW holding `offset`; all-ones when the read fails.
  virtual uint32_t ConfigRead32(uint16_t offset) = 0;
  // Where the BAR was placed (0: no such BAR).
  virtual uint64_t BarAddress(uint8_t bar) const = 0;
  // A read of 1, 2 or 4 bytes, little-endian; all-ones when it fails.
  virtual uint64_t MmioRead(uint64_t address, uint32_t size) = 0;
  // A posted write of the bytes (1, 2 or 4).
  virtual void MmioWrite(uint64_t address, std::span<const uint8_t> bytes) = 0;
  // Host memory, at the addresses the function's DMA uses.
  virtual void MemoryWrite(uint64_t address, std::span<const uint8_t> bytes) = 0;
  virtual void MemoryRead(uint64_t address, std::span<uint8_t> out) = 0;
  // Returns true once done() holds (evaluated where the function's writes to host memory are
  // visible), false when the bus gives up (nothing left to run, a timeout, the device lost).
  virtual bool WaitUntil(const std::function<bool()>& done) = 0;
  // After each write to the common configuration: a bus that runs the function itself lets
  // it take the write before the driver goes on.
  virtual void Settle() {}
};

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

class VirtioPciDriver {
 public:
  explicit VirtioPciDriver(DriverBus& bus) : bus_(bus) {}

  // Finds the structures; false when one is missing.
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
  // The bytes SetupQueue lays out for `size` entries from its base (rings and their gap).
  static uint64_t QueueBytes(uint16_t size);
  // Queue `q` with `size` entries at `base` (desc, then avail, then used on the next 4 KiB
  // boundary), its MSI-X vector, enabled.
  void SetupQueue(uint16_t q, uint16_t size, uint64_t base, uint16_t vector);
  void DriverOk();

  // Lays the chain out in the queue's table (or an indirect table at `indirect_table`),
  // makes its head available, and notifies unless `kick` is false. Returns the head.
  uint16_t Submit(uint16_t q, std::span<const Buffer> chain,
                  std::optional<uint64_t> indirect_table = {}, bool kick = true);
  void Kick(uint16_t q);
  // Waits until used->idx reaches `count` (from setup); whether it did.
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
  DriverBus& bus() { return bus_; }

  void Write(uint64_t address, std::span<const uint8_t> bytes) { bus_.MemoryWrite(address, bytes); }
  std::vector<uint8_t> Read(uint64_t address, size_t length);

 private:
  uint64_t Address(const StructureLocation& s, uint32_t offset) const;
  uint64_t MmioRead(uint64_t address, uint32_t size);
  void MmioWrite(uint64_t address, uint32_t size, uint64_t value);

  DriverBus& bus_;
  std::vector<Queue> queues_ = std::vector<Queue>(64);
};

}  // namespace dxpu::virtio

#endif  // DXPU_LIB_VIRTIO_VIRTIO_PCI_DRIVER_H_
