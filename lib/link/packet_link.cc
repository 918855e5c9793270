// packet_link.cc - DxFP on raw Ethernet through AF_PACKET.
#include "link/packet_link.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dxpu/dxfp.h"
#include "link/ethernet_header.h"
#include "link/ethernet_io.h"
#include "link/os_error.h"

namespace dxpu::link {

OpenResult<PacketLink> PacketLink::Open(const Options& options) {
  OpenResult<PacketLink> r;
  ifreq ifr{};
  if (options.interface.empty() || options.interface.size() >= sizeof(ifr.ifr_name)) {
    r.error = std::make_error_code(std::errc::invalid_argument);
    return r;
  }
  const unsigned ifindex = if_nametoindex(options.interface.c_str());
  if (ifindex == 0) {
    r.error = LastOsError("packet: interface " + options.interface);
    return r;
  }
  UniqueFd fd(::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(DXFP_ETHERTYPE)));
  if (!fd.valid()) {
    r.error = LastOsError("packet: socket");
    return r;
  }
  std::memcpy(ifr.ifr_name, options.interface.c_str(), options.interface.size());
  MacAddress mac{};
  if (options.mac) {
    mac = *options.mac;
  } else {
    if (::ioctl(fd.get(), SIOCGIFHWADDR, &ifr) != 0) {
      r.error = LastOsError("packet: SIOCGIFHWADDR " + options.interface);
      return r;
    }
    std::memcpy(mac.data(), ifr.ifr_hwaddr.sa_data, mac.size());
  }
  size_t mtu = 0;
  if (options.mtu) {
    mtu = *options.mtu;
  } else {
    if (::ioctl(fd.get(), SIOCGIFMTU, &ifr) != 0) {
      r.error = LastOsError("packet: SIOCGIFMTU " + options.interface);
      return r;
    }
    mtu = static_cast<size_t>(std::max(ifr.ifr_mtu, 0));
  }
  if (mtu < DXFP_MIN_FRAME) {
    r.error = std::make_error_code(std::errc::invalid_argument);
    return r;
  }
  const int on = 1;
  if (::setsockopt(fd.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &on, sizeof(on)) != 0) {
    r.error = LastOsError("packet: PACKET_IGNORE_OUTGOING");
    return r;
  }
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(DXFP_ETHERTYPE);
  sll.sll_ifindex = static_cast<int>(ifindex);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sll), sizeof(sll)) != 0) {
    r.error = LastOsError("packet: bind " + options.interface);
    return r;
  }
  const size_t max_frame = std::min<size_t>(mtu, DXFP_MAX_FRAME);
  spdlog::debug("link: packet: bound {} as {} (max frame {})", options.interface,
                LinkAddress::Mac(mac).ToString(), max_frame);
  r.link.reset(new PacketLink(std::move(fd), static_cast<int>(ifindex), mac,
                              max_frame));  // private constructor
  return r;
}

std::error_code PacketLink::SendPieces(const LinkAddress& to, FramePieces frame) {
  size_t bytes = 0;
  if (const std::error_code ec = CheckFrame(frame, max_frame_, &bytes)) return ec;
  if (!to.is_mac()) {
    CountSendError();
    spdlog::debug("link: packet: not a MAC address: {}", to.ToString());
    return std::make_error_code(std::errc::address_family_not_supported);
  }
  const EthernetHeader header = MakeEthernetHeader(to.mac(), mac_, DXFP_ETHERTYPE);
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(DXFP_ETHERTYPE);
  sll.sll_ifindex = ifindex_;
  sll.sll_halen = 6;
  std::memcpy(sll.sll_addr, to.mac().data(), 6);
  const ssize_t n =
      SendEthernet(fd_.get(), header, frame, reinterpret_cast<const sockaddr*>(&sll), sizeof(sll));
  const int err = n < 0 ? errno : 0;  // before anything else can change errno
  return FinishSend(n, err, header.size() + bytes, bytes,
                    [&] { return "packet: sendmsg to " + to.ToString(); });
}

}  // namespace dxpu::link
