// spsc_ring.h - a bounded single-producer, single-consumer queue of values, without locks.
//
// One thread (at a time) pushes, one thread (at a time) pops; each side owns its index and
// reads the other's with acquire ordering, so a value pushed is seen whole by the pop that
// takes it. Each side keeps a copy of the other's index and reads the real one (a cache line
// the other core writes) only when the copy says full or empty. The producer's index is
// written and read sequentially consistent, and a Pop or Empty that finds the ring empty
// has always just read it, so that a consumer about to sleep and a producer that has just
// pushed can agree through one more such variable on which of them wakes the other
// (memory_link.cc).
#ifndef DXPU_LIB_LINK_SPSC_RING_H_
#define DXPU_LIB_LINK_SPSC_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dxpu::link {

template <typename T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity) : slots_(capacity) {}

  size_t capacity() const { return slots_.size(); }

  // Producer: false (value untouched) when the ring holds capacity() values.
  bool Push(T& value) {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    // The consumer's index is read (a cache line the other core writes) only when the copy
    // kept from the last read says the ring may be full.
    if (tail - head_seen_ >= slots_.size()) {
      head_seen_ = head_.load(std::memory_order_acquire);
      if (tail - head_seen_ >= slots_.size()) return false;
    }
    slots_[tail % slots_.size()] = std::move(value);
    tail_.store(tail + 1, std::memory_order_seq_cst);
    return true;
  }

  // Consumer: false when the ring is empty.
  bool Pop(T* value) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    // Likewise: the producer's index is read only when the last copy says empty.
    if (head == tail_seen_) {
      tail_seen_ = tail_.load(std::memory_order_seq_cst);
      if (head == tail_seen_) return false;
    }
    *value = std::move(slots_[head % slots_.size()]);
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer: whether no value waits.
  bool Empty() {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head != tail_seen_) return false;
    tail_seen_ = tail_.load(std::memory_order_seq_cst);
    return head == tail_seen_;
  }

  // Producer: whether the ring is full now.
  bool Full() {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_seen_ < slots_.size()) return false;
    head_seen_ = head_.load(std::memory_order_acquire);
    return tail - head_seen_ >= slots_.size();
  }

 private:
  // Each side's index beside its copy of the other's, apart from the other side's, so that
  // the two sides do not write the same cache line.
  alignas(64) std::atomic<uint64_t> head_{0};  // next to pop; written by the consumer
  uint64_t tail_seen_ = 0;                     // the consumer's last read of tail_
  alignas(64) std::atomic<uint64_t> tail_{0};  // next to fill; written by the producer
  uint64_t head_seen_ = 0;                     // the producer's last read of head_
  std::vector<T> slots_;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_SPSC_RING_H_
