// tx_queue.h - the ordering queue in front of a DxFP session (docs/protocol.md, 4.6): lib/core's
// dxpu_txq (core/dxpu_txq.h, where the rules live, shared with the host path and dxpu.ko) with
// the memory it needs and a drain that offers TLPs to any sender.
//
// dxfp_session_send() refuses a TLP whose class lacks credit (DXFP_SEND_NO_CREDIT) and
// leaves it to the user to offer another class. The queue keeps what was submitted, one FIFO
// per class, and Drain() offers TLPs to the session in the order they were submitted, except
// that
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
#include <memory>

#include "core/dxfp_session.h"
#include "core/dxpu_txq.h"
#include "core/tlp_codec.h"

namespace dxpu::fabric {

inline constexpr size_t kTlpClasses =
    DXPU_TXQ_CLASSES;  // enum dxpu_tlp_class: posted, non-posted, completion

struct TxQueueOptions {
  size_t max_tlps_per_class = 1024;
  size_t max_payload_bytes_per_class = size_t{256} * 1024;  // copies of payloads, per class
};

// What one Drain() did (lib/core's struct dxpu_txq_drain, as C++ types).
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

// Counters since construction (lib/core's).
using TxQueueStats = dxpu_txq_stats;

class TxQueue {
 public:
  // Offers one TLP to the session; the TLP and its payload are valid during the call only.
  using SendFn = std::function<dxfp_send_result(const dxpu_tlp&)>;
  using VisitFn = std::function<void(const dxpu_tlp&)>;

  explicit TxQueue(const TxQueueOptions& options);
  TxQueue() : TxQueue(TxQueueOptions{}) {}
  // The FIFOs point into memory_: a move keeps its buffer, a copy would not.
  TxQueue(const TxQueue&) = delete;
  TxQueue& operator=(const TxQueue&) = delete;
  TxQueue(TxQueue&&) = default;
  TxQueue& operator=(TxQueue&&) = default;
  ~TxQueue() = default;

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

  size_t size() const { return dxpu_txq_size(&q_); }
  size_t size(dxpu_tlp_class cls) const { return dxpu_txq_count(&q_, cls); }
  bool empty() const { return size() == 0; }
  bool empty(dxpu_tlp_class cls) const { return size(cls) == 0; }
  size_t payload_bytes_used(dxpu_tlp_class cls) const { return dxpu_txq_bytes_used(&q_, cls); }

  const TxQueueStats& stats() const { return q_.stats; }
  const DrainReport& last_drain() const { return last_drain_; }

 private:
  std::unique_ptr<uint64_t[]> memory_;  // the queue's FIFOs, 8-byte aligned, not zeroed
  dxpu_txq q_{};
  DrainReport last_drain_;
};

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_TX_QUEUE_H_
