// tlp_fifo.cc - a bounded FIFO of owned TLP copies.
#include "fabric/tlp_fifo.h"

#include <cstring>

namespace dxpu::fabric {
namespace {

// What a copied payload of no bytes points at: not null, so that dxpu_tlp_validate sees
// the same payload/no-payload shape the caller gave.
constexpr uint8_t kEmptyPayload[1] = {0};

}  // namespace

TlpFifo::TlpFifo(size_t max_tlps, size_t max_payload_bytes)
    : slots_(max_tlps), payload_(max_payload_bytes) {}

bool TlpFifo::Push(const dxpu_tlp& t, uint64_t order) {
  if (count_ == slots_.size()) return false;
  const size_t len = t.payload != nullptr ? dxpu_tlp_payload_len(&t) : 0;
  const auto block = payload_.Take(len);
  if (!block) return false;
  QueuedTlp& q = slots_[(head_ + count_) % slots_.size()];
  q.tlp = t;
  q.order = order;
  q.span = block->span;
  if (t.payload != nullptr) {
    if (len != 0) std::memcpy(block->data, t.payload, len);
    q.tlp.payload = len != 0 ? block->data : kEmptyPayload;
  }
  ++count_;
  return true;
}

void TlpFifo::Pop() {
  payload_.GiveBackOldest(slots_[head_].span);
  head_ = (head_ + 1) % slots_.size();
  --count_;
}

}  // namespace dxpu::fabric
