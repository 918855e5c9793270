// endpoint.h - one end of a DxFP session in userspace: the lib/core session, the memory it
// needs, and the ordering queue (TxQueue) in front of it. Sans-IO like the session: the
// caller passes the time and a function that transmits a frame; the same Endpoint runs in
// the simulator (virtual time) and over real links (link_driver.h).
//
//   auto ep = Endpoint::Create(cfg, callbacks);
//   ep->Connect(now);                    // initiator; a responder calls Accept(now, hello)
//   ep->Submit(tlp, now);                // send or queue a TLP (false: the queue is full)
//   ep->Receive(now, frame);             // a frame from the link
//   ep->Flush(now, transmit);            // offer queued TLPs, send every frame due
//   wake me at ep->NextDeadline(), then Flush again.
#ifndef DXPU_LIB_FABRIC_ENDPOINT_H_
#define DXPU_LIB_FABRIC_ENDPOINT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dxfp_session.h"
#include "fabric/tx_queue.h"
#include "link/link.h"

namespace dxpu::fabric {

struct EndpointCallbacks {
  // A TLP arrived in order; tlp.payload is valid during the call only. With auto_release
  // (the default) its receive credit is freed when the call returns.
  std::function<void(const dxpu_tlp& tlp)> deliver;
  // The session went down. unanswered: the non-posted requests it carried that no final
  // completion answered, then those still queued (never sent), oldest first.
  std::function<void(dxfp_down_reason reason, std::span<const dxpu_tlp> unanswered)> link_down;
  std::function<void()> established;
  // Optional: the session accepted this TLP from the queue (it now has a sequence number).
  std::function<void(const dxpu_tlp& tlp)> sent;
};

struct EndpointOptions {
  TxQueueOptions queue;
  bool auto_release = true;  // free a delivered TLP's credit as soon as deliver returns
};

class Endpoint {
 public:
  // Sends one frame, given in pieces (see link::FramePieces), valid during the call.
  using Transmit = std::function<void(link::FramePieces frame)>;

  // Null, with *error set, when the configuration is invalid.
  static std::unique_ptr<Endpoint> Create(const dxfp_session_config& config,
                                          EndpointCallbacks callbacks,
                                          const EndpointOptions& options = {},
                                          std::string* error = nullptr);

  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;
  Endpoint(Endpoint&&) = delete;
  Endpoint& operator=(Endpoint&&) = delete;
  ~Endpoint() = default;

  void Connect(uint64_t now) { dxfp_session_connect(&session_, now); }
  dxfp_rx_result Accept(uint64_t now, const dxfp_frame& hello) {
    return dxfp_session_accept(&session_, now, &hello);
  }
  dxfp_rx_result Receive(uint64_t now, std::span<const uint8_t> frame) {
    return dxfp_session_receive(&session_, now, frame.data(), frame.size());
  }
  dxfp_rx_result ReceiveFrame(uint64_t now, const dxfp_frame& frame) {
    return dxfp_session_receive_frame(&session_, now, &frame);
  }

  // Hands a TLP to the session at once (time `now`) when nothing is queued before it and the
  // session takes it: the order is the same, and the TLP is copied once, into the replay
  // buffer. Otherwise queues it (copied) for Flush. False when its class's queue is full or
  // the session is down. May be called from the deliver callback.
  bool Submit(const dxpu_tlp& tlp, uint64_t now);
  // Offers queued TLPs to the session in PCIe order, then transmits every frame due now.
  void Flush(uint64_t now, const Transmit& transmit);
  uint64_t NextDeadline() const { return dxfp_session_next_deadline(&session_); }
  void Close(uint64_t now, dxfp_close_reason reason) { dxfp_session_close(&session_, now, reason); }
  // Frees the credit of a delivered TLP (only needed without auto_release).
  void Release(dxpu_tlp_class cls, uint32_t payload_bytes) {
    dxfp_session_release(&session_, cls, payload_bytes);
  }

  dxfp_session_state state() const { return dxfp_session_get_state(&session_); }
  const dxfp_session_counters& counters() const { return *dxfp_session_get_counters(&session_); }
  const dxfp_session& session() const { return session_; }
  const TxQueue& queue() const { return queue_; }
  uint32_t session_id() const { return session_.cfg.session_id; }

 private:
  Endpoint(const dxfp_session_config& config, EndpointCallbacks callbacks,
           const EndpointOptions& options);
  static void OnDeliver(void* ctx, const dxpu_tlp* tlp);
  static void OnLinkDown(void* ctx, dxfp_down_reason reason, const dxpu_tlp* unanswered, size_t n);
  static void OnEstablished(void* ctx);

  EndpointCallbacks callbacks_;
  bool auto_release_;
  std::vector<uint64_t> memory_;  // the session's buffers, 8-byte aligned
  dxfp_session session_{};
  TxQueue queue_;
  uint64_t now_ = 0;  // the time of the call in progress, for the queue's try_send
};

// The largest power-of-two payload, up to `cap`, of a TLP with a `header_bytes` header that
// one DxFP frame of `max_frame` bytes carries alone (frame header, record header, TLP, CRC);
// 0 when not even 1 byte fits.
uint32_t FramePayloadLimit(uint32_t max_frame, uint32_t header_bytes,
                           uint32_t cap = DXPU_TLP_MAX_PAYLOAD);

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_ENDPOINT_H_
