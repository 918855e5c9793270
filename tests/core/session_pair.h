// A pair of DxFP sessions (initiator "a", responder "b") joined by a wire the test
// controls: frames are handed over synchronously, a filter may drop or rewrite them,
// and a virtual clock advances only when the test or RunUntil says so.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/dxfp_session.h"

namespace dxpu::test {

// A TLP as delivered: the header plus a copy of its payload.
struct DeliveredTlp {
  dxpu_tlp hdr{};
  std::vector<uint8_t> payload;
};

class SessionNode {
 public:
  explicit SessionNode(const dxfp_session_config& cfg);
  SessionNode(const SessionNode&) = delete;
  SessionNode& operator=(const SessionNode&) = delete;
  SessionNode(SessionNode&&) = delete;
  SessionNode& operator=(SessionNode&&) = delete;
  ~SessionNode() = default;

  dxfp_session* s() { return &session_; }
  const dxfp_session_counters& counters() const { return *dxfp_session_get_counters(&session_); }
  dxfp_session_state state() const { return dxfp_session_get_state(&session_); }

  // When true (the default) a delivered TLP's credit is released at once.
  bool auto_release = true;

  std::vector<DeliveredTlp> delivered;
  bool down = false;
  dxfp_down_reason down_reason = DXFP_DOWN_NONE;
  std::vector<dxpu_tlp> unanswered;
  int established_calls = 0;

 private:
  static void OnDeliver(void* ctx, const dxpu_tlp* tlp);
  static void OnLinkDown(void* ctx, dxfp_down_reason reason, const dxpu_tlp* unanswered, size_t n);
  static void OnEstablished(void* ctx);

  std::vector<uint64_t> mem_;
  dxfp_session session_{};
};

// Configuration for tests: small, fast timers, identity filled per role.
dxfp_session_config TestConfig(dxfp_session_role role);

class SessionPair {
 public:
  using Frame = std::vector<uint8_t>;
  // Return false to drop the frame; may modify it. from_a: direction a -> b.
  using Filter = std::function<bool(bool from_a, Frame& frame)>;

  SessionPair() : SessionPair(TestConfig(DXFP_ROLE_INITIATOR), TestConfig(DXFP_ROLE_RESPONDER)) {}
  SessionPair(const dxfp_session_config& a_cfg, const dxfp_session_config& b_cfg);

  SessionNode a;
  SessionNode b;
  uint64_t now = 1000;
  Filter filter;
  // How an idle responder takes a HELLO; unset: dxfp_frame_parse and dxfp_session_accept
  // (an authenticated test opens the handshake and calls dxfp_session_accept_auth).
  using Accept = std::function<dxfp_rx_result(dxfp_session* s, uint64_t now, const Frame& hello)>;
  Accept accept;
  std::vector<Frame> a_to_b;  // every frame a sent (before the filter)
  std::vector<Frame> b_to_a;

  // Exchange frames until neither end has anything to send at this instant.
  void Pump();
  // Pump, then jump from deadline to deadline until t (inclusive).
  void RunUntil(uint64_t t);
  // connect + pump until both ends are established (asserts).
  void Establish();
  // Hand one frame to a node as it would arrive (the responder accepts a HELLO when idle).
  dxfp_rx_result Deliver(SessionNode& to, const Frame& frame) const;
  uint64_t NextDeadline();

 private:
  bool PollOne(SessionNode& from, bool from_a);
};

// TLP builders. The TLP points at `payload`, which must outlive it: a temporary does not compile.
dxpu_tlp MakeMwr(uint64_t addr, const std::vector<uint8_t>& payload);
dxpu_tlp MakeMwr(uint64_t addr, std::vector<uint8_t>&& payload) = delete;
dxpu_tlp MakeMrd(uint16_t requester, uint16_t tag, uint64_t addr, uint16_t length_dw);
// A completion with data for (requester, tag): length_dw DWs, byte_count bytes remaining.
dxpu_tlp MakeCpld(uint16_t requester, uint16_t tag, const std::vector<uint8_t>& payload,
                  uint16_t byte_count);
dxpu_tlp MakeCpld(uint16_t requester, uint16_t tag, std::vector<uint8_t>&& payload,
                  uint16_t byte_count) = delete;

}  // namespace dxpu::test
