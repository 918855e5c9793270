// kernel_port.h - the kernel port: GPUs that dxpu.ko attached (hot-plug slots, docs/
// kernel-module.md), reached through its character devices /dev/dxpuN and their uAPI
// (include/dxpu/dxpu_ioctl.h). The module has already done what the userspace proxy does at
// attach (configuration space, BARs placed, bus mastering, MSI-X); this port only opens the
// files:
//   registers     DXPU_IOC_MMIO, one 32-bit op on BAR0 per call;
//   pinned memory DXPU_IOC_DMA_ALLOC on the first device's file, mmap()ed, and
//                 DXPU_IOC_DMA_SHARE on every other device's, so each may DMA it;
//   Wait          poll() on the file: the module reports the device's writes into host memory
//                 and its MSI-X interrupts (POLLIN), and its loss (POLLHUP);
//   Health        DXPU_IOC_INFO's lost flag.
#ifndef DXPU_LIB_HOST_KERNEL_PORT_H_
#define DXPU_LIB_HOST_KERNEL_PORT_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dxgpu/port.h"
#include "dxpu/dxpu_ioctl.h"

namespace dxpu::host {

struct KernelPortOptions {
  std::vector<std::string> devices = {"/dev/dxpu0"};  // the port's devices, in this order
  // Where /bus/pci/devices/<name>/config is read for the BARs' types (the memory window).
  std::string sysfs_root = "/sys";
};

// Opens every device file. Errors name the file and say why: it does not exist (is dxpu.ko
// loaded and the slot powered on?), it is not a dxpu device, the device is lost.
dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenKernelPort(const KernelPortOptions& options);

// The device's memory window (PortDeviceInfo::memory_window): its largest 64-bit prefetchable
// BAR other than BAR0. bar_registers: the six BAR registers of its configuration space (their
// low bits say the type); without them, a BAR placed above 4 GiB, where only 64-bit BARs go and
// dxpu.ko's 64-bit window is prefetchable. Size 0: none.
struct KernelMemoryWindow {
  uint64_t address = 0;
  uint64_t size = 0;
};
KernelMemoryWindow MemoryWindowOf(
    const dxpu_device_info& info,
    const std::optional<std::array<uint32_t, DXPU_BARS>>& bar_registers);

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_KERNEL_PORT_H_
