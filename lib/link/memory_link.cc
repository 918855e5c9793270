// memory_link.cc - a connected pair of in-memory links.
#include "link/memory_link.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "link/os_error.h"
#include "link/unique_fd.h"

namespace dxpu::link {

// One direction: the frames in flight and the receiver's eventfd, which is kept readable
// exactly while frames is non-empty (both changed under mu).
struct MemoryLink::Queue {
  std::mutex mu;
  std::deque<std::vector<uint8_t>> frames;
  // Buffers of frames already received, reused by Send: a steady stream allocates nothing
  // (and no burst hands memory back to the OS only to fault it in again).
  std::vector<std::vector<uint8_t>> spare;
  size_t capacity = 0;
  UniqueFd event;
};

namespace {

std::shared_ptr<MemoryLink::Queue> MakeQueue(size_t capacity, std::error_code* ec) {
  auto q = std::make_shared<MemoryLink::Queue>();
  q->capacity = capacity;
  q->event.Reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!q->event.valid()) {
    *ec = LastOsError("memory link: eventfd");
    return nullptr;
  }
  return q;
}

}  // namespace

MemoryLink::PairResult MemoryLink::Pair(size_t capacity_frames, size_t max_frame) {
  PairResult r;
  if (capacity_frames == 0 || max_frame == 0) {
    r.error = std::make_error_code(std::errc::invalid_argument);
    return r;
  }
  auto a_rx = MakeQueue(capacity_frames, &r.error);
  if (!a_rx) return r;
  auto b_rx = MakeQueue(capacity_frames, &r.error);
  if (!b_rx) return r;
  r.a.reset(new MemoryLink(a_rx, b_rx, max_frame));  // private constructor
  r.b.reset(new MemoryLink(b_rx, a_rx, max_frame));
  return r;
}

std::error_code MemoryLink::SendPieces(const LinkAddress& /*to*/, FramePieces frame) {
  size_t bytes = 0;
  if (const std::error_code ec = CheckFrame(frame, max_frame_, &bytes)) return ec;
  const std::lock_guard lock(tx_->mu);
  if (tx_->frames.size() >= tx_->capacity) {
    CountDropped();
    return std::make_error_code(std::errc::no_buffer_space);
  }
  std::vector<uint8_t> copy;
  if (!tx_->spare.empty()) {
    copy = std::move(tx_->spare.back());
    tx_->spare.pop_back();
  }
  copy.resize(bytes);
  GatherFrame(frame, copy);
  if (tx_->frames.empty()) {
    const uint64_t one = 1;
    if (::write(tx_->event.get(), &one, sizeof(one)) != sizeof(one)) {
      CountSendError();
      return LastOsError("memory link: eventfd write");
    }
  }
  tx_->frames.push_back(std::move(copy));
  CountSent(bytes);
  return {};
}

LinkResult MemoryLink::Receive(std::span<uint8_t> buf, LinkAddress* from) {
  std::vector<uint8_t> frame;
  {
    const std::lock_guard lock(rx_->mu);
    while (true) {
      if (rx_->frames.empty()) return LinkResult::WouldBlock();
      frame = std::move(rx_->frames.front());
      rx_->frames.pop_front();
      if (rx_->frames.empty()) {
        uint64_t count = 0;
        if (::read(rx_->event.get(), &count, sizeof(count)) != sizeof(count)) {
          // The frame is still delivered; readiness may be stale until the next send.
          CountReceiveError();
          LastOsError("memory link: eventfd read");
        }
      }
      if (frame.size() <= buf.size()) break;
      CountDropped();  // never deliver part of a frame
    }
  }
  const size_t size = frame.size();
  if (size != 0) std::memcpy(buf.data(), frame.data(), size);
  {
    const std::lock_guard lock(rx_->mu);
    if (rx_->spare.size() < rx_->capacity) rx_->spare.push_back(std::move(frame));
  }
  if (from != nullptr) *from = LinkAddress();
  CountReceived(size);
  return LinkResult::Frame(size);
}

int MemoryLink::fd() const { return rx_->event.get(); }

}  // namespace dxpu::link
