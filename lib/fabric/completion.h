// completion.h - the completer's side of a memory read: the CplD that answers it.
#ifndef DXPU_LIB_FABRIC_COMPLETION_H_
#define DXPU_LIB_FABRIC_COMPLETION_H_

#include <cstdint>

#include "core/tlp_codec.h"

namespace dxpu::fabric {

// A successful CplD answering the memory read `read` (its requester ID and tag), sent by
// completer_id, carrying one piece of the read's data: piece's Length, Byte Count and Lower
// Address (a piece from dxpu_tlp_cpl_split_next, or the whole read in one). payload: the
// piece's length_dw * 4 bytes, which must outlive the returned TLP.
dxpu_tlp ReadCompletion(const dxpu_tlp& read, uint16_t completer_id,
                        const dxpu_tlp_cpl_piece& piece, const uint8_t* payload);

}  // namespace dxpu::fabric

#endif  // DXPU_LIB_FABRIC_COMPLETION_H_
