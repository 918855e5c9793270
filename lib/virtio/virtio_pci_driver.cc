// virtio_pci_driver.cc - the driver's probe, negotiation, ring layout and submission.
#include "virtio/virtio_pci_driver.h"

#include "virtio/little_endian.h"
#include "virtio/virtio_pci_regs.h"

namespace dxpu::virtio {

bool VirtioPciDriver::Probe() {
  const uint32_t command = bus_.ConfigRead32(0x04);
  if (((command >> 16) & 0x10u) == 0) return false;
  uint32_t at = bus_.ConfigRead32(0x34) & 0xfcu;
  for (int steps = 0; steps < 48 && at >= 0x40; ++steps) {
    const uint32_t header = bus_.ConfigRead32(static_cast<uint16_t>(at));
    if ((header & 0xffu) == 0x09) {
      const auto type = static_cast<uint8_t>(header >> 24);
      StructureLocation s{
          .bar = static_cast<uint8_t>(bus_.ConfigRead32(static_cast<uint16_t>(at + 4)) & 0xffu),
          .offset = bus_.ConfigRead32(static_cast<uint16_t>(at + 8)),
          .length = bus_.ConfigRead32(static_cast<uint16_t>(at + 12)),
          .cap = static_cast<uint16_t>(at)};
      switch (type) {
        case kCapCommonCfg:
          common = s;
          break;
        case kCapNotifyCfg:
          notify = s;
          notify_multiplier = bus_.ConfigRead32(static_cast<uint16_t>(at + 16));
          break;
        case kCapIsrCfg:
          isr = s;
          break;
        case kCapDeviceCfg:
          device = s;
          break;
        case kCapPciCfg:
          pci_cfg = s;
          break;
        default:
          break;
      }
    }
    at = (header >> 8) & 0xfcu;
  }
  return common && notify && isr && device && pci_cfg;
}

uint64_t VirtioPciDriver::Address(const StructureLocation& s, uint32_t offset) const {
  return bus_.BarAddress(s.bar) + s.offset + offset;
}

uint64_t VirtioPciDriver::MmioRead(uint64_t address, uint32_t size) {
  if (size == 8) return MmioRead(address, 4) | (MmioRead(address + 4, 4) << 32);
  return bus_.MmioRead(address, size);
}

void VirtioPciDriver::MmioWrite(uint64_t address, uint32_t size, uint64_t value) {
  if (size == 8) {
    MmioWrite(address, 4, value & 0xffffffffu);
    MmioWrite(address + 4, 4, value >> 32);
    return;
  }
  std::vector<uint8_t> bytes;
  AppendLe(bytes, value, static_cast<int>(size));
  bus_.MmioWrite(address, bytes);
}

uint64_t VirtioPciDriver::ReadCommon(uint32_t offset, uint32_t size) {
  return MmioRead(Address(*common, offset), size);
}
void VirtioPciDriver::WriteCommon(uint32_t offset, uint32_t size, uint64_t value) {
  MmioWrite(Address(*common, offset), size, value);
  bus_.Settle();
}
uint32_t VirtioPciDriver::ReadDeviceConfig(uint32_t offset, uint32_t size) {
  return static_cast<uint32_t>(MmioRead(Address(*device, offset), size));
}
uint8_t VirtioPciDriver::ReadIsr() { return static_cast<uint8_t>(MmioRead(Address(*isr, 0), 1)); }

uint64_t VirtioPciDriver::device_features() {
  WriteCommon(kDeviceFeatureSelect, 4, 0);
  const uint64_t lo = ReadCommon(kDeviceFeature, 4);
  WriteCommon(kDeviceFeatureSelect, 4, 1);
  return lo | (ReadCommon(kDeviceFeature, 4) << 32);
}

uint8_t VirtioPciDriver::Negotiate(uint64_t wanted) {
  WriteCommon(kDeviceStatus, 1, 0);
  WriteCommon(kDeviceStatus, 1, kStatusAcknowledge);
  WriteCommon(kDeviceStatus, 1, kStatusAcknowledge | kStatusDriver);
  const uint64_t take = device_features() & wanted;
  WriteCommon(kDriverFeatureSelect, 4, 0);
  WriteCommon(kDriverFeature, 4, take & 0xffffffffu);
  WriteCommon(kDriverFeatureSelect, 4, 1);
  WriteCommon(kDriverFeature, 4, take >> 32);
  WriteCommon(kDeviceStatus, 1, kStatusAcknowledge | kStatusDriver | kStatusFeaturesOk);
  return status();
}

namespace {
// The used ring's offset from the queue's base: on the 4 KiB boundary after the avail ring.
uint64_t UsedOffset(uint16_t size) {
  return (uint64_t{size} * kDescSize + 6 + 2 * uint64_t{size} + 0xfff) & ~uint64_t{0xfff};
}
}  // namespace

uint64_t VirtioPciDriver::QueueBytes(uint16_t size) {
  return UsedOffset(size) + 6 + uint64_t{kUsedElemSize} * size;
}

void VirtioPciDriver::SetupQueue(uint16_t q, uint16_t size, uint64_t base, uint16_t vector) {
  Queue& queue = queues_.at(q);
  queue = Queue{.size = size,
                .desc = base,
                .avail = base + uint64_t{size} * kDescSize,
                .used = base + UsedOffset(size)};
  // Fresh rings: zeros (flags, idx).
  Write(queue.avail, std::vector<uint8_t>(6 + 2 * size, 0));
  Write(queue.used, std::vector<uint8_t>(6 + 8 * size, 0));
  WriteCommon(kQueueSelect, 2, q);
  WriteCommon(kQueueSize, 2, size);
  WriteCommon(kQueueMsixVector, 2, vector);
  WriteCommon(kQueueDesc, 8, queue.desc);
  WriteCommon(kQueueDriver, 8, queue.avail);
  WriteCommon(kQueueDevice, 8, queue.used);
  WriteCommon(kQueueEnable, 2, 1);
}

void VirtioPciDriver::DriverOk() { WriteCommon(kDeviceStatus, 1, status() | kStatusDriverOk); }

std::vector<uint8_t> VirtioPciDriver::Read(uint64_t address, size_t length) {
  std::vector<uint8_t> out(length);
  bus_.MemoryRead(address, out);
  return out;
}

void VirtioPciDriver::WriteDescriptor(uint64_t table, uint16_t index, const Buffer& b,
                                      uint16_t flags, uint16_t next) {
  std::vector<uint8_t> d;
  AppendLe(d, b.address, 8);
  AppendLe(d, b.length, 4);
  AppendLe(d, flags | (b.writable ? kDescFlagWrite : 0), 2);
  AppendLe(d, next, 2);
  Write(table + uint64_t{index} * kDescSize, d);
}

void VirtioPciDriver::MakeAvailable(uint16_t q, uint16_t head) {
  Queue& queue = queues_.at(q);
  std::vector<uint8_t> entry;
  AppendLe(entry, head, 2);
  Write(queue.avail + kAvailRing + uint64_t{2} * (queue.avail_idx % queue.size), entry);
  ++queue.avail_idx;
  std::vector<uint8_t> idx;
  AppendLe(idx, queue.avail_idx, 2);
  Write(queue.avail + 2, idx);
}

uint16_t VirtioPciDriver::Submit(uint16_t q, std::span<const Buffer> chain,
                                 std::optional<uint64_t> indirect_table, bool kick) {
  Queue& queue = queues_.at(q);
  const uint16_t head = queue.next_desc;
  if (indirect_table) {
    for (size_t i = 0; i < chain.size(); ++i) {
      const bool last = i + 1 == chain.size();
      WriteDescriptor(*indirect_table, static_cast<uint16_t>(i), chain[i], last ? 0 : kDescFlagNext,
                      static_cast<uint16_t>(i + 1));
    }
    WriteDescriptor(queue.desc, head,
                    {*indirect_table, static_cast<uint32_t>(chain.size() * kDescSize), false},
                    kDescFlagIndirect, 0);
    queue.next_desc = static_cast<uint16_t>((head + 1) % queue.size);
  } else {
    for (size_t i = 0; i < chain.size(); ++i) {
      const auto index = static_cast<uint16_t>((head + i) % queue.size);
      const bool last = i + 1 == chain.size();
      WriteDescriptor(queue.desc, index, chain[i], last ? 0 : kDescFlagNext,
                      static_cast<uint16_t>((index + 1) % queue.size));
    }
    queue.next_desc = static_cast<uint16_t>((head + chain.size()) % queue.size);
  }
  MakeAvailable(q, head);
  if (kick) Kick(q);
  return head;
}

void VirtioPciDriver::Kick(uint16_t q) { MmioWrite(Address(*notify, q * notify_multiplier), 2, q); }

uint16_t VirtioPciDriver::used_idx(uint16_t q) {
  return LoadLe16(Read(queues_.at(q).used + kUsedIdx, 2), 0);
}

UsedElem VirtioPciDriver::used(uint16_t q, uint16_t i) {
  const Queue& queue = queues_.at(q);
  const std::vector<uint8_t> e =
      Read(queue.used + kUsedRing + uint64_t{kUsedElemSize} * (i % queue.size), 8);
  return {LoadLe32(e, 0), LoadLe32(e, 4)};
}

bool VirtioPciDriver::WaitUsed(uint16_t q, uint16_t count) {
  return bus_.WaitUntil([&] { return static_cast<uint16_t>(used_idx(q) - count) < 0x8000; });
}

}  // namespace dxpu::virtio
