// udp_relay.h - a relay on loopback between a host and its bridge, as a tap on the fabric: it
// forwards every datagram both ways and keeps a copy (the attacker's capture). Held frames:
// while holding, the host's frames to the bridge go out in pairs, each pair swapped (a
// reordering network).
#ifndef DXPU_TESTS_ATTACK_UDP_RELAY_H_
#define DXPU_TESTS_ATTACK_UDP_RELAY_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "link/unique_fd.h"

namespace dxpu::test::attack {

using Frame = std::vector<uint8_t>;

class UdpRelay {
 public:
  explicit UdpRelay(uint16_t bridge_port);
  ~UdpRelay();
  UdpRelay(const UdpRelay&) = delete;
  UdpRelay& operator=(const UdpRelay&) = delete;

  bool ok() const { return front_.valid() && back_.valid(); }
  // Where the host sends its frames (as if to the bridge).
  uint16_t port() const { return front_port_; }

  // What passed so far, in order: each frame once it has been sent on (a frame held back for
  // reordering is not in the capture yet).
  std::vector<Frame> ToBridge() const;
  std::vector<Frame> ToHost() const;

  // Swaps each pair of the host's frames while on.
  void Reorder(bool on) { reorder_ = on; }
  uint64_t reordered() const { return reordered_.load(); }

 private:
  void Run();
  void ToBridgeNow(const Frame& f);

  link::UniqueFd front_;  // the host's side
  link::UniqueFd back_;   // connected to the bridge
  uint16_t front_port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> reorder_{false};
  std::atomic<uint64_t> reordered_{0};
  mutable std::mutex mu_;
  std::vector<Frame> to_bridge_, to_host_;
  std::thread thread_;
};

}  // namespace dxpu::test::attack

#endif  // DXPU_TESTS_ATTACK_UDP_RELAY_H_
