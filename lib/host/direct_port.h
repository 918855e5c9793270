// direct_port.h - the native baseline: GPU models in this process, each on an ideal local
// PCIe link (TLPs handed over at once, no fabric), behind the same host transaction layer as
// the dxpu port. What a native GPU server is to DxPU, this port is to the dxpu port.
#ifndef DXPU_LIB_HOST_DIRECT_PORT_H_
#define DXPU_LIB_HOST_DIRECT_PORT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dxgpu/port.h"
#include "pcie/function.h"

namespace dxpu::host {

// Makes a function whose Requester ID is host_bdf; null with *error set when it cannot.
using DirectFunctionFactory =
    std::function<std::unique_ptr<pcie::Function>(uint16_t host_bdf, std::string* error)>;

struct DirectPortOptions {
  std::vector<std::string> profiles = {"dxgpu"};  // one model GPU per profile name
  // Functions of other kinds (virtio devices), after the GPUs.
  std::vector<DirectFunctionFactory> functions = {};
  // Each device reaches pinned memory at an IOVA of its own, as with the kernel port (the DMA
  // API): device d at the buffer's IOVA + (d + 1) x 32 GiB, and no device at another's
  // (HostPort::SeparateDeviceIovas). For tests of the runtime's per-device addresses.
  bool separate_device_iovas = false;
  // Port::completion_interrupts() as the kernel port says it: the runtime's semaphores ask
  // for interrupts and it leaves INTR_ENABLE and INTR_STATUS alone.
  bool completion_interrupts = false;
};

// Opens the port with every device attached; an error names the profile or step that failed.
dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenDirectPort(const DirectPortOptions& options);

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_DIRECT_PORT_H_
