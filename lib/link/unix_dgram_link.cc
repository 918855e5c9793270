// unix_dgram_link.cc - DxFP over AF_UNIX datagrams in QEMU's Ethernet framing.
#include "link/unix_dgram_link.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "dxpu/dxfp.h"
#include "link/ethernet_header.h"
#include "link/ethernet_io.h"
#include "link/os_error.h"

namespace dxpu::link {

OpenResult<UnixDgramLink> UnixDgramLink::Open(const Options& options) {
  OpenResult<UnixDgramLink> r;
  if (options.mtu < DXFP_MIN_FRAME) {
    r.error = std::make_error_code(std::errc::invalid_argument);
    return r;
  }
  sockaddr_storage local{};
  sockaddr_storage remote{};
  const socklen_t local_len = LinkAddress::Unix(options.local_path).ToSockaddr(&local);
  const socklen_t remote_len = LinkAddress::Unix(options.remote_path).ToSockaddr(&remote);
  if (local_len == 0 || remote_len == 0) {
    spdlog::debug("link: unix: bad socket path '{}' or '{}'", options.local_path,
                  options.remote_path);
    r.error = std::make_error_code(std::errc::filename_too_long);
    return r;
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    r.error = LastOsError("unix: socket");
    return r;
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), local_len) != 0) {
    r.error = LastOsError("unix: bind " + options.local_path);
    return r;
  }
  const size_t max_frame = std::min<size_t>(options.mtu, DXFP_MAX_FRAME);
  spdlog::debug("link: unix: bound {} -> {} (max frame {})", options.local_path,
                options.remote_path, max_frame);
  r.link.reset(new UnixDgramLink(std::move(fd), options, max_frame));  // private constructor
  return r;
}

UnixDgramLink::~UnixDgramLink() {
  if (fd_.valid()) ::unlink(options_.local_path.c_str());
}

std::error_code UnixDgramLink::SendPieces(const LinkAddress& to, FramePieces frame) {
  size_t bytes = 0;
  if (const std::error_code ec = CheckFrame(frame, max_frame_, &bytes)) return ec;
  if (!to.is_mac()) {
    CountSendError();
    spdlog::debug("link: unix: not a MAC address: {}", to.ToString());
    return std::make_error_code(std::errc::address_family_not_supported);
  }
  const EthernetHeader header = MakeEthernetHeader(to.mac(), options_.mac, DXFP_ETHERTYPE);
  const ssize_t n = SendEthernet(fd_.get(), header, frame,
                                 reinterpret_cast<const sockaddr*>(&remote_), remote_len_);
  const int err = n < 0 ? errno : 0;  // before anything else can change errno
  return FinishSend(n, err, header.size() + bytes, bytes,
                    [&] { return "unix: sendmsg " + options_.remote_path; });
}

}  // namespace dxpu::link
