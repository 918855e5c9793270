// device_allocator.cc - first-fit allocation of device address ranges, coalescing on free.
#include "dxgpu/device_allocator.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "dxgpu/text.h"

namespace dxpu::dxgpu {

DeviceAllocator::DeviceAllocator(uint64_t base, uint64_t size, uint64_t alignment)
    : alignment_(alignment == 0 ? 1 : alignment) {
  const uint64_t mask = alignment_ - 1;
  const uint64_t end = size > UINT64_MAX - base ? UINT64_MAX : base + size;
  begin_ = base > UINT64_MAX - mask ? end : (base + mask) & ~mask;
  end_ = std::max(begin_, end & ~mask);
  if (end_ > begin_) free_.emplace(begin_, end_ - begin_);
}

Expected<uint64_t> DeviceAllocator::Allocate(uint64_t bytes) {
  if (bytes == 0) return Status(ErrorCode::kInvalidArgument, "allocation of 0 bytes");
  const uint64_t mask = alignment_ - 1;
  if (bytes > UINT64_MAX - mask || ((bytes + mask) & ~mask) > capacity()) {
    return Status(ErrorCode::kOutOfMemory, std::to_string(bytes) +
                                               " bytes is more than the device's memory (" +
                                               std::to_string(capacity()) + " bytes)");
  }
  const uint64_t size = (bytes + mask) & ~mask;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const uint64_t address = it->first;
    const uint64_t rest = it->second - size;
    free_.erase(it);
    if (rest != 0) free_.emplace(address + size, rest);
    used_.emplace(address, Block{size, bytes});
    in_use_ += size;
    return address;
  }
  return Status(ErrorCode::kOutOfMemory, "no free block of " + std::to_string(size) + " bytes (" +
                                             std::to_string(free_bytes()) + " bytes free in " +
                                             std::to_string(free_.size()) +
                                             " blocks, the largest " +
                                             std::to_string(largest_free_block()) + ")");
}

Status DeviceAllocator::Free(uint64_t address) {
  const auto used = used_.find(address);
  if (used == used_.end()) {
    const auto next = free_.upper_bound(address);
    const bool is_free = next != free_.begin() && std::prev(next)->first <= address &&
                         address - std::prev(next)->first < std::prev(next)->second;
    return {ErrorCode::kInvalidArgument, "free of device address " + Hex(address) +
                                             (is_free ? ", which is not allocated (double free?)"
                                                      : ", which no allocation starts at")};
  }
  uint64_t start = address;
  uint64_t size = used->second.size;
  used_.erase(used);
  in_use_ -= size;
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, size);
  return Status::Ok();
}

Status DeviceAllocator::CheckRange(uint64_t address, uint64_t bytes) const {
  if (bytes == 0) return {ErrorCode::kInvalidArgument, "a range of 0 bytes"};
  auto it = used_.upper_bound(address);
  if (it == used_.begin() || address - std::prev(it)->first >= std::prev(it)->second.requested) {
    return {ErrorCode::kInvalidArgument,
            "device address " + Hex(address) + " is not in an allocation"};
  }
  --it;
  const uint64_t offset = address - it->first;
  if (bytes > it->second.requested - offset) {
    return {ErrorCode::kInvalidArgument,
            std::to_string(bytes) + " bytes at device address " + Hex(address) +
                " run past the end of its allocation (" + Hex(it->first) + ", " +
                std::to_string(it->second.requested) + " bytes)"};
  }
  return Status::Ok();
}

uint64_t DeviceAllocator::largest_free_block() const {
  uint64_t largest = 0;
  for (const auto& [address, size] : free_) largest = std::max(largest, size);
  return largest;
}

}  // namespace dxpu::dxgpu
