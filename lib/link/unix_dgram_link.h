// unix_dgram_link.h - DxFP over AF_UNIX datagrams in QEMU's `-netdev dgram` framing: each
// datagram is one Ethernet frame (destination MAC, source MAC, EtherType, payload; no FCS,
// no vnet header).
#ifndef DXPU_LIB_LINK_UNIX_DGRAM_LINK_H_
#define DXPU_LIB_LINK_UNIX_DGRAM_LINK_H_

#include <sys/socket.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "link/ethernet_io.h"
#include "link/link.h"
#include "link/unique_fd.h"

namespace dxpu::link {

// Bound to local_path (removed again on destruction); every datagram goes to remote_path.
// Send(to) takes to as the destination MAC; Receive reports the source MAC. Received
// frames with another EtherType (after an optional 802.1Q tag) or shorter than an Ethernet
// header are dropped and counted. Ethernet padding after the DxFP frame is delivered as
// received: the DxFP Length field says where the frame ends.
//
// QEMU's end: -netdev dgram,id=n0,local.type=unix,local.path=<remote_path>,
//             remote.type=unix,remote.path=<local_path>
class UnixDgramLink final : public EthernetLink {
 public:
  struct Options {
    std::string local_path;
    std::string remote_path;
    MacAddress mac{0x02, 0, 0, 0, 0, 1};  // this end's source MAC
    size_t mtu = 1500;                    // Ethernet payload MTU
  };

  static OpenResult<UnixDgramLink> Open(const Options& options);
  ~UnixDgramLink() override;

  std::error_code SendPieces(const LinkAddress& to, FramePieces frame) override;
  int fd() const override { return fd_.get(); }
  size_t max_frame() const override { return max_frame_; }

  const MacAddress& mac() const override { return options_.mac; }

 private:
  std::string_view kind() const override { return "unix"; }
  UnixDgramLink(UniqueFd fd, Options options, size_t max_frame)
      : fd_(std::move(fd)), options_(std::move(options)), max_frame_(max_frame) {
    remote_len_ = LinkAddress::Unix(options_.remote_path).ToSockaddr(&remote_);
  }

  UniqueFd fd_;
  Options options_;
  size_t max_frame_;
  sockaddr_storage remote_{};  // options_.remote_path, made once
  socklen_t remote_len_ = 0;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_UNIX_DGRAM_LINK_H_
