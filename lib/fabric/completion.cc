// completion.cc - see completion.h.
#include "fabric/completion.h"

namespace dxpu::fabric {

dxpu_tlp ReadCompletion(const dxpu_tlp& read, uint16_t completer_id,
                        const dxpu_tlp_cpl_piece& piece, const uint8_t* payload) {
  dxpu_tlp c{};
  c.kind = DXPU_TLP_CPLD;
  c.requester_id = read.requester_id;
  c.tag = read.tag;
  c.completer_id = completer_id;
  c.length_dw = piece.length_dw;
  c.byte_count = piece.byte_count;
  c.lower_addr = piece.lower_addr;
  c.cpl_status = DXPU_TLP_CPL_SC;
  c.payload = payload;
  return c;
}

}  // namespace dxpu::fabric
