// host_pools.cc - the runtime's own pinned memory: timestamp slots and staging buffers.
#include "dxgpu/host_pools.h"

#include <atomic>
#include <cstring>
#include <string>
#include <utility>

#include "dxgpu/pinned_memory.h"

namespace dxpu::dxgpu {

namespace {

uint64_t LoadU64(const uint8_t* p) {
  // The slot is 16-byte aligned, so both words are naturally aligned u64s.
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(const_cast<uint8_t*>(p)))
      .load(std::memory_order_acquire);
}

}  // namespace

uint64_t TimestampSlot::payload() const { return LoadU64(data); }
uint64_t TimestampSlot::time_ns() const { return LoadU64(data + 8); }

TimestampSlots::~TimestampSlots() {
  for (const HostBuffer& page : pages_) (void)port_.FreeHost(page);
}

Expected<TimestampSlot> TimestampSlots::Acquire() {
  const std::lock_guard lock(mu_);
  if (free_.empty()) {
    Expected<HostBuffer> page = port_.AllocHost(kPageBytes);
    if (!page.ok()) return page.status();
    if (Status fit = CheckHostBuffer(port_, *page, kPageBytes, kSlotBytes, "a timestamp page");
        !fit.ok()) {
      (void)port_.FreeHost(*page);
      return fit;
    }
    const HostBuffer& kept = pages_.emplace_back(std::move(page).value());
    for (uint64_t offset = kPageBytes; offset != 0; offset -= kSlotBytes) {
      free_.push_back(
          {.data = kept.data + offset - kSlotBytes, .page = &kept, .offset = offset - kSlotBytes});
    }
  }
  const TimestampSlot slot = free_.back();
  free_.pop_back();
  std::memset(slot.data, 0, kSlotBytes);
  return slot;
}

void TimestampSlots::Release(const TimestampSlot& slot) {
  const std::lock_guard lock(mu_);
  free_.push_back(slot);
}

StagingPool::~StagingPool() {
  for (const HostBuffer& buffer : all_) (void)port_.FreeHost(buffer);
}

Expected<HostBuffer> StagingPool::Acquire() {
  {
    const std::lock_guard lock(mu_);
    if (!free_.empty()) {
      const HostBuffer buffer = free_.back();
      free_.pop_back();
      return buffer;
    }
  }
  Expected<HostBuffer> buffer = port_.AllocHost(buffer_bytes_);
  if (!buffer.ok()) {
    Status status = buffer.status();
    return Status(status.code(), "staging buffer of " + std::to_string(buffer_bytes_) +
                                     " bytes: " + status.message());
  }
  if (Status fit = CheckHostBuffer(port_, *buffer, buffer_bytes_, 1, "a staging buffer");
      !fit.ok()) {
    (void)port_.FreeHost(*buffer);
    return fit;
  }
  const std::lock_guard lock(mu_);
  all_.push_back(*buffer);
  return buffer;
}

void StagingPool::Release(const HostBuffer& buffer) {
  const std::lock_guard lock(mu_);
  free_.push_back(buffer);
}

}  // namespace dxpu::dxgpu
