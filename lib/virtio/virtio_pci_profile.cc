// virtio_pci_profile.cc - the profile: IDs, BARs and the capability bytes.
#include "virtio/virtio_pci_profile.h"

#include <string>
#include <vector>

#include "virtio/little_endian.h"
#include "virtio/virtio_pci_function.h"
#include "virtio/virtio_pci_regs.h"

namespace dxpu::virtio {
namespace {

// struct virtio_pci_cap from cap_len on (the model writes ID and next), plus `extra` bytes.
dxpu::gpu::CapabilityPlacement VirtioCap(uint16_t at, uint8_t cfg_type, uint8_t bar,
                                         uint32_t offset, uint32_t length,
                                         std::vector<uint8_t> extra = {}) {
  std::vector<uint8_t> b;
  b.push_back(static_cast<uint8_t>(kCapSize + extra.size()));  // cap_len
  b.push_back(cfg_type);
  b.push_back(bar);
  b.push_back(0);  // id: one structure of each type
  b.push_back(0);  // padding
  b.push_back(0);
  AppendLe(b, offset, 4);
  AppendLe(b, length, 4);
  b.insert(b.end(), extra.begin(), extra.end());
  return dxpu::gpu::CapabilityPlacement{
      .id = dxpu::gpu::CapabilityId::kVendorSpecific, .offset = at, .vendor_bytes = std::move(b)};
}

}  // namespace

uint32_t VirtioClassCode(uint16_t device_id) {
  switch (device_id) {
    case 2:
      return 0x018000;
    case 16:
      return 0x038000;
    default:
      return 0xff0000;
  }
}

dxpu::gpu::DeviceProfile VirtioProfile(const VirtioDevice& device, uint16_t msix_vectors) {
  using dxpu::gpu::CapabilityId;
  dxpu::gpu::DeviceProfile p;
  p.name = std::string(device.kind());
  p.description = "virtio " + p.name + " (modern PCI transport)";
  p.vendor_id = kVendorId;
  p.device_id = static_cast<uint16_t>(kDeviceIdBase + device.device_id());
  p.subsystem_vendor_id = kVendorId;
  p.subsystem_id = kSubsystemId;
  p.class_code = VirtioClassCode(device.device_id());
  p.revision_id = 1;
  p.bars = {
      {.index = kMsixBar, .size = kMsixBarSize},
      {.index = kStructuresBar, .size = kStructuresBarSize, .is_64bit = true, .prefetchable = true},
  };
  p.msix = {.vectors = msix_vectors,
            .table_bar = kMsixBar,
            .table_offset = 0,
            .pba_bar = kMsixBar,
            .pba_offset = kMsixPbaOffset};
  p.max_payload_supported = 512;
  p.link = {.speed = dxpu::gpu::LinkSpeed::k8GT, .width = 1};
  std::vector<uint8_t> multiplier;
  AppendLe(multiplier, kNotifyOffMultiplier, 4);
  p.capabilities = {
      {.id = CapabilityId::kPciExpress, .offset = kPciExpressCapOffset},
      {.id = CapabilityId::kPowerManagement, .offset = kPmCapOffset},
      {.id = CapabilityId::kMsix, .offset = kMsixCapOffset},
      VirtioCap(kCommonCapOffset, kCapCommonCfg, kStructuresBar, kCommonOffset, kCommonCfgSize),
      VirtioCap(kNotifyCapOffset, kCapNotifyCfg, kStructuresBar, kNotifyOffset, kRegionSize,
                multiplier),
      VirtioCap(kIsrCapOffset, kCapIsrCfg, kStructuresBar, kIsrOffset, 4),
      VirtioCap(kDeviceCapOffset, kCapDeviceCfg, kStructuresBar, kDeviceCfgOffset, kRegionSize),
      // The window's bar/offset/length/data are the transport's registers (virtio_pci_function).
      VirtioCap(kPciCfgCapOffset, kCapPciCfg, 0, 0, 0, {0, 0, 0, 0}),
  };
  return p;
}

}  // namespace dxpu::virtio
