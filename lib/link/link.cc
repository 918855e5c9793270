// link.cc - the counters every link keeps.
#include "link/link.h"

#include <cerrno>
#include <cstring>

#include "link/os_error.h"

namespace dxpu::link {

LinkResult Link::ReceiveInPlace(std::span<uint8_t> scratch, const FrameUse& use) {
  LinkAddress from;
  const LinkResult r = Receive(scratch, &from);
  if (r.ok()) use(scratch.first(r.size), from);
  return r;
}

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

std::error_code Link::CheckFrame(FramePieces frame, size_t max_frame, size_t* bytes) {
  if (frame.size() > kMaxFramePieces) {
    CountSendError();
    return std::make_error_code(std::errc::invalid_argument);
  }
  size_t total = 0;
  for (const std::span<const uint8_t> piece : frame) total += piece.size();
  if (total > max_frame) {
    CountSendError();
    return std::make_error_code(std::errc::message_size);
  }
  *bytes = total;
  return {};
}

size_t FramePiecesToIovecs(FramePieces frame, iovec* iov) {
  for (size_t i = 0; i < frame.size(); ++i) {
    // sendmsg only reads through iov_base.
    iov[i].iov_base = const_cast<uint8_t*>(frame[i].data());
    iov[i].iov_len = frame[i].size();
  }
  return frame.size();
}

size_t GatherFrame(FramePieces frame, std::span<uint8_t> out) {
  size_t at = 0;
  for (const std::span<const uint8_t> piece : frame) {
    if (!piece.empty()) std::memcpy(out.data() + at, piece.data(), piece.size());
    at += piece.size();
  }
  return at;
}

std::vector<uint8_t> GatherFrame(FramePieces frame) {
  size_t total = 0;
  for (const auto& p : frame) total += p.size();
  std::vector<uint8_t> bytes(total);
  GatherFrame(frame, bytes);
  return bytes;
}

std::error_code Link::SendFailed(ssize_t n, int err, const std::string& what) {
  if (n < 0) {
    if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
      CountDropped();
    } else {
      CountSendError();
    }
    return OsError(err, what);
  }
  CountSendError();  // the datagram went out short
  return std::make_error_code(std::errc::message_size);
}

void Link::CountReceived(size_t bytes) {
  frames_received_.fetch_add(1, std::memory_order_relaxed);
  bytes_received_.fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace dxpu::link
