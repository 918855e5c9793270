// session_world.h - two DxFP sessions (lib/core/dxfp_session.c) joined by a wire, for the
// session fuzz target and the corpus generator: an honest initiator and responder, brought to
// one of the states a session can be in (a Scenario), and a victim among them that receives
// whatever an attacker on the fabric sends. Deterministic: fixed identities, a virtual clock.
#ifndef DXPU_TESTS_FUZZ_SESSION_WORLD_H_
#define DXPU_TESTS_FUZZ_SESSION_WORLD_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "core/dxfp_session.h"
#include "crypto/fabric_keys.h"

namespace dxpu::fuzz {

using Frame = std::vector<uint8_t>;

class SessionEnd {
 public:
  // authenticated: the Noise handshake and sealed frames (fixed keys, deterministic
  // ephemeral keys, so that an input always does the same).
  explicit SessionEnd(dxfp_session_role role, bool authenticated = false);
  SessionEnd(const SessionEnd&) = delete;
  SessionEnd& operator=(const SessionEnd&) = delete;
  ~SessionEnd() = default;

  dxfp_session* s() { return &session_; }
  dxfp_session_state state() const { return dxfp_session_get_state(&session_); }
  dxfp_session_role role() const { return session_.cfg.role; }

  uint64_t delivered = 0;
  int downs = 0;  // link_down calls: at most one
  // The completions this end owes for the memory reads it was delivered (it completes every
  // read, as a device or a host answers DMA), sent by SessionWorld::Pump as credit allows.
  std::vector<dxpu_tlp> owed;

 private:
  static void OnDeliver(void* ctx, const dxpu_tlp* tlp);
  static void OnLinkDown(void* ctx, dxfp_down_reason reason, const dxpu_tlp* unanswered, size_t n);

  std::vector<uint64_t> mem_;
  dxfp_session session_{};
};

class SessionWorld {
 public:
  explicit SessionWorld(bool authenticated = false);

  const bool authenticated;
  SessionEnd initiator;
  SessionEnd responder;
  SessionEnd* victim = &initiator;
  uint64_t now = 1000;
  // Frames the honest peer sent the victim, oldest first (at most kKept): what an attacker
  // who captures the victim's traffic can replay.
  static constexpr size_t kKept = 64;
  std::deque<Frame> to_victim;
  // Called with every frame either end sends (the corpus generator records them).
  std::function<void(const SessionEnd& from, const Frame&)> on_send;

  // A frame as it arrives at `to` from the fabric: a responder that is idle takes a HELLO
  // through dxfp_session_accept (authenticated: the handshake opened with the bridge's key and
  // the host's key checked, then dxfp_session_accept_auth), as a bridge's demultiplexer does.
  dxfp_rx_result Deliver(SessionEnd& to, std::span<const uint8_t> frame);
  // Exchanges frames until neither end sends (bounded), each end sending the completions it
  // owes on the way; every frame sent must parse.
  void Pump();
  // Advances the clock by dt, firing the timers on the way.
  void Advance(uint64_t dt);
  // The victim sends a TLP (refusals are fine), then the ends exchange frames.
  void VictimSends(const dxpu_tlp& tlp);
  SessionEnd& Peer() { return victim == &initiator ? responder : initiator; }

 private:
  bool PollOne(SessionEnd& from);
  void SendOwed(SessionEnd& end);
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(DXFP_MAX_FRAME);
};

// The authenticated worlds' key pairs (fixed): the host's and the bridge's (the corpus generator
// seals cookies with it; the hello target's bridge lists the host).
const crypto::KeyPair& HostKey();
const crypto::KeyPair& BridgeKey();

// The i-th memory read the in-flight scenarios leave unanswered at their victim (i < 4).
dxpu_tlp InFlightRead(uint16_t i);

// One starting point of the fuzz target: the state the world is brought to before the input's
// frames reach the victim. The authenticated handshake adds its states here.
struct Scenario {
  const char* name;
  void (*setup)(SessionWorld& w);
  bool authenticated = false;  // the world is made with authenticated sessions
};
std::span<const Scenario> Scenarios();

}  // namespace dxpu::fuzz

#endif  // DXPU_TESTS_FUZZ_SESSION_WORLD_H_
