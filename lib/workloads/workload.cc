// workload.cc - the registry of workloads, RunWorkload, and the shared helpers (common.h).
#include "workloads/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "workloads/common.h"
#include "workloads/cpu_reference.h"

namespace dxpu::workloads {
namespace detail {

// --- DeviceArray ---

DeviceArray& DeviceArray::operator=(DeviceArray&& other) noexcept {
  if (this != &other) {
    Reset();
    rt_ = std::exchange(other.rt_, nullptr);
    ptr_ = other.ptr_;
    count_ = std::exchange(other.count_, 0);
  }
  return *this;
}

Status DeviceArray::Allocate(Runtime& rt, size_t device, size_t count) {
  Reset();
  dxgpu::Expected<DevicePtr> ptr = rt.Malloc(device, uint64_t{count} * sizeof(float));
  if (!ptr.ok()) return ptr.status();
  rt_ = &rt;
  ptr_ = *ptr;
  count_ = count;
  return Status::Ok();
}

void DeviceArray::Reset() {
  if (rt_ != nullptr) (void)rt_->Free(ptr_);
  rt_ = nullptr;
  count_ = 0;
}

// --- PinnedArray ---

Status PinnedArray::Allocate(Runtime& rt, size_t count) {
  Reset();
  dxgpu::Expected<void*> data = rt.MallocHost(uint64_t{count} * sizeof(float));
  if (!data.ok()) return data.status();
  rt_ = &rt;
  data_ = static_cast<float*>(*data);
  count_ = count;
  return Status::Ok();
}

void PinnedArray::Reset() {
  if (rt_ != nullptr) (void)rt_->FreeHost(data_);
  rt_ = nullptr;
  data_ = nullptr;
  count_ = 0;
}

// --- StreamHandle ---

StreamHandle& StreamHandle::operator=(StreamHandle&& other) noexcept {
  if (this != &other) {
    Reset();
    rt_ = std::exchange(other.rt_, nullptr);
    stream_ = other.stream_;
  }
  return *this;
}

Status StreamHandle::Create(Runtime& rt, size_t device) {
  Reset();
  dxgpu::Expected<dxgpu::Stream> stream = rt.CreateStream(device);
  if (!stream.ok()) return stream.status();
  rt_ = &rt;
  stream_ = *stream;
  return Status::Ok();
}

void StreamHandle::Reset() {
  if (rt_ != nullptr) {
    (void)rt_->SynchronizeStream(stream_);
    (void)rt_->DestroyStream(stream_);
  }
  rt_ = nullptr;
}

// --- Context ---

void Context::StartTimer() {
  rt_.ResetStats();
  start_ns_ = rt_.port().Now();
  result_.iterations = 0;
}

void Context::StopTimer() {
  result_.elapsed_ns = rt_.port().Now() - start_ns_;
  result_.stats = rt_.GetStats();
}

void Context::IterationDone(uint32_t total) {
  ++result_.iterations;
  if (progress_) progress_(result_.iterations, total);
}

Status Context::Check(std::string_view check, std::span<const float> got,
                      std::span<const float> want, double tolerance) {
  const Comparison c = CompareFloats(check, got, want, tolerance);
  result_.max_abs_error = std::max(result_.max_abs_error, c.max_abs_error);
  if (c.ok) return Status::Ok();
  check_failed_ = true;
  return {dxgpu::ErrorCode::kInternal, "check failed: " + c.error};
}

// --- Random (splitmix64) ---

uint64_t Random::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

float Random::Uniform() {
  // 24 random bits: an exact float in [0, 1), then [-1, 1).
  return (static_cast<float>(Next() >> 40) * 0x1p-23f) - 1.0f;
}

float Random::SmallInteger(int range) {
  const uint64_t span = (2 * static_cast<uint64_t>(range)) + 1;
  return static_cast<float>(static_cast<int64_t>(Next() % span) - range);
}

}  // namespace detail

namespace {

struct Entry {
  WorkloadInfo info;
  dxgpu::Status (*run)(detail::Context&);
};

const std::vector<Entry>& Registry() {
  static const std::vector<Entry> entries = {
      {{"mlp-train",
        "SGD training of a 3-layer linear MLP (GEMMs forward in both layouts and backward, "
        "loss via AXPY/GEMM; the model has no elementwise nonlinearity), data-parallel over the "
        "devices with the gradients all-reduced through the host"},
       detail::RunMlpTrain},
      {{"decode-loop",
        "transformer-like autoregressive decode: per token and layer m=1 GEMMs (q/k/v, "
        "attention over a KV cache, output and MLP projections; linear, no softmax), AXPY "
        "residuals and a reduce, then logits to the host and a sync; the next token is chosen "
        "on the host (latency-bound); layers split over the devices"},
       detail::RunDecodeLoop},
      {{"data-loading",
        "input pipeline: large host-to-device copies from pinned memory, double-buffered on two "
        "streams per device, a reduce per batch and its sum back to the host "
        "(bandwidth-bound)"},
       detail::RunDataLoading},
  };
  return entries;
}

}  // namespace

std::vector<WorkloadInfo> ListWorkloads() {
  std::vector<WorkloadInfo> out;
  for (const Entry& e : Registry()) out.push_back(e.info);
  return out;
}

WorkloadResult RunWorkload(std::string_view name, dxgpu::Runtime& rt, size_t devices, Scale scale,
                           uint64_t seed, const std::function<void(uint32_t, uint32_t)>& progress) {
  WorkloadResult result;
  result.name = std::string(name);
  const auto& entries = Registry();
  const auto it = std::find_if(entries.begin(), entries.end(),
                               [&](const Entry& e) { return e.info.name == name; });
  if (it == entries.end()) {
    std::string known;
    for (const Entry& e : entries) known += (known.empty() ? "" : ", ") + e.info.name;
    result.error = fmt::format("unknown workload '{}' (known: {})", name, known);
    return result;
  }
  if (devices == 0 || devices > rt.device_count()) {
    result.error = fmt::format("{}: asked for {} devices; the runtime has {}", name, devices,
                               rt.device_count());
    return result;
  }
  detail::Context ctx(rt, devices, scale, seed, progress, result);
  const dxgpu::Status status = it->run(ctx);
  result.ok = status.ok();
  if (!status.ok()) {
    result.error = ctx.check_failed() ? status.message() : status.ToString();
  }
  return result;
}

}  // namespace dxpu::workloads
