// byte_enables.h - the byte enables of a memory request, DW by DW, as a completer applies them:
// what every PCIe function behind the bridge (and the test host) needs to read or write the
// bytes a request selects and no others.
#ifndef DXPU_LIB_PCIE_BYTE_ENABLES_H_
#define DXPU_LIB_PCIE_BYTE_ENABLES_H_

#include <cstdint>

#include "core/tlp_codec.h"

namespace dxpu::pcie {

// 0xff in each byte lane a 4-bit byte-enable mask enables.
constexpr uint32_t ByteLaneMask(uint8_t byte_enables) {
  uint32_t mask = 0;
  for (int k = 0; k < 4; ++k) {
    if ((byte_enables >> k) & 1u) mask |= 0xffu << (8 * k);
  }
  return mask;
}

// The byte enables of DW `i` of a memory request: First BE, Last BE, all four between.
constexpr uint8_t DwByteEnables(const dxpu_tlp& t, uint32_t i) {
  if (i == 0) return t.first_be;
  if (i + 1 == t.length_dw) return t.last_be;
  return 0xf;
}

}  // namespace dxpu::pcie

#endif  // DXPU_LIB_PCIE_BYTE_ENABLES_H_
