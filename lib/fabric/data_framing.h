// data_framing.h - a DxFP session's DATA frames carried by something other than lib/core: the
// hardware port (rtl-sim/rtl/dxpu_dxfp_port.sv, Verilated by rtl-sim/datapath/rtl_port.h) that
// a bridge runs in place of its sessions' framing (docs/protocol.md 4.11). An Endpoint given a
// DataFramingFactory keeps the handshake, CLOSE, credits, outstanding requests and link-down in
// lib/core, and hands its DATA frames and TLPs to a DataFraming once the first DATA frame
// arrives. Sans-IO like the session: time goes in, frames and TLPs come out.
#ifndef DXPU_LIB_FABRIC_DATA_FRAMING_H_
#define DXPU_LIB_FABRIC_DATA_FRAMING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/dxfp_credit.h"
#include "core/dxfp_session.h"
#include "core/tlp_codec.h"

namespace dxpu::fabric {

// The session as the handshake left it: what the framing starts from.
struct FramingStart {
  uint64_t now = 0;     // when the first DATA frame arrived
  uint32_t tx_seq = 0;  // the first sequence number this end sends
  uint32_t rx_seq = 0;  // the first it expects
  uint32_t src_session = 0, src_epoch = 0;
  uint32_t dst_session = 0, dst_epoch = 0;
  uint32_t max_frame = 0;
  uint32_t peer_window = 0;
  dxfp_credits peer_limits{};                   // the peer's receive limits from its HELLO
  dxfp_credits rx_limits{};                     // this end's, to advertise
  const dxfp_session_config* config = nullptr;  // the session's timers
  // An authenticated session (docs/protocol.md 4.12): the framing seals and opens every frame
  // with the transport keys, sealing from keys.send_counter. The Endpoint wipes its copy once
  // make() returned.
  bool sealed = false;
  dxfp_offload_keys keys{};
};

// What a framing engine carries: a session it frames is configured so before its handshake.
struct FramingLimits {
  uint32_t max_frame = 0;      // at most
  uint32_t replay_window = 0;  // TLPs, exactly (the handshake announces it)
};

class DataFraming {
 public:
  using Deliver = std::function<void(const dxpu_tlp& tlp)>;
  using Transmit = std::function<void(std::span<const uint8_t> frame)>;

  DataFraming() = default;
  DataFraming(const DataFraming&) = delete;
  DataFraming& operator=(const DataFraming&) = delete;
  DataFraming(DataFraming&&) = delete;
  DataFraming& operator=(DataFraming&&) = delete;
  virtual ~DataFraming() = default;

  // A DATA frame of this session from the peer, as it arrived (untrusted: the framing checks
  // its CRC or, sealed, its counter and tag, its sequence numbers and credit, and counts what it
  // drops). Sealed: DXFP_RX_OK only when the frame opened (its sender holds the keys), else why
  // not (BAD_TAG, REPLAYED, ...); plaintext: DXFP_RX_OK once taken.
  virtual dxfp_rx_result Receive(uint64_t now, std::span<const uint8_t> frame) = 0;
  // Offers a TLP to send (valid during the call): OK (taken), NO_CREDIT (the peer's limit for
  // its class is reached: offer another class), REPLAY_FULL (nothing more for now).
  virtual dxfp_send_result Send(uint64_t now, const dxpu_tlp& tlp) = 0;
  // The receive limits to advertise from now on.
  virtual void Advertise(const dxfp_credits& limits) = 0;
  // Runs the framing up to `now`: TLPs delivered in order go to deliver (payload valid during the
  // call), frames to transmit.
  virtual void Advance(uint64_t now, const Deliver& deliver, const Transmit& transmit) = 0;
  // When Advance must next run if nothing arrives.
  virtual uint64_t NextDeadline() const = 0;
  // The oldest sequence number sent and not acknowledged, and the next to send: equal when
  // nothing is in flight.
  virtual uint32_t una() const = 0;
  virtual uint32_t next_seq() const = 0;
  // Adds what the framing counted to a session's counters (frames, retransmissions, drops).
  virtual void AddCounters(dxfp_session_counters* c) const = 0;
  // Sealed: the counter the next frame is sealed with (the session's own CLOSE follows it).
  virtual uint64_t seal_counter() const = 0;
};

// Builds the framing of one session; null with *error set when it cannot.
struct DataFramingFactory {
  // What the engine can carry: the session configuration is clamped to it before the handshake.
  FramingLimits limits;
  std::function<std::unique_ptr<DataFraming>(const FramingStart& start, std::string* error)> make;

  explicit operator bool() const { return static_cast<bool>(make); }
};

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_DATA_FRAMING_H_
