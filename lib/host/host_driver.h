// host_driver.h - how a HostProxy is run, and blocking requests on top of that.
//   HostDriver   runs a HostProxy: real time (RealTimeHost: a thread, sockets, a mutex) or
//                simulated (the simulator's virtual clock). It serialises every call.
//   HostAccess   configuration and MMIO requests that return their answer, written once over
//                any driver: issue under the driver, then wait for the result.
#ifndef DXPU_LIB_HOST_HOST_DRIVER_H_
#define DXPU_LIB_HOST_HOST_DRIVER_H_

#include <cstdint>
#include <functional>
#include <span>

#include "dxgpu/status.h"
#include "host/host_proxy.h"

namespace dxpu::host {

class HostDriver {
 public:
  HostDriver() = default;
  HostDriver(const HostDriver&) = delete;
  HostDriver& operator=(const HostDriver&) = delete;
  virtual ~HostDriver() = default;

  // Runs fn with the proxy and the current time, then moves whatever it queued.
  virtual void Run(const std::function<void(HostProxy& proxy, uint64_t now)>& fn) = 0;
  // Returns true once ready(proxy) holds, false once the driver's clock reaches deadline.
  // ready is evaluated with the driver's lock held (device writes to host memory visible).
  virtual bool WaitUntil(const std::function<bool(const HostProxy& proxy)>& ready,
                         uint64_t deadline) = 0;
  // The driver's clock in ns.
  virtual uint64_t Now() const = 0;
};

class HostAccess {
 public:
  explicit HostAccess(HostDriver& driver) : driver_(driver) {}

  dxgpu::Expected<uint32_t> ConfigRead(DeviceId dev, uint16_t reg);
  dxgpu::Status ConfigWrite(DeviceId dev, uint16_t reg, uint32_t value, uint8_t be = 0xf);
  // Reads [addr, addr + out.size()) with MRds of at most 4 KiB, none crossing 4 KiB.
  dxgpu::Status MemRead(DeviceId dev, uint64_t addr, std::span<uint8_t> out);
  dxgpu::Expected<uint32_t> MemRead32(DeviceId dev, uint64_t addr);
  // Posted; returns once queued (waits while the session's queue is full).
  dxgpu::Status MemWrite(DeviceId dev, uint64_t addr, std::span<const uint8_t> bytes);
  dxgpu::Status MemWrite32(DeviceId dev, uint64_t addr, uint32_t value);

  HostDriver& driver() { return driver_; }

  // How long a request may wait to be queued, beyond the proxy's own request timeout: lib/core's
  // patience, the same dxpu.ko keeps.
  static constexpr uint64_t kQueueWaitNs = DXPU_HOSTPATH_ISSUE_PATIENCE_NS;

 private:
  // Calls try_queue under the driver until it says queued, waiting for the path to move in
  // between, for at most kQueueWaitNs (then kTimeout, naming `what`); kDeviceLost once the
  // device is lost. The one retry loop every request and write goes through.
  dxgpu::Status Queue(DeviceId dev, const char* what,
                      const std::function<bool(HostProxy&, uint64_t)>& try_queue);
  // Issues with retries while the queue is full; the result once the request ended.
  dxgpu::Expected<RequestResult> Request(
      DeviceId dev, const std::function<std::optional<RequestId>(HostProxy&, uint64_t)>& issue);
  dxgpu::Status Lost(DeviceId dev);

  HostDriver& driver_;
};

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_HOST_DRIVER_H_
