// management_socket.h - the datagram socket the bridge takes management requests on: UDP on
// an IP address and port, or an AF_UNIX datagram socket created with mode 0600 (the messages
// are unauthenticated, so who can reach the socket is the access control).
#ifndef DXPU_BRIDGE_FW_MANAGEMENT_SOCKET_H_
#define DXPU_BRIDGE_FW_MANAGEMENT_SOCKET_H_

#include <sys/socket.h>

#include <cstdint>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "link/link_address.h"
#include "link/unique_fd.h"

namespace dxpu::bridge {

// Who sent a request: where its answer goes.
struct ManagementPeer {
  sockaddr_storage address{};
  socklen_t length = 0;
};

class ManagementSocket {
 public:
  // Binds the socket (non-blocking). An AF_UNIX path left by an earlier run is replaced.
  static std::error_code Open(const link::LinkAddress& address, ManagementSocket* out);

  ManagementSocket() = default;
  ManagementSocket(ManagementSocket&&) = default;
  ManagementSocket& operator=(ManagementSocket&&) = default;
  ManagementSocket(const ManagementSocket&) = delete;
  ManagementSocket& operator=(const ManagementSocket&) = delete;
  ~ManagementSocket();

  int fd() const { return fd_.get(); }
  // The address it is bound to (the port the kernel chose when the configuration said 0).
  link::LinkAddress local_address() const;

  // Answers every request waiting on the socket with `handle(request, peer)`'s response (none
  // when it returns empty: the handler may answer later with SendTo); returns how many
  // datagrams were read.
  template <typename Handler>
  size_t Serve(Handler&& handle) {
    size_t n = 0;
    for (; n < 64; ++n) {
      ManagementPeer from;
      from.length = sizeof(from.address);
      const ssize_t got = recvfrom(fd_.get(), buf_.data(), buf_.size(), MSG_TRUNC,
                                   reinterpret_cast<sockaddr*>(&from.address), &from.length);
      if (got < 0) break;
      // A datagram larger than any request is cut short: the decoder refuses it.
      const size_t len = std::min(static_cast<size_t>(got), buf_.size());
      const std::vector<uint8_t> reply = handle(std::span<const uint8_t>(buf_.data(), len), from);
      SendTo(from, reply);
    }
    return n;
  }

  // Sends `reply` (nothing when empty) to `to`, without blocking. Safe from any thread.
  void SendTo(const ManagementPeer& to, std::span<const uint8_t> reply) const {
    if (!reply.empty() && to.length > 0)
      sendto(fd_.get(), reply.data(), reply.size(), MSG_DONTWAIT,
             reinterpret_cast<const sockaddr*>(&to.address), to.length);
  }

 private:
  link::UniqueFd fd_;
  std::string unix_path_;  // removed on close
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(65536);
};

}  // namespace dxpu::bridge

#endif  // DXPU_BRIDGE_FW_MANAGEMENT_SOCKET_H_
