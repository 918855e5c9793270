// kineto_trace.h - reads a PyTorch profiler (Kineto) Chrome trace into a Trace: the JSON
// object with "traceEvents" that torch.profiler's export_chrome_trace writes, plain or gzipped
// (told apart by the gzip magic, not the file name). Complete events ("ph": "X") of the
// categories cuda_runtime / cuda_driver (host calls), kernel, gpu_memcpy, gpu_memset and
// cuda_sync are read; every other event is counted as skipped. Everything in the file is
// untrusted: a malformed or truncated file, an event missing a field the model needs, or a
// file past the size limits is a ParseError that says where and what, never a crash.
#ifndef DXPU_LIB_PERFMODEL_KINETO_TRACE_H_
#define DXPU_LIB_PERFMODEL_KINETO_TRACE_H_

#include <cstdint>
#include <span>
#include <string>

#include "perfmodel/trace.h"
#include "util/expected.h"

namespace dxpu::perfmodel {

struct ParseError {
  std::string message;  // "traceEvents[41]: gpu_memcpy event without args.bytes"
};

template <typename T>
using ParseResult = util::Expected<T, ParseError>;

struct ParseLimits {
  uint64_t max_file_bytes = uint64_t{4} << 30;  // after gunzip: a gzip bomb stops here
  uint64_t max_events = uint64_t{50'000'000};   // traceEvents entries
};

// `source` names the input in messages and in Trace::source.
ParseResult<Trace> ParseKinetoTrace(std::span<const uint8_t> bytes, const std::string& source,
                                    const ParseLimits& limits = {});
ParseResult<Trace> ReadKinetoTraceFile(const std::string& path, const ParseLimits& limits = {});
// A multi-GPU job's ranks, one trace file each (*.json, *.json.gz directly in `dir`, in name
// order: rank 0 first), read as one trace on the ranks' shared clock: each rank's correlation
// IDs match its own calls only, its processes are its own, and its devices become the trace's
// in rank order (rank 0's devices, then rank 1's, ...). The limits hold for each file, the
// event limit for all of them together.
ParseResult<Trace> ReadKinetoTraceDirectory(const std::string& dir, const ParseLimits& limits = {});
// A directory as ReadKinetoTraceDirectory, anything else as ReadKinetoTraceFile.
ParseResult<Trace> ReadKinetoTrace(const std::string& path, const ParseLimits& limits = {});

}  // namespace dxpu::perfmodel

#endif  // DXPU_LIB_PERFMODEL_KINETO_TRACE_H_
