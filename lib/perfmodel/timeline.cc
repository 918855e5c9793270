// timeline.cc - the native and DxPU timelines as one Chrome trace (timeline.h).
#include "perfmodel/timeline.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "perfmodel/chrome_events.h"

namespace dxpu::perfmodel {
namespace {

using Json = nlohmann::ordered_json;

// Process ids: each side's host, then its GPUs.
constexpr int64_t kNativeHost = 1;
constexpr int64_t kDxpuHost = 2;
constexpr int64_t kGpuBase[2] = {1000, 2000};

const char* CategoryOf(GpuOpKind kind) {
  switch (kind) {
    case GpuOpKind::kKernel:
      return "kernel";
    case GpuOpKind::kMemset:
      return "gpu_memset";
    default:
      return "gpu_memcpy";
  }
}

// An event's name from the trace (the kernel's, the API's), else what the model calls it.
const char* NameIn(const Trace& t, uint32_t name, const char* otherwise) {
  return name < t.names.size() ? t.names[name].c_str() : otherwise;
}

// Writes the Chrome trace's events as they come (what Json{...}.dump() would write of the whole
// document, without holding it: a million-event trace's timeline took 2.6 GiB built whole).
class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) {
    out_ << R"({"displayTimeUnit":"ns","traceEvents":[)";
  }
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;
  void push_back(const Json& event) {
    if (!first_) out_ << ',';
    out_ << event.dump();
    first_ = false;
  }
  void Close() { out_ << "]}\n"; }

 private:
  std::ostream& out_;
  bool first_ = true;
};

// Each host thread as a small number, in the order the calls name them.
std::map<int64_t, int64_t> ThreadNumbers(const Trace& t) {
  std::map<int64_t, int64_t> numbers;
  for (const RuntimeCall& c : t.calls) {
    numbers.emplace(c.thread, static_cast<int64_t>(numbers.size()) + 1);
  }
  return numbers;
}

void AddSide(EventWriter& events, const Trace& t, const Trace* native, bool dxpu) {
  const char* side = dxpu ? "DxPU" : "native";
  const int64_t host = dxpu ? kDxpuHost : kNativeHost;
  const int64_t gpu_base = kGpuBase[dxpu ? 1 : 0];
  events.push_back(ChromeMetadata("process_name", host, 0, std::string(side) + ": host"));
  const std::map<int64_t, int64_t> threads = ThreadNumbers(t);
  for (const auto& [thread, number] : threads) {
    events.push_back(ChromeMetadata(
        "thread_name", host, number,
        "thread " + std::to_string(thread >> 32) + "/" + std::to_string(thread & 0xffffffff)));
  }
  std::set<std::pair<int32_t, int64_t>> streams;
  for (const GpuOp& op : t.ops) streams.emplace(op.device, op.stream);
  std::set<int32_t> devices;
  for (const auto& [device, stream] : streams) {
    if (devices.insert(device).second) {
      events.push_back(ChromeMetadata("process_name", gpu_base + device, 0,
                                      std::string(side) + ": GPU " + std::to_string(device)));
    }
    events.push_back(ChromeMetadata("thread_name", gpu_base + device, stream,
                                    "stream " + std::to_string(stream)));
  }
  const auto Later = [](Json& event, int64_t now, int64_t before) {
    event["args"]["later_us"] = ChromeMicros(now - before);
  };
  for (size_t i = 0; i < t.calls.size(); ++i) {
    const RuntimeCall& c = t.calls[i];
    Json event = ChromeComplete("cuda_runtime", NameIn(t, c.name, ToString(c.kind)), host,
                                threads.at(c.thread), c.start_ns, c.dur_ns);
    event["args"] = Json{{"kind", ToString(c.kind)}};
    if (c.correlation != kNoCorrelation) event["args"]["correlation"] = c.correlation;
    if (c.sync_stream != kAnyStream) {
      event["args"]["device"] = c.sync_device;
      event["args"]["stream"] = c.sync_stream;
    }
    if (native != nullptr) Later(event, c.start_ns, native->calls[i].start_ns);
    events.push_back(event);
  }
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const GpuOp& op = t.ops[i];
    Json event = ChromeComplete(CategoryOf(op.kind), NameIn(t, op.name, ToString(op.kind)),
                                gpu_base + op.device, op.stream, op.start_ns, op.dur_ns);
    event["args"] = Json{{"kind", ToString(op.kind)}, {"bytes", op.bytes}};
    if (op.correlation != kNoCorrelation) event["args"]["correlation"] = op.correlation;
    if (native != nullptr) Later(event, op.start_ns, native->ops[i].start_ns);
    events.push_back(event);
  }
}

}  // namespace

void WriteTimeline(std::ostream& out, const Trace& native, const Trace& dxpu) {
  EventWriter events(out);
  AddSide(events, native, nullptr, false);
  const bool paired =
      dxpu.calls.size() == native.calls.size() && dxpu.ops.size() == native.ops.size();
  AddSide(events, dxpu, paired ? &native : nullptr, true);
  events.Close();
}

}  // namespace dxpu::perfmodel
