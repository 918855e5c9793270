// session_frame.h - a frame from dxfp_session_poll_pieces() as the pieces a link sends
// (link::FramePieces): its head, runs of TLP records in the session's replay buffer, its CRC.
#ifndef DXPU_LIB_FABRIC_SESSION_FRAME_H_
#define DXPU_LIB_FABRIC_SESSION_FRAME_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/dxfp_session.h"
#include "link/link.h"

namespace dxpu::fabric {

static_assert(DXFP_OUT_PIECES <= link::kMaxFramePieces, "a link must take every session frame");

// Valid as long as the dxfp_frame_out it was made from (until the next call into the session).
class SessionFrame {
 public:
  explicit SessionFrame(const dxfp_frame_out& out) : count_(out.npieces) {
    for (size_t i = 0; i < count_; ++i) pieces_[i] = {out.piece[i].base, out.piece[i].len};
  }

  link::FramePieces pieces() const { return {pieces_.data(), count_}; }

 private:
  std::array<std::span<const uint8_t>, DXFP_OUT_PIECES> pieces_{};
  size_t count_;
};

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_SESSION_FRAME_H_
