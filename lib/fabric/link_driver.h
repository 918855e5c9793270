// link_driver.h - runs an Endpoint over a real Link in real time: the link's descriptor and
// the session's next deadline are registered with an EventLoop, received frames go to the
// endpoint, and whatever the endpoint has to send goes out on the link. A responder learns
// its peer's address from the HELLO that opens the session.
#ifndef DXPU_LIB_FABRIC_LINK_DRIVER_H_
#define DXPU_LIB_FABRIC_LINK_DRIVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <system_error>
#include <vector>

#include "fabric/endpoint.h"
#include "link/event_loop.h"
#include "link/link.h"
#include "link/link_address.h"

namespace dxpu::fabric {

// The session clock: steady_clock in nanoseconds.
uint64_t MonotonicNanos();

struct LinkDriverCounters {
  uint64_t frames_in = 0;
  uint64_t frames_out = 0;
  uint64_t send_errors = 0;  // the link refused a frame (counted by the link too)
};

class LinkDriver {
 public:
  // peer: where frames go; empty for a responder, which answers the address its HELLO
  // came from. The loop, link and endpoint must outlive the driver.
  static std::unique_ptr<LinkDriver> Create(link::EventLoop& loop, link::Link& link,
                                            Endpoint& endpoint,
                                            std::optional<link::LinkAddress> peer,
                                            std::error_code* error);

  LinkDriver(const LinkDriver&) = delete;
  LinkDriver& operator=(const LinkDriver&) = delete;
  LinkDriver(LinkDriver&&) = delete;
  LinkDriver& operator=(LinkDriver&&) = delete;
  ~LinkDriver();

  // Initiator: start the handshake.
  void Connect();
  // After Submit()ing TLPs, or anything else that gives the endpoint work: send what is due
  // and re-arm the timer.
  void Kick();

  const LinkDriverCounters& counters() const { return counters_; }

 private:
  LinkDriver(link::EventLoop& loop, link::Link& link, Endpoint& endpoint,
             std::optional<link::LinkAddress> peer);
  void OnReadable();
  void OnTimer();
  void Transmit(link::FramePieces frame);

  link::EventLoop& loop_;
  link::Link& link_;
  Endpoint& endpoint_;
  std::optional<link::LinkAddress> peer_;
  std::vector<uint8_t> rx_;
  link::EventLoop::TimerId timer_ = 0;
  uint64_t timer_deadline_ = DXFP_NO_DEADLINE;
  LinkDriverCounters counters_;
};

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_LINK_DRIVER_H_
