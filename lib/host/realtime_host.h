// realtime_host.h - a HostProxy run in real time: one worker thread sleeps in poll() on the
// bridges' links and an eventfd until a frame arrives or the proxy's next deadline; callers on
// any thread run requests under the same mutex and send what they queued at once (no hand-off
// to the worker on the way out). Waiters sleep on a condition variable that the worker and
// every Run() notify.
#ifndef DXPU_LIB_HOST_REALTIME_HOST_H_
#define DXPU_LIB_HOST_REALTIME_HOST_H_

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "host/host_driver.h"
#include "link/link.h"
#include "link/unique_fd.h"

namespace dxpu::host {

class RealTimeHost final : public HostDriver {
 public:
  // Null, with *error, when the eventfd cannot be made.
  static std::unique_ptr<RealTimeHost> Create(const HostProxyOptions& options, std::string* error);
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

  RealTimeHost(const HostProxyOptions& options, link::UniqueFd wake)
      : proxy_(options), wake_(std::move(wake)) {}
  void Worker();
  void FlushLocked(uint64_t now);
  void Transmit(PathId path, link::FramePieces frame);
  void WakeWorker();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  HostProxy proxy_;
  std::vector<LinkEntry> links_;
  link::UniqueFd wake_;
  std::thread worker_;
  bool stop_ = false;
  uint64_t worker_deadline_ = 0;  // when the sleeping worker means to wake
  std::vector<uint8_t> rx_;
};

}  // namespace dxpu::host

#endif  // DXPU_LIB_HOST_REALTIME_HOST_H_
