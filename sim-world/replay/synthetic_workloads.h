// synthetic_workloads.h - three AI workloads written for the model GPU with timed kernels, so
// that recording them gives traces shaped like the real ones when no GPU is at hand
// (docs/perf-model.md, "Traces"): the host calls, copies and synchronisations of the real
// thing, each kernel taking the time a roofline of the GPU profile gives its layer.
//   resnet-train  ResNet-18-shaped training step: the batch up, 20 convolution layers forward
//                 and backward, the optimizer's updates, the loss down, a sync per step
//   bert-infer    BERT-base-shaped inference: token IDs up, 12 encoder layers of 8 kernels,
//                 the pooled output down, a sync per batch
//   llm-decode    decoder-only LLM, batch 1: per token 16 layers of 9 memory-bound kernels,
//                 the next token's ID down and a sync (the host picks it)
#ifndef DXPU_SIM_WORLD_REPLAY_SYNTHETIC_WORKLOADS_H_
#define DXPU_SIM_WORLD_REPLAY_SYNTHETIC_WORKLOADS_H_

#include <string>
#include <string_view>
#include <vector>

#include "dxgpu/runtime.h"

namespace dxpu::perfmodel {

struct SyntheticWorkload {
  std::string name;
  std::string description;
};
std::vector<SyntheticWorkload> ListSyntheticWorkloads();

// Runs `name` on device 0 of `rt` for `iterations` steps (batches, tokens).
dxgpu::Status RunSyntheticWorkload(std::string_view name, dxgpu::Runtime& rt, int iterations);

}  // namespace dxpu::perfmodel

#endif  // DXPU_SIM_WORLD_REPLAY_SYNTHETIC_WORKLOADS_H_
