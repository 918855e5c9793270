// link.cc - the counters every link keeps.
#include "link/link.h"

#include <cerrno>

#include "link/os_error.h"

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

std::error_code Link::FinishSend(ssize_t n, int err, size_t expected, size_t frame_bytes,
                                 const std::string& what) {
  if (n < 0) {
    if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
      CountDropped();
    } else {
      CountSendError();
    }
    return OsError(err, what);
  }
  if (static_cast<size_t>(n) != expected) {
    CountSendError();
    return std::make_error_code(std::errc::message_size);
  }
  CountSent(frame_bytes);
  return {};
}

void Link::CountReceived(size_t bytes) {
  frames_received_.fetch_add(1, std::memory_order_relaxed);
  bytes_received_.fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace dxpu::link
