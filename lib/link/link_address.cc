// link_address.cc - IPv4/IPv6 socket addresses, AF_UNIX paths and MAC addresses as values.
#include "link/link_address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>
#include <string>

namespace dxpu::link {
namespace {

// FNV-1a over bytes, seeded with the previous hash.
size_t HashBytes(size_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

std::optional<LinkAddress> LinkAddress::FromSockaddr(const sockaddr* sa, socklen_t len) {
  if (sa == nullptr || len < static_cast<socklen_t>(sizeof(sa_family_t))) return std::nullopt;
  switch (sa->sa_family) {
    case AF_INET: {
      if (len < static_cast<socklen_t>(sizeof(sockaddr_in))) return std::nullopt;
      sockaddr_in sin{};
      std::memcpy(&sin, sa, sizeof(sin));
      IpEndpoint ep;
      ep.family = AF_INET;
      std::memcpy(ep.addr.data(), &sin.sin_addr, sizeof(sin.sin_addr));
      ep.port = ntohs(sin.sin_port);
      return LinkAddress(Value(ep));
    }
    case AF_INET6: {
      if (len < static_cast<socklen_t>(sizeof(sockaddr_in6))) return std::nullopt;
      sockaddr_in6 sin6{};
      std::memcpy(&sin6, sa, sizeof(sin6));
      IpEndpoint ep;
      ep.family = AF_INET6;
      std::memcpy(ep.addr.data(), &sin6.sin6_addr, sizeof(sin6.sin6_addr));
      ep.port = ntohs(sin6.sin6_port);
      ep.scope_id = sin6.sin6_scope_id;
      return LinkAddress(Value(ep));
    }
    case AF_UNIX: {
      sockaddr_un sun{};
      const size_t n = std::min(static_cast<size_t>(len), sizeof(sun));
      std::memcpy(&sun, sa, n);
      const size_t path_max = n - offsetof(sockaddr_un, sun_path);
      return Unix(std::string(sun.sun_path, strnlen(sun.sun_path, path_max)));
    }
    default:
      return std::nullopt;
  }
}

std::optional<LinkAddress> LinkAddress::FromIp(std::string_view ip, uint16_t port) {
  std::string text(ip);
  IpEndpoint ep;
  ep.port = port;
  in_addr a4{};
  if (inet_pton(AF_INET, text.c_str(), &a4) == 1) {
    ep.family = AF_INET;
    std::memcpy(ep.addr.data(), &a4, sizeof(a4));
    return LinkAddress(Value(ep));
  }
  const size_t pct = text.find('%');
  if (pct != std::string::npos) {
    const std::string scope = text.substr(pct + 1);
    text.resize(pct);
    ep.scope_id = if_nametoindex(scope.c_str());
    if (ep.scope_id == 0) {
      char* end = nullptr;
      const unsigned long v = std::strtoul(scope.c_str(), &end, 10);
      if (scope.empty() || *end != '\0' || v == 0 || v > UINT32_MAX) return std::nullopt;
      ep.scope_id = static_cast<uint32_t>(v);
    }
  }
  in6_addr a6{};
  if (inet_pton(AF_INET6, text.c_str(), &a6) != 1) return std::nullopt;
  ep.family = AF_INET6;
  std::memcpy(ep.addr.data(), &a6, sizeof(a6));
  return LinkAddress(Value(ep));
}

LinkAddress LinkAddress::Unix(std::string path) {
  return LinkAddress(Value(UnixPath{std::move(path)}));
}

LinkAddress LinkAddress::Mac(const MacAddress& mac) { return LinkAddress(Value(mac)); }

socklen_t LinkAddress::ToSockaddr(sockaddr_storage* out) const {
  *out = sockaddr_storage{};
  if (const auto* ep = std::get_if<IpEndpoint>(&v_)) {
    if (ep->family == AF_INET) {
      sockaddr_in sin{};
      sin.sin_family = AF_INET;
      sin.sin_port = htons(ep->port);
      std::memcpy(&sin.sin_addr, ep->addr.data(), sizeof(sin.sin_addr));
      std::memcpy(out, &sin, sizeof(sin));
      return sizeof(sin);
    }
    sockaddr_in6 sin6{};
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(ep->port);
    sin6.sin6_scope_id = ep->scope_id;
    std::memcpy(&sin6.sin6_addr, ep->addr.data(), sizeof(sin6.sin6_addr));
    std::memcpy(out, &sin6, sizeof(sin6));
    return sizeof(sin6);
  }
  if (const auto* up = std::get_if<UnixPath>(&v_)) {
    sockaddr_un sun{};
    if (up->path.empty() || up->path.size() >= sizeof(sun.sun_path)) return 0;
    sun.sun_family = AF_UNIX;
    std::memcpy(sun.sun_path, up->path.data(), up->path.size());
    std::memcpy(out, &sun, sizeof(sun));
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + up->path.size() + 1);
  }
  return 0;
}

std::string LinkAddress::ToString() const {
  if (const auto* ep = std::get_if<IpEndpoint>(&v_)) {
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(ep->family, ep->addr.data(), text, sizeof(text));
    if (ep->family == AF_INET) return std::string(text) + ":" + std::to_string(ep->port);
    std::string s = "[" + std::string(text);
    if (ep->scope_id != 0) s += "%" + std::to_string(ep->scope_id);
    return s + "]:" + std::to_string(ep->port);
  }
  if (const auto* up = std::get_if<UnixPath>(&v_)) return "unix:" + up->path;
  if (const auto* mac = std::get_if<MacAddress>(&v_)) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < mac->size(); ++i) {
      if (i != 0) s += ':';
      s += kHex[(*mac)[i] >> 4];
      s += kHex[(*mac)[i] & 0xf];
    }
    return s;
  }
  return "none";
}

size_t LinkAddress::Hash() const {
  size_t h = 14695981039346656037ULL ^ v_.index();
  if (const auto* ep = std::get_if<IpEndpoint>(&v_)) {
    h = HashBytes(h, &ep->family, sizeof(ep->family));
    h = HashBytes(h, ep->addr.data(), ep->addr.size());
    h = HashBytes(h, &ep->port, sizeof(ep->port));
    h = HashBytes(h, &ep->scope_id, sizeof(ep->scope_id));
  } else if (const auto* up = std::get_if<UnixPath>(&v_)) {
    h = HashBytes(h, up->path.data(), up->path.size());
  } else if (const auto* mac = std::get_if<MacAddress>(&v_)) {
    h = HashBytes(h, mac->data(), mac->size());
  }
  return h;
}

}  // namespace dxpu::link
