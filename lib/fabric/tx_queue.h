// tx_queue.h - the ordering queue in front of a DxFP session (docs/protocol.md, 4.6).
//
// dxfp_session_send() refuses a TLP whose class lacks credit (DXFP_SEND_NO_CREDIT) and
// leaves it to the user to offer another class. TxQueue is that user-side logic: it keeps
// what was submitted, one FIFO per class, and Drain() offers TLPs to the session in the
// order they were submitted, except that
//   - a posted TLP may pass a non-posted request or a completion that is waiting, and
//   - a completion may pass a non-posted request that is waiting;
// nothing passes a posted TLP, and a non-posted request passes nothing. So a posted write
// never waits on non-posted or completion credit.
//
//   TxQueue q(options);
//   q.Push(tlp);  // copies the TLP and its payload; false when full
//   q.Drain([&](const dxpu_tlp& t) { return dxfp_session_send(s, now, &t); });
#ifndef DXPU_LIB_FABRIC_TX_QUEUE_H_
#define DXPU_LIB_FABRIC_TX_QUEUE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/dxfp_session.h"
#include "core/tlp_codec.h"
#include "fabric/tlp_fifo.h"

namespace dxpu::fabric {

inline constexpr size_t kTlpClasses = 3;  // enum dxpu_tlp_class: posted, non-posted, completion

struct TxQueueOptions {
  size_t max_tlps_per_class = 1024;
  size_t max_payload_bytes_per_class = size_t{256} * 1024;  // copies of payloads, per class
};

// What one Drain() did.
struct DrainReport {
  size_t sent = 0;     // accepted by try_send
  size_t dropped = 0;  // refused TOO_BIG or INVALID, and removed
  // What ended the drain: DXFP_SEND_OK when no TLP was left that the rules let go (the
  // queue is empty or every class left is blocked), else the refusal that stops all
  // classes (REPLAY_FULL, NOT_READY, DOWN, or a value try_send should never return).
  dxfp_send_result stop = DXFP_SEND_OK;
  // Classes that try_send refused for this drain (NO_CREDIT; NP_FULL for non-posted).
  std::array<bool, kTlpClasses> blocked{};
  // A posted TLP was left queued although try_send never refused a posted TLP and nothing
  // stopped the drain: a posted TLP waited on another class. Never true; tests assert it.
  bool posted_stranded = false;
};

// Counters since construction.
struct TxQueueStats {
  uint64_t pushed = 0;
  uint64_t push_refused = 0;  // Push() returned false: no slot or payload space
  uint64_t sent = 0;
  uint64_t dropped_too_big = 0;
  uint64_t dropped_invalid = 0;
  std::array<uint64_t, kTlpClasses> no_credit{};  // NO_CREDIT refusals per class
  uint64_t np_full = 0;
  uint64_t replay_full = 0;
  uint64_t not_ready = 0;
  uint64_t down = 0;
  uint64_t unknown_result = 0;  // try_send returned a value outside enum dxfp_send_result
  // TLPs sent while an older TLP of the named class was still queued.
  uint64_t posted_passed_np = 0;
  uint64_t posted_passed_cpl = 0;
  uint64_t cpl_passed_np = 0;
  uint64_t drains = 0;
  uint64_t posted_stranded = 0;  // drains with DrainReport::posted_stranded: always 0
};

class TxQueue {
 public:
  // Offers one TLP to the session; the TLP and its payload are valid during the call only.
  using SendFn = std::function<dxfp_send_result(const dxpu_tlp&)>;
  using VisitFn = std::function<void(const dxpu_tlp&)>;

  explicit TxQueue(const TxQueueOptions& options);
  TxQueue() : TxQueue(TxQueueOptions{}) {}

  // Copies tlp (and its dxpu_tlp_payload_len bytes of payload, if tlp.payload is set) into
  // the FIFO of its class (dxpu_tlp_kind_class). False when that FIFO is full.
  bool Push(const dxpu_tlp& tlp);

  // Offers queued TLPs to try_send, always the oldest the ordering rules allow, until
  // none is left that may go. OK: the TLP leaves the queue. NO_CREDIT: its class is
  // blocked for the rest of this drain. NP_FULL: the non-posted class is blocked.
  // REPLAY_FULL, NOT_READY, DOWN: the drain stops. TOO_BIG, INVALID: the TLP is removed
  // and counted. Returns how many TLPs try_send accepted; last_drain() has the rest.
  size_t Drain(const SendFn& try_send);

  // Empties the queue, handing every TLP to visit oldest first (on link down, so that the
  // user can fail the requests that were never sent).
  void Discard(const VisitFn& visit);

  size_t size() const;
  size_t size(dxpu_tlp_class cls) const { return fifos_[cls].size(); }
  bool empty() const { return size() == 0; }
  bool empty(dxpu_tlp_class cls) const { return fifos_[cls].empty(); }
  size_t payload_bytes_used(dxpu_tlp_class cls) const { return fifos_[cls].payload_bytes_used(); }

  const TxQueueStats& stats() const { return stats_; }
  const DrainReport& last_drain() const { return last_drain_; }

 private:
  // The class whose head goes next under the ordering rules, or -1 if none may.
  int Pick(const std::array<bool, kTlpClasses>& blocked) const;
  // The submission number of a class's head, or kNone if it is empty.
  uint64_t HeadOrder(int cls) const;
  void CountPassing(int cls);
  // Acts on try_send's answer for the head of cls; false when the drain must stop.
  bool Apply(int cls, dxfp_send_result r, DrainReport* report);

  std::array<TlpFifo, kTlpClasses> fifos_;
  uint64_t next_order_ = 0;
  TxQueueStats stats_;
  DrainReport last_drain_;
};

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_TX_QUEUE_H_
