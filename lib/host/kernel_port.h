// kernel_port.h - the kernel port: GPUs that dxgpu.ko, the model GPU's own PCI driver, drives
// (docs/dxgpu-runtime.md, "The kernel port"), reached through its character devices
// /dev/dxgpuN and their uAPI (include/dxgpu/dxgpu_ioctl.h). The devices may sit on dxpu.ko's
// bus (remote, behind bridges) or anywhere else: the driver uses only the kernel's standard
// APIs. The driver has already done what the userspace proxy does at attach (BARs mapped, bus
// mastering, MSI-X vectors and their handlers); this port only opens the files:
//   registers     DXGPU_IOC_REGS, 32-bit ops on BAR0 run by the CPU (one op a call);
//   pinned memory DXGPU_IOC_BUF_ALLOC on the first device's file, mmap()ed, and
//                 DXGPU_IOC_BUF_IMPORT on every other device's: each device DMAs the buffer at
//                 an IOVA of its own (HostBuffer::device_iovas);
//   Wait          poll() on the file: woken by the device's interrupts (POLLIN), its loss
//                 (POLLHUP). completion_interrupts() is true, so the runtime's semaphore
//                 releases ask for one;
//   Health        DXGPU_IOC_INFO's lost flag.
#ifndef DXPU_LIB_HOST_KERNEL_PORT_H_
#define DXPU_LIB_HOST_KERNEL_PORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dxgpu/dxgpu_ioctl.h"
#include "dxgpu/port.h"

namespace dxpu::host {

struct KernelPortOptions {
  std::vector<std::string> devices = {"/dev/dxgpu0"};  // the port's devices, in this order
};

// Opens every device file. Errors name the file and say why: it does not exist (is dxgpu.ko
// loaded and a GPU bound to it?), it is not a dxgpu device, the device is gone.
dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenKernelPort(const KernelPortOptions& options);

// The device's memory window (PortDeviceInfo::memory_window): its largest BAR other than BAR0
// that dxgpu.ko reports 64-bit and prefetchable (bar_flags). Size 0: none.
struct KernelMemoryWindow {
  uint64_t address = 0;
  uint64_t size = 0;
};
KernelMemoryWindow MemoryWindowOf(const dxgpu_info& info);

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_KERNEL_PORT_H_
