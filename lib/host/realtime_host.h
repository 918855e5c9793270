// realtime_host.h - a HostProxy run in real time. Callers on any thread run requests under one
// mutex and send what they queued at once (no hand-off to a thread on the way out). The
// answers come back two ways:
//   - a caller that waits for one (WaitUntil) receives from the bridges' links itself, so that
//     an MMIO read costs two thread wake-ups (the bridge's and the caller's), not three; one
//     caller at a time does (the receiver), the others wait on a condition variable;
//   - a worker thread receives whatever arrives while no caller waits (device DMA, interrupts,
//     the sessions' acknowledgements) and runs the proxy's timers. It sleeps in epoll on the
//     links and an eventfd until a frame arrives or the proxy's next deadline; a caller that
//     brings a deadline nearer wakes it. (A timerfd that callers set instead cost two system
//     calls per MMIO read, more than the wake-ups it saved on the development VM.)
// Both sleep on the links' descriptors, the receiver's set holding them first and exclusively
// (link::LinkWaiter), so a frame wakes the receiver alone while it sleeps; one that comes
// before it sleeps wakes the worker, which receives it and wakes the receiver (on a machine
// with fewer cores than busy threads, where the bridge's wake-up often preempts the caller
// right after it sent its request, that is most of the worker's wake-ups).
//
// Busy polling (RealTimeOptions::busy_poll_ns), off by default: the receiver spins on the
// links for up to that long after the last frame before it sleeps, and the worker spins on
// them while frames arrived within that long and no caller receives. While a caller receives
// the worker's set does not hold the links (taken out and put back by the caller: system
// calls, no wake-ups), so a frame that comes while the caller spins does not wake it.
#ifndef DXPU_LIB_HOST_REALTIME_HOST_H_
#define DXPU_LIB_HOST_REALTIME_HOST_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/host_driver.h"
#include "link/link.h"
#include "link/link_waiter.h"
#include "link/unique_fd.h"

namespace dxpu::host {

struct RealTimeOptions {
  // Busy polling (see above): how long a thread spins after the last frame before it sleeps.
  // 0: never spins.
  uint64_t busy_poll_ns = 0;
  // A waiting caller receives the answer itself (see above). False: the worker alone receives
  // and wakes the waiters (three thread wake-ups per MMIO read: what `dxpu bench gpu` compares
  // against); busy polling then spins the worker on the links and the waiters on its news.
  bool waiter_receives = true;
};

class RealTimeHost final : public HostDriver {
 public:
  // Null, with *error, when an eventfd or epoll set cannot be made.
  static std::unique_ptr<RealTimeHost> Create(const HostProxyOptions& options, std::string* error,
                                              const RealTimeOptions& realtime = {});
  ~RealTimeHost() override;

  // Before Start(): a session to a bridge over `link`, frames to `peer`. The path connects
  // when the worker starts.
  std::optional<PathId> AddBridge(std::string name, std::unique_ptr<link::Link> link,
                                  link::LinkAddress peer, const dxfp_session_config& session,
                                  std::string* error);
  // Starts the worker (and connects every bridge path).
  void Start();
  // Stops the worker; every session is closed (CLOSE sent) first.
  void Stop();

  void Run(const std::function<void(HostProxy& proxy, uint64_t now)>& fn) override;
  bool WaitUntil(const std::function<bool(const HostProxy& proxy)>& ready,
                 uint64_t deadline) override;
  uint64_t Now() const override;

  // The proxy, for set-up before Start() (direct paths, devices).
  HostProxy& proxy_for_setup() { return proxy_; }

 private:
  struct LinkEntry {
    PathId path = 0;
    std::unique_ptr<link::Link> link;
    link::LinkAddress peer;
  };
  using Ready = std::function<bool(const HostProxy& proxy)>;
  using Lock = std::unique_lock<std::mutex>;

  RealTimeHost(const HostProxyOptions& options, const RealTimeOptions& realtime)
      : realtime_(realtime), proxy_(options) {}
  void Worker();
  // The worker's sleep (or spin) until something may be due; the lock is released meanwhile.
  void WorkerWait(Lock& lock);
  void FlushLocked(uint64_t now);
  void Transmit(PathId path, link::FramePieces frame);
  void WakeWorker();
  // Whether the worker's set holds the links (not while a caller receives).
  void WorkerWatchesLinks(bool watch);
  // Whether the proxy has something due before the worker means to wake.
  bool WorkerSleepsTooLongLocked() const;
  void WakeReceiver();
  struct PassResult {
    uint32_t frames = 0;
    bool drained = true;  // false: a link may hold more
  };
  // Receives from every link (at most 256 frames each) and flushes. Spinning: only while
  // Link::MayHaveFrame says a frame waits.
  PassResult ReceiveLocked(bool spinning);
  // After the proxy moved: wakes whoever waits for it (not the calling thread).
  void NotifyLocked();
  // Spins until a link may have a frame, someone notified (notified_ left *seen, unless
  // null), or the clock reached `until` (false).
  bool SpinUntil(const uint64_t* seen, uint64_t until);
  void StartSpinning();
  // WaitUntil's receiving caller: the lock is held on entry and exit.
  bool Receive(Lock& lock, const Ready& ready, uint64_t deadline);

  const RealTimeOptions realtime_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  HostProxy proxy_;
  std::vector<LinkEntry> links_;
  link::UniqueFd wake_;                                // the worker's eventfd
  link::UniqueFd receiver_wake_;                       // the receiving caller's eventfd
  std::unique_ptr<link::LinkWaiter> receiver_waiter_;  // links (first) and receiver_wake_
  std::unique_ptr<link::LinkWaiter> worker_waiter_;    // links and wake_
  std::thread worker_;
  bool stop_ = false;
  uint64_t worker_deadline_ = 0;  // when the sleeping worker means to wake
  bool receiver_ = false;         // a caller in WaitUntil receives from the links
  bool receiver_asleep_ = false;  // ... and sleeps in receiver_waiter_
  bool worker_watches_links_ = true;
  std::atomic<bool> receiving_{false};           // receiver_, for the spinning worker
  std::atomic<bool> receiver_signalled_{false};  // receiver_wake_ written, not yet drained
  uint32_t cv_waiters_ = 0;
  std::atomic<uint64_t> notified_{0};  // moves at every notification: what spinners watch
  std::vector<uint8_t> rx_;
};

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_REALTIME_HOST_H_
