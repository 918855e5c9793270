// session_load.cc - see session_load.h.
#include "fabric/session_load.h"

#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "core/dxfp_session.h"
#include "crypto/fabric_keys.h"
#include "fabric/link_driver.h"
#include "fabric/session_frame.h"

namespace dxpu::fabric {
namespace {

// One session with its memory, delivering into a counter. Not an Endpoint: the load offers
// TLPs to the session directly, so that what is measured is the protocol, without the copy
// and the ordering of the Endpoint's TxQueue (which a stream of posted writes does not need).
struct LoadSession {
  std::vector<uint64_t> memory;
  dxfp_session s{};
  uint64_t tlps = 0;
  uint64_t bytes = 0;
  bool down = false;
};

void OnDeliver(void* ctx, const dxpu_tlp* t) {
  auto* ls = static_cast<LoadSession*>(ctx);
  const uint32_t len = dxpu_tlp_payload_len(t);
  ls->tlps++;
  ls->bytes += len;
  dxfp_session_release(&ls->s, static_cast<int>(dxpu_tlp_kind_class(t->kind)), len);
}

void OnDown(void* ctx, dxfp_down_reason /*reason*/, const dxpu_tlp* /*unanswered*/, size_t /*n*/) {
  static_cast<LoadSession*>(ctx)->down = true;
}

dxfp_session_config LoadConfig(dxfp_session_role role, uint32_t max_frame, uint32_t replay_bytes,
                               size_t tlp_bytes, uint64_t min_rto_ns) {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  c.role = role;
  c.node_id = role == DXFP_ROLE_INITIATOR ? 1 : 2;
  c.session_id = role == DXFP_ROLE_INITIATOR ? 1 : 2;
  c.epoch = role == DXFP_ROLE_INITIATOR ? 11 : 22;
  c.max_frame = max_frame;
  // Go-back-N replays what is in flight after a loss, so a window beyond the
  // bandwidth-delay product only costs goodput. 256 KiB: 10 GB/s for 25 us.
  c.replay_bytes = replay_bytes;
  // A TLP window that matches the bytes: the receiver acknowledges every quarter window at
  // once, so a window far larger than the bytes in flight would leave acks to the timer.
  c.replay_window = 16;
  while (c.replay_window < replay_bytes / (tlp_bytes + 16) && c.replay_window < (1u << 16))
    c.replay_window <<= 1;
  for (int i = 0; i < DXFP_CLASSES; i++) {
    c.rx_hdr_cap[i] = 4096;
    c.rx_data_cap[i] = (4u << 20) / DXFP_CREDIT_UNIT;
  }
  // Sender and receiver share one thread here, so a round trip includes the other side's
  // whole batch: the floor (300 us by default) keeps the timer from firing while acks are on
  // their way (no RTO fires in a loss-free run).
  c.min_rto_ns = min_rto_ns;
  c.initial_rto_ns = 2 * min_rto_ns;
  c.max_rto_ns = 10 * DXFP_NS_PER_MS;
  c.link_down_ns = 2000 * DXFP_NS_PER_MS;
  c.keepalive_ns = 100 * DXFP_NS_PER_MS;
  return c;
}

bool Init(LoadSession* ls, const dxfp_session_config& cfg) {
  static constexpr dxfp_session_ops kOps = {&OnDeliver, &OnDown, nullptr};
  ls->memory.resize((dxfp_session_mem_size(&cfg) + 7) / 8);
  return dxfp_session_init(&ls->s, &cfg, ls->memory.data(), ls->memory.size() * 8, &kOps, ls);
}

}  // namespace

SessionLoadResult RunSessionLoad(RawLinkPair& links, const SessionLoadOptions& o) {
  SessionLoadResult result;
  const uint32_t max_frame = static_cast<uint32_t>(
      std::min<size_t>({o.max_frame, links.tx->max_frame(), links.rx->max_frame()}));
  auto sender = std::make_unique<LoadSession>();
  auto receiver = std::make_unique<LoadSession>();
  dxfp_session_config sc =
      LoadConfig(DXFP_ROLE_INITIATOR, max_frame, o.replay_bytes, o.tlp_payload_bytes, o.min_rto_ns);
  dxfp_session_config rc =
      LoadConfig(DXFP_ROLE_RESPONDER, max_frame, o.replay_bytes, o.tlp_payload_bytes, o.min_rto_ns);
  const crypto::KeyPair host_key = crypto::NewKeyPair(), bridge_key = crypto::NewKeyPair();
  if (o.authenticated) {
    crypto::SetHostAuth(&sc, host_key, bridge_key.pub);
    rc.auth.ops = sc.auth.ops;
  }
  if (!Init(sender.get(), sc) || !Init(receiver.get(), rc)) {
    result.error = "session configuration refused";
    return result;
  }
  std::mt19937_64 rng(o.seed);
  std::bernoulli_distribution lose(o.loss);
  std::optional<link::LinkAddress> back;  // where the responder answers (learned)
  std::vector<uint8_t> rx_buf(DXFP_MAX_FRAME);

  // The write every TLP is: 64-bit address, payload of the requested size.
  std::vector<uint8_t> payload(o.tlp_payload_bytes, 0x5a);
  dxpu_tlp w{};
  w.kind = DXPU_TLP_MWR;
  w.length_dw = static_cast<uint16_t>(o.tlp_payload_bytes / 4);
  w.first_be = 0xf;
  w.last_be = w.length_dw > 1 ? 0xf : 0;
  w.addr = 0x1'0000'0000ull;
  w.payload = payload.data();

  auto transmit = [&](LoadSession& from, link::Link& via, const link::LinkAddress& to,
                      uint64_t now) {
    dxfp_frame_out out;
    while (dxfp_session_poll_pieces(&from.s, now, from.s.cfg.max_frame, &out)) {
      result.frames_sent++;
      if (o.loss > 0 && lose(rng)) {
        result.frames_dropped++;
        continue;
      }
      (void)via.SendPieces(to, SessionFrame(out).pieces());
    }
  };
  auto receive = [&](LoadSession& at, link::Link& via, bool learn, uint64_t now) {
    link::LinkAddress from;  // only while learning where the responder answers
    for (int i = 0; i < 256; i++) {
      const link::LinkResult r = via.Receive(rx_buf, learn ? &from : nullptr);
      if (!r.ok()) return;
      if (at.s.state == DXFP_STATE_IDLE && o.authenticated) {
        (void)crypto::AcceptAuthenticatedHello(&at.s, now, bridge_key, {rx_buf.data(), r.size});
      } else if (at.s.state == DXFP_STATE_IDLE) {
        dxfp_frame f{};
        if (dxfp_frame_parse(rx_buf.data(), r.size, DXFP_MAX_FRAME, &f) == DXFP_OK &&
            f.hdr.type == DXFP_HELLO)
          (void)dxfp_session_accept(&at.s, now, &f);
      } else {
        (void)dxfp_session_receive(&at.s, now, rx_buf.data(), r.size);
      }
      if (learn) back = from;
    }
  };

  dxfp_session_connect(&sender->s, MonotonicNanos());
  // Handshake (bounded).
  for (int i = 0; i < 100000 && sender->s.state != DXFP_STATE_ESTABLISHED; i++) {
    const uint64_t now = MonotonicNanos();
    transmit(*sender, *links.tx, links.to, now);
    receive(*receiver, *links.rx, true, now);
    if (back) transmit(*receiver, *links.rx, *back, now);
    receive(*sender, *links.tx, false, now);
  }
  if (sender->s.state != DXFP_STATE_ESTABLISHED || !back) {
    result.error = "the sessions did not establish";
    return result;
  }
  const uint64_t start = MonotonicNanos();
  const uint64_t end = start + static_cast<uint64_t>(o.duration.count());
  const uint64_t base_tlps = receiver->tlps;
  const uint64_t base_bytes = receiver->bytes;
  uint64_t now = start;
  while (now < end && !sender->down && !receiver->down) {
    // Fill the replay buffer (a frame's worth at a time keeps the pipeline full).
    for (int i = 0; i < 512; i++) {
      if (dxfp_session_send(&sender->s, now, &w) != DXFP_SEND_OK) break;
      w.addr += 0x1000;
    }
    transmit(*sender, *links.tx, links.to, now);
    receive(*receiver, *links.rx, false, now);
    transmit(*receiver, *links.rx, *back, now);
    receive(*sender, *links.tx, false, now);
    now = MonotonicNanos();
  }
  result.seconds = static_cast<double>(now - start) / 1e9;
  result.tlps = receiver->tlps - base_tlps;
  result.payload_bytes = receiver->bytes - base_bytes;
  result.retransmitted = sender->s.counters.tlps_retx;
  result.rto_expiries = sender->s.counters.rto_expiries;
  result.naks = sender->s.counters.naks_rx;
  result.link_drops = links.tx->counters().dropped + links.tx->counters().send_errors +
                      links.rx->counters().dropped + links.rx->counters().send_errors;
  if (sender->down || receiver->down) result.error = "a session went down during the run";
  return result;
}

}  // namespace dxpu::fabric
