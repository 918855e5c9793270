// mlp_train.cc - "mlp-train": SGD on a 3-layer linear MLP, data-parallel (README.md).
//
// Shapes (b = batch / devices rows per device, d0..d3 the layer widths):
//   forward      Z1 = X W1, Z2 = Z1 W2, Y = Z2 W3              (b x d1, b x d2, b x d3)
//   transposed   Z1t = W1t Xt, Z2t = W2t Z1t                    (d1 x b, d2 x b)
//   loss         E = Y - T (AXPY); loss = 0.5 / batch * E.E (a 1 x 1 GEMM over E as a row
//                and as a column)
//   backward     dW3 = Z2t E, G2 = E W3t, dW2 = Z1t G2, G1 = G2 W2t, dW1 = Xt G1
// dL/dY = E / batch; the 1 / batch goes into the SGD step. The GEMM has no transpose flag, so
// every device keeps W and W^T and the data loader uploads X and X^T. Gradients go to the host
// (one D2H per device), are summed there in device order and transposed, and come back (one
// H2D per device, both layouts): an all-reduce through the host, as on GPUs without peer links.
// The update is an AXPY on each layout. The CPU runs exactly the same steps, shard by shard.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "workloads/common.h"
#include "workloads/cpu_reference.h"

namespace dxpu::workloads::detail {
namespace {

constexpr size_t kLayers = 3;

struct MlpShape {
  size_t batch;                           // rows over all devices
  std::array<size_t, kLayers + 1> width;  // d0 (input) .. d3 (output)
  uint32_t steps;
  float learning_rate;
};

MlpShape ShapeFor(Scale scale) {
  if (scale == Scale::kTest) return {16, {16, 32, 32, 8}, 3, 0.05f};
  return {128, {256, 512, 512, 64}, 10, 0.05f};
}

// Where each part lives in the flat parameter vector [W1 W2 W3 W1t W2t W3t]; the gradient
// vector [dW1 dW2 dW3] uses the first half's offsets.
struct Layout {
  std::array<size_t, kLayers> w{};   // offsets of W_l (d_{l-1} x d_l)
  std::array<size_t, kLayers> wt{};  // offsets of W_l^T (d_l x d_{l-1})
  std::array<size_t, kLayers> size{};
  size_t half = 0;  // elements of one layout
};

Layout MakeLayout(const MlpShape& s) {
  Layout l;
  for (size_t i = 0; i < kLayers; ++i) {
    l.w[i] = l.half;
    l.size[i] = s.width[i] * s.width[i + 1];
    l.half += l.size[i];
  }
  for (size_t i = 0; i < kLayers; ++i) l.wt[i] = l.half + l.w[i];
  return l;
}

// One step's data: X (batch x d0) and targets T (batch x d3) for all rows.
struct Batch {
  std::vector<float> x;
  std::vector<float> t;
};

// The data set: inputs uniform in [-1, 1), targets a fixed random linear map of them (a
// teacher the MLP can learn).
std::vector<Batch> MakeBatches(const MlpShape& s, uint64_t seed) {
  Random rng(seed);
  const size_t d0 = s.width[0];
  const size_t d3 = s.width[kLayers];
  std::vector<float> teacher(d0 * d3);
  const float scale = std::sqrt(3.0f / static_cast<float>(d0));
  for (float& v : teacher) v = rng.Uniform() * scale;
  std::vector<Batch> batches(s.steps);
  for (Batch& b : batches) {
    b.x.resize(s.batch * d0);
    for (float& v : b.x) v = rng.Uniform();
    b.t.resize(s.batch * d3);
    cpu::Gemm(s.batch, d3, d0, 1.0f, b.x, teacher, 0.0f, b.t);
  }
  return batches;
}

// W_l uniform with variance 1 / fan-in; W^T alongside.
std::vector<float> InitialParameters(const MlpShape& s, const Layout& l, uint64_t seed) {
  Random rng(seed + 1);
  std::vector<float> p(2 * l.half);
  for (size_t i = 0; i < kLayers; ++i) {
    const float scale = std::sqrt(3.0f / static_cast<float>(s.width[i]));
    for (size_t j = 0; j < l.size[i]; ++j) p[l.w[i] + j] = rng.Uniform() * scale;
    cpu::Transpose(s.width[i], s.width[i + 1], std::span(p).subspan(l.w[i], l.size[i]),
                   std::span(p).subspan(l.wt[i], l.size[i]));
  }
  return p;
}

// Rows [row, row + rows) of a row-major matrix with `cols` columns.
std::span<const float> Rows(const std::vector<float>& m, size_t row, size_t rows, size_t cols) {
  return std::span(m).subspan(row * cols, rows * cols);
}

// One device's shard as the data loader sends it: [X (b x d0) | Xt (d0 x b) | T (b x d3)].
void PackShard(const MlpShape& s, const Batch& batch, size_t shard, size_t rows,
               std::span<float> out) {
  const size_t d0 = s.width[0];
  const size_t d3 = s.width[kLayers];
  const std::span<const float> x = Rows(batch.x, shard * rows, rows, d0);
  std::copy(x.begin(), x.end(), out.begin());
  cpu::Transpose(rows, d0, x, out.subspan(rows * d0, rows * d0));
  const std::span<const float> t = Rows(batch.t, shard * rows, rows, d3);
  std::copy(t.begin(), t.end(), out.begin() + static_cast<ptrdiff_t>(2 * rows * d0));
}

// Host side of the all-reduce: sums [dW1 dW2 dW3] of every device (device order, fp32) into
// the first half of `out` and writes each transposed into the second half.
void ReduceGradients(const MlpShape& s, const Layout& l,
                     const std::vector<std::span<const float>>& grads, std::span<float> out) {
  const std::span<float> sum = out.first(l.half);
  std::copy(grads[0].begin(), grads[0].begin() + static_cast<ptrdiff_t>(l.half), sum.begin());
  for (size_t d = 1; d < grads.size(); ++d) {
    for (size_t i = 0; i < l.half; ++i) sum[i] += grads[d][i];
  }
  for (size_t i = 0; i < kLayers; ++i) {
    cpu::Transpose(s.width[i], s.width[i + 1], sum.subspan(l.w[i], l.size[i]),
                   out.subspan(l.wt[i], l.size[i]));
  }
}

// Scratch of one shard's step, on the CPU.
struct CpuShard {
  std::vector<float> z1, z2, e, z1t, z2t, g2, g1, grads;
  float loss = 0;
};

// The device's step for one shard on the CPU: grads = [dW1 dW2 dW3], loss partial.
void CpuShardStep(const MlpShape& s, const Layout& l, const std::vector<float>& p,
                  std::span<const float> shard, size_t b, CpuShard& w) {
  const auto& d = s.width;
  const std::span<const float> x = shard.first(b * d[0]);
  const std::span<const float> xt = shard.subspan(b * d[0], b * d[0]);
  const std::span<const float> t = shard.subspan(2 * b * d[0], b * d[3]);
  const std::span<const float> params(p);
  auto w_of = [&](size_t i) { return params.subspan(l.w[i], l.size[i]); };
  auto wt_of = [&](size_t i) { return params.subspan(l.wt[i], l.size[i]); };
  w.z1.resize(b * d[1]);
  w.z2.resize(b * d[2]);
  w.e.resize(b * d[3]);
  w.z1t.resize(b * d[1]);
  w.z2t.resize(b * d[2]);
  w.g2.resize(b * d[2]);
  w.g1.resize(b * d[1]);
  w.grads.resize(l.half);
  const std::span<float> grads(w.grads);
  const float batch = static_cast<float>(s.batch);
  std::array<float, 1> loss{};
  cpu::Gemm(b, d[1], d[0], 1.0f, x, w_of(0), 0.0f, w.z1);
  cpu::Gemm(b, d[2], d[1], 1.0f, w.z1, w_of(1), 0.0f, w.z2);
  cpu::Gemm(b, d[3], d[2], 1.0f, w.z2, w_of(2), 0.0f, w.e);
  cpu::Axpy(-1.0f, t, w.e);
  cpu::Gemm(d[1], b, d[0], 1.0f, wt_of(0), xt, 0.0f, w.z1t);
  cpu::Gemm(d[2], b, d[1], 1.0f, wt_of(1), w.z1t, 0.0f, w.z2t);
  cpu::Gemm(1, 1, b * d[3], 0.5f / batch, w.e, w.e, 0.0f, loss);
  cpu::Gemm(d[2], d[3], b, 1.0f, w.z2t, w.e, 0.0f, grads.subspan(l.w[2], l.size[2]));
  cpu::Gemm(b, d[2], d[3], 1.0f, w.e, wt_of(2), 0.0f, w.g2);
  cpu::Gemm(d[1], d[2], b, 1.0f, w.z1t, w.g2, 0.0f, grads.subspan(l.w[1], l.size[1]));
  cpu::Gemm(b, d[1], d[2], 1.0f, w.g2, wt_of(1), 0.0f, w.g1);
  cpu::Gemm(d[0], d[1], b, 1.0f, xt, w.g1, 0.0f, grads.subspan(l.w[0], l.size[0]));
  w.loss = loss[0];
}

struct CpuRun {
  std::vector<float> losses;  // per step
  std::vector<float> params;  // after the last step
};

CpuRun CpuTrain(const MlpShape& s, const Layout& l, const std::vector<Batch>& batches,
                std::vector<float> params, size_t devices) {
  const size_t b = s.batch / devices;
  const size_t shard_size = (2 * b * s.width[0]) + (b * s.width[kLayers]);
  std::vector<CpuShard> work(devices);
  std::vector<float> shard(shard_size);
  std::vector<float> reduced(2 * l.half);
  CpuRun run;
  for (const Batch& batch : batches) {
    float loss = 0;
    std::vector<std::span<const float>> grads;
    for (size_t d = 0; d < devices; ++d) {
      PackShard(s, batch, d, b, shard);
      CpuShardStep(s, l, params, shard, b, work[d]);
      loss += work[d].loss;
      grads.emplace_back(work[d].grads);
    }
    ReduceGradients(s, l, grads, reduced);
    const float step = -s.learning_rate / static_cast<float>(s.batch);
    cpu::Axpy(step, std::span(reduced).first(l.half), std::span(params).first(l.half));
    cpu::Axpy(step, std::span(reduced).subspan(l.half), std::span(params).subspan(l.half));
    run.losses.push_back(loss);
  }
  run.params = std::move(params);
  return run;
}

// One device's buffers.
struct DeviceState {
  DeviceArray params;  // [W1 W2 W3 | W1t W2t W3t]
  DeviceArray update;  // the all-reduced gradients, both layouts
  DeviceArray grads;   // [dW1 dW2 dW3 | loss]
  DeviceArray input;   // [X | Xt | T]
  DeviceArray z1, z2, e, z1t, z2t, g2, g1;
};

// Allocates device `i`'s buffers (b rows) and uploads the initial weights.
Status SetUpDevice(Runtime& rt, size_t i, const MlpShape& s, const Layout& l, size_t b,
                   const std::vector<float>& initial, DeviceState& ds) {
  const auto& d = s.width;
  DXPU_WORKLOAD_TRY(ds.params.Allocate(rt, i, 2 * l.half));
  DXPU_WORKLOAD_TRY(ds.update.Allocate(rt, i, 2 * l.half));
  DXPU_WORKLOAD_TRY(ds.grads.Allocate(rt, i, l.half + 1));
  DXPU_WORKLOAD_TRY(ds.input.Allocate(rt, i, (2 * b * d[0]) + (b * d[kLayers])));
  DXPU_WORKLOAD_TRY(ds.z1.Allocate(rt, i, b * d[1]));
  DXPU_WORKLOAD_TRY(ds.z2.Allocate(rt, i, b * d[2]));
  DXPU_WORKLOAD_TRY(ds.e.Allocate(rt, i, b * d[3]));
  DXPU_WORKLOAD_TRY(ds.z1t.Allocate(rt, i, b * d[1]));
  DXPU_WORKLOAD_TRY(ds.z2t.Allocate(rt, i, b * d[2]));
  DXPU_WORKLOAD_TRY(ds.g2.Allocate(rt, i, b * d[2]));
  DXPU_WORKLOAD_TRY(ds.g1.Allocate(rt, i, b * d[1]));
  // The replicated initial weights (pageable: staged by the runtime).
  return rt.MemcpyHtoD(ds.params.at(), initial.data(), ds.params.bytes());
}

// One device's forward and backward pass on stream `st`: the shard in from `shard` (pinned),
// the gradients and the loss partial out to `grads` (pinned).
Status EnqueuePasses(Runtime& rt, dxgpu::Stream st, const MlpShape& s, const Layout& l, size_t b,
                     const DeviceState& ds, const float* shard, float* grads) {
  const auto& d = s.width;
  auto w = [&](size_t layer) { return ds.params.at(l.w[layer]); };
  auto wt = [&](size_t layer) { return ds.params.at(l.wt[layer]); };
  auto dw = [&](size_t layer) { return ds.grads.at(l.w[layer]); };
  const dxgpu::DevicePtr x = ds.input.at();
  const dxgpu::DevicePtr xt = ds.input.at(b * d[0]);
  const dxgpu::DevicePtr t = ds.input.at(2 * b * d[0]);
  const float loss_scale = 0.5f / static_cast<float>(s.batch);
  DXPU_WORKLOAD_TRY(rt.MemcpyHtoDAsync(st, x, shard, ds.input.bytes()));
  // Forward, both layouts; the error and the loss.
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, b, d[1], d[0], 1.0f, x, w(0), 0.0f, ds.z1.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, b, d[2], d[1], 1.0f, ds.z1.at(), w(1), 0.0f, ds.z2.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, b, d[3], d[2], 1.0f, ds.z2.at(), w(2), 0.0f, ds.e.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchAxpy(st, b * d[3], -1.0f, t, ds.e.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, d[1], b, d[0], 1.0f, wt(0), xt, 0.0f, ds.z1t.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, d[2], b, d[1], 1.0f, wt(1), ds.z1t.at(), 0.0f, ds.z2t.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, 1, 1, b * d[3], loss_scale, ds.e.at(), ds.e.at(), 0.0f,
                                  ds.grads.at(l.half)));
  // Backward.
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, d[2], d[3], b, 1.0f, ds.z2t.at(), ds.e.at(), 0.0f, dw(2)));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, b, d[2], d[3], 1.0f, ds.e.at(), wt(2), 0.0f, ds.g2.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, d[1], d[2], b, 1.0f, ds.z1t.at(), ds.g2.at(), 0.0f, dw(1)));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, b, d[1], d[2], 1.0f, ds.g2.at(), wt(1), 0.0f, ds.g1.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, d[0], d[1], b, 1.0f, xt, ds.g1.at(), 0.0f, dw(0)));
  return rt.MemcpyDtoHAsync(st, grads, ds.grads.at(), ds.grads.bytes());
}

}  // namespace

Status RunMlpTrain(Context& ctx) {
  Runtime& rt = ctx.rt();
  const MlpShape s = ShapeFor(ctx.scale());
  const Layout l = MakeLayout(s);
  const size_t n = ctx.devices();
  if (s.batch % n != 0) {
    return {dxgpu::ErrorCode::kInvalidArgument,
            fmt::format("mlp-train: batch {} does not split over {} devices", s.batch, n)};
  }
  const size_t b = s.batch / n;
  const size_t shard_size = (2 * b * s.width[0]) + (b * s.width[kLayers]);
  const size_t grads_size = l.half + 1;

  // Data, initial weights and the CPU's run of the same steps.
  const std::vector<Batch> batches = MakeBatches(s, ctx.seed());
  const std::vector<float> initial = InitialParameters(s, l, ctx.seed());
  const CpuRun want = CpuTrain(s, l, batches, initial, n);

  // Pinned: per device [shard | grads], then the reduced update.
  PinnedArray pinned;
  DXPU_WORKLOAD_TRY(pinned.Allocate(rt, (n * (shard_size + grads_size)) + (2 * l.half)));
  auto pinned_shard = [&](size_t dev) { return pinned.span(dev * shard_size, shard_size); };
  auto pinned_grads = [&](size_t dev) {
    return pinned.span((n * shard_size) + (dev * grads_size), grads_size);
  };
  const std::span<float> pinned_update = pinned.span(n * (shard_size + grads_size), 2 * l.half);

  std::vector<DeviceState> dev(n);
  for (size_t i = 0; i < n; ++i) DXPU_WORKLOAD_TRY(SetUpDevice(rt, i, s, l, b, initial, dev[i]));
  std::vector<StreamHandle> streams(n);
  for (size_t i = 0; i < n; ++i) DXPU_WORKLOAD_TRY(streams[i].Create(rt, i));
  for (size_t i = 0; i < n; ++i) DXPU_WORKLOAD_TRY(rt.SynchronizeDevice(i));  // warm-up

  std::vector<float> losses;
  const float step = -s.learning_rate / static_cast<float>(s.batch);
  ctx.StartTimer();
  for (uint32_t it = 0; it < s.steps; ++it) {
    for (size_t i = 0; i < n; ++i) {
      PackShard(s, batches[it], i, b, pinned_shard(i));
      DXPU_WORKLOAD_TRY(EnqueuePasses(rt, streams[i].get(), s, l, b, dev[i], pinned_shard(i).data(),
                                      pinned_grads(i).data()));
    }
    // The all-reduce through the host.
    float loss = 0;
    std::vector<std::span<const float>> grads;
    for (size_t i = 0; i < n; ++i) {
      DXPU_WORKLOAD_TRY(rt.SynchronizeStream(streams[i].get()));
      grads.emplace_back(pinned_grads(i).first(l.half));
      loss += pinned_grads(i)[l.half];
    }
    losses.push_back(loss);
    ReduceGradients(s, l, grads, pinned_update);
    // SGD on both layouts.
    for (size_t i = 0; i < n; ++i) {
      const dxgpu::Stream st = streams[i].get();
      const DeviceState& ds = dev[i];
      DXPU_WORKLOAD_TRY(
          rt.MemcpyHtoDAsync(st, ds.update.at(), pinned_update.data(), ds.update.bytes()));
      DXPU_WORKLOAD_TRY(rt.LaunchAxpy(st, l.half, step, ds.update.at(), ds.params.at()));
      DXPU_WORKLOAD_TRY(
          rt.LaunchAxpy(st, l.half, step, ds.update.at(l.half), ds.params.at(l.half)));
    }
    ctx.IterationDone(s.steps);
  }
  for (size_t i = 0; i < n; ++i) DXPU_WORKLOAD_TRY(rt.SynchronizeStream(streams[i].get()));
  ctx.StopTimer();

  // Checks: the loss of every step, and both layouts of the final weights on every device.
  constexpr double kTolerance = 1e-5;
  DXPU_WORKLOAD_TRY(ctx.Check("loss", losses, want.losses, kTolerance));
  std::vector<float> got(2 * l.half);
  for (size_t i = 0; i < n; ++i) {
    DXPU_WORKLOAD_TRY(rt.MemcpyDtoH(got.data(), dev[i].params.at(), dev[i].params.bytes()));
    for (size_t layer = 0; layer < kLayers; ++layer) {
      const std::span<const float> g(got);
      const std::span<const float> w(want.params);
      DXPU_WORKLOAD_TRY(ctx.Check(fmt::format("device {} W{}", i, layer + 1),
                                  g.subspan(l.w[layer], l.size[layer]),
                                  w.subspan(l.w[layer], l.size[layer]), kTolerance));
      DXPU_WORKLOAD_TRY(ctx.Check(fmt::format("device {} W{}^T", i, layer + 1),
                                  g.subspan(l.wt[layer], l.size[layer]),
                                  w.subspan(l.wt[layer], l.size[layer]), kTolerance));
    }
  }
  ctx.result().summary = fmt::format(
      "{} steps, batch {} ({} per device), {}x{}x{}x{}; loss {:.4g} -> {:.4g}", s.steps, s.batch, b,
      s.width[0], s.width[1], s.width[2], s.width[3], losses.front(), losses.back());
  return Status::Ok();
}

}  // namespace dxpu::workloads::detail
