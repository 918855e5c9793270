// udp_link.cc - DxFP over UDP, IPv4 or IPv6.
#include "link/udp_link.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include <spdlog/spdlog.h>

#include "dxpu/dxfp.h"
#include "link/os_error.h"

namespace dxpu::link {
namespace {

constexpr size_t kUdpHeader = 8;
constexpr size_t kIpv4Header = 20;
constexpr size_t kIpv6Header = 40;

}  // namespace

OpenResult<UdpLink> UdpLink::Open(std::string_view bind_ip, uint16_t port, const Options& options) {
  OpenResult<UdpLink> r;
  const auto bind_addr = LinkAddress::FromIp(bind_ip, port);
  if (!bind_addr) {
    spdlog::debug("link: udp: not a numeric IP address: '{}'", bind_ip);
    r.error = std::make_error_code(std::errc::invalid_argument);
    return r;
  }
  const int family = bind_addr->ip().family;
  const size_t overhead = (family == AF_INET ? kIpv4Header : kIpv6Header) + kUdpHeader;
  if (options.mtu < overhead + DXFP_MIN_FRAME) {
    spdlog::debug("link: udp: MTU {} leaves no room for a DxFP frame", options.mtu);
    r.error = std::make_error_code(std::errc::invalid_argument);
    return r;
  }
  const size_t max_frame = std::min<size_t>(options.mtu - overhead, DXFP_MAX_FRAME);

  UniqueFd fd(::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP));
  if (!fd.valid()) {
    r.error = LastOsError("udp: socket");
    return r;
  }
  if (family == AF_INET6) {
    const int on = 1;
    if (::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) != 0) {
      r.error = LastOsError("udp: IPV6_V6ONLY");
      return r;
    }
  }
  sockaddr_storage ss{};
  const socklen_t len = bind_addr->ToSockaddr(&ss);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    r.error = LastOsError("udp: bind " + bind_addr->ToString());
    return r;
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &bound_len) != 0) {
    r.error = LastOsError("udp: getsockname");
    return r;
  }
  auto local = LinkAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&bound), bound_len);
  if (!local) {
    r.error = std::make_error_code(std::errc::address_family_not_supported);
    return r;
  }
  spdlog::debug("link: udp: bound {} (max frame {})", local->ToString(), max_frame);
  r.link.reset(new UdpLink(std::move(fd), family, max_frame, *local));  // private constructor
  return r;
}

std::error_code UdpLink::SendPieces(const LinkAddress& to, FramePieces frame) {
  size_t bytes = 0;
  if (const std::error_code ec = CheckFrame(frame, max_frame_, &bytes)) return ec;
  if (!to.is_ip() || to.ip().family != family_) {
    CountSendError();
    spdlog::debug("link: udp: cannot send to {}", to.ToString());
    return std::make_error_code(std::errc::address_family_not_supported);
  }
  sockaddr_storage ss;  // NOLINT(cppcoreguidelines-pro-type-member-init): ToSockaddr fills it
  iovec iov[kMaxFramePieces];
  msghdr msg{};
  msg.msg_name = &ss;
  msg.msg_namelen = to.ToSockaddr(&ss);
  msg.msg_iov = iov;
  msg.msg_iovlen = FramePiecesToIovecs(frame, iov);
  const ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
  const int err = n < 0 ? errno : 0;  // before anything else can change errno
  return FinishSend(n, err, bytes, bytes, [&] { return "udp: sendmsg " + to.ToString(); });
}

LinkResult UdpLink::Receive(std::span<uint8_t> buf, LinkAddress* from) {
  // Bounded, so that a flood of bad datagrams cannot hold the caller here; the socket
  // stays readable for the next call.
  for (int attempt = 0; attempt < 64; ++attempt) {
    sockaddr_storage ss;  // NOLINT(cppcoreguidelines-pro-type-member-init): recvfrom fills it
    socklen_t len = sizeof(ss);
    // MSG_TRUNC: the datagram's real length, so one larger than buf is seen and dropped.
    // The sender's address only when the caller wants it.
    const ssize_t n = ::recvfrom(fd_.get(), buf.data(), buf.size(), MSG_TRUNC,
                                 from != nullptr ? reinterpret_cast<sockaddr*>(&ss) : nullptr,
                                 from != nullptr ? &len : nullptr);
    if (n < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return LinkResult::WouldBlock();
      if (err == EINTR) continue;
      CountReceiveError();
      return LinkResult::Error(OsError(err, "udp: recvfrom"));
    }
    if (static_cast<size_t>(n) > buf.size()) {
      CountDropped();
      spdlog::debug("link: udp: dropped a {}-byte datagram (buffer {})", n, buf.size());
      continue;
    }
    if (from != nullptr) {
      auto addr = LinkAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&ss), len);
      *from = addr ? *addr : LinkAddress();
    }
    CountReceived(static_cast<size_t>(n));
    return LinkResult::Frame(static_cast<size_t>(n));
  }
  return LinkResult::WouldBlock();
}

}  // namespace dxpu::link
