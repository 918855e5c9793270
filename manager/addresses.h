// addresses.h - the addresses the pool manager accepts from its API (issue 32: it took
// "unix:/etc/shadow" as a bridge's management address and "file:///etc/passwd" as an agent's
// URL). Each check returns "" for an address of an accepted form, or a sentence that names the
// address and the accepted forms.
#ifndef DXPU_MANAGER_ADDRESSES_H_
#define DXPU_MANAGER_ADDRESSES_H_

#include <optional>
#include <string>
#include <string_view>

namespace dxpu::manager {

// Where a bridge's unix: management sockets may be, unless dxpu-manager --bridge-socket-dir
// says otherwise.
inline constexpr const char* kDefaultBridgeSocketDir = "/run/dxpu";

// A bridge's management address: udp:IP:PORT (IP:PORT alone is read as udp:), or unix:PATH
// with PATH absolute, without "." or ".." parts, inside `socket_dir`.
std::string CheckManagementAddress(std::string_view address, const std::string& socket_dir);
// Where hosts reach a box: udp:IP:PORT (the userspace host proxy) or a MAC (dxpu.ko).
std::string CheckFabricAddress(std::string_view address);

struct HttpUrl {
  std::string scheme;  // "http" or "https"
  std::string host;    // an IP address (IPv6 without brackets) or a DNS name
  int port = 0;        // 0: none given
  std::string path;    // "" or from the first '/'
};
// "http://HOST[:PORT][/PATH]" or https; nullopt for anything else (user info, a query, a
// fragment, characters no host name has).
std::optional<HttpUrl> ParseHttpUrl(std::string_view url);
// An agent's URL as the manager calls it: http:// or https:// HOST:PORT, nothing more.
std::string CheckAgentUrl(std::string_view url);

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_ADDRESSES_H_
