// event_loop.cc - a single-threaded epoll loop with fd callbacks and deadline timers.
#include "link/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <string>

#include "link/os_error.h"
#include "link/spin.h"

namespace dxpu::link {

OpenResult<EventLoop> EventLoop::Create() {
  OpenResult<EventLoop> r;
  UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll.valid()) {
    r.error = LastOsError("event loop: epoll_create1");
    return r;
  }
  UniqueFd wake(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake.valid()) {
    r.error = LastOsError("event loop: eventfd");
    return r;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake.get();
  if (epoll_ctl(epoll.get(), EPOLL_CTL_ADD, wake.get(), &ev) != 0) {
    r.error = LastOsError("event loop: epoll_ctl add wake");
    return r;
  }
  r.link.reset(new EventLoop(std::move(epoll), std::move(wake)));  // private constructor
  return r;
}

std::error_code EventLoop::AddFd(int fd, Callback on_readable) {
  if (fd < 0 || fd == wake_.get() || fds_.contains(fd) || !on_readable) {
    return std::make_error_code(std::errc::invalid_argument);
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    return LastOsError("event loop: epoll_ctl add " + std::to_string(fd));
  }
  fds_.emplace(fd, std::make_shared<Callback>(std::move(on_readable)));
  return {};
}

std::error_code EventLoop::RemoveFd(int fd) {
  if (fds_.erase(fd) == 0) return std::make_error_code(std::errc::invalid_argument);
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr) != 0) {
    return LastOsError("event loop: epoll_ctl del " + std::to_string(fd));
  }
  return {};
}

EventLoop::TimerId EventLoop::AddTimer(Clock::time_point deadline, Callback fire) {
  const TimerId id = next_timer_++;
  timers_.push({deadline, id});
  timer_callbacks_.emplace(id, std::move(fire));
  return id;
}

bool EventLoop::CancelTimer(TimerId id) { return timer_callbacks_.erase(id) != 0; }

int EventLoop::WaitMillis(std::chrono::milliseconds max_wait) {
  // Cancelled timers stay in the heap until they reach the top.
  while (!timers_.empty() && !timer_callbacks_.contains(timers_.top().id)) timers_.pop();
  auto wait = std::max(max_wait, std::chrono::milliseconds(0));
  if (!timers_.empty()) {
    const auto until = timers_.top().deadline - Clock::now();
    // Round up: waking before the deadline would only mean waiting again.
    wait = std::min(wait, std::max(std::chrono::ceil<std::chrono::milliseconds>(until),
                                   std::chrono::milliseconds(0)));
  }
  return static_cast<int>(std::min<int64_t>(wait.count(), INT_MAX));
}

void EventLoop::RunDueTimers() {
  const auto now = Clock::now();
  // Collect first, so a callback that adds a timer already due runs it next time round
  // rather than holding the loop here.
  std::vector<Callback> due;
  while (!timers_.empty() && timers_.top().deadline <= now) {
    const TimerId id = timers_.top().id;
    timers_.pop();
    auto it = timer_callbacks_.find(id);
    if (it == timer_callbacks_.end()) continue;  // cancelled
    due.push_back(std::move(it->second));
    timer_callbacks_.erase(it);
  }
  for (auto& fire : due) fire();
}

std::error_code EventLoop::RunOnce(std::chrono::milliseconds max_wait) {
  bool handled = false;
  return Wait(max_wait, &handled);
}

std::error_code EventLoop::Wait(std::chrono::milliseconds max_wait, bool* handled) {
  std::array<epoll_event, 64> events{};
  const int n = epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()),
                           WaitMillis(max_wait));
  if (n < 0) {
    if (errno == EINTR) return {};
    return LastOsError("event loop: epoll_wait");
  }
  for (int i = 0; i < n; ++i) {
    const int fd = events[static_cast<size_t>(i)].data.fd;
    if (fd == wake_.get()) {
      uint64_t count = 0;
      if (::read(wake_.get(), &count, sizeof(count)) < 0 && errno != EAGAIN) {
        LastOsError("event loop: read wake");
      }
      continue;
    }
    auto it = fds_.find(fd);
    if (it == fds_.end()) continue;                   // removed by an earlier callback
    const std::shared_ptr<Callback> cb = it->second;  // survives RemoveFd inside the call
    *handled = true;
    (*cb)();
  }
  RunDueTimers();
  return {};
}

std::error_code EventLoop::Run() {
  std::error_code ec;
  if (busy_poll_) {
    ec = RunSpinning();
  } else {
    while (!stop_.load(std::memory_order_acquire)) {
      ec = RunOnce(std::chrono::milliseconds(INT_MAX));
      if (ec) break;
    }
  }
  stop_.store(false, std::memory_order_release);
  return ec;
}

void EventLoop::SetBusyPoll(BusyPoll poll, std::chrono::nanoseconds window) {
  busy_poll_ = std::move(poll);
  busy_window_ = window;
}

std::error_code EventLoop::RunSpinning() {
  // Descriptors and timers are looked at (an epoll_wait that does not wait) once every this
  // many polls: often enough for a timer's microseconds, rarely enough to cost little.
  constexpr uint32_t kPollsPerLook = 16;
  auto last_work = Clock::now();
  uint32_t polls = 0;
  Spinner spinner;
  while (!stop_.load(std::memory_order_acquire)) {
    const auto now = Clock::now();
    if (now - last_work < busy_window_) {
      if (busy_poll_(false)) last_work = now;
      spinner.Pause();
      if (++polls % kPollsPerLook != 0) continue;
      bool handled = false;
      if (std::error_code ec = Wait(std::chrono::milliseconds(0), &handled)) return ec;
      if (handled) last_work = now;
      continue;
    }
    // Idle for the window: make sure the sources can wake the loop, then sleep.
    if (busy_poll_(true)) {
      last_work = now;
      continue;
    }
    bool handled = false;
    if (std::error_code ec = Wait(std::chrono::milliseconds(INT_MAX), &handled)) return ec;
    if (handled) last_work = Clock::now();
  }
  return {};
}

void EventLoop::Stop() {
  stop_.store(true, std::memory_order_release);
  const uint64_t one = 1;
  if (::write(wake_.get(), &one, sizeof(one)) < 0) LastOsError("event loop: write wake");
}

}  // namespace dxpu::link
