// gpu_driver.cc - a host's driver for a borrowed dxgpu, for bridge tests (gpu_driver.h).
#include "gpu_driver.h"

#include <cstring>

namespace dxpu::test {
namespace {

using gpu::regs::kControl;
using gpu::regs::kGpfifoBaseHi;
using gpu::regs::kGpfifoBaseLo;
using gpu::regs::kGpfifoEntries;
using gpu::regs::kGpPut;
constexpr uint32_t kRingEntries = 64;
constexpr uint32_t kPushbufferBytes = 4096;

uint32_t Lo(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t Hi(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

}  // namespace

Pushbuffer& Pushbuffer::Copy(bool src_host, bool dst_host, uint64_t size, uint64_t src,
                             uint64_t dst) {
  const uint32_t flags = (src_host ? gpu::kCopySrcHost : 0U) | (dst_host ? gpu::kCopyDstHost : 0U);
  builder_.Copy({flags, size, src, dst});
  return *this;
}

Pushbuffer& Pushbuffer::Semaphore(uint64_t addr, uint64_t payload, bool interrupt, bool timestamp,
                                  bool payload64) {
  const uint32_t flags = (payload64 ? gpu::kSemaphore64 : 0U) |
                         (interrupt ? gpu::kSemaphoreInterrupt : 0U) |
                         (timestamp ? gpu::kSemaphoreTimestamp : 0U);
  builder_.Semaphore({addr, payload, flags});
  return *this;
}

Pushbuffer& Pushbuffer::Interrupt(uint32_t vector) {
  builder_.Interrupt(vector);
  return *this;
}

Pushbuffer& Pushbuffer::Memset32(uint64_t dst, uint32_t count, uint32_t value) {
  builder_.Memset32({dst, count, value});
  return *this;
}

Pushbuffer& Pushbuffer::Axpy(uint32_t n, float a, uint64_t x, uint64_t y) {
  builder_.Axpy({n, a, x, y});
  return *this;
}

Pushbuffer& Pushbuffer::Gemm(uint32_t m, uint32_t n, uint32_t k, float alpha, float beta,
                             uint64_t a, uint64_t b, uint64_t c) {
  builder_.Gemm({m, n, k, alpha, beta, a, b, c});
  return *this;
}

Pushbuffer& Pushbuffer::ReduceSum(uint32_t n, uint64_t x, uint64_t out) {
  builder_.ReduceSum({n, x, out});
  return *this;
}

Pushbuffer& Pushbuffer::Raw(uint32_t dw) {
  builder_.Raw(dw);
  return *this;
}

GpuDriver::GpuDriver(BoxWorld& world, TestHost& host, uint16_t bdf, DriverLayout layout)
    : world_(world), host_(host), bdf_(bdf), layout_(layout), bar_sizes_(6, 0) {}

std::string GpuDriver::BringUp(bridge::DeviceIndex device) {
  // Size every BAR the way the PCI core does: write all-ones, read back, restore.
  uint64_t next_other = 0x30'0000'0000;
  uint64_t largest = 0;
  for (uint16_t i = 0; i < 6; ++i) {
    const auto reg = static_cast<uint16_t>(0x10 + 4 * i);
    if (!world_.CfgWrite(host_, bdf_, reg, 0xffffffff)) return "BAR write refused";
    const auto lo = world_.CfgRead(host_, bdf_, reg);
    if (!lo) return "BAR read failed";
    if (*lo == 0) continue;
    uint64_t mask = *lo & ~0xfULL;
    const bool is64 = ((*lo >> 1) & 3U) == 2;
    if (is64) {
      world_.CfgWrite(host_, bdf_, reg + 4, 0xffffffff);
      const auto hi = world_.CfgRead(host_, bdf_, reg + 4);
      if (!hi) return "BAR upper read failed";
      mask |= uint64_t{*hi} << 32;
    } else {
      mask |= 0xffff'ffff'0000'0000ULL;
    }
    const uint64_t size = ~mask + 1;
    bar_sizes_[i] = size;
    uint64_t place = 0;
    if (!is64) {
      place = layout_.bar0 + (i == 0 ? 0 : size * i);
    } else if (size > largest) {
      largest = size;
      mem_bar_ = static_cast<uint8_t>(i);
      place = layout_.bar_mem;
    } else {
      next_other = (next_other + size - 1) & ~(size - 1);
      place = next_other;
      next_other += size;
    }
    world_.CfgWrite(host_, bdf_, reg, Lo(place));
    if (is64) world_.CfgWrite(host_, bdf_, reg + 4, Hi(place));
    if (is64) ++i;
  }
  if (!world_.CfgWrite(host_, bdf_, 0x04, 0x0006)) return "Command write refused";
  host_.AddMemory(layout_.ring, layout_.control_size);
  host_.SetInterruptRange(layout_.msi, 0x10'0000);
  bridge::BridgeBox& box = world_.box();
  if (box.GrantDma(device, {layout_.ring, layout_.ring, layout_.control_size}) !=
          bridge::ManageResult::kOk ||
      box.GrantDma(device, {layout_.msi, layout_.msi, 0x10'0000}) != bridge::ManageResult::kOk)
    return "DMA grant refused";
  if (!Write(kGpfifoBaseLo, Lo(layout_.ring)) || !Write(kGpfifoBaseHi, Hi(layout_.ring)) ||
      !Write(kGpfifoEntries, kRingEntries) || !Write(kControl, 1))
    return "channel set-up failed";
  return "";
}

std::optional<uint32_t> GpuDriver::Read(uint32_t reg) {
  return world_.MemRead32(host_, layout_.bar0 + reg);
}

bool GpuDriver::Write(uint32_t reg, uint32_t value) {
  return host_.MemWrite32(layout_.bar0 + reg, value);
}

bool GpuDriver::Submit(const Pushbuffer& pb) {
  const auto& words = pb.words();
  if (words.size() * 4 > kPushbufferBytes) return false;
  const uint64_t pb_addr =
      layout_.pushbuffers + uint64_t{next_pb_++ % kRingEntries} * kPushbufferBytes;
  std::span<uint8_t> dst = host_.Memory(pb_addr, words.size() * 4);
  if (dst.empty()) return false;
  std::memcpy(dst.data(), words.data(), words.size() * 4);
  std::span<uint8_t> entry = host_.Memory(layout_.ring + uint64_t{put_ % kRingEntries} * 16, 16);
  const uint64_t addr = pb_addr;
  const auto len = static_cast<uint32_t>(words.size() * 4);
  const uint32_t flags = 0;
  std::memcpy(entry.data(), &addr, 8);
  std::memcpy(entry.data() + 8, &len, 4);
  std::memcpy(entry.data() + 12, &flags, 4);
  ++put_;
  return Write(kGpPut, put_ % kRingEntries);
}

bool GpuDriver::WaitSemaphore(uint64_t addr, uint32_t value, uint64_t limit_ns) {
  std::span<uint8_t> sem = host_.Memory(addr, 4);
  if (sem.empty()) return false;
  return world_.RunUntil(
      [&] {
        uint32_t v = 0;
        std::memcpy(&v, sem.data(), 4);
        return v == value;
      },
      limit_ns);
}

bool GpuDriver::Run(Pushbuffer pb, uint64_t limit_ns) {
  ++sequence_;
  pb.Semaphore(layout_.semaphores, sequence_);
  if (!Submit(pb)) return false;
  return WaitSemaphore(layout_.semaphores, sequence_, limit_ns);
}

}  // namespace dxpu::test
