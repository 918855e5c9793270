// raw_link_pair.h - the link pairs the raw-link baseline runs on: an in-memory pair, or two
// UDP sockets on 127.0.0.1 carrying DxFP's largest frame.
#ifndef DXPU_LIB_FABRIC_RAW_LINK_PAIR_H_
#define DXPU_LIB_FABRIC_RAW_LINK_PAIR_H_

#include <cstddef>
#include <memory>
#include <string_view>
#include <system_error>

#include "link/link.h"
#include "link/link_address.h"

namespace dxpu::fabric {

enum class RawLinkKind {
  kMemory,       // MemoryLink::Pair
  kUdpLoopback,  // UdpLink on 127.0.0.1, MTU for 9216-byte frames
};

std::string_view RawLinkKindName(RawLinkKind kind);  // "memory", "udp-loopback"

// tx sends to `to`, which rx receives. Both carry max_frame() == DXFP_MAX_FRAME.
struct RawLinkPair {
  std::unique_ptr<link::Link> tx;
  std::unique_ptr<link::Link> rx;
  link::LinkAddress to;
  std::error_code error;

  bool ok() const { return tx != nullptr && rx != nullptr; }
};

// queue_frames: how many frames the receiving end must be able to hold, so that a burst
// of that many is not dropped for want of room (the memory pair's queue; the UDP
// receive buffer is asked for, up to what the kernel allows: net.core.rmem_max).
RawLinkPair OpenRawLinkPair(RawLinkKind kind, size_t queue_frames);

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_RAW_LINK_PAIR_H_
