// http_limits.h - what every HTTP server of the pool (dxpu-manager's API, dxpu-agent's API)
// does against idle, slow and refused clients (issue 32): an idle keep-alive connection is
// closed after 1 s, a request whose next bytes do not come within 2 s is dropped, each
// connection is served by a thread of its own (up to `max_workers` at once, then they queue),
// so that idle or slowloris connections cannot hold the threads /healthz needs, and refused
// requests (4xx) are logged at a bounded rate (a few lines a second per status).
#ifndef DXPU_MANAGER_HTTP_LIMITS_H_
#define DXPU_MANAGER_HTTP_LIMITS_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

namespace dxpu::manager {

struct HttpLimits {
  std::chrono::seconds keep_alive{1};  // cpp-httplib 0.11 counts it in whole seconds
  std::chrono::milliseconds read{2000};
  std::chrono::milliseconds write{2000};
  size_t min_workers = 4;
  size_t max_workers = 256;  // connections served at once; more wait their turn
  uint64_t refusal_log_interval_ns = 1'000'000'000;
  uint32_t refusal_log_burst = 5;  // lines per interval and HTTP status
};

// cpp-httplib's task queue for a server: a thread per connection in service, started when every
// thread is busy, up to max_workers (cpp-httplib's own pool is fixed at 8 threads, which 8 idle
// connections held for its 5 s keep-alive: issue 32). Threads started stay until shutdown.
class ElasticTaskQueue : public httplib::TaskQueue {
 public:
  ElasticTaskQueue(size_t min_workers, size_t max_workers);
  ~ElasticTaskQueue() override;
  ElasticTaskQueue(const ElasticTaskQueue&) = delete;
  ElasticTaskQueue& operator=(const ElasticTaskQueue&) = delete;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  void Work();
  void StartWorker();  // mutex_ held
  // Serves the connections taken on, then ends every thread (shutdown() and the destructor).
  void Stop();

  const size_t max_workers_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

// Applies `limits` to `server`; `daemon` names it in the refusal log lines.
void ApplyHttpLimits(httplib::Server& server, const HttpLimits& limits, const std::string& daemon);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_HTTP_LIMITS_H_
