// mlp_train.cc - "mlp-train": SGD on a 3-layer linear MLP, data-parallel (README.md).
//
// Shapes (b = batch / devices rows per device, d0..d3 the layer widths):
//   forward      Z1 = X W1, Z2 = Z1 W2, Y = Z2 W3                (b x d1, b x d2, b x d3)
//   loss         E = Y - T (AXPY); loss = 0.5 / batch * E.E (a 1 x 1 GEMM over E as a row
//                and as a column)
//   backward     dW3 = Z2^T E, G2 = E W3^T, dW2 = Z1^T G2, G1 = G2 W2^T, dW1 = X^T G1 (GEMMs
//                with transposed operands, as cuBLAS does them)
// dL/dY = E / batch; the 1 / batch goes into the SGD step. The all-reduce is peer to peer, as
// NCCL does it on GPUs that share a PCIe switch: each device writes its gradients (and loss
// partial) straight into every other device's memory; after a synchronisation each device
// sums the n gradient sets in device order (so every replica computes the same bits) and
// takes the SGD step. The CPU runs exactly the same steps, shard by shard.
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

MlpShape MlpShapeFor(Scale scale) {
  if (scale == Scale::kTest) return {16, {16, 32, 32, 8}, 3, 0.05f};
  return {128, {256, 1024, 1024, 64}, 10, 0.05f};
}

// Where each part lives in the flat parameter vector [W1 W2 W3]; a gradient set is laid out
// the same, with the loss partial after it.
struct Layout {
  std::array<size_t, kLayers> w{};  // offsets of W_l (d_{l-1} x d_l)
  std::array<size_t, kLayers> size{};
  size_t params = 0;                           // elements of [W1 W2 W3]
  size_t grads() const { return params + 1; }  // [dW1 dW2 dW3 | loss]
};

Layout MakeLayout(const MlpShape& s) {
  Layout l;
  for (size_t i = 0; i < kLayers; ++i) {
    l.w[i] = l.params;
    l.size[i] = s.width[i] * s.width[i + 1];
    l.params += l.size[i];
  }
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

// W_l uniform with variance 1 / fan-in.
std::vector<float> InitialParameters(const MlpShape& s, const Layout& l, uint64_t seed) {
  Random rng(seed + 1);
  std::vector<float> p(l.params);
  for (size_t i = 0; i < kLayers; ++i) {
    const float scale = std::sqrt(3.0f / static_cast<float>(s.width[i]));
    for (size_t j = 0; j < l.size[i]; ++j) p[l.w[i] + j] = rng.Uniform() * scale;
  }
  return p;
}

// Rows [row, row + rows) of a row-major matrix with `cols` columns.
std::span<const float> Rows(const std::vector<float>& m, size_t row, size_t rows, size_t cols) {
  return std::span(m).subspan(row * cols, rows * cols);
}

// One device's shard as the data loader sends it: [X (b x d0) | T (b x d3)].
void PackShard(const MlpShape& s, const Batch& batch, size_t shard, size_t rows,
               std::span<float> out) {
  const size_t d0 = s.width[0];
  const size_t d3 = s.width[kLayers];
  const std::span<const float> x = Rows(batch.x, shard * rows, rows, d0);
  std::copy(x.begin(), x.end(), out.begin());
  const std::span<const float> t = Rows(batch.t, shard * rows, rows, d3);
  std::copy(t.begin(), t.end(), out.begin() + static_cast<ptrdiff_t>(rows * d0));
}

constexpr dxgpu::GemmTranspose kTransA{.a = true, .b = false};
constexpr dxgpu::GemmTranspose kTransB{.a = false, .b = true};

// Scratch of one shard's step, on the CPU.
struct CpuShard {
  std::vector<float> z1, z2, e, g2, g1, grads;
};

// The device's step for one shard on the CPU: grads = [dW1 dW2 dW3 | loss partial].
void CpuShardStep(const MlpShape& s, const Layout& l, const std::vector<float>& p,
                  std::span<const float> shard, size_t b, CpuShard& w) {
  const auto& d = s.width;
  const std::span<const float> x = shard.first(b * d[0]);
  const std::span<const float> t = shard.subspan(b * d[0], b * d[3]);
  const std::span<const float> params(p);
  auto w_of = [&](size_t i) { return params.subspan(l.w[i], l.size[i]); };
  w.z1.resize(b * d[1]);
  w.z2.resize(b * d[2]);
  w.e.resize(b * d[3]);
  w.g2.resize(b * d[2]);
  w.g1.resize(b * d[1]);
  w.grads.resize(l.grads());
  const std::span<float> grads(w.grads);
  auto dw = [&](size_t i) { return grads.subspan(l.w[i], l.size[i]); };
  const float batch = static_cast<float>(s.batch);
  cpu::Gemm(b, d[1], d[0], 1.0f, x, w_of(0), 0.0f, w.z1);
  cpu::Gemm(b, d[2], d[1], 1.0f, w.z1, w_of(1), 0.0f, w.z2);
  cpu::Gemm(b, d[3], d[2], 1.0f, w.z2, w_of(2), 0.0f, w.e);
  cpu::Axpy(-1.0f, t, w.e);
  cpu::Gemm(1, 1, b * d[3], 0.5f / batch, w.e, w.e, 0.0f, grads.subspan(l.params, 1));
  cpu::Gemm(d[2], d[3], b, 1.0f, w.z2, w.e, 0.0f, dw(2), kTransA);
  cpu::Gemm(b, d[2], d[3], 1.0f, w.e, w_of(2), 0.0f, w.g2, kTransB);
  cpu::Gemm(d[1], d[2], b, 1.0f, w.z1, w.g2, 0.0f, dw(1), kTransA);
  cpu::Gemm(b, d[1], d[2], 1.0f, w.g2, w_of(1), 0.0f, w.g1, kTransB);
  cpu::Gemm(d[0], d[1], b, 1.0f, x, w.g1, 0.0f, dw(0), kTransA);
}

struct CpuRun {
  std::vector<float> losses;  // per step
  std::vector<float> params;  // after the last step
};

CpuRun CpuTrain(const MlpShape& s, const Layout& l, const std::vector<Batch>& batches,
                std::vector<float> params, size_t devices) {
  const size_t b = s.batch / devices;
  std::vector<CpuShard> work(devices);
  std::vector<float> shard((b * s.width[0]) + (b * s.width[kLayers]));
  std::vector<float> sum(l.grads());
  CpuRun run;
  for (const Batch& batch : batches) {
    for (size_t d = 0; d < devices; ++d) {
      PackShard(s, batch, d, b, shard);
      CpuShardStep(s, l, params, shard, b, work[d]);
    }
    // As every device sums: device 0's set, plus each other's in device order (AXPY, a = 1).
    sum = work[0].grads;
    for (size_t d = 1; d < devices; ++d) cpu::Axpy(1.0f, work[d].grads, sum);
    run.losses.push_back(sum[l.params]);
    const float step = -s.learning_rate / static_cast<float>(s.batch);
    cpu::Axpy(step, std::span(sum).first(l.params), params);
  }
  run.params = std::move(params);
  return run;
}

// One device's buffers.
struct DeviceState {
  DeviceArray params;                 // [W1 W2 W3]
  std::array<DeviceArray, 2> gather;  // by step parity: n gradient sets, set i from device i
  DeviceArray input;                  // [X | T]
  DeviceArray z1, z2, e, g2, g1;
  DeviceArray losses;  // device 0: the summed loss of each step
};

// Allocates device `i`'s buffers (b rows) and uploads the initial weights.
Status SetUpDevice(Runtime& rt, size_t i, size_t n, const MlpShape& s, const Layout& l, size_t b,
                   const std::vector<float>& initial, DeviceState& ds) {
  const auto& d = s.width;
  DXPU_WORKLOAD_TRY(ds.params.Allocate(rt, i, l.params));
  for (DeviceArray& g : ds.gather) DXPU_WORKLOAD_TRY(g.Allocate(rt, i, n * l.grads()));
  DXPU_WORKLOAD_TRY(ds.input.Allocate(rt, i, (b * d[0]) + (b * d[kLayers])));
  DXPU_WORKLOAD_TRY(ds.z1.Allocate(rt, i, b * d[1]));
  DXPU_WORKLOAD_TRY(ds.z2.Allocate(rt, i, b * d[2]));
  DXPU_WORKLOAD_TRY(ds.e.Allocate(rt, i, b * d[3]));
  DXPU_WORKLOAD_TRY(ds.g2.Allocate(rt, i, b * d[2]));
  DXPU_WORKLOAD_TRY(ds.g1.Allocate(rt, i, b * d[1]));
  if (i == 0) DXPU_WORKLOAD_TRY(ds.losses.Allocate(rt, i, s.steps));
  // The replicated initial weights (pageable: staged by the runtime).
  return rt.MemcpyHtoD(ds.params.at(), initial.data(), ds.params.bytes());
}

// Device `i`'s forward and backward pass on stream `st`: the shard in from `shard` (pinned),
// its gradient set into its own slot of gather[parity], then into the same slot on every
// other device, peer to peer.
Status EnqueuePasses(Runtime& rt, dxgpu::Stream st, const MlpShape& s, const Layout& l, size_t b,
                     const std::vector<DeviceState>& dev, size_t i, size_t parity,
                     const float* shard) {
  const auto& d = s.width;
  const DeviceState& ds = dev[i];
  const DeviceArray& gather = ds.gather[parity];
  const size_t mine = i * l.grads();
  auto w = [&](size_t layer) { return ds.params.at(l.w[layer]); };
  auto dw = [&](size_t layer) { return gather.at(mine + l.w[layer]); };
  const dxgpu::DevicePtr x = ds.input.at();
  const dxgpu::DevicePtr t = ds.input.at(b * d[0]);
  const float loss_scale = 0.5f / static_cast<float>(s.batch);
  DXPU_WORKLOAD_TRY(rt.MemcpyHtoDAsync(st, x, shard, ds.input.bytes()));
  // Forward; the error and the loss partial.
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, b, d[1], d[0], 1.0f, x, w(0), 0.0f, ds.z1.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, b, d[2], d[1], 1.0f, ds.z1.at(), w(1), 0.0f, ds.z2.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, b, d[3], d[2], 1.0f, ds.z2.at(), w(2), 0.0f, ds.e.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchAxpy(st, b * d[3], -1.0f, t, ds.e.at()));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, 1, 1, b * d[3], loss_scale, ds.e.at(), ds.e.at(), 0.0f,
                                  gather.at(mine + l.params)));
  // Backward.
  DXPU_WORKLOAD_TRY(
      rt.LaunchGemm(st, d[2], d[3], b, 1.0f, ds.z2.at(), ds.e.at(), 0.0f, dw(2), kTransA));
  DXPU_WORKLOAD_TRY(
      rt.LaunchGemm(st, b, d[2], d[3], 1.0f, ds.e.at(), w(2), 0.0f, ds.g2.at(), kTransB));
  DXPU_WORKLOAD_TRY(
      rt.LaunchGemm(st, d[1], d[2], b, 1.0f, ds.z1.at(), ds.g2.at(), 0.0f, dw(1), kTransA));
  DXPU_WORKLOAD_TRY(
      rt.LaunchGemm(st, b, d[1], d[2], 1.0f, ds.g2.at(), w(1), 0.0f, ds.g1.at(), kTransB));
  DXPU_WORKLOAD_TRY(rt.LaunchGemm(st, d[0], d[1], b, 1.0f, x, ds.g1.at(), 0.0f, dw(0), kTransA));
  // The all-reduce's exchange: this device's set into slot i of every peer.
  for (size_t j = 0; j < dev.size(); ++j) {
    if (j == i) continue;
    DXPU_WORKLOAD_TRY(rt.MemcpyPeerAsync(st, dev[j].gather[parity].at(mine), gather.at(mine),
                                         l.grads() * sizeof(float)));
  }
  return Status::Ok();
}

// After the exchange: device `i` sums the n sets into slot 0 in device order and steps.
Status EnqueueUpdate(Runtime& rt, dxgpu::Stream st, const MlpShape& s, const Layout& l,
                     const DeviceState& ds, size_t n, size_t parity, uint32_t step_index) {
  const DeviceArray& gather = ds.gather[parity];
  for (size_t k = 1; k < n; ++k) {
    DXPU_WORKLOAD_TRY(rt.LaunchAxpy(st, l.grads(), 1.0f, gather.at(k * l.grads()), gather.at()));
  }
  const float step = -s.learning_rate / static_cast<float>(s.batch);
  DXPU_WORKLOAD_TRY(rt.LaunchAxpy(st, l.params, step, gather.at(), ds.params.at()));
  if (ds.losses.size() == 0) return Status::Ok();
  return rt.MemcpyDtoDAsync(st, ds.losses.at(step_index), gather.at(l.params), sizeof(float));
}

}  // namespace

Status RunMlpTrain(Context& ctx) {
  Runtime& rt = ctx.rt();
  const MlpShape s = MlpShapeFor(ctx.scale());
  const Layout l = MakeLayout(s);
  const size_t n = ctx.devices();
  if (s.batch % n != 0) {
    return {dxgpu::ErrorCode::kInvalidArgument,
            fmt::format("mlp-train: batch {} does not split over {} devices", s.batch, n)};
  }
  const size_t b = s.batch / n;
  const size_t shard_size = (b * s.width[0]) + (b * s.width[kLayers]);

  // Data, initial weights and the CPU's run of the same steps.
  const std::vector<Batch> batches = MakeBatches(s, ctx.seed());
  const std::vector<float> initial = InitialParameters(s, l, ctx.seed());
  const CpuRun want = CpuTrain(s, l, batches, initial, n);

  // Pinned: each device's shard.
  PinnedArray pinned;
  DXPU_WORKLOAD_TRY(pinned.Allocate(rt, n * shard_size));
  auto pinned_shard = [&](size_t dev) { return pinned.span(dev * shard_size, shard_size); };

  std::vector<DeviceState> dev(n);
  for (size_t i = 0; i < n; ++i) DXPU_WORKLOAD_TRY(SetUpDevice(rt, i, n, s, l, b, initial, dev[i]));
  std::vector<StreamHandle> streams(n);
  for (size_t i = 0; i < n; ++i) DXPU_WORKLOAD_TRY(streams[i].Create(rt, i));
  for (size_t i = 0; i < n; ++i) DXPU_WORKLOAD_TRY(rt.SynchronizeDevice(i));  // warm-up

  ctx.StartTimer();
  for (uint32_t it = 0; it < s.steps; ++it) {
    // Gradient sets alternate between two buffers: a peer's next write cannot meet a set
    // still being summed (the synchronisation between covers the sums before it).
    const size_t parity = it % 2;
    for (size_t i = 0; i < n; ++i) {
      PackShard(s, batches[it], i, b, pinned_shard(i));
      DXPU_WORKLOAD_TRY(
          EnqueuePasses(rt, streams[i].get(), s, l, b, dev, i, parity, pinned_shard(i).data()));
    }
    // Every set has landed everywhere once every device's exchange is done.
    for (size_t i = 0; i < n; ++i) DXPU_WORKLOAD_TRY(rt.SynchronizeStream(streams[i].get()));
    for (size_t i = 0; i < n; ++i)
      DXPU_WORKLOAD_TRY(EnqueueUpdate(rt, streams[i].get(), s, l, dev[i], n, parity, it));
    ctx.IterationDone(s.steps);
  }
  for (size_t i = 0; i < n; ++i) DXPU_WORKLOAD_TRY(rt.SynchronizeStream(streams[i].get()));
  ctx.StopTimer();

  // Checks: the loss of every step, and the final weights on every device.
  constexpr double kTolerance = 1e-5;
  std::vector<float> losses(s.steps);
  DXPU_WORKLOAD_TRY(rt.MemcpyDtoH(losses.data(), dev[0].losses.at(), dev[0].losses.bytes()));
  DXPU_WORKLOAD_TRY(ctx.Check("loss", losses, want.losses, kTolerance));
  std::vector<float> got(l.params);
  for (size_t i = 0; i < n; ++i) {
    DXPU_WORKLOAD_TRY(rt.MemcpyDtoH(got.data(), dev[i].params.at(), dev[i].params.bytes()));
    for (size_t layer = 0; layer < kLayers; ++layer) {
      const std::span<const float> g(got);
      const std::span<const float> w(want.params);
      DXPU_WORKLOAD_TRY(ctx.Check(fmt::format("device {} W{}", i, layer + 1),
                                  g.subspan(l.w[layer], l.size[layer]),
                                  w.subspan(l.w[layer], l.size[layer]), kTolerance));
    }
  }
  ctx.result().summary = fmt::format(
      "{} steps, batch {} ({} per device), {}x{}x{}x{}; loss {:.4g} -> {:.4g}", s.steps, s.batch, b,
      s.width[0], s.width[1], s.width[2], s.width[3], losses.front(), losses.back());
  return Status::Ok();
}

}  // namespace dxpu::workloads::detail
