// session_load.h - goodput of one DxFP session: a stream of memory writes from an initiator
// to a responder over a pair of links, both sessions driven in the calling thread, with
// optional loss injected between the sessions and the links. Measured against the raw link
// moving the same bytes with no protocol (raw_link_load.h) by bench/fabric_bench.cc and
// `dxpu bench fabric`.
#ifndef DXPU_LIB_FABRIC_SESSION_LOAD_H_
#define DXPU_LIB_FABRIC_SESSION_LOAD_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "dxpu/dxfp.h"
#include "fabric/raw_link_pair.h"

namespace dxpu::fabric {

struct SessionLoadOptions {
  size_t tlp_payload_bytes = 256;
  std::chrono::nanoseconds duration = std::chrono::seconds(1);
  double loss = 0;  // probability that a frame (either direction) is dropped before the link
  uint64_t seed = 1;
  uint32_t max_frame = DXFP_MAX_FRAME;
  uint32_t replay_bytes = 256 * 1024;  // the sender's replay buffer: bounds what is in flight
  uint64_t min_rto_ns = 300'000;       // the retransmission timer's floor
  // The sessions authenticated and every frame sealed (docs/protocol.md 4.12), with the
  // userspace primitives (lib/crypto/sodium_crypto_ops.h).
  bool authenticated = false;
};

struct SessionLoadResult {
  uint64_t tlps = 0;            // delivered to the responder, in order
  uint64_t payload_bytes = 0;   // their payload
  uint64_t frames_sent = 0;     // by both sessions
  uint64_t frames_dropped = 0;  // by the injected loss
  uint64_t retransmitted = 0;
  uint64_t rto_expiries = 0;
  uint64_t naks = 0;
  uint64_t link_drops = 0;  // frames the links dropped (no room) or refused
  double seconds = 0;
  std::string error;  // set when the run could not be made (and then nothing else is)

  double tlps_per_second() const { return seconds > 0 ? static_cast<double>(tlps) / seconds : 0; }
  double payload_bytes_per_second() const {
    return seconds > 0 ? static_cast<double>(payload_bytes) / seconds : 0;
  }
};

// Runs one session over `links` (initiator on tx, responder on rx) for options.duration.
SessionLoadResult RunSessionLoad(RawLinkPair& links, const SessionLoadOptions& options);

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_SESSION_LOAD_H_
