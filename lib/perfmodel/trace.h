// trace.h - a workload as the performance model sees it: the host threads' runtime calls and
// the GPUs' operations, linked by correlation ID, with times in ns from the trace's first event.
// Read from a PyTorch profiler (Kineto) Chrome trace by kineto_trace.h, or generated from the
// model GPU's own runs; replayed by replay.h; timed by model.h (docs/perf-model.md).
#ifndef DXPU_LIB_PERFMODEL_TRACE_H_
#define DXPU_LIB_PERFMODEL_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace dxpu::perfmodel {

inline constexpr int64_t kNoCorrelation = -1;
inline constexpr int64_t kAnyStream = -1;
inline constexpr uint32_t kNoName = 0xffffffff;  // an event without a name in Trace::names
inline constexpr int32_t kNoDevice = -1;
inline constexpr uint32_t kNoCollective = 0xffffffff;

// An NCCL/RCCL collective, as PyTorch's profiler describes its kernel (args "Collective name",
// "In msg nelems", "Out msg nelems", "Group size", "dtype") and its name says (..._RING_...).
enum class CollectiveKind : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv,  // send, recv, and the point-to-point kernels
};
enum class CollectiveAlgorithm : uint8_t { kRing, kTree };
struct Collective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;  // ring unless the name says tree
  uint64_t bytes = 0;  // the larger of its input and output, in bytes
  uint32_t ranks = 0;  // the group's size
};                     // a peer copy whose destination is not named

// What a GPU operation is, as far as the fabric is concerned.
enum class GpuOpKind : uint8_t {
  kKernel,      // compute: no fabric traffic of its own
  kMemset,      // device memory: none
  kMemcpyHtoD,  // the copy engine reads host memory: non-posted reads across the fabric
  kMemcpyDtoH,  // the copy engine writes host memory: posted writes across the fabric
  kMemcpyDtoD,  // inside one GPU
  kMemcpyPeer,  // GPU to GPU (PtoP): inside the box when both sit behind its switch
};

struct GpuOp {
  GpuOpKind kind = GpuOpKind::kKernel;
  int32_t device = 0;
  int64_t stream = 0;
  int64_t start_ns = 0;  // from the trace's first event
  int64_t dur_ns = 0;
  uint64_t bytes = 0;  // copies and memsets; 0 for kernels
  int64_t correlation = kNoCorrelation;
  uint32_t name = kNoName;  // the kernel's or copy's name as the trace gives it (Trace::names)
  // A peer copy's destination GPU, where the trace names it (args "dst device"); kNoDevice when
  // it does not (the replay and the model then take the next GPU).
  int32_t peer_device = kNoDevice;
  // An NCCL/RCCL kernel whose collective the trace describes: its index in Trace::collectives.
  uint32_t collective = kNoCollective;
};

// What a host-side runtime call does to the GPU.
enum class CallKind : uint8_t {
  kLaunch,    // enqueues a kernel (cudaLaunchKernel, cuLaunchKernel, ...)
  kCopy,      // enqueues a copy and returns (cudaMemcpyAsync, ...)
  kMemset,    // enqueues a memset (cudaMemsetAsync, ...)
  kSyncCopy,  // enqueues a copy and waits for it (cudaMemcpy, ...)
  kSync,      // waits for GPU work (cudaStreamSynchronize, cudaDeviceSynchronize, ...)
  kOther,     // anything else (cudaMalloc, cudaEventRecord, ...): host time only
};

struct RuntimeCall {
  CallKind kind = CallKind::kOther;
  int64_t thread = 0;  // the host thread, unique in the trace ((pid << 32) | tid)
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
  int64_t correlation = kNoCorrelation;
  // A synchronisation that waited for one stream (Kineto's cuda_sync "Stream Sync" event says
  // which): its device and stream. kAnyStream: the whole device, or not known.
  int32_t sync_device = 0;
  int64_t sync_stream = kAnyStream;
  uint32_t name = kNoName;  // the API's name as the trace gives it (Trace::names)
};

struct Trace {
  std::vector<RuntimeCall> calls;  // sorted by (thread, start_ns)
  std::vector<GpuOp> ops;          // sorted by start_ns
  // Where it came from, for people: the file, the number of events read and skipped.
  std::string source;
  uint64_t events_read = 0;
  uint64_t events_skipped = 0;  // other categories, metadata, instant and flow events
  // The events' names, each once (a kernel launched a million times costs one string).
  std::vector<std::string> names;
  std::vector<Collective> collectives;  // GpuOp::collective's
  // What the trace holds that the model does not know how to time, one sentence each, for the
  // reader of its prediction (docs/perf-model.md "What the model does not know").
  std::vector<std::string> warnings;
};

// The trace's GPUs in the order a placement over boxes counts them (ModelParams::gpus_per_box,
// the simulator's SimPortOptions::gpus_per_box): those its operations run on in order of first
// use, then any a peer copy names as its destination and nothing runs on.
std::vector<int32_t> GpusInPlacementOrder(const Trace& trace);
// A peer copy's destination as an index into that order: the GPU it names, else the next one.
size_t PeerDestination(const GpuOp& op, const std::vector<int32_t>& gpus);

const char* ToString(GpuOpKind kind);
const char* ToString(CollectiveKind kind);
const char* ToString(CallKind kind);

}  // namespace dxpu::perfmodel

#endif  // DXPU_LIB_PERFMODEL_TRACE_H_
