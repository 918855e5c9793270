// session_pair.cc - see session_pair.h.
#include "session_pair.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>

namespace dxpu::test {

SessionNode::SessionNode(const dxfp_session_config& cfg) {
  const size_t need = dxfp_session_mem_size(&cfg);
  if (need == 0) {
    ADD_FAILURE() << "invalid config: " << dxfp_session_config_check(&cfg);
    return;
  }
  mem_.resize((need + 7) / 8);
  static constexpr dxfp_session_ops kOps = {&OnDeliver, &OnLinkDown, &OnEstablished};
  EXPECT_TRUE(dxfp_session_init(&session_, &cfg, mem_.data(), mem_.size() * 8, &kOps, this));
}

void SessionNode::OnDeliver(void* ctx, const dxpu_tlp* tlp) {
  auto* n = static_cast<SessionNode*>(ctx);
  DeliveredTlp d;
  d.hdr = *tlp;
  const uint32_t len = dxpu_tlp_payload_len(tlp);
  if (len != 0) d.payload.assign(tlp->payload, tlp->payload + len);
  d.hdr.payload = nullptr;
  n->delivered.push_back(std::move(d));
  if (n->auto_release)
    dxfp_session_release(&n->session_, static_cast<int>(dxpu_tlp_kind_class(tlp->kind)), len);
}

void SessionNode::OnLinkDown(void* ctx, dxfp_down_reason reason, const dxpu_tlp* unanswered,
                             size_t n) {
  auto* node = static_cast<SessionNode*>(ctx);
  EXPECT_FALSE(node->down) << "link down reported twice";
  node->down = true;
  node->down_reason = reason;
  node->unanswered.assign(unanswered, unanswered + n);
}

void SessionNode::OnEstablished(void* ctx) { static_cast<SessionNode*>(ctx)->established_calls++; }

dxfp_session_config TestConfig(dxfp_session_role role) {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  c.role = role;
  const bool init = role == DXFP_ROLE_INITIATOR;
  c.node_id = init ? 0x1111 : 0x2222;
  c.session_id = init ? 0x10 : 0x20;
  c.epoch = init ? 0xaaaa0001 : 0xbbbb0002;
  c.initial_seq = init ? 0xfffffff0u : 100;  // the initiator's wraps soon
  c.replay_window = 64;
  c.replay_bytes = 64 * 1024;
  c.max_np = 16;
  return c;
}

SessionPair::SessionPair(const dxfp_session_config& a_cfg, const dxfp_session_config& b_cfg)
    : a(a_cfg), b(b_cfg) {}

dxfp_rx_result SessionPair::Deliver(SessionNode& to, const Frame& frame) const {
  if (to.state() == DXFP_STATE_IDLE && to.s()->cfg.role == DXFP_ROLE_RESPONDER) {
    if (accept) return accept(to.s(), now, frame);
    dxfp_frame f{};
    if (dxfp_frame_parse(frame.data(), frame.size(), DXFP_MAX_FRAME, &f) != DXFP_OK ||
        f.hdr.type != DXFP_HELLO)
      return DXFP_RX_UNEXPECTED;
    return dxfp_session_accept(to.s(), now, &f);
  }
  return dxfp_session_receive(to.s(), now, frame.data(), frame.size());
}

bool SessionPair::PollOne(SessionNode& from, bool from_a) {
  std::array<uint8_t, DXFP_MAX_FRAME> buf{};
  size_t len = 0;
  if (!dxfp_session_poll(from.s(), now, buf.data(), buf.size(), &len)) return false;
  Frame f(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(len));
  (from_a ? a_to_b : b_to_a).push_back(f);
  if (filter && !filter(from_a, f)) return true;
  Deliver(from_a ? b : a, f);
  return true;
}

void SessionPair::Pump() {
  for (int i = 0; i < 100000; i++) {
    const bool sent_a = PollOne(a, true);
    const bool sent_b = PollOne(b, false);
    if (!sent_a && !sent_b) return;
  }
  ADD_FAILURE() << "the sessions never went quiet";
}

uint64_t SessionPair::NextDeadline() {
  return std::min(dxfp_session_next_deadline(a.s()), dxfp_session_next_deadline(b.s()));
}

void SessionPair::RunUntil(uint64_t t) {
  Pump();
  for (int i = 0; i < 1000000; i++) {
    const uint64_t d = NextDeadline();
    if (d > t) break;
    now = std::max(now, d);
    Pump();
  }
  now = std::max(now, t);
  Pump();
}

void SessionPair::Establish() {
  dxfp_session_connect(a.s(), now);
  Pump();
  ASSERT_EQ(a.state(), DXFP_STATE_ESTABLISHED);
  ASSERT_EQ(b.state(), DXFP_STATE_ESTABLISHED);
}

dxpu_tlp MakeMwr(uint64_t addr, const std::vector<uint8_t>& payload) {
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MWR;
  t.length_dw = static_cast<uint16_t>(payload.size() / 4);
  t.requester_id = 0x0100;
  t.first_be = 0xf;
  t.last_be = t.length_dw > 1 ? 0xf : 0;
  t.addr = addr;
  t.payload = payload.data();
  return t;
}

dxpu_tlp MakeMrd(uint16_t requester, uint16_t tag, uint64_t addr, uint16_t length_dw) {
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MRD;
  t.length_dw = length_dw;
  t.requester_id = requester;
  t.tag = tag;
  t.first_be = 0xf;
  t.last_be = length_dw > 1 ? 0xf : 0;
  t.addr = addr;
  return t;
}

dxpu_tlp MakeCpld(uint16_t requester, uint16_t tag, const std::vector<uint8_t>& payload,
                  uint16_t byte_count) {
  dxpu_tlp t{};
  t.kind = DXPU_TLP_CPLD;
  t.length_dw = static_cast<uint16_t>(payload.size() / 4);
  t.requester_id = requester;
  t.tag = tag;
  t.completer_id = 0x0200;
  t.byte_count = byte_count;
  t.cpl_status = DXPU_TLP_CPL_SC;
  t.payload = payload.data();
  return t;
}

}  // namespace dxpu::test
