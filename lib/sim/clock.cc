// clock.cc - the event scheduler: a binary heap of (time, insertion order) over a table of
// callback slots that are reused, so that a steady run allocates nothing here.
#include "sim/clock.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace dxpu::sim {
namespace {

struct Later {
  template <typename E>
  bool operator()(const E& a, const E& b) const {
    return a.when != b.when ? a.when > b.when : a.seq > b.seq;
  }
};

}  // namespace

EventId Scheduler::ScheduleAt(Nanos when, Callback cb) {
  uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  s.pending = true;
  ++pending_;
  heap_.push_back({std::max(when, now_), next_seq_++, slot, s.generation});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
  return (uint64_t{slot} << 32) | s.generation;
}

EventId Scheduler::ScheduleAfter(Nanos delay, Callback cb) {
  const Nanos when = delay >= kNever - 1 - now_ ? kNever - 1 : now_ + delay;
  return ScheduleAt(when, std::move(cb));
}

bool Scheduler::Live(const Entry& e) const {
  const Slot& s = slots_[e.slot];
  return s.pending && s.generation == e.generation;
}

void Scheduler::Release(uint32_t slot) {
  Slot& s = slots_[slot];
  s.cb = nullptr;
  s.pending = false;
  ++s.generation;
  --pending_;
  free_slots_.push_back(slot);
}

bool Scheduler::Cancel(EventId id) {
  const uint64_t slot = id >> 32;
  if (slot >= slots_.size()) return false;
  const Slot& s = slots_[slot];
  if (!s.pending || s.generation != static_cast<uint32_t>(id)) return false;
  Release(static_cast<uint32_t>(slot));
  DropDeadTop();
  return true;
}

void Scheduler::DropDeadTop() {
  while (!heap_.empty() && !Live(heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
  }
}

Nanos Scheduler::NextTime() const { return heap_.empty() ? kNever : heap_.front().when; }

bool Scheduler::RunNext() {
  if (heap_.empty()) return false;
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  const Entry e = heap_.back();
  heap_.pop_back();
  // Live: the top of the heap always is. Free the slot before running, so the callback
  // may schedule into it and Cancel of this event returns false.
  Callback cb = std::move(slots_[e.slot].cb);
  Release(e.slot);
  DropDeadTop();
  now_ = e.when;
  cb();
  return true;
}

size_t Scheduler::RunUntil(Nanos t) {
  size_t n = 0;
  while (!heap_.empty() && heap_.front().when <= t) {
    RunNext();
    ++n;
  }
  now_ = std::max(now_, t);
  return n;
}

size_t Scheduler::RunAll(size_t max_events) {
  size_t n = 0;
  while (n < max_events && RunNext()) ++n;
  return n;
}

}  // namespace dxpu::sim
