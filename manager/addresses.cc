// addresses.cc - the addresses the pool manager accepts (addresses.h).
#include "manager/addresses.h"

#include <arpa/inet.h>

#include <charconv>
#include <filesystem>

#include <spdlog/fmt/fmt.h>

namespace dxpu::manager {

namespace {

bool IsIp(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

bool IsDnsName(std::string_view host) {
  if (host.empty() || host.size() > 253 || host.front() == '-' || host.front() == '.') return false;
  return host.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") ==
         std::string_view::npos;
}

// "1" to "65535".
std::optional<int> Port(std::string_view text) {
  int port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || text.size() > 5 || ec != std::errc() || end != text.data() + text.size() ||
      port < 1 || port > 65535)
    return std::nullopt;
  return port;
}

// "HOST:PORT" or "[V6]:PORT" into host and port; port 0 when `port_optional` and none given.
bool SplitHostPort(std::string_view text, bool port_optional, std::string* host, int* port) {
  std::string_view port_text;
  bool has_port = false;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return false;
    *host = std::string(text.substr(1, close - 1));
    if (!IsIp(*host)) return false;
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port_text = rest.substr(1);
      has_port = true;
    }
  } else {
    const size_t colon = text.rfind(':');
    *host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = text.substr(colon + 1);
      has_port = true;
    }
    if (host->find(':') != std::string::npos) return false;  // IPv6 wants brackets
  }
  *port = 0;
  if (!has_port) return port_optional;
  const std::optional<int> p = Port(port_text);
  if (!p) return false;
  *port = *p;
  return true;
}

// PATH absolute, normal (no "." or ".." parts, no "//") and strictly inside `dir`.
bool InsideDirectory(const std::string& path, const std::string& dir) {
  const std::filesystem::path p(path);
  std::filesystem::path d = std::filesystem::path(dir).lexically_normal();
  if (!p.is_absolute() || p.lexically_normal() != p || path.find("//") != std::string::npos)
    return false;
  for (const auto& part : p) {
    if (part == "." || part == "..") return false;
  }
  const std::filesystem::path rel = p.lexically_relative(d);
  return !rel.empty() && *rel.begin() != ".." && rel != ".";
}

}  // namespace

std::string CheckManagementAddress(std::string_view address, const std::string& socket_dir) {
  std::string bad = fmt::format(  // not const: returned by move
      "'{}' is not a management address: give udp:IP:PORT (or IP:PORT) of the bridge's "
      "management socket, or unix:PATH of a socket in {} (dxpu-manager --bridge-socket-dir)",
      address, socket_dir);
  if (address.starts_with("unix:")) {
    return InsideDirectory(std::string(address.substr(5)), socket_dir) ? "" : bad;
  }
  std::string_view rest = address;
  if (rest.starts_with("udp:")) rest.remove_prefix(4);
  std::string host;
  int port = 0;
  if (!SplitHostPort(rest, false, &host, &port) || !IsIp(host)) return bad;
  return "";
}

std::string CheckFabricAddress(std::string_view address) {
  std::string bad = fmt::format(  // not const: returned by move
      "'{}' is not a fabric address: give udp:IP:PORT (hosts in userspace mode) or the bridge's "
      "MAC such as 02:00:00:00:b0:01 (hosts in kernel mode)",
      address);
  if (address.starts_with("udp:")) {
    std::string host;
    int port = 0;
    return SplitHostPort(address.substr(4), false, &host, &port) && IsIp(host) ? "" : bad;
  }
  if (address.size() != 17) return bad;
  for (size_t i = 0; i < address.size(); ++i) {
    const char c = address[i];
    const bool ok = i % 3 == 2 ? c == ':' : std::isxdigit(static_cast<unsigned char>(c)) != 0;
    if (!ok) return bad;
  }
  return "";
}

std::optional<HttpUrl> ParseHttpUrl(std::string_view url) {
  HttpUrl u;
  if (url.starts_with("http://")) {
    u.scheme = "http";
  } else if (url.starts_with("https://")) {
    u.scheme = "https";
  } else {
    return std::nullopt;
  }
  std::string_view rest = url.substr(u.scheme.size() + 3);
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    u.path = std::string(rest.substr(slash));
    rest = rest.substr(0, slash);
  }
  if (rest.find_first_of("@?#") != std::string_view::npos ||
      u.path.find_first_of("?#") != std::string::npos)
    return std::nullopt;
  if (!SplitHostPort(rest, true, &u.host, &u.port)) return std::nullopt;
  if (!IsIp(u.host) && !IsDnsName(u.host)) return std::nullopt;
  return u;
}

std::string CheckAgentUrl(std::string_view url) {
  const std::optional<HttpUrl> u = ParseHttpUrl(url);
  if (u && u->port != 0 && u->path.empty()) return "";
  return fmt::format(
      "'{}' is not an agent's URL: give http://HOST:PORT or https://HOST:PORT (HOST an IP "
      "address or a DNS name), nothing more",
      url);
}

}  // namespace dxpu::manager
