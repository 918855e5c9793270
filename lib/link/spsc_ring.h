// spsc_ring.h - a bounded single-producer, single-consumer queue of values, without locks.
//
// One thread (at a time) pushes, one thread (at a time) pops; each side owns its index and
// reads the other's with acquire ordering, so a value pushed is seen whole by the pop that
// takes it. The producer's index is written and read sequentially consistent, so that a
// consumer about to sleep and a producer that has just pushed can agree through one more
// such variable on which of them wakes the other (memory_link.cc).
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
    if (tail - head_.load(std::memory_order_acquire) >= slots_.size()) return false;
    slots_[tail % slots_.size()] = std::move(value);
    tail_.store(tail + 1, std::memory_order_seq_cst);
    return true;
  }

  // Consumer: false when the ring is empty.
  bool Pop(T* value) {
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_seq_cst)) return false;
    *value = std::move(slots_[head % slots_.size()]);
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Consumer: whether a value waits (a sequentially consistent read of the producer's index).
  bool Empty() const {
    return head_.load(std::memory_order_relaxed) == tail_.load(std::memory_order_seq_cst);
  }

  // Producer: whether the ring is full now.
  bool Full() const {
    return tail_.load(std::memory_order_relaxed) - head_.load(std::memory_order_acquire) >=
           slots_.size();
  }

 private:
  // Apart, so that the two sides do not write the same cache line.
  alignas(64) std::atomic<uint64_t> head_{0};  // next to pop; written by the consumer
  alignas(64) std::atomic<uint64_t> tail_{0};  // next to fill; written by the producer
  std::vector<T> slots_;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_SPSC_RING_H_
