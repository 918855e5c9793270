// ethernet_io.cc - one DxFP frame in one Ethernet-framed datagram.
#include "link/ethernet_io.h"

#include <spdlog/spdlog.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "dxpu/dxfp.h"
#include "link/os_error.h"

namespace dxpu::link {

EthernetReceive ReceiveEthernet(int fd, std::span<uint8_t> buf, std::string_view who) {
  EthernetReceive r;
  EthernetHeader header{};
  // The header lands in its own buffer and the payload straight in the caller's.
  iovec iov[2] = {{header.data(), header.size()}, {buf.data(), buf.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  // MSG_TRUNC: the datagram's real length, so one larger than buf is seen and dropped.
  const ssize_t n = ::recvmsg(fd, &msg, MSG_TRUNC);
  if (n < 0) {
    r.error = errno;
    r.outcome = (r.error == EAGAIN || r.error == EWOULDBLOCK) ? EthernetReceive::kWouldBlock
                                                              : EthernetReceive::kError;
    return r;
  }
  r.outcome = EthernetReceive::kDropped;
  const auto total = static_cast<size_t>(n);
  if ((msg.msg_flags & MSG_TRUNC) != 0 || total > header.size() + buf.size()) {
    spdlog::debug("link: {}: dropped a {}-byte datagram (buffer {})", who, total, buf.size());
    return r;
  }
  if (total < header.size()) {
    spdlog::debug("link: {}: dropped a {}-byte runt", who, total);
    return r;
  }
  size_t payload = total - header.size();
  uint16_t ethertype = EthernetType(header);
  if (ethertype == kEtherTypeVlan && payload >= kVlanTagSize) {
    // 802.1Q: TCI then the real EtherType lead the payload; move the frame down over them.
    ethertype = static_cast<uint16_t>((buf[2] << 8) | buf[3]);
    payload -= kVlanTagSize;
    std::memmove(buf.data(), buf.data() + kVlanTagSize, payload);
  }
  if (ethertype != DXFP_ETHERTYPE) {
    spdlog::debug("link: {}: dropped EtherType {:#06x}", who, ethertype);
    return r;
  }
  r.outcome = EthernetReceive::kFrame;
  r.size = payload;
  r.source = EthernetSource(header);
  r.destination = EthernetDestination(header);
  return r;
}

ssize_t SendEthernet(int fd, const EthernetHeader& header, FramePieces frame, const sockaddr* dest,
                     socklen_t dest_len) {
  iovec iov[1 + kMaxFramePieces];
  // sendmsg only reads through iov_base.
  iov[0].iov_base = const_cast<uint8_t*>(header.data());
  iov[0].iov_len = header.size();
  msghdr msg{};
  msg.msg_name = const_cast<sockaddr*>(dest);
  msg.msg_namelen = dest == nullptr ? 0 : dest_len;
  msg.msg_iov = iov;
  msg.msg_iovlen = 1 + FramePiecesToIovecs(frame, &iov[1]);
  return ::sendmsg(fd, &msg, MSG_NOSIGNAL);
}

LinkResult EthernetLink::Receive(std::span<uint8_t> buf, LinkAddress* from) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const EthernetReceive r = ReceiveEthernet(fd(), buf, kind());
    switch (r.outcome) {
      case EthernetReceive::kWouldBlock:
        return LinkResult::WouldBlock();
      case EthernetReceive::kError:
        if (r.error == EINTR) continue;
        CountReceiveError();
        return LinkResult::Error(OsError(r.error, std::string(kind()) + ": recvmsg"));
      case EthernetReceive::kDropped:
        CountDropped();
        continue;
      case EthernetReceive::kFrame:
        if (r.destination != mac()) {
          spdlog::debug("link: {}: dropped a frame for {} (this end is {})", kind(),
                        LinkAddress::Mac(r.destination).ToString(),
                        LinkAddress::Mac(mac()).ToString());
          CountDropped();
          continue;
        }
        if (from != nullptr) *from = LinkAddress::Mac(r.source);
        CountReceived(r.size);
        return LinkResult::Frame(r.size);
    }
  }
  return LinkResult::WouldBlock();
}

}  // namespace dxpu::link
