// kineto_trace_fuzz.cc - libFuzzer target: PyTorch profiler (Kineto) traces
// (lib/perfmodel/kineto_trace.cc), plain JSON or gzipped, as `dxpu model TRACE` reads them: a
// trace that parses goes on through the model (Predict, Retime) as the command does, under
// UBSan's checks of the arithmetic on its times and sizes (docs/fuzzing.md).
#include <cmath>
#include <cstdint>
#include <span>

#include "fuzz_util.h"
#include "perfmodel/kineto_trace.h"
#include "perfmodel/model.h"

namespace {

void Check(bool ok, const char* what) { dxpu::fuzz::Require(ok, "kineto_trace_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dxpu::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Limits a fuzzing process can afford (a gzip bomb must stop at them, not exhaust memory).
  dxpu::perfmodel::ParseLimits limits;
  limits.max_file_bytes = 4 << 20;
  limits.max_events = 100'000;
  const auto parsed = dxpu::perfmodel::ParseKinetoTrace({data, size}, "fuzz", limits);
  if (!parsed.ok()) {
    Check(!parsed.error().message.empty(), "a refusal without a message");
    return 0;
  }
  const dxpu::perfmodel::ModelParams params;
  const dxpu::perfmodel::Prediction p = dxpu::perfmodel::Predict(parsed.value(), params);
  Check(!std::isnan(p.native_ns) && !std::isnan(p.dxpu_ns), "a prediction that is not a number");
  (void)dxpu::perfmodel::Retime(parsed.value(), params);
  return 0;
}
