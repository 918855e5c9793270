// msix_table.h - the MSI-X table and Pending Bit Array of the GPU model, as the PCIe spec
// defines them: 16 bytes per vector (Message Address low and high, Message Data, Vector
// Control with bit 0 the mask), the PBA one read-only bit per vector. Signalling a vector
// sets its pending bit; the message (a 1-DW memory write of the entry's data to its address)
// goes out when MSI-X is enabled, neither the function nor the vector is masked and Bus
// Master Enable is set, which clears the bit. Without MSI-X enabled a signal is dropped.
#ifndef DXPU_LIB_GPU_MSIX_TABLE_H_
#define DXPU_LIB_GPU_MSIX_TABLE_H_

#include <cstdint>
#include <vector>

#include "gpu/config_space.h"
#include "gpu/owned_tlp.h"

namespace dxpu::gpu {

class MsixTable {
 public:
  static constexpr uint32_t kEntryBytes = 16;
  static constexpr uint32_t kVectorControlMask = 1u << 0;

  explicit MsixTable(uint16_t vectors);

  uint16_t vectors() const { return static_cast<uint16_t>(entries_.size()); }
  uint32_t table_bytes() const { return vectors() * kEntryBytes; }
  uint32_t pba_bytes() const { return (vectors() + 63u) / 64u * 8u; }

  // A DW of the table or PBA at a byte offset (DW-aligned) within it; outside: 0.
  uint32_t ReadTable(uint32_t offset) const;
  uint32_t ReadPba(uint32_t offset) const;
  // Writes the bytes of `value` selected by `byte_mask` (0xff per enabled byte). Message
  // Address bits 1:0 and Vector Control bits 31:1 are read-only 0.
  void WriteTable(uint32_t offset, uint32_t value, uint32_t byte_mask);

  // Marks the vector pending (when MSI-X is enabled; out-of-range vectors are ignored).
  void Signal(uint16_t vector, const MsixState& state);
  bool pending(uint16_t vector) const;
  // Queues the message of every pending vector that may be sent now; returns how many.
  size_t Deliver(const MsixState& state, bool bus_master, uint16_t requester_id, TlpQueue& out);

  // Power-on state: every vector masked, addresses and data 0, nothing pending.
  void Reset();

 private:
  struct Entry {
    uint32_t address_lo = 0;
    uint32_t address_hi = 0;
    uint32_t data = 0;
    uint32_t control = kVectorControlMask;
  };

  std::vector<Entry> entries_;
  std::vector<bool> pending_;
  size_t pending_count_ = 0;
};

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_MSIX_TABLE_H_
