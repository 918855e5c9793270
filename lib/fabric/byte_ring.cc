// byte_ring.cc - a bounded FIFO byte arena.
#include "fabric/byte_ring.h"

namespace dxpu::fabric {

ByteRing::ByteRing(size_t capacity)
    : buf_(std::make_unique_for_overwrite<uint8_t[]>(capacity)), capacity_(capacity) {}

std::optional<ByteRing::Block> ByteRing::Take(size_t n) {
  if (n == 0) return Block{};
  if (n > capacity_ - used_) return std::nullopt;
  if (used_ == 0) head_ = tail_ = 0;  // empty: start over, so any n <= capacity fits
  size_t at = tail_;
  size_t span = n;
  if (tail_ >= head_) {
    // Free: [tail, capacity) and [0, head). A block that does not fit before the end skips
    // it and starts at 0.
    if (capacity_ - tail_ < n) {
      if (head_ < n) return std::nullopt;
      at = 0;
      span = (capacity_ - tail_) + n;
    }
  } else if (head_ - tail_ < n) {  // free: [tail, head)
    return std::nullopt;
  }
  tail_ = at + n;
  if (tail_ == capacity_) tail_ = 0;
  used_ += span;
  return Block{buf_.get() + at, span};
}

void ByteRing::GiveBackOldest(size_t span) {
  if (span == 0) return;
  used_ -= span;
  head_ = (head_ + span) % capacity_;
}

}  // namespace dxpu::fabric
