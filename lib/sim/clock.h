// clock.h - virtual time for the simulator and the event scheduler that advances it.
// Nothing here reads a real clock: time moves only when the scheduler runs an event.
#ifndef DXPU_LIB_SIM_CLOCK_H_
#define DXPU_LIB_SIM_CLOCK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace dxpu::sim {

// Virtual time and durations, in nanoseconds from the start of the simulation.
using Nanos = uint64_t;

inline constexpr Nanos kNanosecond = 1;
inline constexpr Nanos kMicrosecond = 1000;
inline constexpr Nanos kMillisecond = 1000 * kMicrosecond;
inline constexpr Nanos kSecond = 1000 * kMillisecond;
// "No time": what NextTime() returns when nothing is scheduled.
inline constexpr Nanos kNever = std::numeric_limits<Nanos>::max();

// Identifies a scheduled event (for Cancel): a slot and its generation, so an id is not
// reused until its slot has been reused 2^32 times.
using EventId = uint64_t;

// A discrete-event scheduler. Events run in order of time; events at the same time run in
// the order they were scheduled, so a run is a pure function of what was scheduled.
// Callbacks may schedule and cancel events, including at the current time (those run after
// every event already due at that time).
class Scheduler {
 public:
  using Callback = std::function<void()>;

  Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;
  Scheduler(Scheduler&&) = delete;
  Scheduler& operator=(Scheduler&&) = delete;
  ~Scheduler() = default;

  // The current virtual time: the time of the event running or last run, or the time given
  // to the last RunUntil that passed it.
  Nanos Now() const { return now_; }

  // Schedules cb at absolute time `when`; a time in the past means Now().
  EventId ScheduleAt(Nanos when, Callback cb);
  // Schedules cb `delay` after Now() (saturating just below kNever).
  EventId ScheduleAfter(Nanos delay, Callback cb);
  // Cancels a pending event; false if it already ran, was cancelled, or never existed.
  bool Cancel(EventId id);

  // Runs the next event, first advancing Now() to its time; false when none is pending.
  bool RunNext();
  // Runs every event due at or before t, then advances Now() to t (if later). Returns the
  // number of events run.
  size_t RunUntil(Nanos t);
  // Runs events until none is pending or max_events have run; returns the number run.
  size_t RunAll(size_t max_events = std::numeric_limits<size_t>::max());

  bool Empty() const { return pending_ == 0; }
  size_t Pending() const { return pending_; }
  // The time of the next pending event; kNever when none is.
  Nanos NextTime() const;

 private:
  // A pending callback. A slot is reused once its event ran or was cancelled; its
  // generation, part of the EventId and of the heap entry, tells the occupants apart.
  struct Slot {
    Callback cb;
    uint32_t generation = 0;
    bool pending = false;
  };
  struct Entry {
    Nanos when;
    uint64_t seq;  // insertion order, which breaks ties
    uint32_t slot;
    uint32_t generation;
  };

  bool Live(const Entry& e) const;
  // Frees a slot (its callback already moved out or to be dropped).
  void Release(uint32_t slot);
  // Pops dead entries off the top of the heap, so that its top is always pending.
  void DropDeadTop();

  Nanos now_ = 0;
  uint64_t next_seq_ = 0;
  size_t pending_ = 0;
  std::vector<Entry> heap_;  // a min-heap on (when, seq); may hold dead entries
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
};

}  // namespace dxpu::sim

#endif  // DXPU_LIB_SIM_CLOCK_H_
