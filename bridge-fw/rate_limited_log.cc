// rate_limited_log.cc - per-key log rate limiting (rate_limited_log.h).
#include "bridge-fw/rate_limited_log.h"

namespace dxpu::bridge {

bool RateLimitedLog::Allow(uint64_t key, uint64_t now, uint64_t* suppressed) {
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

}  // namespace dxpu::bridge
