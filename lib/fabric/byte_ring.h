// byte_ring.h - a bounded FIFO byte arena: contiguous blocks are taken at the tail and given
// back at the head, in the order they were taken. One allocation, at construction.
#ifndef DXPU_LIB_FABRIC_BYTE_RING_H_
#define DXPU_LIB_FABRIC_BYTE_RING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace dxpu::fabric {

class ByteRing {
 public:
  // A block taken from the ring: its bytes, and the span of the ring it holds, which is its
  // size plus any bytes skipped at the end of the ring to keep it contiguous. Give back the
  // span, not the size.
  struct Block {
    uint8_t* data = nullptr;
    size_t span = 0;
  };

  explicit ByteRing(size_t capacity);

  // n contiguous bytes at the tail; nullopt when they are not free. n == 0 always succeeds
  // with an empty block (null data, span 0).
  std::optional<Block> Take(size_t n);

  // Gives back the oldest block still held, whose span is `span`.
  void GiveBackOldest(size_t span);

  size_t capacity() const { return capacity_; }
  size_t used() const { return used_; }  // spans held, skipped bytes included

 private:
  std::unique_ptr<uint8_t[]> buf_;
  size_t capacity_;
  size_t head_ = 0;  // start of the oldest span
  size_t tail_ = 0;  // where the next block goes
  size_t used_ = 0;
};

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_BYTE_RING_H_
