// realtime_host.cc - a HostProxy run in real time (realtime_host.h).
#include "host/realtime_host.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "fabric/link_driver.h"
#include "link/spin.h"

namespace dxpu::host {
namespace {

// Frames taken from one link in one pass, so that a busy link cannot hold the lock for long.
constexpr int kFramesPerPass = 256;
// Every sleep is bounded, so that a missed notification costs at most this long.
constexpr uint64_t kMaxSleepNs = 50'000'000;
// A spinning worker looks at its stop flag and the proxy's deadlines at least this often.
constexpr uint64_t kSpinSliceNs = 50'000;

link::UniqueFd MakeEventFd(std::string* error) {
  link::UniqueFd fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!fd.valid() && error != nullptr) *error = "eventfd: " + std::system_category().message(errno);
  return fd;
}

void Signal(const link::UniqueFd& fd) {
  const uint64_t one = 1;
  // A full counter still wakes the reader; nothing to handle.
  (void)!write(fd.get(), &one, sizeof one);
}

void Drain(const link::UniqueFd& fd) {
  uint64_t count = 0;
  (void)!read(fd.get(), &count, sizeof count);
}

}  // namespace

std::unique_ptr<RealTimeHost> RealTimeHost::Create(const HostProxyOptions& options,
                                                   std::string* error,
                                                   const RealTimeOptions& realtime) {
  std::unique_ptr<RealTimeHost> h(new RealTimeHost(options, realtime));
  h->wake_ = MakeEventFd(error);
  if (!h->wake_.valid()) return nullptr;
  h->receiver_wake_ = MakeEventFd(error);
  if (!h->receiver_wake_.valid()) return nullptr;
  auto receiver = link::LinkWaiter::Create();
  auto worker = link::LinkWaiter::Create();
  std::error_code ec = receiver.ok() ? worker.error : receiver.error;
  if (!ec) ec = receiver.link->AddFd(h->receiver_wake_.get());
  if (!ec) ec = worker.link->AddFd(h->wake_.get());
  if (ec) {
    if (error != nullptr) *error = ec.message();
    return nullptr;
  }
  h->receiver_waiter_ = std::move(receiver.link);
  h->worker_waiter_ = std::move(worker.link);
  return h;
}

RealTimeHost::~RealTimeHost() { Stop(); }

uint64_t RealTimeHost::Now() const { return fabric::MonotonicNanos(); }

std::optional<PathId> RealTimeHost::AddBridge(std::string name, std::unique_ptr<link::Link> link,
                                              link::LinkAddress peer,
                                              const dxfp_session_config& session,
                                              std::string* error) {
  dxfp_session_config sc = session;
  sc.max_frame = static_cast<uint32_t>(std::min<size_t>(sc.max_frame, link->max_frame()));
  const std::lock_guard lock(mu_);
  // The receiving caller's set first: a frame wakes it, not the worker, while it waits.
  std::error_code ec = receiver_waiter_->AddLink(*link);
  if (!ec) ec = worker_waiter_->AddLink(*link);
  if (ec) {
    if (error != nullptr) *error = ec.message();
    return std::nullopt;
  }
  std::optional<PathId> id = proxy_.AddBridgePath(std::move(name), sc, error);
  if (!id) return std::nullopt;
  rx_.resize(std::max(rx_.size(), link->max_frame()));
  links_.push_back({*id, std::move(link), std::move(peer)});
  return id;
}

void RealTimeHost::Start() {
  {
    const std::lock_guard lock(mu_);
    const uint64_t now = Now();
    for (const LinkEntry& l : links_) proxy_.Connect(l.path, now);
    FlushLocked(now);
  }
  worker_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "dxpu-host");  // what top -H and perf show
    Worker();
  });
}

void RealTimeHost::Stop() {
  if (!worker_.joinable()) return;
  {
    const std::lock_guard lock(mu_);
    stop_ = true;
  }
  WakeWorker();
  worker_.join();
}

void RealTimeHost::Transmit(PathId path, link::FramePieces frame) {
  for (LinkEntry& l : links_) {
    // A refusal (no buffer space) is counted by the link; the session retransmits.
    if (l.path == path) (void)l.link->SendPieces(l.peer, frame);
  }
}

void RealTimeHost::FlushLocked(uint64_t now) {
  proxy_.Flush(now, [this](PathId path, link::FramePieces frame) { Transmit(path, frame); });
}

void RealTimeHost::WakeWorker() { Signal(wake_); }

void RealTimeHost::WorkerWatchesLinks(bool watch) {
  if (watch == worker_watches_links_) return;
  worker_watches_links_ = watch;
  for (const LinkEntry& l : links_) {
    // Added again, a link that holds a frame makes the worker's next Wait return at once.
    const std::error_code ec =
        watch ? worker_waiter_->AddLink(*l.link) : worker_waiter_->RemoveLink(*l.link);
    // Cannot fail for a descriptor that is open and was (or was not) in the set; if it did,
    // the worker would miss frames, so it is woken to look at the links each time.
    if (ec) WakeWorker();
  }
}

bool RealTimeHost::WorkerSleepsTooLongLocked() const {
  return proxy_.NextDeadline() < worker_deadline_;
}

void RealTimeHost::WakeReceiver() {
  // Once until the receiver drained it: the receiver reads the eventfd only when signalled.
  if (!receiver_signalled_.exchange(true, std::memory_order_acq_rel)) Signal(receiver_wake_);
}

void RealTimeHost::NotifyLocked() {
  notified_.fetch_add(1, std::memory_order_release);
  if (cv_waiters_ != 0) cv_.notify_all();
  if (receiver_asleep_) WakeReceiver();
}

void RealTimeHost::Run(const std::function<void(HostProxy& proxy, uint64_t now)>& fn) {
  const std::lock_guard lock(mu_);
  const uint64_t now = Now();
  fn(proxy_, now);
  FlushLocked(now);
  // Device writes to host memory (semaphores) do not move the generation: always notify.
  NotifyLocked();
  // The worker sleeps until worker_deadline_: wake it if something is due sooner now.
  if (WorkerSleepsTooLongLocked()) WakeWorker();
}

RealTimeHost::PassResult RealTimeHost::ReceiveLocked(bool spinning) {
  PassResult r;
  for (LinkEntry& l : links_) {
    const link::Link::FrameUse use = [&](std::span<const uint8_t> frame,
                                         const link::LinkAddress& /*from*/) {
      proxy_.ReceiveFrame(l.path, Now(), frame);
    };
    int n = 0;
    while (n < kFramesPerPass && (!spinning || l.link->MayHaveFrame()) &&
           l.link->ReceiveInPlace(rx_, use).ok())
      ++n;
    if (n == kFramesPerPass) r.drained = false;
    r.frames += static_cast<uint32_t>(n);
  }
  FlushLocked(Now());
  return r;
}

void RealTimeHost::StartSpinning() {
  for (LinkEntry& l : links_) l.link->StartSpinning();
}

bool RealTimeHost::SpinUntil(const uint64_t* seen, uint64_t until) {
  link::Spinner spinner;
  for (;;) {
    if (seen != nullptr && notified_.load(std::memory_order_acquire) != *seen) return true;
    // The worker's spin: a caller receives now.
    if (seen == nullptr && receiving_.load(std::memory_order_acquire)) return false;
    for (LinkEntry& l : links_) {
      if (l.link->MayHaveFrame()) return true;
    }
    if (Now() >= until) return false;
    spinner.Pause();
  }
}

bool RealTimeHost::WaitUntil(const Ready& ready, uint64_t deadline) {
  Lock lock(mu_);
  for (;;) {
    if (ready(proxy_)) return true;
    const uint64_t now = Now();
    if (now >= deadline) return false;
    if (!receiver_ && realtime_.waiter_receives) break;
    // Another caller receives (or the worker alone does): it wakes this one when the proxy
    // moved. Busy polling: watch for that a while first.
    if (realtime_.busy_poll_ns != 0) {
      const uint64_t seen = notified_.load(std::memory_order_acquire);
      lock.unlock();
      const uint64_t until = std::min(deadline, now + realtime_.busy_poll_ns);
      link::Spinner spinner;
      while (notified_.load(std::memory_order_acquire) == seen && Now() < until) spinner.Pause();
      lock.lock();
      if (notified_.load(std::memory_order_acquire) != seen) continue;
    }
    ++cv_waiters_;
    cv_.wait_for(lock, std::chrono::nanoseconds(std::min(deadline - now, kMaxSleepNs)));
    --cv_waiters_;
  }
  receiver_ = true;
  receiving_.store(true, std::memory_order_release);
  // Busy polling, the links are this thread's until it returns: the worker stops watching them,
  // so that the frames that come while this thread spins (not asleep in its own set, which
  // would keep them from the worker) do not wake the worker (two system calls, no wake-up). A
  // spinning worker sees receiving_.
  const bool take_links = realtime_.busy_poll_ns != 0;
  if (take_links) WorkerWatchesLinks(false);
  const bool done = Receive(lock, ready, deadline);
  if (take_links) WorkerWatchesLinks(true);
  receiving_.store(false, std::memory_order_release);
  receiver_ = false;
  // Another waiter may receive now.
  if (cv_waiters_ != 0) cv_.notify_all();
  return done;
}

bool RealTimeHost::Receive(Lock& lock, const Ready& ready, uint64_t deadline) {
  const uint64_t busy = realtime_.busy_poll_ns;
  bool spinning = false;
  bool done = false;
  uint64_t last_work = Now();
  PassResult pass;
  for (;;) {
    const uint64_t before = proxy_.progress();
    pass = ReceiveLocked(spinning);
    if (pass.frames != 0) last_work = Now();
    if (proxy_.progress() != before) NotifyLocked();
    if (ready(proxy_)) {
      done = true;
      break;
    }
    const uint64_t now = Now();
    if (now >= deadline) break;
    if (!pass.drained) continue;
    if (busy != 0 && now - last_work < busy) {
      if (!spinning) StartSpinning();
      spinning = true;
      const uint64_t seen = notified_.load(std::memory_order_acquire);
      lock.unlock();
      SpinUntil(&seen, std::min(deadline, last_work + busy));
      lock.lock();
      continue;
    }
    if (spinning) {
      // A pass that is not spinning first: it leaves every link able to wake this thread.
      spinning = false;
      continue;
    }
    // The worker keeps the proxy's timers meanwhile.
    if (WorkerSleepsTooLongLocked()) WakeWorker();
    receiver_asleep_ = true;
    lock.unlock();
    receiver_waiter_->Wait(std::min(deadline - now, kMaxSleepNs));
    if (receiver_signalled_.exchange(false, std::memory_order_acq_rel)) Drain(receiver_wake_);
    lock.lock();
    receiver_asleep_ = false;
    last_work = Now();
  }
  if (spinning) {
    // Leave every link able to wake a sleeper (the worker) again.
    const uint64_t before = proxy_.progress();
    pass = ReceiveLocked(false);
    if (proxy_.progress() != before) NotifyLocked();
  }
  // Frames left behind (the worker hears of them only from this), or a timer due before the
  // worker means to wake (an acknowledgement owed, if no request follows to carry it).
  if (!pass.drained || WorkerSleepsTooLongLocked()) WakeWorker();
  return done;
}

void RealTimeHost::Worker() {
  const uint64_t busy = realtime_.busy_poll_ns;
  Lock lock(mu_);
  bool spinning = false;
  bool more = false;  // the last pass left frames behind
  uint64_t last_work = 0;
  while (!stop_) {
    const uint64_t now = Now();
    const uint64_t next = proxy_.NextDeadline();
    // While a caller receives, the links are its own (WaitUntil).
    if (busy != 0 && !receiver_ && last_work != 0 && now - last_work < busy) {
      if (!spinning) StartSpinning();
      spinning = true;
      lock.unlock();
      SpinUntil(nullptr, std::min({next, now + kSpinSliceNs, last_work + busy}));
      lock.lock();
    } else if (spinning) {
      spinning = false;  // the pass below leaves every link able to wake this thread
    } else if (!more && next > now) {
      // Asleep until a frame (unless a caller receives), the proxy's next deadline (at most a
      // second: Stop() also wakes it) or a wake.
      worker_deadline_ = next;
      lock.unlock();
      worker_waiter_->Wait(std::min<uint64_t>(next - now, 1'000'000'000));
      Drain(wake_);
      lock.lock();
      worker_deadline_ = 0;  // awake: callers need not wake it
      if (stop_) break;
    }
    const uint64_t before = proxy_.progress();
    const PassResult pass = ReceiveLocked(spinning);
    more = !pass.drained;
    if (pass.frames != 0) last_work = Now();
    // Waiters wake only for something they may wait for: a wake-up costs them a context
    // switch and this thread the lock, thousands of times a second under a stream of frames.
    if (proxy_.progress() != before) NotifyLocked();
  }
  // Close every session so the bridges hear it.
  const uint64_t now = Now();
  for (const LinkEntry& l : links_) proxy_.Close(l.path, now);
  FlushLocked(now);
  NotifyLocked();
}

}  // namespace dxpu::host
