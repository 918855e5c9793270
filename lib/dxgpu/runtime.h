// runtime.h - libdxgpu: a small CUDA-like runtime over a Port (port.h). One Runtime drives
// every device of its port: device memory, pinned host memory, streams, copies, the model's
// kernels, events with the device's time, synchronisation, and statistics of where the host's
// time went. docs/dxgpu-runtime.md describes it; docs/dxgpu.md the device it programs.
//
//   auto port = dxpu::host::OpenDirectPort({});
//   auto rt = Runtime::Open(std::move(*port));          // or Runtime::Open(port_ref)
//   DevicePtr d = *(*rt)->Malloc(0, bytes);
//   Stream s = *(*rt)->CreateStream(0);
//   (*rt)->MemcpyHtoDAsync(s, d, pinned, bytes); (*rt)->LaunchAxpy(s, n, 2.0f, d, d2);
//   Status st = (*rt)->SynchronizeStream(s);
//
// Errors are values: every call returns a Status or an Expected whose message says what and
// why. Errors of the device's execution (a channel error) are reported by the first
// synchronisation that covers the failed work: SynchronizeStream/SynchronizeEvent of its
// stream, SynchronizeDevice, or the synchronous Memcpy that submitted it.
//
// Threads: every method may be called from any thread at once. Work on one device runs in
// submission order whatever the stream (the model has one channel); streams order and group
// the work a caller waits for.
#ifndef DXPU_LIB_DXGPU_RUNTIME_H_
#define DXPU_LIB_DXGPU_RUNTIME_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "dxgpu/device_allocator.h"
#include "dxgpu/device_channel.h"
#include "dxgpu/host_pools.h"
#include "dxgpu/pinned_memory.h"
#include "dxgpu/port.h"
#include "dxgpu/stats.h"
#include "dxgpu/status.h"
#include "dxgpu/types.h"

namespace dxpu::dxgpu {

// One public call that enqueues work or waits, as a profiler records a CUDA runtime call
// (RuntimeOptions::call_record; docs/dxgpu-runtime.md, "Call records").
struct CallRecord {
  // CUDA's name for it: "cudaLaunchKernel" (LaunchAxpy, LaunchGemm, LaunchReduceSum,
  // LaunchTimed), "cudaMemsetAsync" (LaunchMemset32), "cudaMemcpyAsync" (Memcpy*Async but
  // Peer), "cudaMemcpyPeerAsync", "cudaMemcpy" (MemcpyHtoD, MemcpyDtoH, MemcpyDtoD),
  // "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaEventRecord".
  const char* name = "";
  size_t device = 0;      // the device it submitted to or waited for
  uint64_t stream = 0;    // Stream::id; 0: none (a synchronous Memcpy, SynchronizeDevice)
  uint64_t start_ns = 0;  // Port::Now() when the call began
  uint64_t end_ns = 0;    // ... and when it returned
  // The sequence numbers of the submissions it made on `device`, in order: one per COPY of at
  // most 4 GiB, one per staging chunk of a pageable Memcpy, one per launch or event record;
  // empty for a wait and for a call that failed before submitting.
  std::vector<uint64_t> submissions = {};
  // cudaMemcpyPeerAsync: the device written into; SIZE_MAX for every other call.
  size_t peer_device = SIZE_MAX;
};

struct RuntimeOptions {
  uint32_t ring_entries = 1024;               // GPFIFO entries per device (power of two)
  uint64_t sync_timeout_ns = 10'000'000'000;  // the longest any single wait lasts
  uint64_t wait_slice_ns = 50'000'000;        // waits look at STATUS/Health this often
  uint64_t staging_chunk_bytes = 1 << 20;     // pageable Memcpy: chunk (two in flight)
  // Called as each call of CallRecord's list returns, on the calling thread (several at once
  // when calls are made from several threads). Null (the default): nothing recorded.
  std::function<void(const CallRecord&)> call_record = nullptr;
};

class Runtime {
 public:
  // Opens every device of `port` (which must outlive the runtime).
  static Expected<std::unique_ptr<Runtime>> Open(Port& port, const RuntimeOptions& options = {});
  // The same, owning the port.
  static Expected<std::unique_ptr<Runtime>> Open(std::unique_ptr<Port> port,
                                                 const RuntimeOptions& options = {});
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  // Waits for each device's work (bounded by sync_timeout_ns), disables the channels and
  // returns all pinned memory (MallocHost buffers not freed too) to the port.
  ~Runtime();

  Port& port() { return port_; }
  const RuntimeOptions& options() const { return options_; }

  // --- Devices ---
  size_t device_count() const { return devices_.size(); }
  Expected<DeviceProperties> GetDeviceProperties(size_t device) const;
  Expected<MemoryInfo> GetMemoryInfo(size_t device) const;

  // --- Memory ---
  // Device memory: 256-byte aligned addresses in 0 .. memory_bytes. kNoDevice, kInvalidArgument
  // (0 bytes), kOutOfMemory. Free does not wait for work that still uses the memory.
  Expected<DevicePtr> Malloc(size_t device, uint64_t bytes);
  Status Free(DevicePtr ptr);
  // Pinned host memory (zero-filled) every device can DMA. FreeHost takes what MallocHost
  // returned; anything else is kInvalidArgument.
  Expected<void*> MallocHost(uint64_t bytes);
  Status FreeHost(void* ptr);

  // --- Streams ---
  Expected<Stream> CreateStream(size_t device);
  // Forgets the stream; work already submitted still runs.
  Status DestroyStream(Stream stream);
  // Whether all work submitted on the stream is complete.
  Expected<bool> QueryStream(Stream stream);
  Status SynchronizeStream(Stream stream);
  Status SynchronizeDevice(size_t device);

  // --- Copies ---
  // Asynchronous: the host side must lie in one MallocHost buffer (else kInvalidArgument);
  // the device side in one allocation of the stream's device. Any byte alignment and size.
  Status MemcpyHtoDAsync(Stream stream, DevicePtr dst, const void* src, uint64_t bytes);
  Status MemcpyDtoHAsync(Stream stream, void* dst, DevicePtr src, uint64_t bytes);
  Status MemcpyDtoDAsync(Stream stream, DevicePtr dst, DevicePtr src, uint64_t bytes);
  // Peer to peer: from the stream's device (src) into another device's memory (dst), written
  // by the source's copy engine through the destination's memory window (a BAR) without
  // touching host memory; work after it on the stream starts once every byte has landed.
  // kInvalidArgument when dst lies beyond that window (PortDeviceInfo::memory_window_size).
  // Nothing orders it with the destination device's own work: synchronise both.
  Status MemcpyPeerAsync(Stream stream, DevicePtr dst, DevicePtr src, uint64_t bytes);
  // Synchronous: return when the copy is complete. Pageable host memory is staged through
  // pinned buffers in chunks of staging_chunk_bytes; pinned memory is copied directly.
  Status MemcpyHtoD(DevicePtr dst, const void* src, uint64_t bytes);
  Status MemcpyDtoH(void* dst, DevicePtr src, uint64_t bytes);
  Status MemcpyDtoD(DevicePtr dst, DevicePtr src, uint64_t bytes);

  // --- Kernels (docs/dxgpu.md, "Kernels"); fp32 operands 4-byte aligned, in allocations of
  // the stream's device. Limits of the model (KERNEL_TOO_BIG) are the device's to report. ---
  // dst[i] = value, i < count.
  Status LaunchMemset32(Stream stream, DevicePtr dst, uint32_t value, uint64_t count);
  // y = a * x + y, n elements.
  Status LaunchAxpy(Stream stream, uint64_t n, float a, DevicePtr x, DevicePtr y);
  // C = alpha * op(A) * op(B) + beta * C; row-major, op(A) m x k, op(B) k x n, C m x n; op(X)
  // is X or, when `transpose` says so, X^T (A then stored k x m, B n x k), as in BLAS.
  Status LaunchGemm(Stream stream, uint64_t m, uint64_t n, uint64_t k, float alpha, DevicePtr a,
                    DevicePtr b, float beta, DevicePtr c, GemmTranspose transpose = {});
  // *out = sum of x[0..n).
  Status LaunchReduceSum(Stream stream, uint64_t n, DevicePtr x, DevicePtr out);
  // A kernel that computes nothing and runs for exactly `ns` on the device (no launch
  // overhead added): trace replay (docs/perf-model.md). ns above 60 s (gpu::kMaxTimedNs):
  // kInvalidArgument, nothing submitted. 0 is allowed (a kernel that takes no time). A wait
  // lasts at most RuntimeOptions::sync_timeout_ns (10 s): raise it to wait on longer ones.
  Status LaunchTimed(Stream stream, uint64_t ns);

  // --- Events ---
  Expected<Event> CreateEvent();
  Status DestroyEvent(Event event);
  // The event is reached when the stream's work before it is complete; it then holds the
  // device's time (a timestamped semaphore).
  Status RecordEvent(Event event, Stream stream);
  // Whether it was reached (true for an event never recorded).
  Expected<bool> QueryEvent(Event event);
  Status SynchronizeEvent(Event event);
  // Device time from `start` to `end` in ns: both reached, on one device, end not before start.
  Expected<uint64_t> EventElapsedNs(Event start, Event end);

  // --- Statistics ---
  Stats GetStats() const;
  void ResetStats();

 private:
  struct DeviceState;
  struct StreamState;
  struct EventState;
  enum class HostSide : uint8_t { kSource, kDestination };

  Runtime(Port& port, std::unique_ptr<Port> owned, const RuntimeOptions& options);
  Status OpenDevices();

  Expected<DeviceState*> GetDevice(size_t device) const;
  Expected<std::shared_ptr<StreamState>> GetStream(Stream stream) const;
  Expected<std::shared_ptr<EventState>> GetEvent(Event event) const;
  // Ok when [ptr, ptr + bytes) lies in one allocation (on `device`, unless it is SIZE_MAX).
  Status CheckDeviceRange(DevicePtr ptr, uint64_t bytes, size_t device, const char* what) const;
  // Submits on the device, crediting the stream (nullptr: a synchronous call's `owner`).
  Expected<uint64_t> Submit(DeviceState& device, StreamState* stream, uint64_t owner,
                            gpu::PushbufferBuilder commands, const char* label);
  // Copies of any size as COPY commands of at most 4 GiB.
  Expected<uint64_t> SubmitCopy(DeviceState& device, StreamState* stream, uint64_t owner,
                                uint32_t flags, uint64_t src, uint64_t dst, uint64_t bytes);
  static Status WaitAndCollect(DeviceState& device, uint64_t owner, uint64_t seq);
  Status CopyPinned(HostSide side, DevicePtr device_ptr, uint64_t iova, uint64_t bytes);
  Status StageHtoD(DeviceState& device, DevicePtr dst, const uint8_t* src, uint64_t bytes);
  Status StageDtoH(DeviceState& device, uint8_t* dst, DevicePtr src, uint64_t bytes);
  Status LaunchKernel(Stream stream, const std::vector<std::pair<DevicePtr, uint64_t>>& operands,
                      gpu::PushbufferBuilder commands, const char* label);

  uint64_t NewId() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

  std::unique_ptr<Port> owned_port_;  // destroyed last
  Port& port_;
  const RuntimeOptions options_;
  StatsRecorder stats_;
  PinnedRegistry pinned_;
  TimestampSlots slots_;
  StagingPool staging_;
  std::vector<std::unique_ptr<DeviceState>> devices_;  // destroyed first: channels close

  std::atomic<uint64_t> next_id_{1};
  mutable std::shared_mutex handles_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<StreamState>> streams_;
  std::unordered_map<uint64_t, std::shared_ptr<EventState>> events_;
};

}  // namespace dxpu::dxgpu

#endif  // DXPU_LIB_DXGPU_RUNTIME_H_
