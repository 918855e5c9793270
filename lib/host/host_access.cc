// host_access.cc - blocking configuration and MMIO requests over any HostDriver (host_driver.h).
#include <fmt/format.h>

#include <array>
#include <optional>

#include "host/host_driver.h"

namespace dxpu::host {
namespace {

using dxgpu::ErrorCode;
using dxgpu::Expected;
using dxgpu::Status;

Status BusError(const char* what, uint64_t where, uint8_t status) {
  return {ErrorCode::kBusError, fmt::format("{} at {:#x} completed with {}", what, where,
                                            dxpu_tlp_cpl_status_name(status))};
}

}  // namespace

Status HostAccess::Lost(DeviceId dev) {
  std::string why;
  driver_.Run([&](HostProxy& proxy, uint64_t) {
    const DeviceState& d = proxy.device(dev);
    const PathState& p = proxy.path(d.path);
    why = fmt::format(
        "the device at {:02x}:{:02x}.{} behind {} is lost: {}", d.host_bdf >> 8,
        (d.host_bdf >> 3) & 0x1f, d.host_bdf & 7, p.name,
        p.down ? "its session went down (" + p.down_reason + ")" : std::string("removed"));
  });
  return {ErrorCode::kDeviceLost, why};
}

Status HostAccess::Queue(DeviceId dev, const char* what,
                         const std::function<bool(HostProxy&, uint64_t)>& try_queue) {
  const uint64_t give_up = driver_.Now() + kQueueWaitNs;
  for (;;) {
    bool lost = false;
    bool queued = false;
    uint64_t seen = 0;
    driver_.Run([&](HostProxy& proxy, uint64_t now) {
      lost = proxy.device(dev).lost;
      if (!lost) queued = try_queue(proxy, now);
      seen = proxy.generation();
    });
    if (lost) return Lost(dev);
    if (queued) return {};
    // No tag or no room in the path's queue: wait for it to move, then try again.
    const uint64_t now = driver_.Now();
    if (now >= give_up)
      return {ErrorCode::kTimeout,
              fmt::format("{} could not be queued: the session is full", what)};
    driver_.WaitUntil([&](const HostProxy& proxy) { return proxy.generation() != seen; },
                      std::min(give_up, now + 1'000'000));
  }
}

Expected<RequestResult> HostAccess::Request(
    DeviceId dev, const std::function<std::optional<RequestId>(HostProxy&, uint64_t)>& issue) {
  std::optional<RequestId> id;
  Status queued = Queue(dev, "the request", [&](HostProxy& proxy, uint64_t now) {
    id = issue(proxy, now);
    return id.has_value();
  });
  if (!queued.ok()) return queued;
  bool lost = false;
  // The proxy ends every request by its timeout or when the path goes down.
  std::optional<RequestResult> result;
  driver_.WaitUntil([&](const HostProxy& proxy) { return proxy.Done(*id); }, UINT64_MAX);
  driver_.Run([&](HostProxy& proxy, uint64_t) {
    result = proxy.TakeResult(*id);
    lost = proxy.device(dev).lost;
  });
  if (!result) return Status{ErrorCode::kInternal, "a request ended without a result"};
  // A request the link's loss ended (UR, all-ones) is the device being lost, not a bus error.
  if (result->status != DXPU_TLP_CPL_SC && lost) return Lost(dev);
  return std::move(*result);
}

Expected<uint32_t> HostAccess::ConfigRead(DeviceId dev, uint16_t reg) {
  Expected<RequestResult> r =
      Request(dev, [&](HostProxy& proxy, uint64_t now) { return proxy.ConfigRead(dev, reg, now); });
  if (!r.ok()) return r.status();
  if (r->status != DXPU_TLP_CPL_SC) return BusError("configuration read", reg, r->status);
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v |= uint32_t{r->data[i]} << (8 * i);
  return v;
}

Status HostAccess::ConfigWrite(DeviceId dev, uint16_t reg, uint32_t value, uint8_t be) {
  Expected<RequestResult> r = Request(dev, [&](HostProxy& proxy, uint64_t now) {
    return proxy.ConfigWrite(dev, reg, value, be, now);
  });
  if (!r.ok()) return r.status();
  if (r->status != DXPU_TLP_CPL_SC) return BusError("configuration write", reg, r->status);
  return {};
}

Status HostAccess::MemRead(DeviceId dev, uint64_t addr, std::span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    const uint64_t at = addr + done;
    const auto len =
        static_cast<uint32_t>(std::min<uint64_t>(out.size() - done, 4096 - (at & 4095)));
    Expected<RequestResult> r = Request(
        dev, [&](HostProxy& proxy, uint64_t now) { return proxy.MemRead(dev, at, len, now); });
    if (!r.ok()) return r.status();
    if (r->status != DXPU_TLP_CPL_SC) return BusError("memory read", at, r->status);
    std::copy(r->data.begin(), r->data.begin() + len, out.begin() + static_cast<ptrdiff_t>(done));
    done += len;
  }
  return {};
}

Expected<uint32_t> HostAccess::MemRead32(DeviceId dev, uint64_t addr) {
  std::array<uint8_t, 4> b{};
  Status s = MemRead(dev, addr, b);
  if (!s.ok()) return s;
  return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;
}

Status HostAccess::MemWrite(DeviceId dev, uint64_t addr, std::span<const uint8_t> bytes) {
  size_t done = 0;
  // Whole writes are queued in order; what did not fit is written once the path moved.
  return Queue(dev, "a posted write", [&](HostProxy& proxy, uint64_t) {
    done += proxy.MemWrite(dev, addr + done, bytes.subspan(done));
    return done == bytes.size();
  });
}

Status HostAccess::MemWrite32(DeviceId dev, uint64_t addr, uint32_t value) {
  const std::array<uint8_t, 4> b{static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8),
                                 static_cast<uint8_t>(value >> 16),
                                 static_cast<uint8_t>(value >> 24)};
  return MemWrite(dev, addr, b);
}

}  // namespace dxpu::host
