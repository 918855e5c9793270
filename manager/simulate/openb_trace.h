// openb_trace.h - the public Alibaba GPU cluster trace cluster-trace-gpu-v2023 ("openb",
// github alibaba/clusterdata; the FGD paper's data, USENIX ATC'23): its node list and its pod
// lists, read from their CSV files. Untrusted input: a file that is not such a list is an
// error that names the file, line and column; a row that cannot be used is skipped and
// counted with its reason (docs/pool-simulate.md, "The trace").
//
//   node list  sn,cpu_milli,memory_mib,gpu,model
//   pod list   name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
//              creation_time,deletion_time,scheduled_time
//              (the multigpu lists: only the first five columns)
//
// cpu_milli: millicores; memory_mib: MiB; gpu_milli: the share of each of the pod's GPUs, 1..1000
// (1000: whole GPUs); gpu_spec: the GPU models the pod may run on, '|'-separated, empty: any;
// times: seconds from the trace's start.
#ifndef DXPU_MANAGER_SIMULATE_OPENB_TRACE_H_
#define DXPU_MANAGER_SIMULATE_OPENB_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dxpu::poolsim {

inline constexpr uint32_t kMilliPerGpu = 1000;

struct TraceNode {
  std::string name;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  uint32_t gpus = 0;
  std::string model;  // "" for a node without GPUs
};

struct TracePod {
  std::string name;
  uint64_t cpu_milli = 0;
  uint64_t memory_mib = 0;
  uint32_t num_gpu = 0;               // 0: a CPU-only pod
  uint32_t gpu_milli = 0;             // per GPU, 1..1000 when num_gpu > 0; 0 otherwise
  std::vector<std::string> gpu_spec;  // allowed models; empty: any
  std::optional<uint64_t> creation_time;
  std::optional<uint64_t> deletion_time;

  // The GPU milli the pod asks for in all.
  uint64_t total_gpu_milli() const { return uint64_t{num_gpu} * gpu_milli; }
  bool shares_a_gpu() const { return num_gpu == 1 && gpu_milli < kMilliPerGpu; }
};

// Rows skipped, by reason ("bad-number", "gpu-milli-out-of-range", ...).
using SkipCounts = std::map<std::string, size_t>;

template <typename Row>
struct TraceFile {
  std::vector<Row> rows;
  SkipCounts skipped;
  std::string error;  // set: the file could not be read as such a list (rows is then empty)
  bool ok() const { return error.empty(); }
  size_t skipped_total() const;
};

using NodeList = TraceFile<TraceNode>;
using PodList = TraceFile<TracePod>;

// The largest file, and row count, either reader accepts (the real lists are < 1 MB).
inline constexpr size_t kMaxTraceBytes = size_t{256} << 20;
inline constexpr size_t kMaxTraceRows = 4'000'000;
// The largest values a row may hold: beyond them it is skipped ("out-of-range"); the trace's
// largest node has 128 cores, 1 TiB and 8 GPUs.
inline constexpr uint64_t kMaxCpuMilli = uint64_t{1} << 32;
inline constexpr uint64_t kMaxMemoryMib = uint64_t{1} << 40;
inline constexpr uint32_t kMaxGpusPerRow = 1024;

NodeList ParseNodeList(std::string_view text);
PodList ParsePodList(std::string_view text);
// The file read whole (at most kMaxTraceBytes), then parsed; an error names the path.
NodeList ReadNodeList(const std::filesystem::path& path);
PodList ReadPodList(const std::filesystem::path& path);

template <typename Row>
size_t TraceFile<Row>::skipped_total() const {
  size_t n = 0;
  for (const auto& [why, count] : skipped) n += count;
  return n;
}

}  // namespace dxpu::poolsim

#endif  // DXPU_MANAGER_SIMULATE_OPENB_TRACE_H_
