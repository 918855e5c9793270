// raw_link_pair.cc - open the link pairs of the raw-link baseline.
#include "fabric/raw_link_pair.h"

#include <sys/socket.h>

#include <utility>

#include <spdlog/spdlog.h>

#include "dxpu/dxfp.h"
#include "link/memory_link.h"
#include "link/udp_link.h"

namespace dxpu::fabric {
namespace {

constexpr size_t kIpv4UdpOverhead = 20 + 8;
// What the kernel charges a loopback datagram of the largest frame against the receive
// buffer (the data and the socket buffer's own overhead), a generous estimate.
constexpr size_t kUdpTruesize = DXFP_MAX_FRAME + 4096;

RawLinkPair OpenMemory(size_t queue_frames) {
  RawLinkPair r;
  auto pair = link::MemoryLink::Pair(queue_frames, DXFP_MAX_FRAME);
  if (!pair.ok()) {
    r.error = pair.error;
    return r;
  }
  r.tx = std::move(pair.a);
  r.rx = std::move(pair.b);
  return r;
}

RawLinkPair OpenUdpLoopback(size_t queue_frames) {
  RawLinkPair r;
  const link::UdpLink::Options options{.mtu = DXFP_MAX_FRAME + kIpv4UdpOverhead};
  auto tx = link::UdpLink::Open("127.0.0.1", 0, options);
  if (!tx.ok()) {
    r.error = tx.error;
    return r;
  }
  auto rx = link::UdpLink::Open("127.0.0.1", 0, options);
  if (!rx.ok()) {
    r.error = rx.error;
    return r;
  }
  // A tuning request, not a requirement: the kernel caps it at net.core.rmem_max, and a
  // burst larger than what fits shows up as lost frames.
  const int want = static_cast<int>(queue_frames * kUdpTruesize);
  if (::setsockopt(rx.link->fd(), SOL_SOCKET, SO_RCVBUF, &want, sizeof(want)) != 0) {
    spdlog::debug("fabric: raw load: SO_RCVBUF {} refused", want);
  }
  r.to = rx.link->local_address();
  r.tx = std::move(tx.link);
  r.rx = std::move(rx.link);
  return r;
}

}  // namespace

std::string_view RawLinkKindName(RawLinkKind kind) {
  switch (kind) {
    case RawLinkKind::kMemory:
      return "memory";
    case RawLinkKind::kUdpLoopback:
      return "udp-loopback";
  }
  return "?";
}

RawLinkPair OpenRawLinkPair(RawLinkKind kind, size_t queue_frames) {
  switch (kind) {
    case RawLinkKind::kMemory:
      return OpenMemory(queue_frames);
    case RawLinkKind::kUdpLoopback:
      return OpenUdpLoopback(queue_frames);
  }
  RawLinkPair r;
  r.error = std::make_error_code(std::errc::invalid_argument);
  return r;
}

}  // namespace dxpu::fabric
