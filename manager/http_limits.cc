// http_limits.cc - timeouts, threads and bounded refusal logs for the pool's HTTP servers
// (http_limits.h).
#include "manager/http_limits.h"

#include <memory>

#include <spdlog/spdlog.h>

#include "lib/util/rate_limited_log.h"
#include "manager/access.h"
#include "manager/tls.h"

namespace dxpu::manager {

ElasticTaskQueue::ElasticTaskQueue(size_t min_workers, size_t max_workers)
    : max_workers_(std::max<size_t>(max_workers, 1)) {
  std::lock_guard lock(mutex_);
  while (threads_.size() < std::min(min_workers, max_workers_)) StartWorker();
}

ElasticTaskQueue::~ElasticTaskQueue() { Stop(); }

void ElasticTaskQueue::StartWorker() {
  threads_.emplace_back([this] { Work(); });
}

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  std::lock_guard lock(mutex_);
  jobs_.push_back(std::move(fn));
  if (idle_ < jobs_.size() && threads_.size() < max_workers_) StartWorker();
  ready_.notify_one();
}

void ElasticTaskQueue::shutdown() { Stop(); }

void ElasticTaskQueue::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    threads.swap(threads_);
  }
  ready_.notify_all();
  for (std::thread& t : threads) t.join();
}

void ElasticTaskQueue::Work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) return;  // stopping, and every connection taken on was served
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

namespace {

// Refused requests (HTTP 4xx), a few lines a second per status; what was held back is counted
// in the next line. cpp-httplib calls the logger from every connection's thread.
class RefusalLog {
 public:
  RefusalLog(std::string daemon, const HttpLimits& limits, bool tls)
      : daemon_(std::move(daemon)),
        tls_(tls),
        log_(limits.refusal_log_interval_ns, limits.refusal_log_burst) {}

  void Note(const httplib::Request& req, const httplib::Response& res) {
    if (res.status < 400 || res.status >= 500) return;
    const uint64_t now =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now().time_since_epoch())
                                  .count());
    uint64_t suppressed = 0;
    {
      std::lock_guard lock(mutex_);
      if (!log_.Allow(static_cast<uint64_t>(res.status), now, &suppressed)) return;
    }
    spdlog::warn("{}: refused {} {} from {}:{} by {}: HTTP {}{}", daemon_, req.method, req.path,
                 req.remote_addr, req.remote_port, Who(req), res.status,
                 suppressed > 0
                     ? fmt::format(" ({} more HTTP {} not logged)", suppressed, res.status)
                     : std::string());
  }

 private:
  // The request's identity; on a TLS server a request refused before it parsed has none yet
  // (cpp-httplib sets the connection's TLS state on the request after parsing it).
  std::string Who(const httplib::Request& req) const {
    return tls_ && !OverTls(req) ? "(not parsed)" : IdentityOf(req).name;
  }

  const std::string daemon_;
  const bool tls_;
  std::mutex mutex_;
  util::RateLimitedLog log_;
};

}  // namespace

void ApplyHttpLimits(httplib::Server& server, const HttpLimits& limits, const std::string& daemon) {
  server.set_keep_alive_timeout(limits.keep_alive.count());
  server.set_read_timeout(limits.read);
  server.set_write_timeout(limits.write);
  server.new_task_queue = [min = limits.min_workers, max = limits.max_workers] {
    return new ElasticTaskQueue(min, max);  // cpp-httplib owns and deletes it
  };
  const bool tls = dynamic_cast<httplib::SSLServer*>(&server) != nullptr;
  auto refusals = std::make_shared<RefusalLog>(daemon, limits, tls);
  server.set_logger([refusals](const httplib::Request& req, const httplib::Response& res) {
    refusals->Note(req, res);
  });
}

}  // namespace dxpu::manager
