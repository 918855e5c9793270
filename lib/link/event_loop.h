// event_loop.h - a single-threaded epoll loop: callbacks for readable descriptors and for
// timers at absolute deadlines (std::chrono::steady_clock). It sleeps in epoll_wait until
// a descriptor is ready, the next timer is due, or Stop() is called; it spins only when told
// to (SetBusyPoll).
#ifndef DXPU_LIB_LINK_EVENT_LOOP_H_
#define DXPU_LIB_LINK_EVENT_LOOP_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "link/link.h"
#include "link/unique_fd.h"

namespace dxpu::link {

class EventLoop {
 public:
  using Clock = std::chrono::steady_clock;
  using Callback = std::function<void()>;
  using TimerId = uint64_t;

  static OpenResult<EventLoop> Create();

  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;
  EventLoop(EventLoop&&) = delete;
  EventLoop& operator=(EventLoop&&) = delete;
  ~EventLoop() = default;

  // Calls on_readable (level-triggered) while fd is readable. The loop does not own fd.
  std::error_code AddFd(int fd, Callback on_readable);
  std::error_code RemoveFd(int fd);

  // Calls fire once at or after deadline. Timers due at the same moment fire in the order
  // they were added.
  TimerId AddTimer(Clock::time_point deadline, Callback fire);
  // False if the timer already fired or was cancelled.
  bool CancelTimer(TimerId id);

  // Waits at most max_wait (less if a timer falls due first) and runs the callbacks that
  // are due: readable descriptors, then timers whose deadline has passed.
  std::error_code RunOnce(std::chrono::milliseconds max_wait);
  // Runs until Stop(); returns at once if Stop() came first. Clears the stop request.
  std::error_code Run();

  // Busy polling: Run() calls poll(false) over and over instead of sleeping while it found
  // work (returned true) or a descriptor woke the loop within the last `window`, looking at
  // the descriptors and timers without waiting every few calls. Before it sleeps it calls
  // poll(true), which must leave the polled sources able to wake it (receive until a link is
  // empty: Link::StartSpinning); if that found work, it spins on. Call before Run().
  using BusyPoll = std::function<bool(bool before_sleep)>;
  void SetBusyPoll(BusyPoll poll, std::chrono::nanoseconds window);
  // Asks Run() to return; safe from any thread and from callbacks.
  void Stop();

  // All methods other than Stop() belong to the loop's thread.

 private:
  struct TimerEntry {
    Clock::time_point deadline;
    TimerId id;
    // The later (or, on a tie, later-added) entry has the lower priority.
    bool operator>(const TimerEntry& o) const {
      return deadline != o.deadline ? deadline > o.deadline : id > o.id;
    }
  };

  EventLoop(UniqueFd epoll, UniqueFd wake) : epoll_(std::move(epoll)), wake_(std::move(wake)) {}
  // How long epoll_wait may sleep: max_wait, cut short by the next live timer.
  int WaitMillis(std::chrono::milliseconds max_wait);
  void RunDueTimers();
  // RunOnce, and whether a descriptor's callback ran.
  std::error_code Wait(std::chrono::milliseconds max_wait, bool* handled);
  std::error_code RunSpinning();

  UniqueFd epoll_;
  UniqueFd wake_;  // eventfd written by Stop()
  std::atomic<bool> stop_{false};
  std::unordered_map<int, std::shared_ptr<Callback>> fds_;
  std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<>> timers_;
  std::unordered_map<TimerId, Callback> timer_callbacks_;  // live timers only
  TimerId next_timer_ = 1;
  BusyPoll busy_poll_;
  std::chrono::nanoseconds busy_window_{0};
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_EVENT_LOOP_H_
