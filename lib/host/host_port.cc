// host_port.cc - a libdxgpu Port over a HostProxy (host_port.h).
#include "host/host_port.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>
#include <system_error>

#include "gpu/device_profile.h"

namespace dxpu::host {
namespace {

using dxgpu::ErrorCode;
using dxgpu::Expected;
using dxgpu::Status;

constexpr uint64_t kPage = 4096;

}  // namespace

HostPort::HostPort(std::string kind, std::unique_ptr<HostDriver> driver,
                   std::vector<PortDevice> devices, std::shared_ptr<void> keep_alive)
    : kind_(std::move(kind)),
      driver_(std::move(driver)),
      devices_(std::move(devices)),
      keep_alive_(std::move(keep_alive)) {}

HostPort::~HostPort() {
  for (auto& [iova, p] : pinned_) {
    MapWindows(iova, std::span<uint8_t>(p.data, p.size), /*add=*/false);
    munmap(p.data, p.size);
  }
  // The driver (its worker thread) stops before what it talks to goes.
  driver_.reset();
}

Expected<uint32_t> HostPort::ReadRegister(size_t device, uint32_t offset) {
  if (device >= devices_.size()) return Status{ErrorCode::kNoDevice, "no such device"};
  const PortDevice& d = devices_[device];
  HostAccess access(*driver_);
  return access.MemRead32(d.id, d.attached.bar0() + offset);
}

Status HostPort::WriteRegister(size_t device, uint32_t offset, uint32_t value) {
  if (device >= devices_.size()) return {ErrorCode::kNoDevice, "no such device"};
  const PortDevice& d = devices_[device];
  HostAccess access(*driver_);
  return access.MemWrite32(d.id, d.attached.bar0() + offset, value);
}

Status HostPort::SeparateDeviceIovas(uint64_t stride) {
  const std::lock_guard lock(mu_);
  if (stride == 0 || stride % kPage != 0 || stride > kDmaRangeSize / (devices_.size() + 1))
    return {ErrorCode::kInvalidArgument,
            fmt::format("{} devices' IOVA ranges of {} bytes do not fit the DMA range",
                        devices_.size(), stride)};
  if (!pinned_.empty())
    return {ErrorCode::kInvalidArgument, "SeparateDeviceIovas after memory was pinned"};
  device_iova_stride_ = stride;
  return {};
}

bool HostPort::MapWindows(uint64_t iova, std::span<uint8_t> memory, bool add) {
  bool ok = true;
  driver_->Run([&](HostProxy& proxy, uint64_t) {
    if (device_iova_stride_ == 0) {
      if (add)
        ok = proxy.AddWindow(iova, memory);
      else
        proxy.RemoveWindow(iova);
      return;
    }
    const auto device_iova = [&](size_t d) { return iova + (d + 1) * device_iova_stride_; };
    size_t mapped = devices_.size();  // removing: every device's window
    if (add) {
      mapped = 0;
      while (mapped < devices_.size() &&
             proxy.AddDeviceWindow(devices_[mapped].id, device_iova(mapped), memory))
        ++mapped;
      ok = mapped == devices_.size();
      if (ok) return;
    }
    for (size_t d = 0; d < mapped; ++d) proxy.RemoveDeviceWindow(devices_[d].id, device_iova(d));
  });
  return ok;
}

Expected<dxgpu::HostBuffer> HostPort::AllocHost(uint64_t bytes) {
  if (bytes == 0 || bytes > kDmaRangeSize)
    return Status{ErrorCode::kInvalidArgument, fmt::format("cannot pin {} bytes", bytes)};
  const uint64_t size = (bytes + kPage - 1) & ~(kPage - 1);
  const std::lock_guard lock(mu_);
  // First fit in the DMA range (its first stride bytes, with separate device IOVAs), between
  // the buffers already there.
  const uint64_t range = device_iova_stride_ != 0 ? device_iova_stride_ : kDmaRangeSize;
  uint64_t iova = kDmaRangeBase;
  for (const auto& [at, p] : pinned_) {
    if (at - iova >= size) break;
    iova = at + p.size + kPage;  // a guard page between buffers
  }
  if (size > range || iova > kDmaRangeBase + range - size)
    return Status{ErrorCode::kOutOfMemory, "the host's DMA range is full"};
  void* mem = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    return Status{ErrorCode::kOutOfMemory, fmt::format("pinning {} bytes: {}", bytes,
                                                       std::generic_category().message(errno))};
  auto* data = static_cast<uint8_t*>(mem);
  if (!MapWindows(iova, std::span<uint8_t>(data, size), /*add=*/true)) {
    munmap(mem, size);
    return Status{ErrorCode::kOutOfMemory, "a device's DMA window table is full"};
  }
  pinned_.emplace(iova, Pinned{data, size});
  dxgpu::HostBuffer buffer{.data = data, .iova = iova, .size = bytes, .device_iovas = {}};
  if (device_iova_stride_ != 0) {
    for (size_t d = 0; d < devices_.size(); ++d)
      buffer.device_iovas.push_back(iova + (d + 1) * device_iova_stride_);
  }
  return buffer;
}

Status HostPort::FreeHost(const dxgpu::HostBuffer& buffer) {
  const std::lock_guard lock(mu_);
  auto it = pinned_.find(buffer.iova);
  if (it == pinned_.end() || it->second.data != buffer.data)
    return {ErrorCode::kInvalidArgument, "not a pinned buffer of this port"};
  MapWindows(buffer.iova, std::span<uint8_t>(it->second.data, it->second.size), /*add=*/false);
  munmap(it->second.data, it->second.size);
  pinned_.erase(it);
  return {};
}

Status HostPort::Wait(size_t device, const std::function<bool()>& ready, uint64_t timeout_ns) {
  if (device >= devices_.size()) return {ErrorCode::kNoDevice, "no such device"};
  const DeviceId id = devices_[device].id;
  bool lost = false;
  const uint64_t now = driver_->Now();
  const uint64_t deadline = timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
  const bool ok = driver_->WaitUntil(
      [&](const HostProxy& proxy) {
        if (ready()) return true;
        lost = proxy.device(id).lost;
        return lost;
      },
      deadline);
  if (lost) return Health(device);
  if (!ok)
    return {ErrorCode::kTimeout,
            fmt::format("no answer from the device within {} ms", timeout_ns / 1'000'000)};
  return {};
}

Status HostPort::Health(size_t device) const {
  if (device >= devices_.size()) return {ErrorCode::kNoDevice, "no such device"};
  const DeviceId id = devices_[device].id;
  Status s;
  driver_->Run([&](HostProxy& proxy, uint64_t) {
    const DeviceState& d = proxy.device(id);
    if (!d.lost) return;
    const PathState& p = proxy.path(d.path);
    s = {ErrorCode::kDeviceLost,
         fmt::format("{} is lost: {}", devices_[device].info.location,
                     p.down ? "the session went down (" + p.down_reason + ")" : "removed")};
  });
  return s;
}

AttachedBar MemoryWindow(const AttachedDevice& device) {
  AttachedBar best;
  if (device.memory_bytes == 0) return best;  // not a GPU model (a virtio function)
  for (size_t i = 1; i < device.bars.size(); ++i) {
    const AttachedBar& b = device.bars[i];
    if (b.is64 && b.prefetchable && b.size > best.size) best = b;
  }
  return best;
}

Expected<std::vector<PortDevice>> AttachAll(HostDriver& driver,
                                            const std::vector<DeviceId>& devices,
                                            const AttachOptions& options) {
  HostAccess access(driver);
  BarAllocator bars;
  std::vector<PortDevice> out;
  for (DeviceId id : devices) {
    Expected<AttachedDevice> a = AttachDevice(access, id, bars, options);
    std::string where;
    driver.Run([&](HostProxy& proxy, uint64_t) {
      const DeviceState& d = proxy.device(id);
      where = fmt::format("{} dev {:02x}:{:02x}.{}", proxy.path(d.path).name, d.host_bdf >> 8,
                          (d.host_bdf >> 3) & 0x1f, d.host_bdf & 7);
    });
    if (!a.ok())
      return Status{a.status().code(), "attaching " + where + ": " + a.status().message()};
    PortDevice pd;
    pd.id = id;
    pd.attached = *a;
    pd.info.profile = gpu::ProfileNameForIds(a->vendor_id, a->device_id);
    pd.info.location = where;
    pd.info.vendor_id = a->vendor_id;
    pd.info.device_id = a->device_id;
    pd.info.memory_bytes = a->memory_bytes;
    pd.info.msix_vectors = a->msix_vectors;
    const AttachedBar window = MemoryWindow(*a);
    pd.info.memory_window = window.address;
    pd.info.memory_window_size = window.size;
    driver.Run([&](HostProxy& proxy, uint64_t) {
      proxy.SetMemoryWindow(id, window.address, window.size);
    });
    out.push_back(std::move(pd));
  }
  return out;
}

}  // namespace dxpu::host
