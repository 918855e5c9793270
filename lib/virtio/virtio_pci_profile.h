// virtio_pci_profile.h - the configuration space of a virtio PCI function as a lib/gpu
// DeviceProfile: IDs (4.1.2), class per device type, BAR1 (MSI-X) and BAR4 (virtio
// structures), and the capabilities: PCI Express, Power Management, MSI-X and the five
// virtio structure capabilities (4.1.4) as Vendor-Specific capabilities.
#ifndef DXPU_LIB_VIRTIO_VIRTIO_PCI_PROFILE_H_
#define DXPU_LIB_VIRTIO_VIRTIO_PCI_PROFILE_H_

#include <cstdint>

#include "gpu/device_profile.h"
#include "virtio/virtio_device.h"

namespace dxpu::virtio {

// Where the capabilities sit (docs/virtio.md has the table).
inline constexpr uint16_t kPciExpressCapOffset = 0x40;
inline constexpr uint16_t kPmCapOffset = 0x7c;
inline constexpr uint16_t kMsixCapOffset = 0x84;
inline constexpr uint16_t kCommonCapOffset = 0x90;
inline constexpr uint16_t kNotifyCapOffset = 0xa0;
inline constexpr uint16_t kIsrCapOffset = 0xb4;
inline constexpr uint16_t kDeviceCapOffset = 0xc4;
inline constexpr uint16_t kPciCfgCapOffset = 0xd4;

// The PCI class code of a virtio device type: block 0x018000 (mass storage, other), GPU
// 0x038000 (display, other), anything else 0xff0000.
uint32_t VirtioClassCode(uint16_t device_id);

// The profile of `device` with `msix_vectors` MSI-X vectors (its queues plus one).
dxpu::gpu::DeviceProfile VirtioProfile(const VirtioDevice& device, uint16_t msix_vectors);

}  // namespace dxpu::virtio

#endif  // DXPU_LIB_VIRTIO_VIRTIO_PCI_PROFILE_H_
