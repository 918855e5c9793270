// owned_tlp.h - a TLP the GPU model sends, with its payload owned (dxpu_tlp only points at
// one), tagged with what produced it so the device can account for it when it leaves.
#ifndef DXPU_LIB_GPU_OWNED_TLP_H_
#define DXPU_LIB_GPU_OWNED_TLP_H_

#include <cstdint>
#include <deque>
#include <vector>

#include "core/tlp_codec.h"

namespace dxpu::gpu {

enum class TlpOrigin : uint8_t {
  kCompletion,  // an answer to a request from the bus
  kDmaRead,     // a DMA read request of the engines
  kDmaWrite,    // a DMA write of the engines (copies, semaphores)
  kInterrupt,   // an MSI-X message
};

struct OwnedTlp {
  dxpu_tlp header{};  // payload is null here: View() points it at `payload`
  std::vector<uint8_t> payload;
  TlpOrigin origin = TlpOrigin::kCompletion;

  // The TLP with its payload pointer set; valid while this OwnedTlp lives unchanged.
  dxpu_tlp View() const {
    dxpu_tlp t = header;
    t.payload = payload.empty() ? nullptr : payload.data();
    return t;
  }
};

// What the device has to send, in order.
using TlpQueue = std::deque<OwnedTlp>;

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_OWNED_TLP_H_
