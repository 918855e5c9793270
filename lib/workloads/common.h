// common.h - what the workloads share (internal to lib/workloads): RAII owners of device
// memory, pinned memory and streams, the run's context (timing, stats, checks, progress) and
// each workload's entry point.
#ifndef DXPU_LIB_WORKLOADS_COMMON_H_
#define DXPU_LIB_WORKLOADS_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "dxgpu/runtime.h"
#include "workloads/workload.h"

// Returns the Status of `expr` from the enclosing function when it is an error.
#define DXPU_WORKLOAD_TRY(expr)                                                            \
  do {                                                                                     \
    if (::dxpu::dxgpu::Status try_status_ = (expr); !try_status_.ok()) return try_status_; \
  } while (false)

namespace dxpu::workloads::detail {

using dxgpu::DevicePtr;
using dxgpu::Runtime;
using dxgpu::Status;

// `count` floats of one device's memory, freed on destruction.
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& other) noexcept { *this = std::move(other); }
  DeviceArray& operator=(DeviceArray&& other) noexcept;
  ~DeviceArray() { Reset(); }

  // Allocates `count` (> 0) floats on `device`, freeing what this held before.
  Status Allocate(Runtime& rt, size_t device, size_t count);
  void Reset();

  // The address of element `index`.
  DevicePtr at(size_t index = 0) const { return ptr_ + (uint64_t{index} * sizeof(float)); }
  size_t size() const { return count_; }
  uint64_t bytes() const { return uint64_t{count_} * sizeof(float); }

 private:
  Runtime* rt_ = nullptr;
  DevicePtr ptr_;
  size_t count_ = 0;
};

// `count` floats of pinned host memory (Runtime::MallocHost), freed on destruction.
class PinnedArray {
 public:
  PinnedArray() = default;
  PinnedArray(const PinnedArray&) = delete;
  PinnedArray& operator=(const PinnedArray&) = delete;
  ~PinnedArray() { Reset(); }

  Status Allocate(Runtime& rt, size_t count);
  void Reset();

  float* data() const { return data_; }
  std::span<float> span() const { return {data_, count_}; }
  std::span<float> span(size_t offset, size_t count) const { return span().subspan(offset, count); }
  size_t size() const { return count_; }

 private:
  Runtime* rt_ = nullptr;
  float* data_ = nullptr;
  size_t count_ = 0;
};

// A stream, synchronised (the result ignored: an error path may be leaving) and destroyed on
// destruction, so that no work still uses memory freed after it. Declare streams after the
// memory they use, so they go first.
class StreamHandle {
 public:
  StreamHandle() = default;
  StreamHandle(const StreamHandle&) = delete;
  StreamHandle& operator=(const StreamHandle&) = delete;
  StreamHandle(StreamHandle&& other) noexcept { *this = std::move(other); }
  StreamHandle& operator=(StreamHandle&& other) noexcept;
  ~StreamHandle() { Reset(); }

  Status Create(Runtime& rt, size_t device);
  void Reset();

  dxgpu::Stream get() const { return stream_; }

 private:
  Runtime* rt_ = nullptr;
  dxgpu::Stream stream_;
};

// One run of a workload: its parameters, the timed part and the checks.
class Context {
 public:
  Context(Runtime& rt, size_t devices, Scale scale, uint64_t seed,
          const std::function<void(uint32_t, uint32_t)>& progress, WorkloadResult& result)
      : rt_(rt),
        devices_(devices),
        scale_(scale),
        seed_(seed),
        progress_(progress),
        result_(result) {}

  Runtime& rt() const { return rt_; }
  size_t devices() const { return devices_; }
  Scale scale() const { return scale_; }
  uint64_t seed() const { return seed_; }
  WorkloadResult& result() const { return result_; }

  // The timed part: Start resets the runtime's stats and notes the port's time; Stop records
  // the elapsed port time and the stats into the result.
  void StartTimer();
  void StopTimer();
  // Counts an iteration done and reports progress.
  void IterationDone(uint32_t total);

  // Compares (CompareFloats), keeps the largest error, and on a mismatch returns an error
  // naming the check and marks the run as failed by a check (not by the runtime).
  Status Check(std::string_view check, std::span<const float> got, std::span<const float> want,
               double tolerance);
  bool check_failed() const { return check_failed_; }

 private:
  Runtime& rt_;
  size_t devices_;
  Scale scale_;
  uint64_t seed_;
  const std::function<void(uint32_t, uint32_t)>& progress_;
  WorkloadResult& result_;
  uint64_t start_ns_ = 0;
  bool check_failed_ = false;
};

// The workloads' bodies (one file each).
Status RunMlpTrain(Context& ctx);
Status RunDecodeLoop(Context& ctx);
Status RunDataLoading(Context& ctx);

// A seeded stream of pseudo-random values (the same sequence on every platform).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed ^ 0x9e3779b97f4a7c15ULL) {}
  uint64_t Next();
  // Uniform in [-1, 1).
  float Uniform();
  // An integer in [-range, range], as a float.
  float SmallInteger(int range);

 private:
  uint64_t state_;
};

}  // namespace dxpu::workloads::detail

#endif  // DXPU_LIB_WORKLOADS_COMMON_H_
