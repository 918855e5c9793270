// session_world.cc - see session_world.h.
#include "session_world.h"

#include <algorithm>
#include <array>

#include "core/tlp_build.h"
#include "crypto/fabric_keys.h"
#include "fuzz_util.h"
#include "session_pair.h"

namespace dxpu::fuzz {
namespace {

void Check(bool ok, const char* what) { Require(ok, "dxfp_session_fuzz", what); }

// Fixed long-term keys of the host and the bridge.
crypto::KeyPair FixedKey(uint8_t fill) {
  crypto::KeyPair k;
  k.secret.fill(fill);
  k.pub = crypto::PublicKeyOf(k.secret);
  return k;
}

// Ephemeral keys from a counter the world resets: the same input makes the same frames.
uint64_t g_ephemeral = 0;
void DeterministicKeypair(uint8_t secret[DXFP_KEY_SIZE], uint8_t pub[DXFP_KEY_SIZE]) {
  crypto::Key s{};
  s.fill(0x5a);
  ++g_ephemeral;
  for (size_t i = 0; i < 8; ++i) s[i] = static_cast<uint8_t>(g_ephemeral >> (8 * i));
  const crypto::Key p = crypto::PublicKeyOf(s);
  std::copy(s.begin(), s.end(), secret);
  std::copy(p.begin(), p.end(), pub);
}
const dxfp_crypto_ops& FuzzOps() {
  static const dxfp_crypto_ops ops = [] {
    dxfp_crypto_ops o = crypto::SodiumCryptoOps();
    o.x25519_keypair = &DeterministicKeypair;
    return o;
  }();
  return ops;
}

// The session tests' configuration (tests/core/session_pair.h), with a smaller replay buffer:
// each input sets up two sessions.
dxfp_session_config EndConfig(dxfp_session_role role, bool authenticated) {
  dxfp_session_config c = test::TestConfig(role);
  c.replay_bytes = 16 * 1024;
  if (authenticated) {
    c.auth.ops = &FuzzOps();
    if (role == DXFP_ROLE_INITIATOR) {
      std::copy(HostKey().secret.begin(), HostKey().secret.end(), c.auth.static_secret);
      std::copy(BridgeKey().pub.begin(), BridgeKey().pub.end(), c.auth.peer_public);
      c.auth.wall_clock_offset_ns = 1'000'000'000;
    }
  }
  return c;
}

// TLPs the busy scenarios leave in flight: reads awaiting completions, writes unacknowledged.
void SendSome(SessionWorld& w, SessionEnd& from) {
  static const std::array<uint8_t, 64> kData{1, 2, 3, 4, 5, 6, 7, 8};
  for (uint16_t i = 0; i < 4; ++i) {
    const dxpu_tlp rd = InFlightRead(i);
    dxfp_session_send(from.s(), w.now, &rd);
    dxpu_tlp wr = rd;
    wr.kind = DXPU_TLP_MWR;
    wr.length_dw = kData.size() / 4;
    wr.payload = kData.data();
    dxfp_session_send(from.s(), w.now, &wr);
  }
}

// Polls `from` and loses what it sends.
void Lose(SessionWorld& w, SessionEnd& from) {
  std::array<uint8_t, DXFP_MAX_FRAME> buf{};
  size_t len = 0;
  for (int i = 0; i < 64 && dxfp_session_poll(from.s(), w.now, buf.data(), buf.size(), &len); ++i) {
  }
}

void Establish(SessionWorld& w) {
  dxfp_session_connect(w.initiator.s(), w.now);
  w.Pump();
  Check(w.initiator.state() == DXFP_STATE_ESTABLISHED &&
            w.responder.state() == DXFP_STATE_ESTABLISHED,
        "the honest ends did not establish");
}

// The states a victim can be in.
void InitiatorConnecting(SessionWorld& w) {
  dxfp_session_connect(w.initiator.s(), w.now);
  Lose(w, w.initiator);
  w.victim = &w.initiator;
}
void ResponderIdle(SessionWorld& w) { w.victim = &w.responder; }
void ResponderAccepting(SessionWorld& w) {
  w.victim = &w.responder;
  dxfp_session_connect(w.initiator.s(), w.now);
  std::array<uint8_t, DXFP_MAX_FRAME> buf{};
  size_t len = 0;
  Check(dxfp_session_poll(w.initiator.s(), w.now, buf.data(), buf.size(), &len), "no HELLO");
  Check(w.Deliver(w.responder, {buf.data(), len}) == DXFP_RX_OK, "HELLO refused");
  Lose(w, w.responder);  // the WELCOME
}
void InitiatorEstablished(SessionWorld& w) {
  w.victim = &w.initiator;
  Establish(w);
}
void ResponderEstablished(SessionWorld& w) {
  w.victim = &w.responder;
  Establish(w);
}
void InitiatorInFlight(SessionWorld& w) {
  w.victim = &w.initiator;
  Establish(w);
  SendSome(w, w.initiator);
  Lose(w, w.initiator);
}
void ResponderInFlight(SessionWorld& w) {
  w.victim = &w.responder;
  Establish(w);
  SendSome(w, w.responder);
  Lose(w, w.responder);
}
void InitiatorDown(SessionWorld& w) {
  w.victim = &w.initiator;
  Establish(w);
  dxfp_session_close(w.initiator.s(), w.now, DXFP_CLOSE_SHUTDOWN);
  Lose(w, w.initiator);
}

constexpr Scenario kScenarios[] = {
    {"initiator-connecting", InitiatorConnecting},
    {"responder-idle", ResponderIdle},
    {"responder-accepting", ResponderAccepting},
    {"initiator-established", InitiatorEstablished},
    {"responder-established", ResponderEstablished},
    {"initiator-in-flight", InitiatorInFlight},
    {"responder-in-flight", ResponderInFlight},
    {"initiator-down", InitiatorDown},
    // The same states with the authenticated handshake and sealed frames (docs/protocol.md
    // 4.12): the victim's peer seals, the input's frames are an attacker's.
    {"auth-initiator-connecting", InitiatorConnecting, true},
    {"auth-responder-accepting", ResponderAccepting, true},
    {"auth-initiator-established", InitiatorEstablished, true},
    {"auth-responder-in-flight", ResponderInFlight, true},
};

}  // namespace

const crypto::KeyPair& HostKey() {
  static const crypto::KeyPair k = FixedKey(0x11);
  return k;
}
const crypto::KeyPair& BridgeKey() {
  static const crypto::KeyPair k = FixedKey(0x22);
  return k;
}

std::span<const Scenario> Scenarios() { return kScenarios; }

dxpu_tlp InFlightRead(uint16_t i) {
  dxpu_tlp rd{};
  rd.kind = DXPU_TLP_MRD;
  rd.length_dw = 4;
  rd.requester_id = 0x0100;
  rd.tag = i;
  rd.first_be = rd.last_be = 0xf;
  rd.addr = 0x10000 + 0x100u * i;
  return rd;
}

SessionEnd::SessionEnd(dxfp_session_role role, bool authenticated) {
  const dxfp_session_config cfg = EndConfig(role, authenticated);
  const size_t need = dxfp_session_mem_size(&cfg);
  Check(need != 0, "invalid session configuration");
  mem_.resize((need + 7) / 8);
  static constexpr dxfp_session_ops kOps = {&OnDeliver, &OnLinkDown, nullptr};
  Check(dxfp_session_init(&session_, &cfg, mem_.data(), mem_.size() * 8, &kOps, this),
        "session init failed");
}

void SessionEnd::OnDeliver(void* ctx, const dxpu_tlp* tlp) {
  auto* end = static_cast<SessionEnd*>(ctx);
  Check(dxpu_tlp_validate(tlp) == DXPU_TLP_OK, "a delivered TLP does not validate");
  end->delivered++;
  if (tlp->kind == DXPU_TLP_MRD && end->owed.size() < 64) {
    static const std::array<uint8_t, DXPU_TLP_MAX_PAYLOAD> kZeros{};
    dxpu_tlp cpl{};
    dxpu_tlp_completion_for(tlp, 0x0200, DXPU_TLP_CPL_SC, &cpl);
    cpl.payload = kZeros.data();
    end->owed.push_back(cpl);
  }
  dxfp_session_release(&end->session_, static_cast<int>(dxpu_tlp_kind_class(tlp->kind)),
                       dxpu_tlp_payload_len(tlp));
}

void SessionEnd::OnLinkDown(void* ctx, dxfp_down_reason reason, const dxpu_tlp* unanswered,
                            size_t n) {
  auto* end = static_cast<SessionEnd*>(ctx);
  end->downs++;
  Check(end->downs == 1, "link down reported twice");
  Check(reason > DXFP_DOWN_NONE && reason < DXFP_DOWN_COUNT, "link down without a reason");
  Check(n <= end->session_.cfg.max_np, "more unanswered requests than the table holds");
  for (size_t i = 0; i < n; ++i)
    Check(dxpu_tlp_kind_class(unanswered[i].kind) == DXPU_TLP_CLASS_NON_POSTED,
          "an unanswered request that is not non-posted");
}

SessionWorld::SessionWorld(bool auth)
    : authenticated((g_ephemeral = 0, auth)),
      initiator(DXFP_ROLE_INITIATOR, auth),
      responder(DXFP_ROLE_RESPONDER, auth) {}

dxfp_rx_result SessionWorld::Deliver(SessionEnd& to, std::span<const uint8_t> frame) {
  if (to.state() == DXFP_STATE_IDLE && to.role() == DXFP_ROLE_RESPONDER) {
    dxfp_frame f{};
    if (dxfp_frame_parse(frame.data(), frame.size(), DXFP_MAX_FRAME, &f) != DXFP_OK ||
        f.hdr.type != DXFP_HELLO)
      return DXFP_RX_UNEXPECTED;
    dxfp_hello hello{};
    if (!dxfp_hello_identity(&f, &hello)) return DXFP_RX_MALFORMED;
    if (!authenticated) return dxfp_session_accept(to.s(), now, &f);
    return crypto::AcceptAuthenticatedHello(to.s(), now, BridgeKey(), frame, &HostKey().pub,
                                            &FuzzOps());
  }
  const dxfp_rx_result r = dxfp_session_receive(to.s(), now, frame.data(), frame.size());
  Check(r >= DXFP_RX_OK && r < DXFP_RX_COUNT, "receive result out of range");
  return r;
}

bool SessionWorld::PollOne(SessionEnd& from) {
  size_t len = 0;
  if (!dxfp_session_poll(from.s(), now, buf_.data(), buf_.size(), &len)) return false;
  dxfp_frame f{};
  dxfp_header h{};
  if (authenticated && dxfp_frame_is_sealed(buf_.data())) {
    Check(
        dxfp_header_peek(buf_.data(), len, &h) && h.length == len && len <= from.s()->cfg.max_frame,
        "a session sent a sealed frame whose header does not describe it");
  } else {
    Check(dxfp_frame_parse(buf_.data(), len, DXFP_MAX_FRAME, &f) == DXFP_OK,
          "a session sent a frame that does not parse");
    Check(!authenticated || f.hdr.type == DXFP_HELLO || f.hdr.type == DXFP_WELCOME,
          "an authenticated session sent a frame in the clear after the handshake");
  }
  Frame frame(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(len));
  if (on_send) on_send(from, frame);
  SessionEnd& to = &from == &initiator ? responder : initiator;
  if (&to == victim) {
    to_victim.push_back(frame);
    if (to_victim.size() > kKept) to_victim.pop_front();
  }
  Deliver(to, frame);
  return true;
}

void SessionWorld::SendOwed(SessionEnd& end) {
  while (!end.owed.empty() &&
         dxfp_session_send(end.s(), now, &end.owed.front()) != DXFP_SEND_NO_CREDIT)
    end.owed.erase(end.owed.begin());  // sent, or never will be (refusals are counted)
}

void SessionWorld::Pump() {
  for (int i = 0; i < 10000; ++i) {
    SendOwed(initiator);
    SendOwed(responder);
    const bool a = PollOne(initiator);
    const bool b = PollOne(responder);
    if (!a && !b) return;
  }
  Check(false, "the sessions never went quiet");
}

void SessionWorld::Advance(uint64_t dt) {
  const uint64_t until = now + dt;
  Pump();
  int stuck = 0;  // deadlines at or before now after everything due was polled
  while (true) {
    const uint64_t d = std::min(dxfp_session_next_deadline(initiator.s()),
                                dxfp_session_next_deadline(responder.s()));
    if (d > until) break;
    stuck = d <= now ? stuck + 1 : 0;
    Check(stuck < 1000, "a timer stays due after every poll (a busy loop for the driver)");
    now = std::max(now, d);
    Pump();
  }
  now = until;
  Pump();
}

void SessionWorld::VictimSends(const dxpu_tlp& tlp) {
  const dxfp_send_result r = dxfp_session_send(victim->s(), now, &tlp);
  Check(r >= DXFP_SEND_OK && r < DXFP_SEND_COUNT, "send result out of range");
  Pump();
}

}  // namespace dxpu::fuzz
