// link_driver.cc - see link_driver.h.
#include "fabric/link_driver.h"

#include <chrono>
#include <utility>

#include "core/dxfp_frame.h"

namespace dxpu::fabric {

uint64_t MonotonicNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::unique_ptr<LinkDriver> LinkDriver::Create(link::EventLoop& loop, link::Link& link,
                                               Endpoint& endpoint,
                                               std::optional<link::LinkAddress> peer,
                                               std::error_code* error) {
  std::unique_ptr<LinkDriver> d(new LinkDriver(loop, link, endpoint, std::move(peer)));
  const std::error_code ec = loop.AddFd(link.fd(), [raw = d.get()] { raw->OnReadable(); });
  if (ec) {
    if (error != nullptr) *error = ec;
    return nullptr;
  }
  return d;
}

LinkDriver::LinkDriver(link::EventLoop& loop, link::Link& link, Endpoint& endpoint,
                       std::optional<link::LinkAddress> peer)
    : loop_(loop),
      link_(link),
      endpoint_(endpoint),
      peer_(std::move(peer)),
      rx_(std::max<size_t>(link.max_frame(), DXFP_MIN_FRAME)) {}

LinkDriver::~LinkDriver() {
  (void)loop_.RemoveFd(link_.fd());
  if (timer_ != 0) loop_.CancelTimer(timer_);
}

void LinkDriver::Connect() {
  endpoint_.Connect(MonotonicNanos());
  Kick();
}

void LinkDriver::Transmit(link::FramePieces frame) {
  if (!peer_) return;  // a responder before its HELLO has no one to talk to
  counters_.frames_out++;
  if (link_.SendPieces(*peer_, frame)) counters_.send_errors++;
}

void LinkDriver::Kick() {
  const uint64_t now = MonotonicNanos();
  endpoint_.Flush(now, [this](link::FramePieces f) { Transmit(f); });
  const uint64_t deadline = endpoint_.NextDeadline();
  if (deadline == timer_deadline_) return;
  if (timer_ != 0) loop_.CancelTimer(timer_);
  timer_ = 0;
  timer_deadline_ = deadline;
  if (deadline == DXFP_NO_DEADLINE) return;
  const auto when = link::EventLoop::Clock::time_point(std::chrono::nanoseconds(deadline));
  timer_ = loop_.AddTimer(when, [this] { OnTimer(); });
}

void LinkDriver::OnTimer() {
  timer_ = 0;
  timer_deadline_ = DXFP_NO_DEADLINE;
  Kick();
}

void LinkDriver::OnReadable() {
  const link::Link::FrameUse use = [this](std::span<const uint8_t> frame,
                                          const link::LinkAddress& from) {
    counters_.frames_in++;
    const uint64_t now = MonotonicNanos();
    if (endpoint_.state() == DXFP_STATE_IDLE &&
        endpoint_.session().cfg.role == DXFP_ROLE_RESPONDER) {
      dxfp_frame f{};
      if (dxfp_frame_parse(frame.data(), frame.size(), DXFP_MAX_FRAME, &f) == DXFP_OK &&
          f.hdr.type == DXFP_HELLO && endpoint_.Accept(now, f) == DXFP_RX_OK)
        peer_ = from;
      return;
    }
    endpoint_.Receive(now, frame);
  };
  // A bounded batch, so that one busy link cannot starve the loop's timers.
  for (int i = 0; i < 64 && link_.ReceiveInPlace(rx_, use).ok(); i++) {
  }
  Kick();
}

}  // namespace dxpu::fabric
