// direct_port.cc - GPU models on an ideal local link (direct_port.h).
#include "host/direct_port.h"

#include <cstdint>
#include <memory>

#include "gpu/device_profile.h"
#include "host/host_port.h"
#include "host/realtime_host.h"

namespace dxpu::host {

using dxgpu::ErrorCode;
using dxgpu::Status;

namespace {
constexpr uint64_t kSeparateIovaStride = uint64_t{32} << 30;  // DirectPortOptions
}  // namespace

dxgpu::Expected<std::unique_ptr<dxgpu::Port>> OpenDirectPort(const DirectPortOptions& options) {
  std::string error;
  HostProxyOptions po;
  std::unique_ptr<RealTimeHost> host = RealTimeHost::Create(po, &error);
  if (host == nullptr) return Status{ErrorCode::kInternal, error};
  std::vector<DeviceId> devices;
  for (size_t i = 0; i < options.profiles.size(); ++i) {
    std::optional<gpu::DeviceProfile> profile = gpu::FindProfile(options.profiles[i]);
    if (!profile)
      return Status{ErrorCode::kInvalidArgument, "no GPU profile named " + options.profiles[i]};
    // Device i sits at bus i + 1, device 0, function 0.
    const auto bdf = static_cast<uint16_t>((i + 1) << 8);
    std::optional<PathId> path =
        host->proxy_for_setup().AddDirectPath(*profile, gpu::GpuOptions{}, bdf, &error);
    if (!path) return Status{ErrorCode::kInvalidArgument, options.profiles[i] + ": " + error};
    devices.push_back(*host->proxy_for_setup().device_of(*path));
  }
  for (const DirectFunctionFactory& make : options.functions) {
    const auto bdf = static_cast<uint16_t>((devices.size() + 1) << 8);
    std::unique_ptr<pcie::Function> function = make(bdf, &error);
    if (function == nullptr) return Status{ErrorCode::kInvalidArgument, error};
    std::optional<PathId> path =
        host->proxy_for_setup().AddDirectFunction(std::move(function), bdf, &error);
    if (!path) return Status{ErrorCode::kInvalidArgument, error};
    devices.push_back(*host->proxy_for_setup().device_of(*path));
  }
  host->Start();
  AttachOptions ao;
  dxgpu::Expected<std::vector<PortDevice>> attached = AttachAll(*host, devices, ao);
  if (!attached.ok()) return attached.status();
  for (PortDevice& d : *attached) d.info.location = "direct " + d.info.location.substr(7);
  auto port = std::make_unique<HostPort>("direct", std::move(host), std::move(attached).value());
  if (options.separate_device_iovas) {
    if (Status s = port->SeparateDeviceIovas(kSeparateIovaStride); !s.ok()) return s;
  }
  port->set_completion_interrupts(options.completion_interrupts);
  return std::unique_ptr<dxgpu::Port>(std::move(port));
}

}  // namespace dxpu::host
