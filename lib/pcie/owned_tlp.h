// owned_tlp.h - a TLP with its payload owned (dxpu_tlp only points at one), tagged with what a
// PCIe function produced it for, so that the function can account for it when it leaves; and
// the queue of them a function (or a switch port) keeps in order.
#ifndef DXPU_LIB_PCIE_OWNED_TLP_H_
#define DXPU_LIB_PCIE_OWNED_TLP_H_

#include <cstdint>
#include <deque>
#include <vector>

#include "core/tlp_codec.h"

namespace dxpu::pcie {

enum class TlpOrigin : uint8_t {
  kCompletion,  // an answer to a request from the bus
  kDmaRead,     // a DMA read request of the function
  kDmaWrite,    // a DMA write of the function
  kInterrupt,   // an MSI or MSI-X message
};

struct OwnedTlp {
  dxpu_tlp header{};  // payload is null here: View() points it at `payload`
  std::vector<uint8_t> payload;
  TlpOrigin origin = TlpOrigin::kCompletion;

  // A copy of t and of its payload (dxpu_tlp_payload_len bytes when t.payload is set).
  static OwnedTlp Copy(const dxpu_tlp& t, TlpOrigin origin = TlpOrigin::kCompletion) {
    OwnedTlp o;
    o.header = t;
    o.header.payload = nullptr;
    if (t.payload != nullptr) o.payload.assign(t.payload, t.payload + dxpu_tlp_payload_len(&t));
    o.origin = origin;
    return o;
  }

  // The TLP with its payload pointer set; valid while this OwnedTlp lives unchanged.
  dxpu_tlp View() const {
    dxpu_tlp t = header;
    t.payload = payload.empty() ? nullptr : payload.data();
    return t;
  }
};

// What a function has to send, in order.
using TlpQueue = std::deque<OwnedTlp>;

}  // namespace dxpu::pcie

#endif  // DXPU_LIB_PCIE_OWNED_TLP_H_
