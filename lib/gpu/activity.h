// activity.h - the GPU model's activity log (docs/dxgpu.md, "The activity log"): for each
// kernel and COPY the channel runs, which GPFIFO entry it came from, what it was, its bytes and
// its start and end on the channel's own clock. What a profiler (CUPTI) records of a real GPU;
// off unless GpuOptions::activity is set.
#ifndef DXPU_LIB_GPU_ACTIVITY_H_
#define DXPU_LIB_GPU_ACTIVITY_H_

#include <cstdint>
#include <functional>

namespace dxpu::gpu {

enum class ActivityKind : uint8_t {
  kMemset32,
  kAxpy,
  kGemm,
  kReduceSum,
  kTimed,
  kCopyHostToDevice,
  kCopyDeviceToHost,
  kCopyDeviceToDevice,
  kCopyHostToHost,
  // Device memory written to a bus address with the flush flag: what a peer-to-peer copy into
  // another device's memory window is (libdxgpu's MemcpyPeerAsync); the device cannot tell
  // whose memory the address is, the flush is what marks it.
  kCopyPeer,
};

struct CommandActivity {
  // The GPFIFO entry the command came from: the n-th entry run since the ring was set up
  // (GPFIFO_ENTRIES written, or reset), 1-based, counted by ring position. libdxgpu's
  // submission sequence number of the entry.
  uint64_t entry = 0;
  ActivityKind kind = ActivityKind::kTimed;
  uint64_t bytes = 0;     // a COPY's size; MEMSET32: 4 x count; other kernels 0
  uint64_t start_ns = 0;  // the channel's time when the command started
  uint64_t end_ns = 0;    // ... and when it finished (the next command may start)

  bool operator==(const CommandActivity&) const = default;
};

// Called by the channel as each command finishes, from inside GpuDevice's Receive/Poll: it
// must not call back into the device.
using ActivitySink = std::function<void(const CommandActivity&)>;

constexpr bool IsCopy(ActivityKind kind) { return kind >= ActivityKind::kCopyHostToDevice; }

constexpr const char* ToString(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kMemset32:
      return "memset32";
    case ActivityKind::kAxpy:
      return "axpy";
    case ActivityKind::kGemm:
      return "gemm";
    case ActivityKind::kReduceSum:
      return "reduce-sum";
    case ActivityKind::kTimed:
      return "timed";
    case ActivityKind::kCopyHostToDevice:
      return "copy host->device";
    case ActivityKind::kCopyDeviceToHost:
      return "copy device->host";
    case ActivityKind::kCopyDeviceToDevice:
      return "copy device->device";
    case ActivityKind::kCopyHostToHost:
      return "copy host->host";
    case ActivityKind::kCopyPeer:
      return "copy peer";
  }
  return "?";
}

}  // namespace dxpu::gpu

#endif  // DXPU_LIB_GPU_ACTIVITY_H_
