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

namespace dxpu::host {

std::unique_ptr<RealTimeHost> RealTimeHost::Create(const HostProxyOptions& options,
                                                   std::string* error) {
  link::UniqueFd wake(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake.valid()) {
    if (error != nullptr) *error = "eventfd: " + std::system_category().message(errno);
    return nullptr;
  }
  return std::unique_ptr<RealTimeHost>(new RealTimeHost(options, std::move(wake)));
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

void RealTimeHost::WakeWorker() {
  const uint64_t one = 1;
  // A full counter still wakes the worker; nothing to handle.
  (void)!write(wake_.get(), &one, sizeof one);
}

void RealTimeHost::Run(const std::function<void(HostProxy& proxy, uint64_t now)>& fn) {
  bool wake = false;
  {
    const std::lock_guard lock(mu_);
    const uint64_t now = Now();
    fn(proxy_, now);
    FlushLocked(now);
    // The worker sleeps until worker_deadline_: wake it if something is due sooner now.
    wake = proxy_.NextDeadline() < worker_deadline_;
    // Device writes to host memory (semaphores) do not move the generation: always notify.
    cv_.notify_all();
  }
  if (wake) WakeWorker();
}

bool RealTimeHost::WaitUntil(const std::function<bool(const HostProxy& proxy)>& ready,
                             uint64_t deadline) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (ready(proxy_)) return true;
    const uint64_t now = Now();
    if (now >= deadline) return false;
    // Also bounded, so a missed notification costs at most that long.
    const uint64_t wait = std::min<uint64_t>(deadline - now, 50'000'000);
    cv_.wait_for(lock, std::chrono::nanoseconds(wait));
  }
}

void RealTimeHost::Worker() {
  std::vector<pollfd> fds;
  for (;;) {
    uint64_t sleep_ns = 0;
    {
      const std::lock_guard lock(mu_);
      if (stop_) break;
      const uint64_t now = Now();
      const uint64_t next = proxy_.NextDeadline();
      worker_deadline_ = next;
      // Sleep to the next deadline (at most a second: Stop() also wakes it).
      if (next > now) sleep_ns = std::min<uint64_t>(next - now, 1'000'000'000);
      fds.clear();
      fds.push_back({wake_.get(), POLLIN, 0});
      for (const LinkEntry& l : links_) fds.push_back({l.link->fd(), POLLIN, 0});
    }
    if (sleep_ns > 0) {
      const timespec timeout{static_cast<time_t>(sleep_ns / 1'000'000'000),
                             static_cast<long>(sleep_ns % 1'000'000'000)};
      ppoll(fds.data(), fds.size(), &timeout, nullptr);
    }
    uint64_t drained = 0;
    (void)!read(wake_.get(), &drained, sizeof drained);

    const std::lock_guard lock(mu_);
    worker_deadline_ = 0;  // awake: callers need not wake it
    const uint64_t progress = proxy_.progress();
    for (LinkEntry& l : links_) {
      const link::Link::FrameUse use = [&](std::span<const uint8_t> frame,
                                           const link::LinkAddress& /*from*/) {
        proxy_.ReceiveFrame(l.path, Now(), frame);
      };
      for (int i = 0; i < 256 && l.link->ReceiveInPlace(rx_, use).ok(); ++i) {
      }
    }
    FlushLocked(Now());
    // Waiters wake only for something they may wait for: a wake-up costs them a context
    // switch and this thread the lock, thousands of times a second under a stream of frames.
    if (proxy_.progress() != progress) cv_.notify_all();
  }
  // Close every session so the bridges hear it.
  const std::lock_guard lock(mu_);
  const uint64_t now = Now();
  for (const LinkEntry& l : links_) proxy_.Close(l.path, now);
  FlushLocked(now);
  cv_.notify_all();
}

}  // namespace dxpu::host
