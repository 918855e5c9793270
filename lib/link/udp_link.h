// udp_link.h - DxFP over UDP, IPv4 or IPv6: one frame per datagram.
#ifndef DXPU_LIB_LINK_UDP_LINK_H_
#define DXPU_LIB_LINK_UDP_LINK_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <system_error>

#include "link/link.h"
#include "link/unique_fd.h"

namespace dxpu::link {

class UdpLink final : public Link {
 public:
  struct Options {
    size_t mtu = 1500;  // IP MTU of the path; max_frame() is this less IP and UDP headers
  };

  // Binds a non-blocking UDP socket to a numeric IPv4 or IPv6 address ("0.0.0.0", "::1",
  // "fe80::1%eth0") and port (0: an ephemeral port; see local_address()). An IPv6 socket
  // is IPv6-only.
  static OpenResult<UdpLink> Open(std::string_view bind_ip, uint16_t port, const Options& options);
  static OpenResult<UdpLink> Open(std::string_view bind_ip, uint16_t port) {
    return Open(bind_ip, port, Options{});
  }

  std::error_code SendPieces(const LinkAddress& to, FramePieces frame) override;
  LinkResult Receive(std::span<uint8_t> buf, LinkAddress* from) override;
  int fd() const override { return fd_.get(); }
  size_t max_frame() const override { return max_frame_; }

  // The bound address, with the port the kernel chose.
  const LinkAddress& local_address() const { return local_; }

 private:
  UdpLink(UniqueFd fd, int family, size_t max_frame, LinkAddress local)
      : fd_(std::move(fd)), family_(family), max_frame_(max_frame), local_(std::move(local)) {}

  UniqueFd fd_;
  int family_;
  size_t max_frame_;
  LinkAddress local_;
};

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_UDP_LINK_H_
