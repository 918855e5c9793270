// memory_link.h - a connected pair of in-memory links, for tests and in-process proxies.
#ifndef DXPU_LIB_LINK_MEMORY_LINK_H_
#define DXPU_LIB_LINK_MEMORY_LINK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <system_error>
#include <utility>

#include "dxpu/dxfp.h"
#include "link/link.h"

namespace dxpu::link {

// One end of an in-memory pair. Each direction is a bounded queue of frames; a send to a
// full queue is dropped and counted on the sender. Send and Receive may be called from
// different threads (any number of each); a sender never waits for a receiver or the other
// way round (the queue is a lock-free ring), and ReceiveInPlace hands the receiver the
// sender's copy itself, so a frame is copied once.
//
// fd() is an eventfd that is readable while this end's receive queue holds a frame. It is
// written only by a send that finds the receiver armed, that is, after a Receive that found
// the queue empty (which clears it): a receiver that keeps up costs no system call per frame,
// and after a Receive that returns would_block the fd is not readable until the next send.
// A receiver that busy-polls (StartSpinning, then MayHaveFrame before each Receive) disarms it:
// its senders make no system call at all until a Receive finds the queue empty again.
// The address passed to Send is ignored; Receive reports the empty address.
class MemoryLink final : public Link {
 public:
  struct PairResult {
    std::unique_ptr<MemoryLink> a;
    std::unique_ptr<MemoryLink> b;
    std::error_code error;

    bool ok() const { return a != nullptr; }
  };

  // Two connected ends, each queue holding up to capacity_frames frames of up to
  // max_frame bytes.
  static PairResult Pair(size_t capacity_frames, size_t max_frame = DXFP_MAX_FRAME);

  std::error_code SendPieces(const LinkAddress& to, FramePieces frame) override;
  LinkResult Receive(std::span<uint8_t> buf, LinkAddress* from) override;
  LinkResult ReceiveInPlace(std::span<uint8_t> scratch, const FrameUse& use) override;
  int fd() const override;
  bool MayHaveFrame() override;
  void StartSpinning() override;
  size_t max_frame() const override { return max_frame_; }

  struct Queue;  // defined in memory_link.cc

 private:
  MemoryLink(std::shared_ptr<Queue> rx, std::shared_ptr<Queue> tx, size_t max_frame)
      : rx_(std::move(rx)), tx_(std::move(tx)), max_frame_(max_frame) {}

  // A frame's bytes: a buffer of max_frame bytes, reused, never cleared.
  struct Frame {
    std::unique_ptr<uint8_t[]> data;
    size_t size = 0;
  };

  // The oldest frame of the receive queue, taken out of it; false when there is none (the
  // receiver is then armed). The caller holds receive_mu.
  bool PopFrame(Frame* f);
  // A received frame's buffer, kept for a later Send of the peer to reuse.
  void GiveBack(Frame f);
  // Makes the receiver's eventfd readable.
  std::error_code Signal(Queue& q);

  std::shared_ptr<Queue> rx_;  // frames for this end; shared with the peer's tx_
  std::shared_ptr<Queue> tx_;
  size_t max_frame_;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_MEMORY_LINK_H_
