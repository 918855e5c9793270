// udp_relay.cc - see udp_relay.h.
#include "udp_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <optional>

namespace dxpu::test::attack {
namespace {

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  return sa;
}

link::UniqueFd BoundSocket() {
  link::UniqueFd fd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  const sockaddr_in sa = Loopback(0);
  if (!fd.valid() || bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0)
    return {};
  return fd;
}

}  // namespace

UdpRelay::UdpRelay(uint16_t bridge_port) : front_(BoundSocket()), back_(BoundSocket()) {
  const sockaddr_in bridge = Loopback(bridge_port);
  sockaddr_in me{};
  socklen_t len = sizeof(me);
  if (!ok() ||
      connect(back_.get(), reinterpret_cast<const sockaddr*>(&bridge), sizeof(bridge)) != 0 ||
      getsockname(front_.get(), reinterpret_cast<sockaddr*>(&me), &len) != 0) {
    front_ = {};
    return;
  }
  front_port_ = ntohs(me.sin_port);
  thread_ = std::thread([this] { Run(); });
}

UdpRelay::~UdpRelay() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<Frame> UdpRelay::ToBridge() const {
  std::lock_guard<std::mutex> lock(mu_);
  return to_bridge_;
}

std::vector<Frame> UdpRelay::ToHost() const {
  std::lock_guard<std::mutex> lock(mu_);
  return to_host_;
}

void UdpRelay::ToBridgeNow(const Frame& f) {
  send(back_.get(), f.data(), f.size(), 0);
  // Captured once on the wire: a frame the relay still holds cannot be replayed ahead of it
  // (an attacker's copy that arrived first would be the bridge's first copy, and the session
  // would follow it to the attacker's address, as it roams to wherever its key is used).
  std::lock_guard<std::mutex> lock(mu_);
  to_bridge_.push_back(f);
}

void UdpRelay::Run() {
  std::array<uint8_t, 65536> buf{};
  sockaddr_in host{};
  bool have_host = false;
  std::optional<Frame> held;  // reordering: the first of a pair
  while (!stop_) {
    std::array<pollfd, 2> p{{{front_.get(), POLLIN, 0}, {back_.get(), POLLIN, 0}}};
    if (poll(p.data(), p.size(), 5) <= 0 || !reorder_) {
      // Nothing for a while, or reordering over: a held frame goes out alone rather than wait
      // for a partner.
      if (held) {
        ToBridgeNow(*held);
        held.reset();
      }
    }
    for (;;) {
      sockaddr_in from{};
      socklen_t len = sizeof(from);
      const ssize_t n = recvfrom(front_.get(), buf.data(), buf.size(), 0,
                                 reinterpret_cast<sockaddr*>(&from), &len);
      if (n < 0) break;
      host = from;
      have_host = true;
      Frame f(buf.begin(), buf.begin() + n);
      if (reorder_ && !held) {
        held = std::move(f);
        continue;
      }
      ToBridgeNow(f);
      if (held) {
        ToBridgeNow(*held);
        held.reset();
        reordered_.fetch_add(1);
      }
    }
    for (;;) {
      const ssize_t n = recv(back_.get(), buf.data(), buf.size(), 0);
      if (n < 0) break;
      if (have_host)
        sendto(front_.get(), buf.data(), static_cast<size_t>(n), 0,
               reinterpret_cast<const sockaddr*>(&host), sizeof(host));
      std::lock_guard<std::mutex> lock(mu_);
      to_host_.emplace_back(buf.begin(), buf.begin() + n);
    }
  }
}

}  // namespace dxpu::test::attack
