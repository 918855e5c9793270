// kineto_trace_test.cc - the PyTorch profiler (Kineto) trace reader (lib/perfmodel/
// kineto_trace.h): a realistic small trace, plain, gzipped and from a file, read to the exact
// calls and operations; unusual but valid spellings; every malformed input an error that says
// what, including every truncation; the size and event limits (a gzip bomb); and random
// mutations of a valid trace, which must never crash (and what the reader accepts, the model
// and the timeline take).
#include "perfmodel/kineto_trace.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "perfmodel/model.h"
#include "perfmodel/timeline.h"

namespace dxpu::perfmodel {
namespace {

using Bytes = std::vector<uint8_t>;

std::string DataPath(std::string_view name) {
  return std::string(DXPU_PERFMODEL_TEST_DATA) + "/" + std::string(name);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::span<const uint8_t> AsBytes(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

ParseResult<Trace> Parse(std::string_view text, const ParseLimits& limits = {}) {
  return ParseKinetoTrace(AsBytes(text), "case.json", limits);
}

// `piece` repeated `repeat` times, gzipped (one member), fed to zlib a piece at a time.
Bytes GzipRepeated(std::string_view piece, size_t repeat) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  Bytes out;
  std::array<uint8_t, 1 << 16> buffer{};
  for (size_t i = 0; i <= repeat; ++i) {
    const bool last = i == repeat;
    std::string copy = last ? std::string() : std::string(piece);
    stream.next_in = reinterpret_cast<Bytef*>(copy.data());
    stream.avail_in = static_cast<uInt>(copy.size());
    do {
      stream.next_out = buffer.data();
      stream.avail_out = buffer.size();
      deflate(&stream, last ? Z_FINISH : Z_NO_FLUSH);
      out.insert(out.end(), buffer.data(), buffer.data() + (buffer.size() - stream.avail_out));
    } while (stream.avail_out == 0);
  }
  deflateEnd(&stream);
  return out;
}

Bytes Gzip(std::string_view text) { return GzipRepeated(text, 1); }

// A file under the test's temporary directory, removed at the end of the test.
class TempFile {
 public:
  explicit TempFile(std::span<const uint8_t> contents) {
    std::string pattern = testing::TempDir() + "kineto_trace_test.XXXXXX";
    const int fd = mkstemp(pattern.data());
    EXPECT_GE(fd, 0);
    path_ = pattern;
    EXPECT_EQ(write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
    close(fd);
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// --- Rendering a trace as lines to compare ---

// "4242/4243", or "4242/#0" for the first named thread.
std::string RenderThread(int64_t thread) {
  const auto bits = static_cast<uint64_t>(thread);
  const auto tid = static_cast<uint32_t>(bits);
  const std::string tid_text =
      (tid & 0x80000000u) != 0 ? "#" + std::to_string(tid & 0x7fffffffu) : std::to_string(tid);
  return std::to_string(bits >> 32) + "/" + tid_text;
}

std::vector<std::string> RenderCalls(const Trace& trace) {
  std::vector<std::string> lines;
  for (const RuntimeCall& call : trace.calls) {
    std::ostringstream line;
    line << ToString(call.kind) << " " << RenderThread(call.thread) << " start=" << call.start_ns
         << " dur=" << call.dur_ns << " corr=" << call.correlation;
    lines.push_back(line.str());
  }
  return lines;
}

std::vector<std::string> RenderOps(const Trace& trace) {
  std::vector<std::string> lines;
  for (const GpuOp& op : trace.ops) {
    std::ostringstream line;
    line << ToString(op.kind) << " dev=" << op.device << " stream=" << op.stream
         << " start=" << op.start_ns << " dur=" << op.dur_ns << " bytes=" << op.bytes
         << " corr=" << op.correlation;
    lines.push_back(line.str());
  }
  return lines;
}

void ExpectSameTrace(const Trace& a, const Trace& b) {
  EXPECT_EQ(RenderCalls(a), RenderCalls(b));
  EXPECT_EQ(RenderOps(a), RenderOps(b));
  EXPECT_EQ(a.events_read, b.events_read);
  EXPECT_EQ(a.events_skipped, b.events_skipped);
}

// --- The small, realistic trace ---

const std::vector<std::string> kSmallCalls = {
    // The main thread, 4242/4243.
    "copy 4242/4243 start=0 dur=8250 corr=101",
    "launch 4242/4243 start=10000 dur=4500 corr=102",
    "launch 4242/4243 start=15000 dur=3000 corr=103",
    "memset 4242/4243 start=19000 dur=2000 corr=104",
    "copy 4242/4243 start=22000 dur=5000 corr=105",
    "sync 4242/4243 start=28000 dur=68000 corr=106",
    "other 4242/4243 start=96500 dur=250 corr=108",
    "launch 4242/4243 start=97000 dur=1500 corr=107",
    // The autograd thread, 4242/4250.
    "launch 4242/4250 start=12000 dur=3500 corr=201",
    "sync 4242/4250 start=100000 dur=2000 corr=202",
};

const std::vector<std::string> kSmallOps = {
    "memcpy-htod dev=0 stream=7 start=5000 dur=12000 bytes=4194304 corr=101",
    "kernel dev=1 stream=13 start=16000 dur=10000 bytes=0 corr=201",
    "kernel dev=0 stream=7 start=17500 dur=20125 bytes=0 corr=102",
    "kernel dev=0 stream=7 start=37625 dur=50000 bytes=0 corr=103",
    "memset dev=0 stream=7 start=87625 dur=1375 bytes=65536 corr=104",
    "memcpy-dtoh dev=0 stream=7 start=89000 dur=6500 bytes=1048576 corr=105",
    "kernel dev=0 stream=7 start=99000 dur=3000 bytes=0 corr=107",
};

TEST(KinetoTraceTest, SmallTraceParsesToTheExpectedCallsAndOps) {
  const std::string text = ReadText(DataPath("small_trace.json"));
  const ParseResult<Trace> trace = Parse(text);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(RenderCalls(trace.value()), kSmallCalls);
  EXPECT_EQ(RenderOps(trace.value()), kSmallOps);
  // 10 runtime and driver calls, 7 GPU operations, 1 cuda_sync event.
  EXPECT_EQ(trace.value().events_read, 18u);
  // user_annotation, 3 cpu_op, python_function, gpu_user_annotation, 4 flow, 7 metadata,
  // 1 counter, 2 instant events.
  EXPECT_EQ(trace.value().events_skipped, 20u);
  EXPECT_EQ(trace.value().source, "case.json");
}

TEST(KinetoTraceTest, GzippedTraceParsesIdentically) {
  const std::string text = ReadText(DataPath("small_trace.json"));
  const ParseResult<Trace> plain = Parse(text);
  const Bytes gzipped = Gzip(text);
  ASSERT_LT(gzipped.size(), text.size() / 2);
  const ParseResult<Trace> unzipped = ParseKinetoTrace(gzipped, "case.json.gz");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  ASSERT_TRUE(unzipped.ok()) << unzipped.error().message;
  ExpectSameTrace(plain.value(), unzipped.value());
  EXPECT_EQ(RenderOps(unzipped.value()), kSmallOps);

  // The same from a file, whatever it is called: gzip is told by its magic.
  const TempFile file(gzipped);
  const ParseResult<Trace> from_file = ReadKinetoTraceFile(file.path());
  ASSERT_TRUE(from_file.ok()) << from_file.error().message;
  ExpectSameTrace(plain.value(), from_file.value());
  EXPECT_EQ(from_file.value().source, file.path());
}

TEST(KinetoTraceTest, ConcatenatedGzipMembersParseAsOneTrace) {
  const std::string text = ReadText(DataPath("small_trace.json"));
  const size_t half = text.size() / 2;
  Bytes gzipped = Gzip(std::string_view(text).substr(0, half));
  const Bytes second = Gzip(std::string_view(text).substr(half));
  gzipped.insert(gzipped.end(), second.begin(), second.end());
  const ParseResult<Trace> trace = ParseKinetoTrace(gzipped, "two-members.json.gz");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(RenderCalls(trace.value()), kSmallCalls);
  EXPECT_EQ(RenderOps(trace.value()), kSmallOps);
}

TEST(KinetoTraceTest, ReadsAPlainFile) {
  const std::string path = DataPath("small_trace.json");
  const ParseResult<Trace> trace = ReadKinetoTraceFile(path);
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  EXPECT_EQ(RenderCalls(trace.value()), kSmallCalls);
  EXPECT_EQ(RenderOps(trace.value()), kSmallOps);
  EXPECT_EQ(trace.value().source, path);
}

TEST(KinetoTraceTest, CompactTraceParses) {
  // The seed of the truncation and mutation tests below: every kind of event in 2.7 KB.
  const ParseResult<Trace> trace = ReadKinetoTraceFile(DataPath("compact_trace.json"));
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  const std::vector<std::string> calls = {
      "copy 7/8 start=0 dur=2500 corr=1",       "launch 7/8 start=3000 dur=3000 corr=2",
      "memset 7/8 start=7000 dur=1000 corr=4",  "sync-copy 7/8 start=9000 dur=20000 corr=5",
      "sync 7/8 start=30000 dur=4000 corr=6",   "sync 7/8 start=35000 dur=1000 corr=7",
      "launch 7/#0 start=3500 dur=1000 corr=3",
  };
  const std::vector<std::string> ops = {
      "memcpy-htod dev=0 stream=7 start=2000 dur=2000 bytes=4096 corr=1",
      "kernel dev=0 stream=7 start=5000 dur=4125 bytes=0 corr=2",
      "kernel dev=1 stream=9 start=5250 dur=0 bytes=0 corr=3",
      "memset dev=0 stream=7 start=9500 dur=500 bytes=256 corr=4",
      "memcpy-dtoh dev=0 stream=7 start=11000 dur=6000 bytes=8192 corr=5",
      "memcpy-dtod dev=0 stream=7 start=18000 dur=1000 bytes=64 corr=-1",
      "memcpy-peer dev=1 stream=9 start=20000 dur=1000 bytes=128 corr=8",
  };
  EXPECT_EQ(RenderCalls(trace.value()), calls);
  EXPECT_EQ(RenderOps(trace.value()), ops);
  EXPECT_EQ(trace.value().events_read, 16u);
  EXPECT_EQ(trace.value().events_skipped, 5u);
}

// --- Unusual but valid ---

TEST(KinetoTraceTest, UnusualButValidTraceParses) {
  // Numbers as strings, pid/tid as strings (a name among them), the older upper-case
  // categories and memcpy names, unknown fields, events out of time order, zero and fractional
  // durations, API names with suffixes, and a cuda_sync event that makes an unknown call a sync.
  const ParseResult<Trace> trace = ReadKinetoTraceFile(DataPath("unusual_trace.json"));
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  const std::vector<std::string> calls = {
      "memset 4242/4243 start=0 dur=0 corr=18",
      "sync-copy 4242/4243 start=5000 dur=20000 corr=11",
      "launch 4242/4243 start=10250 dur=2500 corr=12",
      "launch 4242/4243 start=13000 dur=1000 corr=19",  // cudaLaunchKernelExC_v11060
      "launch 4242/4243 start=14000 dur=750 corr=20",   // cudaGraphLaunch
      "other 4242/4243 start=14500 dur=250 corr=21",    // cudaLaunchHostFunc: no kernel
      "copy 4242/4243 start=19000 dur=500 corr=-1",
      "other 4242/4243 start=21000 dur=500 corr=31",    // no cuda_sync event for it
      "sync 4242/4243 start=22000 dur=10000 corr=30",   // cudaFancyNewWait, by its cuda_sync
      "sync 4242/4243 start=50000 dur=1000 corr=32",    // cudaStreamSynchronize_ptsz
      "copy 4242/#0 start=1000 dur=1000 corr=15",       // cuMemcpyHtoDAsync_v2
      "sync-copy 4242/#0 start=3000 dur=1500 corr=16",  // cuMemcpyHtoD_v2
      "sync 4242/#0 start=40000 dur=4000 corr=17",      // cuCtxSynchronize
  };
  const std::vector<std::string> ops = {
      "memcpy-htod dev=0 stream=7 start=15000 dur=3000 bytes=4096 corr=11",
      "kernel dev=0 stream=7 start=20500 dur=1 bytes=0 corr=12",
      "memcpy-dtod dev=0 stream=8 start=30125 dur=0 bytes=512 corr=-1",
      "memcpy-peer dev=1 stream=9 start=31234 dur=1001 bytes=8192 corr=13",
      "memset dev=0 stream=7 start=32000 dur=500 bytes=0 corr=14",
      "kernel dev=0 stream=7 start=60000 dur=2000 bytes=0 corr=19",
  };
  EXPECT_EQ(RenderCalls(trace.value()), calls);
  EXPECT_EQ(RenderOps(trace.value()), ops);
  EXPECT_EQ(trace.value().events_read, 22u);
  EXPECT_EQ(trace.value().events_skipped, 4u);
}

TEST(KinetoTraceTest, EqualStartsKeepTheirOrderInTheFile) {
  const ParseResult<Trace> trace = Parse(R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "b", "ts": 5, "dur": 2, "args": {"device": 0, "stream": 2, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "a", "ts": 5, "dur": 1, "args": {"device": 0, "stream": 1, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 4, "dur": 1, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 4, "dur": 1, "args": {"correlation": 1}}
  ]})");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace.value().ops.size(), 2u);
  EXPECT_EQ(trace.value().ops[0].correlation, 2);
  EXPECT_EQ(trace.value().ops[1].correlation, 1);
  ASSERT_EQ(trace.value().calls.size(), 2u);
  EXPECT_EQ(trace.value().calls[0].correlation, 2);
  EXPECT_EQ(trace.value().calls[1].correlation, 1);
}

// A "Stream Sync" cuda_sync event names the stream its synchronisation waited for; a
// "Context Sync" waits for the whole device.
TEST(KinetoTraceTest, StreamSyncEventsNameTheStreamWaitedFor) {
  const ParseResult<Trace> trace = Parse(R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 2, "args": {"device": 1, "stream": 9, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 4, "dur": 1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1, "tid": 1, "ts": 6, "dur": 2, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 1, "tid": 9, "ts": 6, "dur": 2, "args": {"device": 1, "stream": 9, "correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 9, "dur": 1, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 1, "tid": 9, "ts": 9, "dur": 1, "args": {"device": 1, "stream": 9, "correlation": 3}}
  ]})");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace.value().calls.size(), 3u);
  EXPECT_EQ(trace.value().calls[0].sync_stream, kAnyStream);  // the launch
  EXPECT_EQ(trace.value().calls[1].kind, CallKind::kSync);
  EXPECT_EQ(trace.value().calls[1].sync_device, 1);
  EXPECT_EQ(trace.value().calls[1].sync_stream, 9);
  EXPECT_EQ(trace.value().calls[2].kind, CallKind::kSync);
  EXPECT_EQ(trace.value().calls[2].sync_stream, kAnyStream);
}

// The same trace with its clock at 0 and at an epoch in microseconds (as Kineto writes it, with
// a nanosecond fraction): the times read are the same to the nanosecond (issue 35: a double
// held the epoch's microseconds only to 0.25 us, so the two read 1879.6 and 1882.66 us).
TEST(KinetoTraceTest, NanosecondsSurviveAnEpochClockBase) {
  // ts as Kineto writes it: whole microseconds from `base_us`, then three decimals.
  const auto ts = [](uint64_t base_us, uint64_t us, int ns) {
    return fmt::format("{}.{:03}", base_us + us, ns);
  };
  const auto at_base = [&](uint64_t base_us) {
    return Parse(fmt::format(R"({{"traceEvents": [
      {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 0.249, "args": {{"correlation": 1}}}},
      {{"ph": "X", "cat": "kernel", "name": "k", "ts": {}, "dur": 1.001, "args": {{"device": 0, "stream": 7, "correlation": 1}}}},
      {{"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": {}, "dur": 1.358, "args": {{"correlation": 2}}}}
    ]}})",
                             ts(base_us, 9, 501), ts(base_us, 10, 123), ts(base_us, 9, 777)));
  };
  const ParseResult<Trace> zero = at_base(0);
  const ParseResult<Trace> epoch = at_base(1'700'000'000'000'000);  // 2023-11-14 in us
  ASSERT_TRUE(zero.ok()) << zero.error().message;
  ASSERT_TRUE(epoch.ok()) << epoch.error().message;
  EXPECT_EQ(RenderCalls(epoch.value()), RenderCalls(zero.value()));
  EXPECT_EQ(RenderOps(epoch.value()), RenderOps(zero.value()));
  ASSERT_EQ(zero.value().ops.size(), 1u);
  EXPECT_EQ(zero.value().ops[0].start_ns, 622);  // 10.123 us - 9.501 us
  EXPECT_EQ(zero.value().ops[0].dur_ns, 1001);
}

// cudaStreamWaitEvent makes the GPU wait, not the host, and a query returns at once: neither is
// a synchronisation, whatever cuda_sync event Kineto records beside them. A cudaMemcpyAsync to
// pageable memory returns only when the copy is done: a synchronous copy; to pinned memory it is
// asynchronous.
TEST(KinetoTraceTest, NonBlockingCallsAreNotSyncsAndPageableCopiesAre) {
  const ParseResult<Trace> trace = Parse(R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 9}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": {"correlation": 2}},
    {"ph": "X", "cat": "cuda_sync", "name": "Wait Event", "pid": 1, "tid": 7, "ts": 2, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventQuery", "pid": 1, "tid": 1, "ts": 3, "dur": 1, "args": {"correlation": 3}},
    {"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "pid": 1, "tid": 7, "ts": 3, "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 4, "dur": 5, "args": {"correlation": 4}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "ts": 5, "dur": 3, "args": {"device": 0, "stream": 7, "correlation": 4, "bytes": 4096}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 10, "dur": 1, "args": {"correlation": 5}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "ts": 11, "dur": 3, "args": {"device": 0, "stream": 7, "correlation": 5, "bytes": 4096}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventSynchronize", "pid": 1, "tid": 1, "ts": 12, "dur": 3, "args": {"correlation": 6}}
  ]})json");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  ASSERT_EQ(trace.value().calls.size(), 5u);
  EXPECT_EQ(trace.value().calls[0].kind, CallKind::kOther) << "cudaStreamWaitEvent";
  EXPECT_EQ(trace.value().calls[1].kind, CallKind::kOther) << "cudaEventQuery";
  EXPECT_EQ(trace.value().calls[2].kind, CallKind::kSyncCopy) << "to pageable memory";
  EXPECT_EQ(trace.value().calls[3].kind, CallKind::kCopy) << "to pinned memory";
  EXPECT_EQ(trace.value().calls[4].kind, CallKind::kSync) << "cudaEventSynchronize";
}

// PyTorch on ROCm: HIP's runtime names, read as CUDA's; a copy's size on its host call
// (args.size) when the GPU side has no args.bytes (issue 35: rejected for a missing args.bytes).
TEST(KinetoTraceTest, RocmTracesReadAsCudaOnes) {
  const ParseResult<Trace> trace = Parse(R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyAsync", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"correlation": 1, "size": 65536}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 2, "dur": 5, "args": {"device": 0, "stream": 3, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipExtLaunchKernel", "pid": 1, "tid": 1, "ts": 4, "dur": 1, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "Cijk_gemm", "ts": 8, "dur": 10, "args": {"device": 0, "stream": 3, "correlation": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 5, "dur": 1, "args": {"correlation": 3}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 18, "dur": 1, "args": {"device": 0, "stream": 3, "correlation": 3}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipMemsetAsync", "pid": 1, "tid": 1, "ts": 6, "dur": 1, "args": {"correlation": 4}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipStreamWaitEvent", "pid": 1, "tid": 1, "ts": 7, "dur": 1, "args": {"correlation": 5}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpy", "pid": 1, "tid": 1, "ts": 9, "dur": 12, "args": {"correlation": 6, "size": 4096}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "ts": 19, "dur": 1, "args": {"device": 0, "stream": 3, "correlation": 6}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipDeviceSynchronize", "pid": 1, "tid": 1, "ts": 22, "dur": 1, "args": {"correlation": 7}}
  ]})json");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  const std::vector<std::string> calls = {
      "copy 1/1 start=0 dur=2000 corr=1",      "launch 1/1 start=3000 dur=1000 corr=2",
      "launch 1/1 start=4000 dur=1000 corr=3", "memset 1/1 start=5000 dur=1000 corr=4",
      "other 1/1 start=6000 dur=1000 corr=5",  "sync-copy 1/1 start=8000 dur=12000 corr=6",
      "sync 1/1 start=21000 dur=1000 corr=7",
  };
  EXPECT_EQ(RenderCalls(trace.value()), calls);
  ASSERT_EQ(trace.value().ops.size(), 4u);
  EXPECT_EQ(trace.value().ops[0].bytes, 65536u);  // from hipMemcpyAsync's args.size
  EXPECT_EQ(trace.value().ops[3].bytes, 4096u);
  // A copy whose size neither side says is still an error.
  const ParseResult<Trace> unsized = Parse(R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyAsync", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"correlation": 1}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 2, "dur": 5, "args": {"device": 0, "stream": 3, "correlation": 1}}
  ]})json");
  ASSERT_FALSE(unsized.ok());
  EXPECT_NE(unsized.error().message.find("without args.bytes"), std::string::npos)
      << unsized.error().message;
}

// Host calls of a runtime the model does not know: an error that says so, not a prediction of
// 0.00% (issue 35).
TEST(KinetoTraceTest, ATraceWhoseCallsTheModelCannotReadSaysSo) {
  const ParseResult<Trace> trace = Parse(R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "zeCommandListAppendKernelX", "pid": 1, "tid": 1, "ts": 1, "dur": 2, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 4, "dur": 5, "args": {"device": 0, "stream": 3, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "zeFenceHostSynchronize", "pid": 1, "tid": 1, "ts": 4, "dur": 6, "args": {"correlation": 2}}
  ]})json");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("cannot say what DxPU would cost"), std::string::npos)
      << trace.error().message;
}

// What the model does not time as it ran is said, one warning each (docs/perf-model.md "What
// the model does not know"); a plain trace has none.
TEST(KinetoTraceTest, WhatTheModelDoesNotKnowIsWarnedOf) {
  const ParseResult<Trace> trace = Parse(R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ts": 3, "dur": 9, "args": {"device": 0, "stream": 3, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 11, "tid": 1, "ts": 2, "dur": 1, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 12, "dur": 1, "args": {"device": 1, "stream": 3, "correlation": 2}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy PtoP (Device -> Device)", "ts": 14, "dur": 2, "args": {"device": 1, "stream": 3, "bytes": 64}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaEventQuery", "pid": 10, "tid": 9, "ts": 20, "dur": 1, "args": {"correlation": 3}}
  ]})json");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  const std::vector<std::string>& w = trace.value().warnings;
  ASSERT_EQ(w.size(), 4u);
  EXPECT_NE(w[0].find("1 NCCL/RCCL kernels"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("1 CUDA graph launches"), std::string::npos) << w[1];
  EXPECT_NE(w[2].find("1 peer copies"), std::string::npos) << w[2];
  EXPECT_NE(w[3].find("1 host threads make no launch"), std::string::npos) << w[3];
  const ParseResult<Trace> plain = ReadKinetoTraceFile(DataPath("small_trace.json"));
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain.value().warnings.empty());
}

// NCCL kernels as PyTorch 2.x's profiler describes them: the collective, its size and group
// read into Trace::collectives; kernels without the description (older PyTorch), or with one
// the model cannot use (a barrier, an unknown dtype), are counted and stay fixed-length.
TEST(KinetoTraceTest, NcclKernelsReadTheirCollectiveSizeAndGroup) {
  const ParseResult<Trace> trace = Parse(R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "ts": 3, "dur": 90, "args": {"device": 0, "stream": 3, "correlation": 1, "Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576, "Group size": 8, "dtype": "BFloat16"}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "ts": 100, "dur": 9, "args": {"device": 0, "stream": 3, "Collective name": "_allgather_base", "In msg nelems": 1000, "Out msg nelems": 4000, "Group size": 4, "dtype": "Float"}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_TREE_LL_Sum_float", "ts": 120, "dur": 9, "args": {"device": 0, "stream": 3, "Collective name": "all_reduce", "In msg nelems": 16, "Out msg nelems": 16, "Group size": 2, "dtype": "float"}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ts": 140, "dur": 9, "args": {"device": 0, "stream": 3}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Barrier", "ts": 160, "dur": 9, "args": {"device": 0, "stream": 3, "Collective name": "barrier", "In msg nelems": 1, "Group size": 8, "dtype": "Float"}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "ts": 180, "dur": 9, "args": {"device": 0, "stream": 3, "Collective name": "allreduce", "In msg nelems": 8, "Group size": 8, "dtype": "complex_thing"}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "ts": 200, "dur": 9, "args": {"device": 0, "stream": 3, "Collective name": "allreduce", "In msg nelems": -8, "Group size": 8, "dtype": "Float"}}
  ]})json");
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  const Trace& t = trace.value();
  ASSERT_EQ(t.collectives.size(), 3u);
  EXPECT_EQ(t.collectives[0].kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(t.collectives[0].bytes, 2u << 20);  // a million bf16
  EXPECT_EQ(t.collectives[0].ranks, 8u);
  EXPECT_EQ(t.collectives[0].algorithm, CollectiveAlgorithm::kRing);
  EXPECT_EQ(t.collectives[1].kind, CollectiveKind::kAllGather);
  EXPECT_EQ(t.collectives[1].bytes, 16000u);  // the larger: its output
  EXPECT_EQ(t.collectives[2].algorithm, CollectiveAlgorithm::kTree);
  size_t described = 0;
  for (const GpuOp& op : t.ops) {
    if (op.collective == kNoCollective) continue;
    ASSERT_LT(op.collective, t.collectives.size());
    ++described;
  }
  EXPECT_EQ(described, 3u);
  ASSERT_FALSE(t.warnings.empty());
  EXPECT_NE(t.warnings[0].find("7 NCCL/RCCL kernels: 3 described"), std::string::npos)
      << t.warnings[0];
  EXPECT_NE(t.warnings[0].find("4 without that description"), std::string::npos) << t.warnings[0];
}

// A rank's events: its process numbers its correlations from 1. `pid`, `device`, the kernel's
// `kernel_dur` and `dst` (a peer copy's destination) tell ranks apart.
std::string RankEvents(int pid, int device, int kernel_dur, int dst) {
  return fmt::format(R"json(
    {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {0}, "tid": 1, "ts": 1, "dur": 1, "args": {{"correlation": 1}}}},
    {{"ph": "X", "cat": "kernel", "name": "k", "ts": 3, "dur": {2}, "args": {{"device": {1}, "stream": 7, "correlation": 1}}}},
    {{"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyPeerAsync", "pid": {0}, "tid": 1, "ts": 4, "dur": 1, "args": {{"correlation": 2}}}},
    {{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy PtoP (Device -> Device)", "ts": 20, "dur": 2, "args": {{"device": {1}, "stream": 7, "bytes": 64, "correlation": 2, "dst device": {3}}}}},
    {{"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": {0}, "tid": 1, "ts": 5, "dur": 30, "args": {{"correlation": 3}}}})json",
                     pid, device, kernel_dur, dst);
}

// Ranks merged into one file: the GPU's side names no process, so a correlation ID that two
// processes' calls have cannot be matched; refused, pointing at the directory form (issue 35).
TEST(KinetoTraceTest, RanksMergedIntoOneFileWithSharedCorrelationsAreRefused) {
  const ParseResult<Trace> merged =
      Parse(fmt::format(R"json({{"traceEvents": [{}, {}]}})json", RankEvents(100, 0, 9, 1),
                        RankEvents(200, 1, 5, 0)));
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.error().message.find("names host calls of two processes"), std::string::npos)
      << merged.error().message;
  EXPECT_NE(merged.error().message.find("dxpu model DIR"), std::string::npos)
      << merged.error().message;
  // Several processes whose IDs do not meet are matched as they are.
  const ParseResult<Trace> apart = Parse(
      R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 3, "dur": 4, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 2, "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 3, "dur": 4, "args": {"device": 1, "stream": 7, "correlation": 2}}
  ]})json");
  ASSERT_TRUE(apart.ok()) << apart.error().message;
}

// A directory of ranks' traces (ReadKinetoTraceDirectory): each rank's calls pair with its own
// GPU work. Ranks on one node number their GPUs alike (rank 1's is device 1), and the numbers
// stay; ranks on several nodes each have a device 0, and the GPUs are numbered in rank order.
TEST(KinetoTraceTest, ADirectoryOfRanksReadsAsOneTraceWithEachRanksOwnCorrelations) {
  const std::string dir = testing::TempDir() + "ranks." + std::to_string(getpid());
  for (const bool one_node : {true, false}) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto write = [&](const std::string& name, const std::string& events) {
      std::ofstream(dir + "/" + name) << fmt::format(R"json({{"traceEvents": [{}]}})json", events);
    };
    // The same pid in both: two hosts' processes. File names give the ranks' order.
    write("b-rank1.json", RankEvents(4242, one_node ? 1 : 0, 5, one_node ? 0 : 1));
    write("a-rank0.json", RankEvents(4242, 0, 9, 1));
    std::ofstream(dir + "/notes.txt") << "not a trace";
    const ParseResult<Trace> trace = ReadKinetoTrace(dir);
    ASSERT_TRUE(trace.ok()) << trace.error().message;
    const Trace& t = trace.value();
    EXPECT_EQ(t.source, dir);
    ASSERT_EQ(t.ops.size(), 4u);
    ASSERT_EQ(t.calls.size(), 6u);
    std::set<int64_t> processes;  // one per rank, though both had pid 4242
    for (const RuntimeCall& call : t.calls) processes.insert(call.thread >> 32);
    EXPECT_EQ(processes.size(), 2u);
    std::map<int64_t, int32_t> device_of_process;
    for (const GpuOp& op : t.ops) {
      // One call has the op's correlation: its own rank's.
      std::vector<const RuntimeCall*> callers;
      for (const RuntimeCall& call : t.calls) {
        if (call.correlation == op.correlation) callers.push_back(&call);
      }
      ASSERT_EQ(callers.size(), 1u) << "correlation " << op.correlation;
      const auto [it, added] = device_of_process.emplace(callers[0]->thread >> 32, op.device);
      EXPECT_EQ(it->second, op.device) << "a rank's work on two devices";
      if (op.kind == GpuOpKind::kKernel) {
        // Rank 0's kernel ran 9 us on device 0, rank 1's 5 us on device 1.
        ASSERT_TRUE(op.device == 0 || op.device == 1) << op.device;
        EXPECT_EQ(op.dur_ns, op.device == 0 ? 9000 : 5000) << op.device;
      } else if (one_node) {
        // Each rank copied into the other's GPU.
        EXPECT_EQ(op.peer_device, 1 - op.device);
      } else {
        // Each copied into its own node's device 1: GPUs after the ranks' own 0 and 1.
        EXPECT_GE(op.peer_device, 2);
      }
    }
    EXPECT_EQ(device_of_process.size(), 2u);
  }
  std::filesystem::remove_all(dir);
  // A directory without trace files says so.
  std::filesystem::create_directories(dir);
  const ParseResult<Trace> empty = ReadKinetoTrace(dir);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("no trace files"), std::string::npos)
      << empty.error().message;
  std::filesystem::remove_all(dir);
}

// The timeline names events as the trace did (the kernel's, the API's), each name kept once
// in the trace however often it occurs; the model's kind goes in args (issue 35: names were
// dropped from the timeline).
TEST(KinetoTraceTest, TheTimelineKeepsTheTracesNames) {
  const ParseResult<Trace> trace = ReadKinetoTraceFile(DataPath("compact_trace.json"));
  ASSERT_TRUE(trace.ok()) << trace.error().message;
  const std::vector<std::string>& names = trace.value().names;
  EXPECT_EQ(std::ranges::count(names, "cudaLaunchKernel"), 1);
  std::ostringstream out;
  WriteTimeline(out, trace.value(), Retime(trace.value(), ModelParams{}));
  const nlohmann::json timeline = nlohmann::json::parse(out.str());
  std::set<std::string> seen;
  for (const nlohmann::json& e : timeline["traceEvents"]) {
    if (e["ph"] == "X")
      seen.insert(e["name"].get<std::string>() + "/" + e["args"]["kind"].get<std::string>());
  }
  for (const char* expected :
       {"gemm/kernel", "relu/kernel", "cudaLaunchKernel/launch", "cudaMemcpy/sync-copy",
        "Memcpy HtoD (Pinned -> Device)/memcpy-htod", "cudaStreamSynchronize/sync"}) {
    EXPECT_TRUE(seen.contains(expected)) << expected;
  }
}

TEST(KinetoTraceTest, KindsHaveLowerCaseNames) {
  EXPECT_STREQ(ToString(GpuOpKind::kKernel), "kernel");
  EXPECT_STREQ(ToString(GpuOpKind::kMemset), "memset");
  EXPECT_STREQ(ToString(GpuOpKind::kMemcpyHtoD), "memcpy-htod");
  EXPECT_STREQ(ToString(GpuOpKind::kMemcpyDtoH), "memcpy-dtoh");
  EXPECT_STREQ(ToString(GpuOpKind::kMemcpyDtoD), "memcpy-dtod");
  EXPECT_STREQ(ToString(GpuOpKind::kMemcpyPeer), "memcpy-peer");
  EXPECT_STREQ(ToString(CallKind::kLaunch), "launch");
  EXPECT_STREQ(ToString(CallKind::kCopy), "copy");
  EXPECT_STREQ(ToString(CallKind::kMemset), "memset");
  EXPECT_STREQ(ToString(CallKind::kSyncCopy), "sync-copy");
  EXPECT_STREQ(ToString(CallKind::kSync), "sync");
  EXPECT_STREQ(ToString(CallKind::kOther), "other");
}

// --- Malformed input: each an error that says where and what ---

struct BadTrace {
  const char* name;
  std::string text;
  const char* expected;  // a substring of the message
};

// A good kernel, then `event` as traceEvents[1].
std::string AfterAGoodKernel(std::string_view event) {
  return R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
      "dur": 1, "args": {"device": 0, "stream": 7}}, )" +
         std::string(event) + "]}";
}

std::string Kernel(std::string_view fields) {
  return R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, )" + std::string(fields) +
         "}";
}

std::string Memcpy(std::string_view name, std::string_view args) {
  return R"({"ph": "X", "cat": "gpu_memcpy", "name": ")" + std::string(name) +
         R"(", "pid": 0, "tid": 7, "ts": 2, "dur": 1, "args": {"device": 0, "stream": 7)" +
         std::string(args) + "}}";
}

std::string Call(std::string_view fields) {
  return R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, )" +
         std::string(fields) + "}";
}

const std::vector<BadTrace>& BadTraces() {
  static const std::vector<BadTrace> cases = {
      {"NotJson", "hello", "case.json: not JSON: syntax error at byte 1"},
      {"Empty", "", "not JSON: syntax error"},
      {"TrailingText",
       AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1, "args": {"device": 0, "stream": 7})")) + " x",
       "not JSON: syntax error"},
      {"NumberOverflow", AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1e99999)")),
       "not JSON: number overflow"},  // past a long double's range
      {"DurationPastTheLimit", AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1e999)")),
       "dur 1e+999 us is too long"},
      {"TopLevelArray", "[1, 2]", "the top level is an array, not an object"},
      {"TopLevelString", R"("traceEvents")", "the top level is a string"},
      {"NoTraceEvents", R"({"events": []})", "no traceEvents array"},
      {"TraceEventsNotArray", R"({"traceEvents": {"a": 1}})", "traceEvents is not an array"},
      {"TwoTraceEvents", R"({"traceEvents": [], "traceEvents": []})",
       "more than one traceEvents array"},
      {"EventNotObject", AfterAGoodKernel("5"), "traceEvents[1]: event is a number, not an object"},
      {"EventIsArray", AfterAGoodKernel("[{}]"), "traceEvents[1]: event is an array"},
      {"MemcpyWithoutBytes", AfterAGoodKernel(Memcpy("Memcpy HtoD (Pinned -> Device)", "")),
       "case.json: traceEvents[1]: gpu_memcpy event without args.bytes"},
      {"MemcpyNegativeBytes",
       AfterAGoodKernel(Memcpy("Memcpy HtoD (Pinned -> Device)", R"(, "bytes": -1)")),
       "traceEvents[1]: gpu_memcpy event args.bytes -1 is not a byte count"},
      {"MemcpyFractionalBytes",
       AfterAGoodKernel(Memcpy("Memcpy DtoH (Device -> Pinned)", R"(, "bytes": 1.5)")),
       "args.bytes 1.5 is not a byte count"},
      {"MemcpyBytesNotANumber",
       AfterAGoodKernel(Memcpy("Memcpy DtoH (Device -> Pinned)", R"(, "bytes": "12kB")")),
       "args.bytes '12kB' is not a byte count"},
      {"MemcpyBytesAnObject",
       AfterAGoodKernel(Memcpy("Memcpy DtoH (Device -> Pinned)", R"(, "bytes": {"n": 1})")),
       "args.bytes an object is not a byte count"},
      {"MemcpyUnknownDirection",
       AfterAGoodKernel(Memcpy("Memcpy HtoH (Pinned -> Pinned)", R"(, "bytes": 8)")),
       "traceEvents[1]: unknown gpu_memcpy direction 'HtoH' in name 'Memcpy HtoH (Pinned -> "
       "Pinned)'"},
      {"MemcpyNameWithoutDirection", AfterAGoodKernel(Memcpy("cudaMemcpy", R"(, "bytes": 8)")),
       "unknown gpu_memcpy direction ''"},
      {"DurNaN", AfterAGoodKernel(Kernel(R"("ts": 1, "dur": "NaN", "args": {})")),
       "traceEvents[1]: dur is 'NaN', not a finite number"},
      {"DurInfinite", AfterAGoodKernel(Kernel(R"("ts": 1, "dur": "-inf", "args": {})")),
       "dur is '-inf', not a finite number"},
      {"NegativeDur",
       AfterAGoodKernel(Kernel(R"("ts": 1, "dur": -1, "args": {"device": 0, "stream": 0})")),
       "traceEvents[1]: dur -1 is negative"},
      {"DurTooLong",
       AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1e16, "args": {"device": 0, "stream": 0})")),
       "dur 1e+16 us is too long"},
      {"NoDur", AfterAGoodKernel(Kernel(R"("ts": 1, "args": {"device": 0, "stream": 0})")),
       "traceEvents[1]: kernel event without dur"},
      {"NoTs", AfterAGoodKernel(Call(R"("dur": 1, "args": {"correlation": 1})")),
       "traceEvents[1]: cuda_runtime event without ts"},
      {"TsAnArray", AfterAGoodKernel(Call(R"("ts": [1], "dur": 1)")),
       "ts is an array, not a finite number"},
      {"TsNotANumber", AfterAGoodKernel(Call(R"("ts": "12:00", "dur": 1)")),
       "ts is '12:00', not a finite number"},
      {"TsOutOfRange", AfterAGoodKernel(Call(R"("ts": 1e300, "dur": 1)")),
       "traceEvents[1]: ts 1e+300 us is out of range"},
      {"TsTooFarApart",
       AfterAGoodKernel(Call(R"("ts": -4e15, "dur": 1)") + "," + Call(R"("ts": 4e15, "dur": 1)")),
       "traceEvents[2]: ts is too far from the earliest event's"},
      {"TsAtTheExtremes",
       AfterAGoodKernel(Call(R"("ts": -4611686018427387, "dur": 1)") + "," +
                        Call(R"("ts": 4611686018427387, "dur": 1)")),
       "traceEvents[2]: ts is too far from the earliest event's"},
      {"TsJustOutOfRange", AfterAGoodKernel(Call(R"("ts": 4611686018427388, "dur": 1)")),
       "traceEvents[1]: ts 4611686018427388 us is out of range"},
      {"KernelWithoutDevice",
       AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1, "args": {"stream": 7})")),
       "traceEvents[1]: kernel event without args.device"},
      {"KernelWithoutArgs", AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1)")),
       "kernel event without args.device"},
      {"KernelArgsNotAnObject", AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1, "args": [0, 7])")),
       "kernel event without args.device"},
      {"KernelWithoutStream",
       AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1, "args": {"device": 0})")),
       "traceEvents[1]: kernel event without args.stream"},
      {"MemsetWithoutDevice",
       AfterAGoodKernel(
           R"json({"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "ts": 1, "dur": 1,
               "args": {"stream": 7}})json"),
       "traceEvents[1]: gpu_memset event without args.device"},
      {"NegativeDevice",
       AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1, "args": {"device": -1, "stream": 7})")),
       "kernel event args.device -1 is not a device index"},
      {"DeviceNotAnInteger",
       AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1, "args": {"device": "zero", "stream": 7})")),
       "kernel event args.device 'zero' is not an integer"},
      {"CorrelationNotAnInteger",
       AfterAGoodKernel(Call(R"("ts": 1, "dur": 1, "args": {"correlation": "abc"})")),
       "traceEvents[1]: cuda_runtime event args.correlation 'abc' is not an integer"},
      {"NoGpuActivity", "{\"traceEvents\": [" + Call(R"("ts": 1, "dur": 1)") + "]}",
       "case.json: no GPU activity"},
      {"EmptyTraceEvents", R"({"traceEvents": []})", "ProfilerActivity.CUDA"},
      {"OnlyGpuAnnotations",
       R"({"traceEvents": [{"ph": "X", "cat": "gpu_user_annotation", "name": "step", "pid": 0,
           "tid": 7, "ts": 1, "dur": 1}]})",
       "no GPU activity"},
  };
  return cases;
}

void PrintTo(const BadTrace& bad, std::ostream* out) { *out << bad.name; }

class KinetoTraceErrorTest : public testing::TestWithParam<BadTrace> {};

TEST_P(KinetoTraceErrorTest, IsAnErrorThatSaysWhat) {
  const ParseResult<Trace> trace = Parse(GetParam().text);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find(GetParam().expected), std::string::npos)
      << "message: " << trace.error().message << "\nexpected in it: " << GetParam().expected;
  EXPECT_EQ(trace.error().message.rfind("case.json: ", 0), 0u) << trace.error().message;
}

INSTANTIATE_TEST_SUITE_P(Malformed, KinetoTraceErrorTest, testing::ValuesIn(BadTraces()),
                         [](const testing::TestParamInfo<BadTrace>& param) {
                           return std::string(param.param.name);
                         });

// Every cut of `text` `step` bytes apart, short of its closing brace, is an error.
void ExpectEveryTruncationIsAnError(const std::string& text, size_t step) {
  const size_t end = text.find_last_not_of(" \n") + 1;  // the closing brace stays out
  for (size_t size = 0; size < end; size += step) {
    const ParseResult<Trace> trace = Parse(std::string_view(text).substr(0, size));
    ASSERT_FALSE(trace.ok()) << "cut at " << size;
    EXPECT_NE(trace.error().message.find("not JSON"), std::string::npos)
        << "cut at " << size << ": " << trace.error().message;
  }
}

TEST(KinetoTraceTest, EveryTruncationOfTheJsonIsAnError) {
  // Every third byte of the compact trace; the realistic one more sparsely (the sanitizer build
  // parses about 3 KB per millisecond).
  ExpectEveryTruncationIsAnError(ReadText(DataPath("compact_trace.json")), 3);
  ExpectEveryTruncationIsAnError(ReadText(DataPath("small_trace.json")), 97);
}

TEST(KinetoTraceTest, EveryTruncationOfTheGzipIsAnError) {
  const Bytes gzipped = Gzip(ReadText(DataPath("small_trace.json")));
  std::vector<size_t> cuts;
  for (size_t size = 2; size < gzipped.size(); size += 23) cuts.push_back(size);
  for (size_t size = gzipped.size() - 8; size < gzipped.size(); ++size) cuts.push_back(size);
  for (const size_t size : cuts) {
    const ParseResult<Trace> trace =
        ParseKinetoTrace(std::span(gzipped).first(size), "cut.json.gz");
    ASSERT_FALSE(trace.ok()) << "cut at " << size;
    EXPECT_NE(trace.error().message.find("truncated gzip stream"), std::string::npos)
        << "cut at " << size << ": " << trace.error().message;
  }
}

TEST(KinetoTraceTest, CorruptGzipIsAnError) {
  Bytes gzipped = Gzip(ReadText(DataPath("small_trace.json")));
  gzipped[gzipped.size() - 6] ^= 0xff;  // the CRC-32 in the trailer
  ParseResult<Trace> trace = ParseKinetoTrace(gzipped, "crc.json.gz");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("corrupt gzip stream"), std::string::npos)
      << trace.error().message;

  gzipped = Gzip(ReadText(DataPath("small_trace.json")));
  gzipped[3] = 0xe0;  // reserved header flags
  trace = ParseKinetoTrace(gzipped, "flags.json.gz");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("corrupt gzip stream"), std::string::npos)
      << trace.error().message;
}

// Stored (level 0) deflate: the member's size follows its text's byte for byte, so a member
// can be made to end at any offset.
Bytes GzipStored(std::string_view text) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 0, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&stream, text.size()));
  std::string copy(text);
  stream.next_in = reinterpret_cast<Bytef*>(copy.data());
  stream.avail_in = static_cast<uInt>(copy.size());
  stream.next_out = out.data();
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

// `text` after as many spaces (the same JSON) as make its stored member `size` bytes; empty if
// none does.
Bytes StoredMemberOfSize(std::string_view text, size_t size) {
  const size_t overhead = GzipStored(text).size() - text.size();
  const size_t estimate = size > text.size() + overhead ? size - text.size() - overhead : 0;
  for (size_t pad = estimate > 64 ? estimate - 64 : 0; pad <= estimate + 64; ++pad) {
    Bytes member = GzipStored(std::string(pad, ' ') + std::string(text));
    if (member.size() == size) return member;
  }
  return {};
}

// The reader takes its input 64 KiB at a time (trace_text.h): a second gzip member whose magic
// straddles two pieces, or begins the next one, reads as one trace.
TEST(KinetoTraceTest, GzipMembersMeetingAtTheReadersPiecesParseAsOneTrace) {
  constexpr size_t kPiece = size_t{64} << 10;
  const std::string text = ReadText(DataPath("small_trace.json"));
  const size_t half = text.size() / 2;
  const Bytes second = Gzip(std::string_view(text).substr(half));
  // The first member ends one byte before a piece's end (the magic straddles), at it, after it.
  for (const size_t end : {kPiece - 1, kPiece, kPiece + 1}) {
    Bytes whole = StoredMemberOfSize(std::string_view(text).substr(0, half), end);
    ASSERT_EQ(whole.size(), end);
    whole.insert(whole.end(), second.begin(), second.end());
    const TempFile file(whole);
    for (const bool from_file : {false, true}) {
      const ParseResult<Trace> trace =
          from_file ? ReadKinetoTraceFile(file.path()) : ParseKinetoTrace(whole, "pieces.json.gz");
      ASSERT_TRUE(trace.ok()) << end << ": " << trace.error().message;
      EXPECT_EQ(RenderCalls(trace.value()), kSmallCalls) << end;
      EXPECT_EQ(RenderOps(trace.value()), kSmallOps) << end;
    }
  }
}

TEST(KinetoTraceTest, OneByteAfterTheGzipStreamAloneInAPieceIsAnError) {
  constexpr size_t kPiece = size_t{64} << 10;
  Bytes gzipped = StoredMemberOfSize(ReadText(DataPath("small_trace.json")), kPiece);
  ASSERT_EQ(gzipped.size(), kPiece);
  gzipped.push_back('x');
  const ParseResult<Trace> trace = ParseKinetoTrace(gzipped, "tail.json.gz");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("data after the end of the gzip stream"), std::string::npos)
      << trace.error().message;
}

TEST(KinetoTraceTest, DataAfterTheGzipStreamIsAnError) {
  Bytes gzipped = Gzip(ReadText(DataPath("small_trace.json")));
  gzipped.push_back('x');
  const ParseResult<Trace> trace = ParseKinetoTrace(gzipped, "tail.json.gz");
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("data after the end of the gzip stream"), std::string::npos)
      << trace.error().message;
}

// --- Limits ---

TEST(KinetoTraceTest, GzipBombStopsAtTheLimit) {
  const Bytes bomb = GzipRepeated(std::string(size_t{1} << 20, ' '), 64);  // 64 MiB of spaces
  ASSERT_LT(bomb.size(), size_t{1} << 20);
  const ParseLimits limits{.max_file_bytes = uint64_t{1} << 20};
  const ParseResult<Trace> trace = ParseKinetoTrace(bomb, "bomb.json.gz", limits);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("more than the limit of 1048576 bytes"), std::string::npos)
      << trace.error().message;

  // The same limit lets the small trace through, gzipped or not.
  const std::string text = ReadText(DataPath("small_trace.json"));
  EXPECT_TRUE(ParseKinetoTrace(Gzip(text), "small.json.gz", limits).ok());
  EXPECT_TRUE(Parse(text, limits).ok());
}

TEST(KinetoTraceTest, InputOverTheLimitIsAnError) {
  const std::string text = ReadText(DataPath("small_trace.json"));
  const ParseLimits limits{.max_file_bytes = 1000};
  ParseResult<Trace> trace = Parse(text, limits);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("file larger than the limit of 1000 bytes"),
            std::string::npos)
      << trace.error().message;

  trace = ReadKinetoTraceFile(DataPath("small_trace.json"), limits);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("file larger than the limit of 1000 bytes"),
            std::string::npos)
      << trace.error().message;

  // Compressed below the limit, inflated past it.
  const Bytes gzipped = Gzip(text);
  ASSERT_LT(gzipped.size(), 3000u);
  trace = ParseKinetoTrace(gzipped, "small.json.gz", ParseLimits{.max_file_bytes = 3000});
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("more than the limit of 3000 bytes"), std::string::npos)
      << trace.error().message;

  // Exactly at the limit is allowed.
  EXPECT_TRUE(Parse(text, ParseLimits{.max_file_bytes = text.size()}).ok());
}

TEST(KinetoTraceTest, TooManyEventsIsAnError) {
  const std::string text = ReadText(DataPath("small_trace.json"));
  const ParseResult<Trace> trace = Parse(text, ParseLimits{.max_events = 37});
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("more than 37 events"), std::string::npos)
      << trace.error().message;
  // 38 events: exactly at the limit is allowed.
  EXPECT_TRUE(Parse(text, ParseLimits{.max_events = 38}).ok());
}

TEST(KinetoTraceTest, DeepNestingIsAnError) {
  // Inside an event and at the top level; far deeper than the limit, and unterminated: the
  // reader stops at the limit rather than building a million levels.
  const std::string deep_event =
      AfterAGoodKernel(Kernel(R"("ts": 1, "dur": 1, "args": )" + std::string(1'000'000, '[')));
  ParseResult<Trace> trace = Parse(deep_event);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("JSON nested deeper than 100 levels"), std::string::npos)
      << trace.error().message;
  trace = Parse(std::string(1'000'000, '{'));
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("not JSON"), std::string::npos) << trace.error().message;
  trace = Parse("{\"a\": " + std::string(1'000'000, '['));
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("JSON nested deeper than 100 levels"), std::string::npos)
      << trace.error().message;

  // The document at depth 0, traceEvents 1, the event 2, args 3: 97 arrays in args reach
  // depth 100, the limit; 98 pass it.
  const auto event_with_arrays = [](size_t arrays) {
    return AfterAGoodKernel(
        Kernel(R"("ts": 1, "dur": 1, "args": {"device": 0, "stream": 7, "x": )" +
               std::string(arrays, '[') + std::string(arrays, ']') + "}"));
  };
  trace = Parse(event_with_arrays(97));
  EXPECT_TRUE(trace.ok()) << trace.error().message;
  trace = Parse(event_with_arrays(98));
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("JSON nested deeper than 100 levels"), std::string::npos)
      << trace.error().message;
}

// --- Files ---

TEST(KinetoTraceTest, MissingFileIsAnError) {
  const std::string path = testing::TempDir() + "no-such-trace.json";
  const ParseResult<Trace> trace = ReadKinetoTraceFile(path);
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.error().message, path + ": cannot open: No such file or directory");
}

TEST(KinetoTraceTest, DirectoryIsAnError) {
  const ParseResult<Trace> trace = ReadKinetoTraceFile(DXPU_PERFMODEL_TEST_DATA);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.error().message.find("Is a directory"), std::string::npos)
      << trace.error().message;
}

// --- Random mutations ---

// Byte flips, deletions and insertions (of JSON's own characters, mostly) of a valid trace: the
// reader may accept or refuse each, but must not crash, and a refusal must say something.
Bytes Mutate(Bytes bytes, std::mt19937& rng) {
  static constexpr std::string_view kJsonBytes = "{}[]\":,0123456789-+.eE \\tfn";
  const int edits = std::uniform_int_distribution<int>(1, 4)(rng);
  for (int i = 0; i < edits && !bytes.empty(); ++i) {
    const size_t at = std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng);
    switch (std::uniform_int_distribution<int>(0, 3)(rng)) {
      case 0:  // flip bits
        bytes[at] ^= static_cast<uint8_t>(std::uniform_int_distribution<int>(1, 255)(rng));
        break;
      case 1: {  // delete a run
        const size_t size =
            std::min<size_t>(bytes.size() - at, std::uniform_int_distribution<size_t>(1, 16)(rng));
        bytes.erase(bytes.begin() + static_cast<ptrdiff_t>(at),
                    bytes.begin() + static_cast<ptrdiff_t>(at + size));
        break;
      }
      case 2: {  // insert a JSON character
        const size_t pick = std::uniform_int_distribution<size_t>(0, kJsonBytes.size() - 1)(rng);
        bytes.insert(bytes.begin() + static_cast<ptrdiff_t>(at),
                     static_cast<uint8_t>(kJsonBytes[pick]));
        break;
      }
      default:  // overwrite with a JSON character
        bytes[at] = static_cast<uint8_t>(
            kJsonBytes[std::uniform_int_distribution<size_t>(0, kJsonBytes.size() - 1)(rng)]);
        break;
    }
  }
  return bytes;
}

TEST(KinetoTraceTest, RandomMutationsNeverCrash) {
  const std::string text = ReadText(DataPath("compact_trace.json"));
  const Bytes plain(text.begin(), text.end());
  const Bytes gzipped = Gzip(text);
  std::mt19937 rng(20240611);  // NOLINT(cert-msc32-c,cert-msc51-cpp): the same edits every run
  size_t accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    const Bytes& original = i % 5 == 4 ? gzipped : plain;
    const Bytes mutated = Mutate(original, rng);
    const ParseResult<Trace> trace = ParseKinetoTrace(mutated, "mutant.json");
    if (trace.ok()) {
      ++accepted;
      // What the reader accepts, the model takes: a finite prediction, never faster than
      // natively, and a timeline.
      ModelParams params;
      params.added_latency_ns = 2'000;
      const Prediction p = Predict(trace.value(), params);
      EXPECT_TRUE(std::isfinite(p.dxpu_ns)) << i;
      EXPECT_GE(p.dxpu_ns, p.native_ns) << i;
      std::ostringstream timeline;
      WriteTimeline(timeline, trace.value(), Retime(trace.value(), params));
      EXPECT_FALSE(timeline.str().empty()) << i;
    } else {
      EXPECT_GT(trace.error().message.size(), std::string_view("mutant.json: ").size()) << i;
    }
  }
  // Some mutations land in places that do not matter (a skipped event, a name).
  EXPECT_GT(accepted, 0u);
}

}  // namespace
}  // namespace dxpu::perfmodel
