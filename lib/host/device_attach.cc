// device_attach.cc - bringing up a borrowed device over the wire (device_attach.h).
#include "host/device_attach.h"

#include <fmt/format.h>

#include <bit>

#include "gpu/device_profile.h"
#include "gpu/gpu_registers.h"
#include "gpu/pci_regs.h"

namespace dxpu::host {
namespace {

namespace pci = gpu::pci;
using dxgpu::ErrorCode;
using dxgpu::Expected;
using dxgpu::Status;

constexpr uint16_t kConfigBytes = 4096;

uint16_t Shadow16(const DeviceState& d, uint16_t off) {
  return static_cast<uint16_t>(dxpu_cfg_shadow_read(&d.shadow, off & ~1U, 2));
}

uint32_t Shadow32(const DeviceState& d, uint16_t off) {
  return uint32_t{Shadow16(d, off)} | uint32_t{Shadow16(d, static_cast<uint16_t>(off + 2))} << 16;
}

// The capability with this ID in the standard list (loops and bad pointers end the walk).
std::optional<uint16_t> FindCapability(const DeviceState& d, uint8_t id) {
  if ((Shadow16(d, pci::kStatus) & pci::kStatusCapList) == 0) return std::nullopt;
  auto byte = [&](uint32_t off) { return dxpu_cfg_shadow_read(&d.shadow, off, 1); };
  auto at = static_cast<uint16_t>(byte(pci::kCapabilityList) & 0xfcU);
  for (int hops = 0; at >= 0x40 && hops < 48; ++hops) {
    if (byte(at) == id) return at;
    at = static_cast<uint16_t>(byte(at + 1U) & 0xfcU);
  }
  return std::nullopt;
}

// The whole configuration space, a DW at a time, into the device's shadow; bar_readback: what
// each BAR read back after all-ones was written to it (SizeAndPlaceBars).
Status ReadShadow(HostAccess& access, DeviceId dev,
                  const std::array<uint32_t, DXPU_CFG_BARS>& bar_readback) {
  std::array<uint8_t, kConfigBytes> space{};
  uint32_t size = kConfigBytes;
  for (uint16_t reg = 0; reg < kConfigBytes; reg += 4) {
    Expected<uint32_t> v = access.ConfigRead(dev, reg);
    if (!v.ok()) {
      // Past the first 256 bytes a function without extended space reads as not there.
      if (reg == DXPU_CFG_LEGACY_SIZE && v.status().code() == ErrorCode::kBusError) {
        size = DXPU_CFG_LEGACY_SIZE;
        break;
      }
      return v.status();
    }
    for (size_t i = 0; i < 4; ++i) space[reg + i] = static_cast<uint8_t>(*v >> (8 * i));
  }
  bool ok = false;
  access.driver().Run([&](HostProxy& proxy, uint64_t) {
    ok =
        dxpu_cfg_shadow_init(&proxy.device(dev).shadow, space.data(), size, bar_readback.data(), 0);
  });
  if (!ok) return {ErrorCode::kInternal, "the configuration space does not make a shadow"};
  return {};
}

// Whether the function is one of the GPU model's profiles (by its PCI IDs).
bool IsGpuModel(const AttachedDevice& d) {
  return gpu::FindProfile(gpu::ProfileNameForIds(d.vendor_id, d.device_id)).has_value();
}

Status SizeAndPlaceBars(HostAccess& access, DeviceId dev, BarAllocator& alloc, AttachedDevice& out,
                        std::array<uint32_t, DXPU_CFG_BARS>& readback) {
  for (uint8_t i = 0; i < 6; ++i) {
    const auto reg = static_cast<uint16_t>(pci::kBar0 + 4 * i);
    Expected<uint32_t> original = access.ConfigRead(dev, reg);
    if (!original.ok()) return original.status();
    if ((*original & pci::kBarSpaceIo) != 0) continue;  // I/O BARs are not placed
    Status s = access.ConfigWrite(dev, reg, 0xffff'ffff);
    if (!s.ok()) return s;
    Expected<uint32_t> lo = access.ConfigRead(dev, reg);
    if (!lo.ok()) return lo.status();
    readback[i] = *lo;
    if (*lo == 0) continue;
    const bool is64 = ((*lo >> 1) & 3U) == 2;
    uint64_t mask = *lo & ~uint64_t{pci::kBarMemFlags};
    if (is64) {
      if (i == 5) return {ErrorCode::kInternal, "BAR5 claims to be 64-bit"};
      s = access.ConfigWrite(dev, static_cast<uint16_t>(reg + 4), 0xffff'ffff);
      if (!s.ok()) return s;
      Expected<uint32_t> hi = access.ConfigRead(dev, static_cast<uint16_t>(reg + 4));
      if (!hi.ok()) return hi.status();
      readback[i + 1U] = *hi;
      mask |= uint64_t{*hi} << 32;
    } else {
      mask |= 0xffff'ffff'0000'0000ULL;
    }
    const uint64_t size = ~mask + 1;
    if (size == 0 || !std::has_single_bit(size))
      return {ErrorCode::kInternal,
              fmt::format("BAR{} sizes to {:#x}, not a power of two", i, size)};
    std::optional<uint64_t> place = alloc.Allocate(size, is64);
    if (!place)
      return {ErrorCode::kOutOfMemory,
              fmt::format("no room for BAR{} ({} bytes) in the host's window", i, size)};
    s = access.ConfigWrite(dev, reg, static_cast<uint32_t>(*place) | (*lo & pci::kBarMemFlags));
    if (s.ok() && is64)
      s = access.ConfigWrite(dev, static_cast<uint16_t>(reg + 4),
                             static_cast<uint32_t>(*place >> 32));
    if (!s.ok()) return s;
    out.bars[i] = {*place, size, is64, (*lo & pci::kBarMemPrefetch) != 0};
    if (is64) ++i;
  }
  // The GPU model's registers (docs/dxgpu.md); other functions (virtio) place theirs anywhere.
  if (IsGpuModel(out) && out.bars[0].size < 4096)
    return {ErrorCode::kInternal, "the device has no BAR0 registers"};
  return {};
}

// A 16-bit register write at any even offset: the DW's byte enables and lanes.
Status ConfigWrite16(HostAccess& access, DeviceId dev, uint16_t off, uint32_t value) {
  const unsigned lane = off & 3U;
  return access.ConfigWrite(dev, static_cast<uint16_t>(off & ~3U), (value & 0xffffU) << (8 * lane),
                            static_cast<uint8_t>(0x3U << lane));
}

}  // namespace

std::optional<uint64_t> BarAllocator::Allocate(uint64_t size, bool is64) {
  uint64_t& next = is64 ? next64_ : next32_;
  const uint64_t at = (next + size - 1) & ~(size - 1);
  if (at < next) return std::nullopt;
  if (!is64 && (at > kHigh32 || size > kHigh32 - at)) return std::nullopt;
  if (is64 && (at > kHigh64 || size > kHigh64 - at)) return std::nullopt;
  next = at + size;
  return at;
}

Expected<AttachedDevice> AttachDevice(HostAccess& access, DeviceId dev, BarAllocator& bars,
                                      const AttachOptions& options) {
  Expected<uint32_t> id = access.ConfigRead(dev, pci::kVendorId);
  if (!id.ok()) return id.status();
  if (*id == 0xffff'ffff || (*id & 0xffff) == 0xffff)
    return Status{ErrorCode::kNoDevice, "no function answers at the device's address"};
  AttachedDevice out;
  out.vendor_id = static_cast<uint16_t>(*id);
  out.device_id = static_cast<uint16_t>(*id >> 16);
  // Decoding off while the BARs are sized, as the PCI core does: a BAR holding all-ones must
  // not be a live window (the device may have been enabled by an earlier attach).
  // The shadow is read once the BARs hold their places (the shadow's copy of a BAR takes
  // only the address bits sizing found writable).
  std::array<uint32_t, DXPU_CFG_BARS> readback{};
  Status s = ConfigWrite16(access, dev, pci::kCommand, 0);
  if (s.ok()) s = SizeAndPlaceBars(access, dev, bars, out, readback);
  if (s.ok()) s = ReadShadow(access, dev, readback);
  if (!s.ok()) return s;

  DeviceState shadow;
  access.driver().Run([&](HostProxy& proxy, uint64_t) { shadow = proxy.device(dev); });
  if (std::optional<uint16_t> exp = FindCapability(shadow, pci::kCapIdExp)) {
    const auto devctl = static_cast<uint16_t>(*exp + pci::kExpDevCtl);
    const auto code = [](uint32_t bytes) { return uint32_t(std::countr_zero(bytes / 128)); };
    const uint32_t value =
        (Shadow16(shadow, devctl) & ~uint32_t{pci::kExpDevCtlPayload | pci::kExpDevCtlReadrq}) |
        (code(options.max_payload) << 5) | (code(options.max_read_request) << 12) |
        pci::kExpDevCtlExtTag;
    s = ConfigWrite16(access, dev, devctl, value);
    if (!s.ok()) return s;
  }
  s = ConfigWrite16(access, dev, pci::kCommand, pci::kCommandMemory | pci::kCommandMaster);
  if (!s.ok()) return s;

  if (std::optional<uint16_t> msix = FindCapability(shadow, pci::kCapIdMsix)) {
    const uint16_t flags = Shadow16(shadow, static_cast<uint16_t>(*msix + pci::kMsixFlags));
    const uint32_t table = Shadow32(shadow, static_cast<uint16_t>(*msix + pci::kMsixTable));
    const AttachedBar& bar = out.bars[table & pci::kMsixBirMask];
    out.msix_vectors = static_cast<uint16_t>((flags & pci::kMsixFlagsQsize) + 1);
    if (bar.size == 0) return Status{ErrorCode::kInternal, "the MSI-X table's BAR is not there"};
    const uint64_t base = bar.address + (table & ~pci::kMsixBirMask);
    for (uint16_t v = 0; v < out.msix_vectors; ++v) {
      const uint64_t entry = base + uint64_t{v} * pci::kMsixEntrySize;
      s = access.MemWrite32(dev, entry + 0, static_cast<uint32_t>(options.msi_address));
      if (s.ok())
        s = access.MemWrite32(dev, entry + 4, static_cast<uint32_t>(options.msi_address >> 32));
      if (s.ok()) s = access.MemWrite32(dev, entry + 8, v);
      if (s.ok()) s = access.MemWrite32(dev, entry + 12, 0);  // unmasked
      if (!s.ok()) return s;
    }
    s = ConfigWrite16(access, dev, static_cast<uint16_t>(*msix + pci::kMsixFlags),
                      pci::kMsixFlagsEnable);
    if (!s.ok()) return s;
  }

  // The GPU model's memory size (docs/dxgpu.md); other functions (virtio: no BAR0) have none.
  if (!IsGpuModel(out)) return out;
  Expected<uint32_t> lo = access.MemRead32(dev, out.bar0() + gpu::regs::kMemSizeLo);
  if (!lo.ok()) return lo.status();
  Expected<uint32_t> hi = access.MemRead32(dev, out.bar0() + gpu::regs::kMemSizeHi);
  if (!hi.ok()) return hi.status();
  out.memory_bytes = uint64_t{*lo} | uint64_t{*hi} << 32;
  return out;
}

}  // namespace dxpu::host
