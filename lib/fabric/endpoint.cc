// endpoint.cc - see endpoint.h.
#include "fabric/endpoint.h"

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
      memory_((dxfp_session_mem_size(&config) + 7) / 8),
      queue_(options.queue) {
  static constexpr dxfp_session_ops kOps = {&OnDeliver, &OnLinkDown, &OnEstablished};
  // Cannot fail: the configuration was checked and the memory sized from it.
  (void)dxfp_session_init(&session_, &config, memory_.data(), memory_.size() * 8, &kOps, this);
}

bool Endpoint::Submit(const dxpu_tlp& tlp, uint64_t now) {
  if (state() == DXFP_STATE_DOWN) return false;
  if (queue_.empty() && state() == DXFP_STATE_ESTABLISHED &&
      dxfp_session_send(&session_, now, &tlp) == DXFP_SEND_OK) {
    if (callbacks_.sent) callbacks_.sent(tlp);
    return true;
  }
  // Refused (no credit, no room, or not a TLP the session sends): the queue keeps it, and
  // Flush offers it again or drops and counts it, as for any queued TLP.
  return queue_.Push(tlp);
}

void Endpoint::Flush(uint64_t now, const Transmit& transmit) {
  now_ = now;
  if (!queue_.empty() && state() == DXFP_STATE_ESTABLISHED)
    queue_.Drain([this](const dxpu_tlp& t) {
      const dxfp_send_result r = dxfp_session_send(&session_, now_, &t);
      if (r == DXFP_SEND_OK && callbacks_.sent) callbacks_.sent(t);
      return r;
    });
  dxfp_frame_out out;
  while (dxfp_session_poll_pieces(&session_, now, session_.cfg.max_frame, &out))
    transmit(SessionFrame(out).pieces());
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
