// link.h - a non-blocking datagram endpoint that carries one DxFP frame per datagram
// (docs/protocol.md, section 4.1). Each link adds and strips its own encapsulation.
#ifndef DXPU_LIB_LINK_LINK_H_
#define DXPU_LIB_LINK_LINK_H_

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "link/link_address.h"

namespace dxpu::link {

// What Receive() returns: the size of a DxFP frame written to the caller's buffer; or
// would_block (nothing to read now); or an error from the operating system.
struct LinkResult {
  size_t size = 0;
  std::error_code error;
  bool would_block = false;

  bool ok() const { return !error && !would_block; }
  static LinkResult Frame(size_t n) { return {n, {}, false}; }
  static LinkResult WouldBlock() { return {0, {}, true}; }
  static LinkResult Error(std::error_code ec) { return {0, ec, false}; }
};

// A DxFP frame handed over in pieces that are sent, in order, as one datagram
// (scatter-gather): a frame whose TLP records stay in a session's replay buffer
// (dxfp_session_poll_pieces) goes out without being copied together first.
using FramePieces = std::span<const std::span<const uint8_t>>;

// The most pieces one frame may come in.
inline constexpr size_t kMaxFramePieces = 16;

// Writes a frame's pieces (at most kMaxFramePieces) into iov for sendmsg; returns how many.
size_t FramePiecesToIovecs(FramePieces frame, iovec* iov);

// Copies a frame's pieces, in order, into out (which must hold them); returns the bytes.
size_t GatherFrame(FramePieces frame, std::span<uint8_t> out);
// The same, into a new buffer of exactly the frame's size.
std::vector<uint8_t> GatherFrame(FramePieces frame);

// What an Open() returns: a link, or the error that stopped it opening.
template <typename T>
struct OpenResult {
  std::unique_ptr<T> link;
  std::error_code error;

  bool ok() const { return link != nullptr; }
};

// A snapshot of a link's counters.
struct LinkCounters {
  uint64_t frames_sent = 0;
  uint64_t bytes_sent = 0;  // DxFP bytes, without encapsulation
  uint64_t frames_received = 0;
  uint64_t bytes_received = 0;
  uint64_t send_errors = 0;     // the OS refused a send, or the frame was too large
  uint64_t receive_errors = 0;  // the OS reported an error on receive
  uint64_t dropped = 0;         // sends dropped for want of buffer space; datagrams discarded on
                                // receive (truncated, too short, wrong EtherType, too large)
};

class Link {
 public:
  Link() = default;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;
  Link(Link&&) = delete;
  Link& operator=(Link&&) = delete;
  virtual ~Link() = default;

  // Sends one DxFP frame to `to`. Never blocks: when the link has no room the frame is
  // dropped (counted) and the error is std::errc::no_buffer_space or
  // std::errc::operation_would_block. A frame over max_frame() is refused
  // (std::errc::message_size).
  std::error_code Send(const LinkAddress& to, std::span<const uint8_t> frame) {
    const std::span<const uint8_t> one[] = {frame};
    return SendPieces(to, one);
  }

  // Send() of a frame in pieces. More than kMaxFramePieces pieces: refused, counted
  // (std::errc::invalid_argument).
  virtual std::error_code SendPieces(const LinkAddress& to, FramePieces frame) = 0;

  // Receives one DxFP frame into buf and, if from is not null, its sender. Datagrams that
  // do not fit buf or are not DxFP for this link are dropped and counted, never delivered
  // in part.
  virtual LinkResult Receive(std::span<uint8_t> buf, LinkAddress* from) = 0;

  // Receive() without the copy out where the link can avoid it: the next frame and its
  // sender are handed to `use`, valid during that call only. A link that holds frames in
  // memory (MemoryLink) hands them over in place; the others receive into `scratch` first,
  // with Receive()'s rules. The result is Receive()'s; `use` runs exactly when it is ok().
  using FrameUse = std::function<void(std::span<const uint8_t> frame, const LinkAddress& from)>;
  virtual LinkResult ReceiveInPlace(std::span<uint8_t> scratch, const FrameUse& use);

  // A descriptor that polls readable while Receive() may have a frame.
  virtual int fd() const = 0;

  // Busy polling: a receiver that spins on the link instead of sleeping on fd().
  // Whether a frame may wait now: false only when none does. Without a system call where the
  // link can tell (MemoryLink); the others say true, and the spinner calls Receive.
  virtual bool MayHaveFrame() { return true; }
  // The receiver spins from now on: a link that makes fd() readable only for a receiver that
  // found it empty (MemoryLink) stops doing so, and its senders make no system call per frame,
  // until a Receive finds the link empty again (which a receiver about to sleep must do, so
  // that the next frame wakes it). The other links: nothing.
  virtual void StartSpinning() {}

  // The largest DxFP frame this link carries (the MTU less encapsulation).
  virtual size_t max_frame() const = 0;

  LinkCounters counters() const;

 protected:
  void CountSent(size_t bytes);
  void CountReceived(size_t bytes);
  void CountSendError() { send_errors_.fetch_add(1, std::memory_order_relaxed); }
  void CountReceiveError() { receive_errors_.fetch_add(1, std::memory_order_relaxed); }
  void CountDropped() { dropped_.fetch_add(1, std::memory_order_relaxed); }
  // The size of a frame in pieces; or, counted as a send error, std::errc::invalid_argument
  // for more than kMaxFramePieces pieces and std::errc::message_size for a frame over
  // max_frame.
  std::error_code CheckFrame(FramePieces frame, size_t max_frame, size_t* bytes);
  // What Send() returns after a sendmsg that returned n (errno err) for a datagram of
  // `expected` bytes carrying a DxFP frame of frame_bytes, counted: sent; dropped for want
  // of buffer space (EAGAIN, EWOULDBLOCK, ENOBUFS); or a send error. describe() names the
  // call and destination for the error's log line; it runs only on failure.
  template <typename Describe>
  std::error_code FinishSend(ssize_t n, int err, size_t expected, size_t frame_bytes,
                             const Describe& describe) {
    if (n >= 0 && static_cast<size_t>(n) == expected) {
      CountSent(frame_bytes);
      return {};
    }
    return SendFailed(n, err, describe());
  }

 private:
  std::error_code SendFailed(ssize_t n, int err, const std::string& what);

  std::atomic<uint64_t> frames_sent_{0};
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> frames_received_{0};
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> send_errors_{0};
  std::atomic<uint64_t> receive_errors_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_LINK_H_
