// function.cc - see function.h.
#include "pcie/function.h"

namespace dxpu::pcie {

Function::~Function() = default;

bool Function::ReceiveSplitCompletion(const dxpu_tlp& /*cpld*/, uint32_t /*pieces*/,
                                      uint64_t /*now*/) {
  return false;
}

}  // namespace dxpu::pcie
