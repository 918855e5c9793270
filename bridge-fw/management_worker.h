// management_worker.h - the bridge's firmware requests served off its data path
// (docs/firmware.md, "Off the data path"): FW_BEGIN .. FW_REBOOT and the health check's
// mark-good run on one worker thread that owns the FirmwareService and its flash, so a slow
// erase or a whole image read back and hashed never holds up the event loop that forwards
// frames. Requests are taken in order; each answer is sent from the worker when it is ready.
#ifndef DXPU_BRIDGE_FW_MANAGEMENT_WORKER_H_
#define DXPU_BRIDGE_FW_MANAGEMENT_WORKER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "bridge-fw/firmware/firmware_service.h"
#include "bridge-fw/management.h"
#include "bridge-fw/management_socket.h"

namespace dxpu::bridge {

class FirmwareWorker {
 public:
  // Sends an answer to the peer that asked (from the worker thread).
  using SendAnswer = std::function<void(const ManagementPeer&, std::span<const uint8_t>)>;

  // Starts the thread, which owns `service` from now on. `on_reboot` runs on the worker once
  // FW_REBOOT was answered (the daemon stops its loop).
  FirmwareWorker(std::unique_ptr<firmware::FirmwareService> service, SendAnswer send,
                 std::function<void()> on_reboot);
  // Finishes the request in hand (a flash operation is never cut short), drops the queued
  // ones, joins the thread.
  ~FirmwareWorker();
  FirmwareWorker(const FirmwareWorker&) = delete;
  FirmwareWorker& operator=(const FirmwareWorker&) = delete;

  // Queues a firmware request from `peer`; false when kMaxQueued are waiting (dropped and
  // counted: the client sends it again).
  bool Submit(std::span<const uint8_t> request, const ManagementPeer& peer);
  // Queues work on the service (the health check's mark-good).
  void Post(std::function<void(firmware::FirmwareService&)> task);

  // Counters of the requests the worker answered and the ones it dropped (queue full).
  ManagementCounters counters() const;
  bool reboot_requested() const { return reboot_requested_.load(); }

  static constexpr size_t kMaxQueued = 64;

 private:
  struct Job {
    std::vector<uint8_t> request;  // empty: run `task`
    ManagementPeer peer;
    std::function<void(firmware::FirmwareService&)> task;
  };
  void Loop();
  void RunJob(Job& job);

  std::unique_ptr<firmware::FirmwareService> service_;
  SendAnswer send_;
  std::function<void()> on_reboot_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  bool stopping_ = false;
  ManagementCounters counters_;  // under mutex_
  std::atomic<bool> reboot_requested_{false};
  std::thread thread_;  // last: started once the rest is ready
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_MANAGEMENT_WORKER_H_
