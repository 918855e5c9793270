// link.cc - the counters every link keeps.
#include "link/link.h"

namespace dxpu::link {

LinkCounters Link::counters() const {
  LinkCounters c;
  c.frames_sent = frames_sent_.load(std::memory_order_relaxed);
  c.bytes_sent = bytes_sent_.load(std::memory_order_relaxed);
  c.frames_received = frames_received_.load(std::memory_order_relaxed);
  c.bytes_received = bytes_received_.load(std::memory_order_relaxed);
  c.send_errors = send_errors_.load(std::memory_order_relaxed);
  c.receive_errors = receive_errors_.load(std::memory_order_relaxed);
  c.dropped = dropped_.load(std::memory_order_relaxed);
  return c;
}

void Link::CountSent(size_t bytes) {
  frames_sent_.fetch_add(1, std::memory_order_relaxed);
  bytes_sent_.fetch_add(bytes, std::memory_order_relaxed);
}

void Link::CountReceived(size_t bytes) {
  frames_received_.fetch_add(1, std::memory_order_relaxed);
  bytes_received_.fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace dxpu::link
