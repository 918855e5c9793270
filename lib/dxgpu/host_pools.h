// host_pools.h - pinned host memory the runtime keeps for itself, taken from the port in
// pages and handed out again and again:
//   TimestampSlots  16-byte slots for events' timestamped semaphores (payload u64, then the
//                   device's PTIMER u64), 256 to a 4 KiB page;
//   StagingPool     equal buffers for staging copies of pageable host memory.
// Both thread-safe; what they took from the port goes back when they are destroyed.
#ifndef DXPU_LIB_DXGPU_HOST_POOLS_H_
#define DXPU_LIB_DXGPU_HOST_POOLS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "dxgpu/port.h"
#include "dxgpu/status.h"

namespace dxpu::dxgpu {

struct TimestampSlot {
  uint8_t* data = nullptr;           // 16-byte aligned: payload u64 at +0, device time u64 at +8
  const HostBuffer* page = nullptr;  // the page it is in (owned by its TimestampSlots)
  uint64_t offset = 0;               // where in the page

  // Device `device`'s IOVA of the slot.
  uint64_t IovaFor(size_t device) const { return page->IovaFor(device) + offset; }

  // What the device wrote last (read as atomics: the device writes them behind our back).
  uint64_t payload() const;
  uint64_t time_ns() const;
};

class TimestampSlots {
 public:
  static constexpr uint64_t kSlotBytes = 16;
  static constexpr uint64_t kPageBytes = 4096;

  explicit TimestampSlots(Port& port) : port_(port) {}
  TimestampSlots(const TimestampSlots&) = delete;
  TimestampSlots& operator=(const TimestampSlots&) = delete;
  ~TimestampSlots();

  // A zeroed slot (a new page from the port when none is free).
  Expected<TimestampSlot> Acquire();
  void Release(const TimestampSlot& slot);

 private:
  Port& port_;
  std::mutex mu_;
  std::deque<HostBuffer> pages_;  // a deque: slots point at their page
  std::vector<TimestampSlot> free_;
};

class StagingPool {
 public:
  StagingPool(Port& port, uint64_t buffer_bytes) : port_(port), buffer_bytes_(buffer_bytes) {}
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;
  ~StagingPool();

  uint64_t buffer_bytes() const { return buffer_bytes_; }
  // A buffer of buffer_bytes() (a new one from the port when none is free): IovaFor(device)
  // is where a device reaches it.
  Expected<HostBuffer> Acquire();
  void Release(const HostBuffer& buffer);

 private:
  Port& port_;
  uint64_t buffer_bytes_;
  std::mutex mu_;
  std::vector<HostBuffer> all_;
  std::vector<HostBuffer> free_;
};

}  // namespace dxpu::dxgpu

#endif  // DXPU_LIB_DXGPU_HOST_POOLS_H_
