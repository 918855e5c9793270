// sample_trace.h - a small node list and pod list in the openb format (openb_trace.h), made
// from a seed: the tests' input and `dxpu pool simulate --make-sample`'s. Node shapes and pod
// sizes are drawn in the proportions the public trace has (docs/pool-simulate.md), so the
// sample behaves like it on a small scale; nothing of the trace itself is in it.
#ifndef DXPU_MANAGER_SIMULATE_SAMPLE_TRACE_H_
#define DXPU_MANAGER_SIMULATE_SAMPLE_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace dxpu::poolsim {

struct SampleOptions {
  uint64_t seed = 1;
  size_t nodes = 64;
  size_t pods = 600;
  double constrained = 0.1;  // the share of GPU pods that name the GPU models they allow
};

struct SampleTrace {
  std::string node_csv;  // with its header, ready to write out
  std::string pod_csv;
};

SampleTrace MakeSampleTrace(const SampleOptions& options);

}  // namespace dxpu::poolsim

#endif  // DXPU_MANAGER_SIMULATE_SAMPLE_TRACE_H_
