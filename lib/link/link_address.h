// link_address.h - where a datagram goes or came from: an IPv4/IPv6 socket address, an
// AF_UNIX path, or an Ethernet MAC address. A comparable, hashable value.
#ifndef DXPU_LIB_LINK_LINK_ADDRESS_H_
#define DXPU_LIB_LINK_LINK_ADDRESS_H_

#include <sys/socket.h>

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace dxpu::link {

using MacAddress = std::array<uint8_t, 6>;

// An IPv4 or IPv6 endpoint in a normalised form (so that equal addresses compare equal,
// whatever padding a sockaddr_storage held). IPv4 uses the first 4 bytes of addr.
struct IpEndpoint {
  int family = AF_UNSPEC;  // AF_INET or AF_INET6
  std::array<uint8_t, 16> addr{};
  uint16_t port = 0;      // host byte order
  uint32_t scope_id = 0;  // IPv6 only

  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads defaulted <=>
  auto operator<=>(const IpEndpoint&) const = default;
};

// An AF_UNIX socket path.
struct UnixPath {
  std::string path;

  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads defaulted <=>
  auto operator<=>(const UnixPath&) const = default;
};

class LinkAddress {
 public:
  // The empty address (an in-memory link's peer; "none" as a string).
  LinkAddress() = default;

  // From a socket address of family AF_INET, AF_INET6 or AF_UNIX; nullopt for others or a
  // length too short for the family.
  static std::optional<LinkAddress> FromSockaddr(const sockaddr* sa, socklen_t len);
  // From a numeric IPv4 or IPv6 address ("127.0.0.1", "::1", "fe80::1%eth0") and a port.
  static std::optional<LinkAddress> FromIp(std::string_view ip, uint16_t port);
  static LinkAddress Unix(std::string path);
  static LinkAddress Mac(const MacAddress& mac);

  bool empty() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_ip() const { return std::holds_alternative<IpEndpoint>(v_); }
  bool is_unix() const { return std::holds_alternative<UnixPath>(v_); }
  bool is_mac() const { return std::holds_alternative<MacAddress>(v_); }

  // Accessors; only valid when the matching is_*() is true.
  const IpEndpoint& ip() const { return std::get<IpEndpoint>(v_); }
  const std::string& unix_path() const { return std::get<UnixPath>(v_).path; }
  const MacAddress& mac() const { return std::get<MacAddress>(v_); }

  // Writes the IP or AF_UNIX address as a socket address; returns its length, or 0 if this
  // address has no socket form (empty, MAC, or a path too long for sun_path).
  socklen_t ToSockaddr(sockaddr_storage* out) const;

  // "192.0.2.1:17480", "[2001:db8::1]:17480", "[fe80::1%2]:17480", "unix:/run/x.sock",
  // "02:00:00:00:00:01", or "none".
  std::string ToString() const;

  size_t Hash() const;

  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 misreads defaulted <=>
  auto operator<=>(const LinkAddress&) const = default;
  bool operator==(const LinkAddress&) const = default;

 private:
  using Value = std::variant<std::monostate, IpEndpoint, UnixPath, MacAddress>;
  explicit LinkAddress(Value v) : v_(std::move(v)) {}

  Value v_;
};

}  // namespace dxpu::link

template <>
struct std::hash<dxpu::link::LinkAddress> {
  size_t operator()(const dxpu::link::LinkAddress& a) const noexcept { return a.Hash(); }
};

#endif  // DXPU_LIB_LINK_LINK_ADDRESS_H_
