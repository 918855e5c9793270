// endpoint.cc - see endpoint.h.
#include "fabric/endpoint.h"

#include <algorithm>
#include <array>
#include <utility>

#include "fabric/session_frame.h"

namespace dxpu::fabric {

std::unique_ptr<Endpoint> Endpoint::Create(const dxfp_session_config& config,
                                           EndpointCallbacks callbacks,
                                           const EndpointOptions& options, std::string* error) {
  if (const char* why = dxfp_session_config_check(&config)) {
    if (error != nullptr) *error = why;
    return nullptr;
  }
  if (!callbacks.deliver || !callbacks.link_down) {
    if (error != nullptr) *error = "an endpoint needs deliver and link_down callbacks";
    return nullptr;
  }
  return std::unique_ptr<Endpoint>(new Endpoint(config, std::move(callbacks), options));
}

Endpoint::Endpoint(const dxfp_session_config& config, EndpointCallbacks callbacks,
                   const EndpointOptions& options)
    : callbacks_(std::move(callbacks)),
      auto_release_(options.auto_release),
      memory_(std::make_unique_for_overwrite<uint64_t[]>((dxfp_session_mem_size(&config) + 7) / 8)),
      queue_(options.queue),
      framing_factory_(config.role == DXFP_ROLE_RESPONDER ? options.framing
                                                          : DataFramingFactory{}) {
  static constexpr dxfp_session_ops kOps = {&OnDeliver, &OnLinkDown, &OnEstablished};
  // Cannot fail: the configuration was checked and the memory sized from it.
  (void)dxfp_session_init(&session_, &config, memory_.get(),
                          (dxfp_session_mem_size(&config) + 7) / 8 * 8, &kOps, this);
}

dxfp_rx_result Endpoint::Receive(uint64_t now, std::span<const uint8_t> frame) {
  if (!framing_factory_) return dxfp_session_receive(&session_, now, frame.data(), frame.size());
  if (frame.size() >= DXFP_HDR_SIZE && dxfp_frame_is_sealed(frame.data()))
    return ReceiveSealed(now, frame);
  dxfp_frame f{};
  if (dxfp_frame_parse(frame.data(), frame.size(), session_.max_frame, &f) != DXFP_OK)
    return dxfp_session_receive(&session_, now, frame.data(), frame.size());  // counts the drop
  return ReceiveFrame(now, f, frame);
}

dxfp_rx_result Endpoint::ReceiveFrame(uint64_t now, const dxfp_frame& frame,
                                      std::span<const uint8_t> raw) {
  const bool data = frame.hdr.type == DXFP_DATA && !raw.empty();
  // An authenticated session hands over on its first sealed DATA only (ReceiveSealed); one in
  // the clear goes to lib/core, which drops it (unsealed), or once framed to the framing, which
  // drops and counts it as well.
  if (data && framing_factory_ && state() == DXFP_STATE_ACCEPTING && FromPeer(frame) &&
      session_.cfg.auth.ops == nullptr)
    (void)BeginFraming(now);
  if (!framing_ || state() == DXFP_STATE_DOWN)
    return dxfp_session_receive_frame(&session_, now, &frame);
  if (frame.hdr.type == DXFP_CLOSE) return dxfp_session_receive_frame(&session_, now, &frame);
  if (!data) return DXFP_RX_OK;  // HELLO again, WELCOME: the handshake is over
  if (!FromPeer(frame)) {
    framing_stale_++;
    return DXFP_RX_STALE_EPOCH;
  }
  framing_rx_ = true;
  return framing_->Receive(now, raw);
}

dxfp_rx_result Endpoint::ReceiveSealed(uint64_t now, std::span<const uint8_t> frame) {
  dxfp_header h{};
  const bool data =
      dxfp_header_peek(frame.data(), frame.size(), &h) && h.type == DXFP_DATA && FromPeer(h);
  // The first sealed DATA from the peer must open before the framing takes the session: only
  // then has the peer shown it holds the keys (the bridge's key confirmation).
  if (data && state() == DXFP_STATE_ACCEPTING &&
      dxfp_session_offload_confirm(&session_, frame.data(), frame.size()))
    (void)BeginFraming(now);
  if (!framing_ || !data || state() == DXFP_STATE_DOWN)
    return dxfp_session_receive(&session_, now, frame.data(), frame.size());
  framing_rx_ = true;
  return framing_->Receive(now, frame);
}

bool Endpoint::FromPeer(const dxfp_frame& frame) const { return FromPeer(frame.hdr); }

bool Endpoint::FromPeer(const dxfp_header& h) const {
  return h.dst_session == session_.cfg.session_id && h.dst_epoch == session_.cfg.epoch &&
         h.src_session == session_.peer_session && h.src_epoch == session_.peer_epoch;
}

bool Endpoint::BeginFraming(uint64_t now) {
  FramingStart start;
  start.now = now;
  start.tx_seq = session_.next_seq;
  start.rx_seq = session_.expected;
  start.src_session = session_.cfg.session_id;
  start.src_epoch = session_.cfg.epoch;
  start.dst_session = session_.peer_session;
  start.dst_epoch = session_.peer_epoch;
  start.max_frame = session_.max_frame;
  start.peer_window = session_.peer_window;
  start.peer_limits = session_.tx_credits.limit;
  dxfp_session_offload_advert(&session_, &start.rx_limits);
  start.config = &session_.cfg;
  start.sealed = dxfp_session_offload_keys(&session_, &start.keys);
  framing_ = framing_factory_.make(start, &framing_error_);
  dxpu_wipe(&start.keys, sizeof(start.keys));  // the framing holds them now
  if (!framing_) return false;
  framing_una_ = framing_->una();
  (void)dxfp_session_offload_begin(&session_, now);  // ACCEPTING: cannot fail
  framing_down_at_ = dxfp_session_offload_timers(&session_, now);
  return true;
}

dxfp_send_result Endpoint::SendFramed(uint64_t now, const dxpu_tlp& tlp) {
  dxfp_send_result r = dxfp_session_offload_admit(&session_, &tlp);
  if (r == DXFP_SEND_OK) r = framing_->Send(now, tlp);
  if (r == DXFP_SEND_OK) {
    dxfp_session_offload_sent(&session_, &tlp);
  } else if (r == DXFP_SEND_NO_CREDIT) {
    session_.counters.credit_refusals++;
  }
  return r;
}

void Endpoint::Release(dxpu_tlp_class cls, uint32_t payload_bytes) {
  dxfp_session_release(&session_, cls, payload_bytes);
  if (framing_) AdvertiseFramed();
}

void Endpoint::AdvertiseFramed() {
  dxfp_credits limits{};
  dxfp_session_offload_advert(&session_, &limits);
  framing_->Advertise(limits);
}

uint64_t Endpoint::NextDeadline() const {
  if (!framing_ || state() != DXFP_STATE_ESTABLISHED) return dxfp_session_next_deadline(&session_);
  return std::min(framing_->NextDeadline(), framing_down_at_);
}

dxfp_session_counters Endpoint::counters() const {
  dxfp_session_counters c = *dxfp_session_get_counters(&session_);
  if (framing_) {
    framing_->AddCounters(&c);
    c.stale_epoch += framing_stale_;
  }
  return c;
}

dxfp_send_result Endpoint::SendOne(uint64_t now, const dxpu_tlp& tlp) {
  const dxfp_send_result r =
      framing_ ? SendFramed(now, tlp) : dxfp_session_send(&session_, now, &tlp);
  if (r == DXFP_SEND_OK && callbacks_.sent) callbacks_.sent(tlp);
  return r;
}

bool Endpoint::Submit(const dxpu_tlp& tlp, uint64_t now) {
  if (state() == DXFP_STATE_DOWN) return false;
  if (queue_.empty() && state() == DXFP_STATE_ESTABLISHED && SendOne(now, tlp) == DXFP_SEND_OK)
    return true;
  // Refused (no credit, no room, or not a TLP the session sends): the queue keeps it, and
  // Flush offers it again or drops and counts it, as for any queued TLP.
  return queue_.Push(tlp);
}

void Endpoint::Flush(uint64_t now, const Transmit& transmit) {
  now_ = now;
  if (framing_ && state() == DXFP_STATE_ESTABLISHED) FlushFramed(now, transmit);
  if (framing_ && state() != DXFP_STATE_DOWN) return;  // lib/core polls only to send CLOSE
  // The CLOSE lib/core seals takes a counter after every frame the framing sealed.
  if (framing_) dxfp_session_offload_sealed(&session_, framing_->seal_counter());
  if (!queue_.empty() && state() == DXFP_STATE_ESTABLISHED)
    queue_.Drain([this](const dxpu_tlp& t) { return SendOne(now_, t); });
  dxfp_frame_out out;
  while (dxfp_session_poll_pieces(&session_, now, session_.cfg.max_frame, &out))
    transmit(SessionFrame(out).pieces());
}

void Endpoint::FlushFramed(uint64_t now, const Transmit& transmit) {
  const auto drain = [this] {
    queue_.Drain([this](const dxpu_tlp& t) { return SendOne(now_, t); });
  };
  bool delivered = false;
  const auto advance = [&] {
    framing_->Advance(
        now,
        [this, &delivered](const dxpu_tlp& t) {
          if (state() != DXFP_STATE_ESTABLISHED) return;
          (void)dxfp_session_offload_delivered(&session_, &t);
          delivered = true;
          OnDeliver(this, &t);
        },
        [&transmit](std::span<const uint8_t> frame) {
          const std::array<std::span<const uint8_t>, 1> piece{frame};
          transmit(piece);
        });
  };
  if (!queue_.empty()) drain();
  advance();
  // What the frames just taken in acknowledged or credited may let queued TLPs go now.
  if (!queue_.empty() && state() == DXFP_STATE_ESTABLISHED) {
    drain();
    advance();
  }
  if (state() != DXFP_STATE_ESTABLISHED) return;  // a callback closed the session
  if (delivered) AdvertiseFramed();
  // Progress (docs/protocol.md 4.7): the acknowledgement moved, or a frame came with nothing in
  // flight.
  const uint32_t una = framing_->una();
  if (una != framing_una_ || (framing_rx_ && una == framing_->next_seq()))
    dxfp_session_offload_progress(&session_, now);
  framing_una_ = una;
  framing_rx_ = false;
  framing_down_at_ = dxfp_session_offload_timers(&session_, now);
}

void Endpoint::OnDeliver(void* ctx, const dxpu_tlp* tlp) {
  auto* ep = static_cast<Endpoint*>(ctx);
  ep->callbacks_.deliver(*tlp);
  if (ep->auto_release_)
    dxfp_session_release(&ep->session_, static_cast<int>(dxpu_tlp_kind_class(tlp->kind)),
                         dxpu_tlp_payload_len(tlp));
}

void Endpoint::OnLinkDown(void* ctx, dxfp_down_reason reason, const dxpu_tlp* unanswered,
                          size_t n) {
  auto* ep = static_cast<Endpoint*>(ctx);
  // The requests still queued were never sent: they are unanswered too.
  std::vector<dxpu_tlp> all(unanswered, unanswered + n);
  ep->queue_.Discard([&all](const dxpu_tlp& t) {
    if (dxpu_tlp_kind_class(t.kind) != DXPU_TLP_CLASS_NON_POSTED) return;
    dxpu_tlp hdr = t;
    hdr.payload = nullptr;
    all.push_back(hdr);
  });
  ep->callbacks_.link_down(reason, all);
}

void Endpoint::OnEstablished(void* ctx) {
  auto* ep = static_cast<Endpoint*>(ctx);
  if (ep->callbacks_.established) ep->callbacks_.established();
}

uint32_t FramePayloadLimit(uint32_t max_frame, uint32_t header_bytes, uint32_t cap) {
  return dxfp_frame_payload_limit(max_frame, header_bytes, cap);
}

}  // namespace dxpu::fabric
