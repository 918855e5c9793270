// tlp_fifo.h - a bounded FIFO of TLPs that owns copies of them: the headers in a ring of
// slots, the payloads in a byte ring. No allocation after construction.
#ifndef DXPU_LIB_FABRIC_TLP_FIFO_H_
#define DXPU_LIB_FABRIC_TLP_FIFO_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tlp_codec.h"
#include "fabric/byte_ring.h"

namespace dxpu::fabric {

// A queued TLP. tlp.payload points into the FIFO's storage (null exactly when the TLP
// given to Push had a null payload), valid until the TLP is popped.
struct QueuedTlp {
  dxpu_tlp tlp{};
  uint64_t order = 0;  // submission number, given by the caller
  size_t span = 0;     // bytes of the byte ring it holds
};

class TlpFifo {
 public:
  TlpFifo(size_t max_tlps, size_t max_payload_bytes);

  // Copies t and its dxpu_tlp_payload_len(&t) payload bytes (if t.payload is not null).
  // False when the FIFO has no free slot or not enough contiguous payload space.
  bool Push(const dxpu_tlp& t, uint64_t order);

  // The oldest TLP. The FIFO must not be empty.
  const QueuedTlp& front() const { return slots_[head_]; }
  void Pop();

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  size_t max_tlps() const { return slots_.size(); }
  size_t payload_bytes_used() const { return payload_.used(); }

 private:
  std::vector<QueuedTlp> slots_;
  size_t head_ = 0;
  size_t count_ = 0;
  ByteRing payload_;
};

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_TLP_FIFO_H_
