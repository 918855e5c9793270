// synthetic_workloads.cc - ResNet-, BERT- and LLM-shaped programs for the model GPU with timed
// kernels (synthetic_workloads.h). Shapes: ResNet-18 on 64 images of 3x112x112, BERT-base on
// 8 x 128 tokens, a 8-layer decoder of hidden 1024 and vocabulary 32000 in fp16 (the shapes of
// tools/traces/record_traces.py). Each kernel runs for the time the GPU profile's roofline gives
// its FLOPs and bytes, at least 2 us (a real GPU's smallest kernels); the host spends 6 us on
// each call it makes (an eager framework's dispatch), so a GPU can run dry as it does for real.
#include "sim-world/replay/synthetic_workloads.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace dxpu::perfmodel {
namespace {

using dxgpu::Status;

constexpr uint64_t kHostCallNs = 6'000;
constexpr double kMinKernelNs = 2'000;

class Program {
 public:
  Program(dxgpu::Runtime& rt, uint64_t device_bytes, uint64_t host_bytes) : rt_(rt) {
    const auto props = rt.GetDeviceProperties(0);
    if (props.ok() && props.value().has_roofline) {
      flops_ = props.value().peak_fp32_flops;
      bandwidth_ = props.value().memory_bandwidth_bytes;
    }
    auto stream = rt.CreateStream(0);
    auto dev = rt.Malloc(0, device_bytes);
    auto host = rt.MallocHost(host_bytes);
    if (!stream.ok()) status_ = stream.status();
    if (!dev.ok()) status_ = dev.status();
    if (!host.ok()) status_ = host.status();
    if (stream.ok()) stream_ = stream.value();
    if (dev.ok()) dev_ = dev.value();
    if (host.ok()) host_ = host.value();
    allocated_ = dev.ok();
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() {
    if (host_ != nullptr) (void)rt_.FreeHost(host_);
    if (allocated_) (void)rt_.Free(dev_);
    if (stream_.id != 0) (void)rt_.DestroyStream(stream_);
  }

  // The first failure; every call after it does nothing.
  const Status& status() const { return status_; }

  // A kernel of `flops` and `bytes` of device-memory traffic, timed on the roofline.
  void Kernel(double flops, double bytes) {
    const double ns = std::max({flops / flops_ * 1e9, bytes / bandwidth_ * 1e9, kMinKernelNs});
    Call([&] { return rt_.LaunchTimed(stream_, static_cast<uint64_t>(std::llround(ns))); });
  }
  void Up(uint64_t bytes) {
    Call([&] { return rt_.MemcpyHtoDAsync(stream_, dev_, host_, bytes); });
  }
  void Down(uint64_t bytes) {
    Call([&] { return rt_.MemcpyDtoHAsync(stream_, host_, dev_, bytes); });
  }
  void Sync() {
    Call([&] { return rt_.SynchronizeStream(stream_); });
  }

 private:
  template <typename F>
  void Call(const F& call) {
    if (!status_.ok()) return;
    HostWork();
    status_ = call();
  }

  // The host's own time for a call: the port's clock moves on (virtual in the simulator).
  void HostWork() {
    (void)rt_.port().Wait(
        0, [] { return false; }, kHostCallNs);
  }

  dxgpu::Runtime& rt_;
  Status status_;
  dxgpu::Stream stream_{};
  dxgpu::DevicePtr dev_{};
  bool allocated_ = false;
  void* host_ = nullptr;
  double flops_ = 10e12;
  double bandwidth_ = 500e9;
};

Status ResnetStep(Program& p) {
  constexpr double kBatch = 64;
  constexpr uint64_t kImages = 64ULL * 3 * 112 * 112 * 4;
  p.Up(kImages);
  p.Up(uint64_t{64} * 8);  // labels
  // 20 convolutions (conv1, 16 in the blocks, 3 downsampling), each ~22.5 MFLOP per image; the
  // activations halve in bytes per stage (channels double, the area quarters).
  constexpr int kConvs = 20;
  const auto activation = [&](int layer) { return 12.8e6 / std::pow(2.0, layer / 5); };
  const double conv_flops = 22.5e6 * kBatch;
  for (int l = 0; l < kConvs; ++l) {
    p.Kernel(conv_flops, 2 * activation(l));  // convolution
    p.Kernel(0, 2 * activation(l));           // batch norm
    p.Kernel(0, 2 * activation(l));           // ReLU
  }
  p.Kernel(2 * kBatch * 512 * 1000, 2e6);  // fc
  p.Kernel(0, 1e6);                        // cross-entropy
  p.Kernel(0, 1e6);                        // its gradient
  p.Kernel(4 * kBatch * 512 * 1000, 4e6);  // fc backward (data and weights)
  for (int l = kConvs - 1; l >= 0; --l) {
    p.Kernel(0, 3 * activation(l));           // ReLU backward
    p.Kernel(0, 3 * activation(l));           // batch norm backward
    p.Kernel(conv_flops, 2 * activation(l));  // convolution: data gradient
    p.Kernel(conv_flops, 2 * activation(l));  // convolution: weight gradient
  }
  // SGD with momentum over 11.7 M parameters, in 6 multi-tensor kernels.
  for (int k = 0; k < 6; ++k) p.Kernel(3 * 11.7e6 / 6, 4 * 4 * 11.7e6 / 6);
  p.Down(4);  // loss.item()
  p.Sync();
  return p.status();
}

Status BertBatch(Program& p) {
  constexpr double kTokens = 8 * 128, kHidden = 768, kFfn = 3072, kHeads = 12, kSeq = 128;
  p.Up(uint64_t{8} * 128 * 8);             // token IDs
  p.Kernel(0, kTokens * kHidden * 4 * 2);  // embeddings
  for (int layer = 0; layer < 12; ++layer) {
    const double act = kTokens * kHidden * 4;
    p.Kernel(2 * kTokens * kHidden * 3 * kHidden, 4 * kHidden * 3 * kHidden);  // QKV
    const double scores = 8 * kHeads * kSeq * kSeq;
    p.Kernel(2 * scores * kHidden / kHeads, act * 2);                  // Q K^T
    p.Kernel(0, scores * 4 * 2);                                       // softmax
    p.Kernel(2 * scores * kHidden / kHeads, act * 2);                  // context
    p.Kernel(2 * kTokens * kHidden * kHidden, 4 * kHidden * kHidden);  // output
    p.Kernel(0, 3 * act);                                              // add + norm
    p.Kernel(2 * kTokens * kHidden * kFfn, 4 * kHidden * kFfn);        // FFN up + GELU
    p.Kernel(2 * kTokens * kFfn * kHidden, 4 * kHidden * kFfn);        // FFN down
    p.Kernel(0, 3 * act);                                              // add + norm
  }
  p.Down(uint64_t{8} * 768 * 4);  // the pooled output
  p.Sync();
  return p.status();
}

Status LlmToken(Program& p) {
  constexpr double kHidden = 1024, kVocab = 32000, kHalf = 2;
  p.Kernel(0, kHidden * kHalf * 2);  // the token's embedding
  for (int layer = 0; layer < 8; ++layer) {
    p.Kernel(0, 4 * kHidden * kHalf);                                    // norm
    p.Kernel(2 * kHidden * 3 * kHidden, kHidden * 3 * kHidden * kHalf);  // QKV
    p.Kernel(0, 1e5);                                                    // KV cache
    p.Kernel(0, 2e5);                                                    // attention
    p.Kernel(2 * kHidden * kHidden, kHidden * kHidden * kHalf);          // output
    p.Kernel(0, 4 * kHidden * kHalf);                                    // add + norm
    p.Kernel(2 * kHidden * 4 * kHidden, kHidden * 4 * kHidden * kHalf);  // MLP up
    p.Kernel(0, 8 * kHidden * kHalf);                                    // GELU
    p.Kernel(2 * kHidden * 4 * kHidden, kHidden * 4 * kHidden * kHalf);  // MLP down
  }
  p.Kernel(2 * kHidden * kVocab, kHidden * kVocab * kHalf);  // logits
  p.Kernel(0, kVocab * kHalf);                               // argmax
  p.Down(8);  // the next token's ID: the host waits for it
  p.Sync();
  return p.status();
}

}  // namespace

std::vector<SyntheticWorkload> ListSyntheticWorkloads() {
  return {
      {"resnet-train", "ResNet-18-shaped training step, batch 64 of 3x112x112, a sync per step"},
      {"bert-infer", "BERT-base-shaped inference, 8 x 128 tokens per batch, a sync per batch"},
      {"llm-decode", "8-layer decoder, hidden 1024, batch 1, greedy: a sync per token"},
  };
}

Status RunSyntheticWorkload(std::string_view name, dxgpu::Runtime& rt, int iterations) {
  Status (*step)(Program&) = nullptr;
  if (name == "resnet-train") step = ResnetStep;
  if (name == "bert-infer") step = BertBatch;
  if (name == "llm-decode") step = LlmToken;
  if (step == nullptr)
    return {dxgpu::ErrorCode::kInvalidArgument, "no synthetic workload named " + std::string(name)};
  Program p(rt, 16 << 20, 16 << 20);
  for (int i = 0; i < iterations && p.status().ok(); ++i) (void)step(p);
  return p.status();
}

}  // namespace dxpu::perfmodel
