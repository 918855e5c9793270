// direct_port.h - the native baseline: GPU models in this process, each on an ideal local
// PCIe link (TLPs handed over at once, no fabric), behind the same host transaction layer as
// the dxpu port. What a native GPU server is to DxPU, this port is to the dxpu port.
#ifndef DXPU_LIB_HOST_DIRECT_PORT_H_
#define DXPU_LIB_HOST_DIRECT_PORT_H_

#include <memory>
#include <string>
#include <vector>

#include "dxgpu/port.h"

namespace dxpu::host {

struct DirectPortOptions {
  std::vector<std::string> profiles = {"dxgpu"};  // one model GPU per profile name
};

// Opens the port with every device attached; an error names the profile or step that failed.
dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenDirectPort(const DirectPortOptions& options);

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_DIRECT_PORT_H_
