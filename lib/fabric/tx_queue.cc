// tx_queue.cc - lib/core's ordering queue with its memory, and a drain over any sender.
#include "fabric/tx_queue.h"

#include <algorithm>

namespace dxpu::fabric {
namespace {

uint32_t Clamp32(size_t n) { return static_cast<uint32_t>(std::min<size_t>(n, UINT32_MAX / 2)); }

}  // namespace

TxQueue::TxQueue(const TxQueueOptions& options) {
  const uint32_t tlps = Clamp32(std::max<size_t>(options.max_tlps_per_class, 1));
  const uint32_t bytes = Clamp32(options.max_payload_bytes_per_class);
  const size_t size = dxpu_txq_mem_size(tlps, bytes);
  // Not zeroed: the queue writes every entry and payload byte before it reads it.
  memory_ = std::make_unique_for_overwrite<uint64_t[]>((size + 7) / 8);
  // Cannot fail: the memory is sized for it and tlps is at least 1.
  (void)dxpu_txq_init(&q_, tlps, bytes, memory_.get(), (size + 7) / 8 * 8);
}

bool TxQueue::Push(const dxpu_tlp& tlp) { return dxpu_txq_push(&q_, &tlp); }

size_t TxQueue::Drain(const SendFn& try_send) {
  dxpu_txq_drain d{};
  dxpu_txq_drain_begin(&q_, &d);
  for (int cls = dxpu_txq_pick(&q_, &d); cls >= 0; cls = dxpu_txq_pick(&q_, &d)) {
    if (!dxpu_txq_apply(&q_, &d, cls, try_send(*dxpu_txq_front(&q_, cls)))) break;
  }
  dxpu_txq_drain_end(&q_, &d);
  last_drain_.sent = d.sent;
  last_drain_.dropped = d.dropped;
  last_drain_.stop = static_cast<dxfp_send_result>(d.stop);
  std::copy(std::begin(d.blocked), std::end(d.blocked), last_drain_.blocked.begin());
  last_drain_.posted_stranded = d.posted_stranded;
  return d.sent;
}

void TxQueue::Discard(const VisitFn& visit) {
  for (int cls = dxpu_txq_oldest(&q_); cls >= 0; cls = dxpu_txq_oldest(&q_)) {
    if (visit) visit(*dxpu_txq_front(&q_, cls));
    dxpu_txq_pop(&q_, cls);
  }
}

}  // namespace dxpu::fabric
