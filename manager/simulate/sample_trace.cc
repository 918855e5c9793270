// sample_trace.cc - the generated sample (sample_trace.h).
#include "manager/simulate/sample_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

#include "manager/simulate/arrivals.h"

namespace dxpu::poolsim {
namespace {

struct NodeShape {
  std::string_view model;
  uint32_t gpus;
  uint64_t cpu_milli;
  uint64_t memory_mib;
  uint32_t weight;  // out of 100
};

// The public trace's most common node shapes, in about its proportions (and a few nodes
// without GPUs, which the GPU-node list leaves out).
constexpr std::array<NodeShape, 6> kShapes = {{
    {"G2", 8, 96000, 393216, 45},
    {"T4", 2, 104000, 524288, 30},
    {"P100", 2, 16000, 122880, 9},
    {"V100M32", 8, 96000, 786432, 4},
    {"V100M16", 4, 32000, 131072, 7},
    {"", 0, 32000, 262144, 5},
}};

constexpr std::array<uint32_t, 8> kShares = {230, 320, 460, 470, 650, 810, 810, 500};
constexpr std::array<std::string_view, 5> kSpecs = {"T4", "G2", "V100M16|V100M32", "P100|T4",
                                                    "G2|V100M32"};
constexpr std::array<uint32_t, 3> kMultiGpus = {2, 4, 8};

}  // namespace

SampleTrace MakeSampleTrace(const SampleOptions& options) {
  Rng rng(options.seed);
  SampleTrace out;
  out.node_csv = "sn,cpu_milli,memory_mib,gpu,model\n";
  for (size_t i = 0; i < options.nodes; ++i) {
    uint64_t pick = rng.Uniform(100);
    const NodeShape* shape = &kShapes.back();
    for (const NodeShape& s : kShapes) {
      if (pick < s.weight) {
        shape = &s;
        break;
      }
      pick -= s.weight;
    }
    out.node_csv += fmt::format("sample-node-{:04d},{},{},{},{}\n", i, shape->cpu_milli,
                                shape->memory_mib, shape->gpus, shape->model);
  }
  out.pod_csv =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n";
  uint64_t now = 0;
  for (size_t i = 0; i < options.pods; ++i) {
    const uint64_t kind = rng.Uniform(100);  // 13 CPU only, 38 shared, 48 one GPU, 1 several
    uint32_t num_gpu = 0;
    uint32_t gpu_milli = 0;
    if (kind >= 13 && kind < 51) {
      num_gpu = 1;
      gpu_milli = kShares[rng.Uniform(kShares.size())];
    } else if (kind >= 51 && kind < 99) {
      num_gpu = 1;
      gpu_milli = 1000;
    } else if (kind >= 99) {
      num_gpu = kMultiGpus[rng.Uniform(kMultiGpus.size())];
      gpu_milli = 1000;
    }
    const uint64_t cpu = rng.Range(1, num_gpu == 0 ? 32 : 12 * std::max(num_gpu, 1u)) * 1000;
    const uint64_t memory = rng.Range(1, 16) * 4096;
    std::string_view spec;
    if (num_gpu > 0 && static_cast<double>(rng.Uniform(1000)) < options.constrained * 1000)
      spec = kSpecs[rng.Uniform(kSpecs.size())];
    now += rng.Uniform(600);
    const uint64_t deleted = now + 60 + rng.Uniform(86400);
    out.pod_csv += fmt::format("sample-pod-{:05d},{},{},{},{},{},LS,Running,{},{},{}\n", i, cpu,
                               memory, num_gpu, gpu_milli, spec, now, deleted, now);
  }
  return out;
}

}  // namespace dxpu::poolsim
