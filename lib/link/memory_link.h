// memory_link.h - a connected pair of in-memory links, for tests and in-process proxies.
#ifndef DXPU_LIB_LINK_MEMORY_LINK_H_
#define DXPU_LIB_LINK_MEMORY_LINK_H_

#include <cstddef>
#include <memory>
#include <span>
#include <system_error>
#include <utility>

#include "dxpu/dxfp.h"
#include "link/link.h"

namespace dxpu::link {

// One end of an in-memory pair. Each direction is a bounded queue of frames; a send to a
// full queue is dropped and counted on the sender. fd() is an eventfd that is readable
// exactly while this end's receive queue is non-empty. Send and Receive may be called from
// different threads (any number of each). The address passed to Send is ignored; Receive
// reports the empty address.
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
  int fd() const override;
  size_t max_frame() const override { return max_frame_; }

  struct Queue;  // defined in memory_link.cc

 private:
  MemoryLink(std::shared_ptr<Queue> rx, std::shared_ptr<Queue> tx, size_t max_frame)
      : rx_(std::move(rx)), tx_(std::move(tx)), max_frame_(max_frame) {}

  std::shared_ptr<Queue> rx_;  // frames for this end; shared with the peer's tx_
  std::shared_ptr<Queue> tx_;
  size_t max_frame_;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_MEMORY_LINK_H_
