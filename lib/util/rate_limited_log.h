// rate_limited_log.h - at most `burst` log lines per key and interval; the lines held back are
// counted and reported with the next line that gets through. A host that floods the bridge
// with refused TLPs, or a client that floods a daemon's HTTP API with refused requests, costs
// a few lines a second, not a disk. Not thread-safe: a caller shared by threads holds a lock.
#ifndef DXPU_LIB_UTIL_RATE_LIMITED_LOG_H_
#define DXPU_LIB_UTIL_RATE_LIMITED_LOG_H_

#include <cstdint>
#include <unordered_map>

namespace dxpu::util {

class RateLimitedLog {
 public:
  RateLimitedLog(uint64_t interval_ns, uint32_t burst) : interval_ns_(interval_ns), burst_(burst) {}

  // Whether a line for `key` may be written at `now`. When it may, *suppressed receives the
  // number of lines for that key held back since the last one written.
  bool Allow(uint64_t key, uint64_t now, uint64_t* suppressed) {
    auto [it, fresh] = windows_.try_emplace(key);
    Window& w = it->second;
    if (fresh || now - w.start >= interval_ns_) {
      w.start = now;
      w.written = 0;
    }
    if (w.written >= burst_) {
      ++w.held_back;
      ++suppressed_total_;
      return false;
    }
    ++w.written;
    *suppressed = w.held_back;
    w.held_back = 0;
    return true;
  }

  uint64_t suppressed_total() const { return suppressed_total_; }

 private:
  struct Window {
    uint64_t start = 0;
    uint32_t written = 0;
    uint64_t held_back = 0;
  };
  uint64_t interval_ns_;
  uint32_t burst_;
  std::unordered_map<uint64_t, Window> windows_;
  uint64_t suppressed_total_ = 0;
};

}  // namespace dxpu::util

#endif  // DXPU_LIB_UTIL_RATE_LIMITED_LOG_H_
