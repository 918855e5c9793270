// timeline.h - a trace natively and as the model re-times it through DxPU, side by side, as a
// Chrome trace that chrome://tracing and Perfetto open: what `dxpu model --timeline` writes
// (docs/perf-model.md).
#ifndef DXPU_LIB_PERFMODEL_TIMELINE_H_
#define DXPU_LIB_PERFMODEL_TIMELINE_H_

#include <ostream>

#include "perfmodel/trace.h"

namespace dxpu::perfmodel {

// `dxpu` is Retime(native, ...): the same calls and operations, index for index. Writes one
// process for each side's host (a thread per host thread) and one for each side's GPU (a thread
// per stream); every DxPU event's args say how much later it starts than natively (`later_us`).
void WriteTimeline(std::ostream& out, const Trace& native, const Trace& dxpu);

}  // namespace dxpu::perfmodel

#endif  // DXPU_LIB_PERFMODEL_TIMELINE_H_
