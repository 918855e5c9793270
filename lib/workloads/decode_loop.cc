// decode_loop.cc - "decode-loop": transformer-like autoregressive decode (README.md).
//
// Per token t (x: the token's 1 x h row) and layer, all m = 1 GEMMs but the attention's:
//   q = x Wq;  K[t] = x Wk;  V[t] = x Wv                 (the KV cache grows by a row)
//   s = K[0..t] q / sqrt(h)                              (GEMM (t+1) x h . h x 1)
//   a = s^T V[0..t] / (t+1)                              (GEMM 1 x (t+1) . (t+1) x h)
//   x += a Wo (AXPY);  x += (x W1) W2 (AXPY);  stat = sum(x) (REDUCE_SUM)
// then logits = x Wout, their D2H and a stream synchronisation; the host picks the next token
// (argmax) and uploads its embedding row (a small H2D), so every token waits for the last:
// latency-bound. Attention has no softmax (the model has no elementwise kernels). With several
// devices the layers are split among them (a pipeline): x goes from one to the next through the
// host (D2H, sync, H2D), so each token costs a synchronisation per device.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "workloads/common.h"
#include "workloads/cpu_reference.h"

namespace dxpu::workloads::detail {
namespace {

struct DecodeShape {
  size_t layers;
  size_t hidden;
  size_t ffn;
  size_t vocab;
  uint32_t tokens;
};

DecodeShape DecodeShapeFor(Scale scale) {
  if (scale == Scale::kTest) return {2, 32, 64, 64, 6};
  return {4, 256, 512, 512, 32};
}

// A layer's weights, one array: [Wq Wk Wv Wo (h x h each) | W1 (h x f) | W2 (f x h)].
struct LayerLayout {
  size_t wq, wk, wv, wo, w1, w2, size;
};

LayerLayout MakeLayerLayout(const DecodeShape& s) {
  const size_t hh = s.hidden * s.hidden;
  const size_t hf = s.hidden * s.ffn;
  return {0, hh, 2 * hh, 3 * hh, 4 * hh, (4 * hh) + hf, (4 * hh) + (2 * hf)};
}

struct Model {
  std::vector<std::vector<float>> layers;  // LayerLayout each
  std::vector<float> out;                  // Wout, h x vocab
  std::vector<float> embedding;            // vocab x h (host only)
  size_t first_token = 0;
};

Model MakeModel(const DecodeShape& s, const LayerLayout& l, uint64_t seed) {
  Random rng(seed);
  const float h_scale = std::sqrt(3.0f / static_cast<float>(s.hidden));
  const float f_scale = std::sqrt(3.0f / static_cast<float>(s.ffn));
  auto fill = [&](std::span<float> v, float scale) {
    for (float& x : v) x = rng.Uniform() * scale;
  };
  Model m;
  for (size_t i = 0; i < s.layers; ++i) {
    std::vector<float> w(l.size);
    const std::span<float> all(w);
    fill(all.subspan(l.wq, l.wo - l.wq), h_scale);  // Wq, Wk, Wv
    fill(all.subspan(l.wo, l.w1 - l.wo), 0.5f * h_scale);
    fill(all.subspan(l.w1, l.w2 - l.w1), h_scale);
    fill(all.subspan(l.w2, l.size - l.w2), 0.5f * f_scale);
    m.layers.push_back(std::move(w));
  }
  m.out.resize(s.hidden * s.vocab);
  fill(m.out, h_scale);
  m.embedding.resize(s.vocab * s.hidden);
  fill(m.embedding, 1.0f);
  m.first_token = rng.Next() % s.vocab;
  return m;
}

// What each token produced: the logits and each layer's sum of x.
struct TokenOutput {
  std::vector<float> logits;
  std::vector<float> stats;
};

// The decode on the CPU, with the device's operations in the device's order.
std::vector<TokenOutput> CpuDecode(const DecodeShape& s, const LayerLayout& l, const Model& m) {
  const size_t h = s.hidden;
  std::vector<std::vector<float>> kc(s.layers, std::vector<float>(s.tokens * h));
  std::vector<std::vector<float>> vc(s.layers, std::vector<float>(s.tokens * h));
  std::vector<float> x(h), q(h), sc(s.tokens), a(h), o(h), u(s.ffn);
  std::vector<TokenOutput> out(s.tokens);
  size_t token = m.first_token;
  for (size_t t = 0; t < s.tokens; ++t) {
    const std::span<const float> row = std::span(m.embedding).subspan(token * h, h);
    std::copy(row.begin(), row.end(), x.begin());
    out[t].stats.resize(s.layers);
    for (size_t i = 0; i < s.layers; ++i) {
      const std::span<const float> w(m.layers[i]);
      const std::span<float> k_row = std::span(kc[i]).subspan(t * h, h);
      const std::span<float> v_row = std::span(vc[i]).subspan(t * h, h);
      cpu::Gemm(1, h, h, 1.0f, x, w.subspan(l.wq, h * h), 0.0f, q);
      cpu::Gemm(1, h, h, 1.0f, x, w.subspan(l.wk, h * h), 0.0f, k_row);
      cpu::Gemm(1, h, h, 1.0f, x, w.subspan(l.wv, h * h), 0.0f, v_row);
      cpu::Gemm(t + 1, 1, h, 1.0f / std::sqrt(static_cast<float>(h)), kc[i], q, 0.0f, sc);
      cpu::Gemm(1, h, t + 1, 1.0f / static_cast<float>(t + 1), sc, vc[i], 0.0f, a);
      cpu::Gemm(1, h, h, 1.0f, a, w.subspan(l.wo, h * h), 0.0f, o);
      cpu::Axpy(1.0f, o, x);
      cpu::Gemm(1, s.ffn, h, 1.0f, x, w.subspan(l.w1, h * s.ffn), 0.0f, u);
      cpu::Gemm(1, h, s.ffn, 1.0f, u, w.subspan(l.w2, h * s.ffn), 0.0f, o);
      cpu::Axpy(1.0f, o, x);
      out[t].stats[i] = cpu::ReduceSum(x);
    }
    out[t].logits.resize(s.vocab);
    cpu::Gemm(1, s.vocab, h, 1.0f, x, m.out, 0.0f, out[t].logits);
    token = cpu::ArgMax(out[t].logits);
  }
  return out;
}

// One device's part of the pipeline: layers [first, last), and the logits when it is the last.
struct Stage {
  size_t first = 0;
  size_t last = 0;
  bool logits = false;
  std::vector<DeviceArray> weights, k_cache, v_cache;  // per layer of the stage
  DeviceArray out_weights;                             // Wout (the last stage)
  DeviceArray io;                                      // [x (h) | stats | logits]
  DeviceArray q, scores, a, o, u;

  // io's parts: x at 0, then a sum per layer of the stage, then the logits.
  size_t layer_sums() const { return last - first; }
  size_t logits_offset(size_t hidden) const { return hidden + layer_sums(); }
};

// Device `d`'s stage: layers [first, last) of the model, with their caches and scratch.
Status SetUpStage(Runtime& rt, size_t d, const DecodeShape& s, const LayerLayout& l, const Model& m,
                  Stage& st) {
  const size_t h = s.hidden;
  for (size_t i = st.first; i < st.last; ++i) {
    DeviceArray w, kc, vc;
    DXPU_WORKLOAD_TRY(w.Allocate(rt, d, l.size));
    DXPU_WORKLOAD_TRY(rt.MemcpyHtoD(w.at(), m.layers[i].data(), w.bytes()));
    DXPU_WORKLOAD_TRY(kc.Allocate(rt, d, s.tokens * h));
    DXPU_WORKLOAD_TRY(vc.Allocate(rt, d, s.tokens * h));
    st.weights.push_back(std::move(w));
    st.k_cache.push_back(std::move(kc));
    st.v_cache.push_back(std::move(vc));
  }
  if (st.logits) {
    DXPU_WORKLOAD_TRY(st.out_weights.Allocate(rt, d, m.out.size()));
    DXPU_WORKLOAD_TRY(rt.MemcpyHtoD(st.out_weights.at(), m.out.data(), st.out_weights.bytes()));
  }
  DXPU_WORKLOAD_TRY(st.io.Allocate(rt, d, h + st.layer_sums() + (st.logits ? s.vocab : 0)));
  DXPU_WORKLOAD_TRY(st.q.Allocate(rt, d, h));
  DXPU_WORKLOAD_TRY(st.scores.Allocate(rt, d, s.tokens));
  DXPU_WORKLOAD_TRY(st.a.Allocate(rt, d, h));
  DXPU_WORKLOAD_TRY(st.o.Allocate(rt, d, h));
  return st.u.Allocate(rt, d, s.ffn);
}

// Token t through one stage on `stream`: x in from `input` (pinned), the stage's layers, the
// logits on the last stage, and io out to `output` (pinned).
Status EnqueueStage(Runtime& rt, dxgpu::Stream stream, const DecodeShape& s, const LayerLayout& l,
                    const Stage& st, uint32_t t, const float* input, float* output) {
  const size_t h = s.hidden;
  const dxgpu::DevicePtr x = st.io.at();
  const float score_scale = 1.0f / std::sqrt(static_cast<float>(h));
  DXPU_WORKLOAD_TRY(rt.MemcpyHtoDAsync(stream, x, input, h * sizeof(float)));
  for (size_t i = st.first; i < st.last; ++i) {
    const DeviceArray& w = st.weights[i - st.first];
    const DeviceArray& kc = st.k_cache[i - st.first];
    const DeviceArray& vc = st.v_cache[i - st.first];
    DXPU_WORKLOAD_TRY(rt.LaunchGemm(stream, 1, h, h, 1.0f, x, w.at(l.wq), 0.0f, st.q.at()));
    DXPU_WORKLOAD_TRY(rt.LaunchGemm(stream, 1, h, h, 1.0f, x, w.at(l.wk), 0.0f, kc.at(t * h)));
    DXPU_WORKLOAD_TRY(rt.LaunchGemm(stream, 1, h, h, 1.0f, x, w.at(l.wv), 0.0f, vc.at(t * h)));
    DXPU_WORKLOAD_TRY(
        rt.LaunchGemm(stream, t + 1, 1, h, score_scale, kc.at(), st.q.at(), 0.0f, st.scores.at()));
    DXPU_WORKLOAD_TRY(rt.LaunchGemm(stream, 1, h, t + 1, 1.0f / static_cast<float>(t + 1),
                                    st.scores.at(), vc.at(), 0.0f, st.a.at()));
    DXPU_WORKLOAD_TRY(rt.LaunchGemm(stream, 1, h, h, 1.0f, st.a.at(), w.at(l.wo), 0.0f, st.o.at()));
    DXPU_WORKLOAD_TRY(rt.LaunchAxpy(stream, h, 1.0f, st.o.at(), x));
    DXPU_WORKLOAD_TRY(rt.LaunchGemm(stream, 1, s.ffn, h, 1.0f, x, w.at(l.w1), 0.0f, st.u.at()));
    DXPU_WORKLOAD_TRY(
        rt.LaunchGemm(stream, 1, h, s.ffn, 1.0f, st.u.at(), w.at(l.w2), 0.0f, st.o.at()));
    DXPU_WORKLOAD_TRY(rt.LaunchAxpy(stream, h, 1.0f, st.o.at(), x));
    DXPU_WORKLOAD_TRY(rt.LaunchReduceSum(stream, h, x, st.io.at(h + i - st.first)));
  }
  if (st.logits) {
    DXPU_WORKLOAD_TRY(rt.LaunchGemm(stream, 1, s.vocab, h, 1.0f, x, st.out_weights.at(), 0.0f,
                                    st.io.at(st.logits_offset(h))));
  }
  return rt.MemcpyDtoHAsync(stream, output, st.io.at(), st.io.bytes());
}

}  // namespace

Status RunDecodeLoop(Context& ctx) {
  Runtime& rt = ctx.rt();
  const DecodeShape s = DecodeShapeFor(ctx.scale());
  const LayerLayout l = MakeLayerLayout(s);
  const size_t n = ctx.devices();
  const size_t h = s.hidden;
  if (n > s.layers) {
    return {dxgpu::ErrorCode::kInvalidArgument,
            fmt::format("decode-loop: {} layers do not split over {} devices", s.layers, n)};
  }
  const Model m = MakeModel(s, l, ctx.seed());
  const std::vector<TokenOutput> want = CpuDecode(s, l, m);

  // Pinned: the embedding row, then each stage's io.
  const size_t io_size = h + s.layers + s.vocab;  // room for any stage
  PinnedArray pinned;
  DXPU_WORKLOAD_TRY(pinned.Allocate(rt, h + (n * io_size)));
  const std::span<float> pinned_embedding = pinned.span(0, h);
  auto pinned_io = [&](size_t dev) { return pinned.span(h + (dev * io_size), io_size); };

  std::vector<Stage> stages(n);
  for (size_t d = 0; d < n; ++d) {
    stages[d].first = d * s.layers / n;
    stages[d].last = (d + 1) * s.layers / n;
    stages[d].logits = d + 1 == n;
    DXPU_WORKLOAD_TRY(SetUpStage(rt, d, s, l, m, stages[d]));
  }
  std::vector<StreamHandle> streams(n);
  for (size_t d = 0; d < n; ++d) DXPU_WORKLOAD_TRY(streams[d].Create(rt, d));
  for (size_t d = 0; d < n; ++d) DXPU_WORKLOAD_TRY(rt.SynchronizeDevice(d));  // warm-up

  std::vector<TokenOutput> got(s.tokens);
  std::vector<size_t> tokens;
  size_t token = m.first_token;
  ctx.StartTimer();
  for (uint32_t t = 0; t < s.tokens; ++t) {
    tokens.push_back(token);
    const std::span<const float> row = std::span(m.embedding).subspan(token * h, h);
    std::copy(row.begin(), row.end(), pinned_embedding.begin());
    for (size_t d = 0; d < n; ++d) {
      const dxgpu::Stream stream = streams[d].get();
      // x comes from the host: the embedding row, or the previous stage's x.
      const float* input = d == 0 ? pinned_embedding.data() : pinned_io(d - 1).data();
      DXPU_WORKLOAD_TRY(EnqueueStage(rt, stream, s, l, stages[d], t, input, pinned_io(d).data()));
      DXPU_WORKLOAD_TRY(rt.SynchronizeStream(stream));
    }
    // The host's part: keep what came back, pick the next token.
    TokenOutput& out = got[t];
    for (size_t d = 0; d < n; ++d) {
      const Stage& st = stages[d];
      const std::span<const float> stats = pinned_io(d).subspan(h, st.layer_sums());
      out.stats.insert(out.stats.end(), stats.begin(), stats.end());
    }
    const std::span<const float> logits =
        pinned_io(n - 1).subspan(stages[n - 1].logits_offset(h), s.vocab);
    out.logits.assign(logits.begin(), logits.end());
    token = cpu::ArgMax(logits);
    ctx.IterationDone(s.tokens);
  }
  ctx.StopTimer();

  constexpr double kTolerance = 1e-4;
  for (uint32_t t = 0; t < s.tokens; ++t) {
    DXPU_WORKLOAD_TRY(
        ctx.Check(fmt::format("token {} logits", t), got[t].logits, want[t].logits, kTolerance));
    DXPU_WORKLOAD_TRY(
        ctx.Check(fmt::format("token {} layer sums", t), got[t].stats, want[t].stats, kTolerance));
  }
  std::string sequence;
  for (size_t t = 0; t < tokens.size() && t < 8; ++t) sequence += fmt::format(" {}", tokens[t]);
  ctx.result().summary = fmt::format(
      "{} tokens, {} layers of hidden {} (ffn {}), vocab {}, {} device(s); tokens{}{}", s.tokens,
      s.layers, h, s.ffn, s.vocab, n, sequence, tokens.size() > 8 ? " ..." : "");
  return Status::Ok();
}

}  // namespace dxpu::workloads::detail
