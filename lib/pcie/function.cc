// function.cc - see function.h.
#include "pcie/function.h"

namespace dxpu::pcie {

Function::~Function() = default;

void VisitFunctionCounters(const FunctionCounters& c, const Function::CounterVisitor& visit) {
  visit("tlps_in", c.tlps_in);
  visit("tlps_out", c.tlps_out);
  visit("malformed", c.malformed);
  visit("ur_sent", c.ur_sent);
  visit("unsupported", c.unsupported);
  visit("unexpected_completions", c.unexpected_completions);
  visit("completion_timeouts", c.completion_timeouts);
  visit("dropped_writes", c.dropped_writes);
  visit("dma_read_requests", c.dma_read_requests);
  visit("dma_write_requests", c.dma_write_requests);
  visit("interrupts_sent", c.interrupts_sent);
}

bool Function::ReceiveSplitCompletion(const dxpu_tlp& /*cpld*/, uint32_t /*pieces*/,
                                      uint64_t /*now*/) {
  return false;
}

}  // namespace dxpu::pcie
