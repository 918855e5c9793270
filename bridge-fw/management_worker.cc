// management_worker.cc - firmware requests on a worker thread (management_worker.h).
#include "bridge-fw/management_worker.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace dxpu::bridge {

FirmwareWorker::FirmwareWorker(std::unique_ptr<firmware::FirmwareService> service, SendAnswer send,
                               std::function<void()> on_reboot)
    : service_(std::move(service)),
      send_(std::move(send)),
      on_reboot_(std::move(on_reboot)),
      thread_([this] { Loop(); }) {}

FirmwareWorker::~FirmwareWorker() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  thread_.join();
}

bool FirmwareWorker::Submit(std::span<const uint8_t> request, const ManagementPeer& peer) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || queue_.size() >= kMaxQueued) {
      counters_.dropped++;
      return false;
    }
    queue_.push_back(Job{{request.begin(), request.end()}, peer, {}});
  }
  wake_.notify_one();
  return true;
}

void FirmwareWorker::Post(std::function<void(firmware::FirmwareService&)> task) {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    queue_.push_back(Job{{}, {}, std::move(task)});
  }
  wake_.notify_one();
}

ManagementCounters FirmwareWorker::counters() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

void FirmwareWorker::RunJob(Job& job) {
  if (job.task) {
    job.task(*service_);
    return;
  }
  ManagementCounters c;
  const std::vector<uint8_t> reply = HandleFirmwareManagement(job.request, &c, service_.get());
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    counters_.requests += c.requests;
    counters_.refused += c.refused;
    counters_.dropped += c.dropped;
  }
  send_(job.peer, reply);
  if (service_->reboot_requested() && !reboot_requested_.exchange(true)) on_reboot_();
}

void FirmwareWorker::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    RunJob(job);
    lock.lock();
  }
}

}  // namespace dxpu::bridge
