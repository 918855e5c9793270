// memory_link.cc - a connected pair of in-memory links.
#include "link/memory_link.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>

#include "link/os_error.h"
#include "link/spsc_ring.h"
#include "link/unique_fd.h"

namespace dxpu::link {

// One direction: a ring of frames from the sender to the receiver, a ring of emptied buffers
// back, and the receiver's eventfd. Each ring has one producer and one consumer at a time
// (the senders take send_mu, the receivers receive_mu), so neither side waits for the
// other. The eventfd is written only when the receiver has armed it (memory_link.h).
struct MemoryLink::Queue {
  explicit Queue(size_t capacity) : frames(capacity), spare(capacity) {}

  SpscRing<Frame> frames;
  // Buffers of frames already received, reused by Send: a steady stream allocates nothing
  // (and no burst hands memory back to the OS only to fault it in again).
  SpscRing<Frame> spare;
  // Each side's lock on a cache line of its own, apart from the flag both touch.
  alignas(64) std::mutex send_mu;
  alignas(64) std::mutex receive_mu;
  // The receiver found the ring empty and cleared the eventfd: the next send writes it.
  alignas(64) std::atomic<bool> armed{true};
  UniqueFd event;
};

namespace {

std::shared_ptr<MemoryLink::Queue> MakeQueue(size_t capacity, std::error_code* ec) {
  auto q = std::make_shared<MemoryLink::Queue>(capacity);
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
  Queue& q = *tx_;
  const std::lock_guard lock(q.send_mu);
  if (q.frames.Full()) {
    CountDropped();
    return std::make_error_code(std::errc::no_buffer_space);
  }
  Frame f;
  if (!q.spare.Pop(&f)) f.data = std::make_unique_for_overwrite<uint8_t[]>(max_frame_);
  f.size = GatherFrame(frame, std::span<uint8_t>(f.data.get(), bytes));
  (void)q.frames.Push(f);  // not full, and only this sender fills it
  CountSent(bytes);
  // Publish, then look whether the receiver sleeps: it arms, then looks again (PopFrame).
  if (q.armed.load(std::memory_order_seq_cst) && q.armed.exchange(false)) return Signal(q);
  return {};
}

std::error_code MemoryLink::Signal(Queue& q) {
  const uint64_t one = 1;
  if (::write(q.event.get(), &one, sizeof(one)) == sizeof(one)) return {};
  CountSendError();  // cannot happen (the counter would have to overflow); the frame is queued
  return LastOsError("memory link: eventfd write");
}

bool MemoryLink::PopFrame(Frame* f) {
  Queue& q = *rx_;
  if (q.frames.Pop(f)) return true;
  // Empty: clear the eventfd, arm it, and look again, since a frame sent before the arming
  // did not signal.
  uint64_t count = 0;
  if (::read(q.event.get(), &count, sizeof(count)) != sizeof(count) && errno != EAGAIN) {
    CountReceiveError();
    LastOsError("memory link: eventfd read");
  }
  q.armed.store(true, std::memory_order_seq_cst);
  if (!q.frames.Pop(f)) return false;
  // A frame after all: the eventfd must stay readable for any that follow it, whether or not
  // this receiver looks again before it sleeps.
  if (q.armed.exchange(false)) (void)Signal(q);
  return true;
}

void MemoryLink::GiveBack(Frame f) {
  (void)rx_->spare.Push(f);  // when full, the buffer is freed here
}

LinkResult MemoryLink::Receive(std::span<uint8_t> buf, LinkAddress* from) {
  const std::lock_guard lock(rx_->receive_mu);
  Frame f;
  while (true) {
    if (!PopFrame(&f)) return LinkResult::WouldBlock();
    if (f.size <= buf.size()) break;
    CountDropped();  // never deliver part of a frame
    GiveBack(std::move(f));
  }
  const size_t size = f.size;
  if (size != 0) std::memcpy(buf.data(), f.data.get(), size);
  GiveBack(std::move(f));
  if (from != nullptr) *from = LinkAddress();
  CountReceived(size);
  return LinkResult::Frame(size);
}

LinkResult MemoryLink::ReceiveInPlace(std::span<uint8_t> /*scratch*/, const FrameUse& use) {
  const std::lock_guard lock(rx_->receive_mu);
  Frame f;
  if (!PopFrame(&f)) return LinkResult::WouldBlock();
  const size_t size = f.size;
  CountReceived(size);
  use(std::span<const uint8_t>(f.data.get(), size), LinkAddress());
  GiveBack(std::move(f));
  return LinkResult::Frame(size);
}

int MemoryLink::fd() const { return rx_->event.get(); }

bool MemoryLink::MayHaveFrame() {
  const std::lock_guard lock(rx_->receive_mu);
  return !rx_->frames.Empty();
}

void MemoryLink::StartSpinning() {
  // A sender that finds the receiver disarmed does not write the eventfd; the next Receive
  // that finds the queue empty arms it again (PopFrame).
  rx_->armed.store(false, std::memory_order_seq_cst);
}

}  // namespace dxpu::link
