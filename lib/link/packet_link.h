// packet_link.h - DxFP directly on Ethernet (EtherType 0x88B5) through an AF_PACKET raw
// socket bound to one interface. Needs CAP_NET_RAW.
#ifndef DXPU_LIB_LINK_PACKET_LINK_H_
#define DXPU_LIB_LINK_PACKET_LINK_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "link/ethernet_io.h"
#include "link/link.h"
#include "link/unique_fd.h"

namespace dxpu::link {

// Send(to) takes to as the destination MAC; Receive reports the source MAC. Frames this
// socket sends are not looped back to it (PACKET_IGNORE_OUTGOING). Received frames that
// do not fit the buffer, are shorter than an Ethernet header or carry another EtherType are
// dropped and counted; Ethernet padding stays with the payload.
class PacketLink final : public EthernetLink {
 public:
  struct Options {
    std::string interface = {};
    std::optional<MacAddress> mac = std::nullopt;  // source MAC; default: the interface's own
    std::optional<size_t> mtu = std::nullopt;      // default: the interface's MTU
  };

  static OpenResult<PacketLink> Open(const Options& options);

  std::error_code SendPieces(const LinkAddress& to, FramePieces frame) override;
  int fd() const override { return fd_.get(); }
  size_t max_frame() const override { return max_frame_; }

  const MacAddress& mac() const override { return mac_; }

 private:
  std::string_view kind() const override { return "packet"; }
  PacketLink(UniqueFd fd, int ifindex, const MacAddress& mac, size_t max_frame)
      : fd_(std::move(fd)), ifindex_(ifindex), mac_(mac), max_frame_(max_frame) {}

  UniqueFd fd_;
  int ifindex_;
  MacAddress mac_;
  size_t max_frame_;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_PACKET_LINK_H_
