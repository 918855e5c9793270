// device_allocator.h - the runtime's allocator of one device's memory: address ranges in
// [base, base + size) handed out in multiples of an alignment (256 bytes by default), first
// fit, free neighbours coalesced on Free. It hands out addresses only (device memory is not
// touched) and is not thread-safe: the runtime serialises the calls per device.
#ifndef DXPU_LIB_DXGPU_DEVICE_ALLOCATOR_H_
#define DXPU_LIB_DXGPU_DEVICE_ALLOCATOR_H_

#include <cstdint>
#include <map>

#include "dxgpu/status.h"

namespace dxpu::dxgpu {

class DeviceAllocator {
 public:
  // `alignment` must be a power of two; base is rounded up to it and the end down.
  explicit DeviceAllocator(uint64_t base, uint64_t size, uint64_t alignment = 256);

  // An address aligned to alignment() with `bytes` (rounded up to the alignment) free behind
  // it. kInvalidArgument for 0 bytes; kOutOfMemory when no free block is large enough (the
  // message says how much is free and the largest block).
  Expected<uint64_t> Allocate(uint64_t bytes);
  // Frees what Allocate returned. kInvalidArgument for an address Allocate did not return or
  // that is already free (double free).
  Status Free(uint64_t address);
  // Ok when [address, address + bytes) lies inside one live allocation (the bytes asked for,
  // not the rounding); kInvalidArgument
  // (saying why) otherwise, also for 0 bytes.
  Status CheckRange(uint64_t address, uint64_t bytes) const;

  uint64_t alignment() const { return alignment_; }
  uint64_t capacity() const { return end_ - begin_; }
  uint64_t bytes_in_use() const { return in_use_; }
  uint64_t free_bytes() const { return capacity() - in_use_; }
  uint64_t largest_free_block() const;
  size_t allocation_count() const { return used_.size(); }
  size_t free_block_count() const { return free_.size(); }

 private:
  uint64_t alignment_;
  uint64_t begin_;
  uint64_t end_;
  uint64_t in_use_ = 0;
  std::map<uint64_t, uint64_t> free_;  // address -> size, no two adjacent
  struct Block {
    uint64_t size = 0;       // rounded up to the alignment
    uint64_t requested = 0;  // what Allocate was asked for
  };
  std::map<uint64_t, Block> used_;
};

}  // namespace dxpu::dxgpu

#endif  // DXPU_LIB_DXGPU_DEVICE_ALLOCATOR_H_
