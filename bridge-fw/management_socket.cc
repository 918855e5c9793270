// management_socket.cc - the bridge's management socket (management_socket.h).
#include "bridge-fw/management_socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "link/os_error.h"

namespace dxpu::bridge {
namespace {

// Whether a process is bound to the AF_UNIX datagram socket at sa: connect() succeeds to a bound
// socket and is refused (ECONNREFUSED) for a file nobody holds.
bool SocketFileIsServed(const sockaddr_storage& sa, socklen_t len) {
  link::UniqueFd probe(socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return false;
  return connect(probe.get(), reinterpret_cast<const sockaddr*>(&sa), len) == 0;
}

}  // namespace

std::error_code ManagementSocket::Open(const link::LinkAddress& address, ManagementSocket* out) {
  sockaddr_storage sa{};
  const socklen_t len = address.ToSockaddr(&sa);
  if (len == 0) return std::make_error_code(std::errc::invalid_argument);
  const int type = SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC;
  link::UniqueFd fd(socket(sa.ss_family, type, 0));
  if (!fd.valid()) return link::LastOsError("management socket");
  if (address.is_unix()) {
    // A socket file another bridge serves is refused; only a stale one (nobody bound to it: an
    // earlier run that died) is removed. Removing a live one would silently take its management
    // over: two bridges, one socket path, the controller talking to whichever bound last.
    if (SocketFileIsServed(sa, len)) return std::make_error_code(std::errc::address_in_use);
    unlink(address.unix_path().c_str());
    // Created with 0600 from the start: no moment in which others may connect.
    const mode_t old = umask(0177);
    const int rc = bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), len);
    umask(old);
    if (rc != 0) return link::LastOsError("bind " + address.ToString());
    out->unix_path_ = address.unix_path();
  } else {
    if (sa.ss_family == AF_INET6) {
      const int one = 1;
      setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    }
    if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), len) != 0)
      return link::LastOsError("bind " + address.ToString());
  }
  out->fd_ = std::move(fd);
  return {};
}

ManagementSocket::~ManagementSocket() {
  if (!unix_path_.empty() && fd_.valid()) unlink(unix_path_.c_str());
}

link::LinkAddress ManagementSocket::local_address() const {
  sockaddr_storage sa{};
  socklen_t len = sizeof(sa);
  if (getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0) return {};
  return link::LinkAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&sa), len)
      .value_or(link::LinkAddress());
}

}  // namespace dxpu::bridge
