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
//
// With options.framing (a responder only), DATA frames are carried by a DataFraming (the
// hardware port, data_framing.h) from the first one the peer sends; the handshake, CLOSE,
// credits, outstanding requests and link-down stay in lib/core (docs/protocol.md 4.11).
#ifndef DXPU_LIB_FABRIC_ENDPOINT_H_
#define DXPU_LIB_FABRIC_ENDPOINT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dxfp_session.h"
#include "fabric/data_framing.h"
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
  // Carries the DATA frames once established (responder only); empty: lib/core does.
  DataFramingFactory framing;
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
  // An authenticated responder: hs is the HELLO's opened handshake (wiped here).
  dxfp_rx_result AcceptAuth(uint64_t now, const dxfp_frame& hello, dxfp_noise* hs) {
    return dxfp_session_accept_auth(&session_, now, &hello, hs);
  }
  dxfp_rx_result Receive(uint64_t now, std::span<const uint8_t> frame);
  // A frame parsed by dxfp_frame_parse; `raw` is the frame as it arrived (a DataFraming takes
  // the bytes: without them a DATA frame cannot go to one, and lib/core takes it).
  dxfp_rx_result ReceiveFrame(uint64_t now, const dxfp_frame& frame,
                              std::span<const uint8_t> raw = {});

  // Hands a TLP to the session at once (time `now`) when nothing is queued before it and the
  // session takes it: the order is the same, and the TLP is copied once, into the replay
  // buffer. Otherwise queues it (copied) for Flush. False when its class's queue is full or
  // the session is down. May be called from the deliver callback.
  bool Submit(const dxpu_tlp& tlp, uint64_t now);
  // Offers queued TLPs to the session in PCIe order, then transmits every frame due now.
  void Flush(uint64_t now, const Transmit& transmit);
  uint64_t NextDeadline() const;
  void Close(uint64_t now, dxfp_close_reason reason) { dxfp_session_close(&session_, now, reason); }
  // Frees the credit of a delivered TLP (only needed without auto_release).
  void Release(dxpu_tlp_class cls, uint32_t payload_bytes);

  dxfp_session_state state() const { return dxfp_session_get_state(&session_); }
  // lib/core's counters, with a DataFraming's added once it carries the frames.
  dxfp_session_counters counters() const;
  // A DataFraming carries the DATA frames.
  bool framed() const { return framing_ != nullptr; }
  // Why the DataFraming could not be made (lib/core carries the frames then); empty if it was.
  const std::string& framing_error() const { return framing_error_; }
  const dxfp_session& session() const { return session_; }
  const TxQueue& queue() const { return queue_; }
  uint32_t session_id() const { return session_.cfg.session_id; }

 private:
  Endpoint(const dxfp_session_config& config, EndpointCallbacks callbacks,
           const EndpointOptions& options);
  static void OnDeliver(void* ctx, const dxpu_tlp* tlp);
  static void OnLinkDown(void* ctx, dxfp_down_reason reason, const dxpu_tlp* unanswered, size_t n);
  static void OnEstablished(void* ctx);
  // A frame from the session's peer (what lib/core checks before taking a DATA frame).
  bool FromPeer(const dxfp_frame& frame) const;
  // The first DATA frame from the peer: the DataFraming takes over. False if it could not.
  bool BeginFraming(uint64_t now);
  // A sealed frame, to the framing once the first DATA from the peer opened (key confirmation).
  dxfp_rx_result ReceiveSealed(uint64_t now, std::span<const uint8_t> frame);
  bool FromPeer(const dxfp_header& h) const;
  // Offers a TLP to whichever frames the session (the DataFraming or lib/core); `sent` on OK.
  dxfp_send_result SendOne(uint64_t now, const dxpu_tlp& tlp);
  // Offers a TLP to the DataFraming, as dxfp_session_send() would take it.
  dxfp_send_result SendFramed(uint64_t now, const dxpu_tlp& tlp);
  void FlushFramed(uint64_t now, const Transmit& transmit);
  void AdvertiseFramed();

  EndpointCallbacks callbacks_;
  bool auto_release_;
  // The session's buffers, 8-byte aligned; not zeroed (the session clears what it reads before
  // writing it: a 2 MiB replay buffer is touched only as it fills).
  std::unique_ptr<uint64_t[]> memory_;
  dxfp_session session_{};
  TxQueue queue_;
  uint64_t now_ = 0;  // the time of the call in progress, for the queue's try_send
  DataFramingFactory framing_factory_;
  std::unique_ptr<DataFraming> framing_;
  std::string framing_error_;
  uint32_t framing_una_ = 0;      // the DataFraming's una at the last Flush
  bool framing_rx_ = false;       // a frame went to the DataFraming since the last Flush
  uint64_t framing_down_at_ = 0;  // lib/core's link-down check, due then
  uint64_t framing_stale_ = 0;    // DATA frames not from the peer: stale-epoch drops
};

// The largest power-of-two payload, up to `cap`, of a TLP with a `header_bytes` header that
// one DxFP frame of `max_frame` bytes carries alone (frame header, record header, TLP, CRC);
// 0 when not even 1 byte fits.
uint32_t FramePayloadLimit(uint32_t max_frame, uint32_t header_bytes,
                           uint32_t cap = DXPU_TLP_MAX_PAYLOAD);

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_ENDPOINT_H_
