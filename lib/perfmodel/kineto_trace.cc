// kineto_trace.cc - reads a PyTorch profiler (Kineto) Chrome trace into a Trace. The text comes
// a piece at a time (trace_text.h: read and gunzipped as it is parsed), and each element of
// traceEvents is handed over as soon as it is parsed and then dropped: memory follows the calls
// and operations kept, not the file. Host runtime calls become RuntimeCalls, kernels, copies and
// memsets GpuOps, and their times whole nanoseconds from the earliest of them.
#include "perfmodel/kineto_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <exception>
#include <filesystem>
#include <istream>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "perfmodel/trace_text.h"

namespace dxpu::perfmodel {
namespace {

// Numbers as long double: a trace's ts is epoch microseconds with a nanosecond fraction
// (1700000000123456.789), which a double holds only to 0.25 us; the x87 long double's 64-bit
// mantissa keeps the nanoseconds (issue 35: the same trace at two clock bases timed alike).
using json = nlohmann::basic_json<std::map, std::vector, std::string, bool, std::int64_t,
                                  std::uint64_t, long double>;

// What is wrong with one event, without its place (the caller adds "traceEvents[i]: ").
struct EventProblem {
  std::string text;
};
template <typename T>
using EventResult = util::Expected<T, EventProblem>;

// --- Text for messages ---

constexpr size_t kMaxQuoted = 80;

// Untrusted text as a message quotes it: shortened, and printable ASCII only (control bytes and
// non-ASCII as '?': a message is valid UTF-8 whatever the input, wherever it is cut).
std::string Printable(std::string_view text, size_t max_size = kMaxQuoted) {
  const std::string_view shown = text.substr(0, max_size);
  std::string out;
  out.reserve(shown.size() + 3);
  for (const char c : shown) {
    const auto byte = static_cast<unsigned char>(c);
    out.push_back(byte < 0x20 || byte >= 0x7f ? '?' : c);
  }
  if (text.size() > max_size) out += "...";
  return out;
}

std::string_view TypeDescription(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::binary:
      return "binary data";
    case json::value_t::discarded:
      return "nothing";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      break;
  }
  return "a number";
}

// A JSON value as a message shows it: scalars as written (strings quoted and shortened), arrays
// and objects by their type (printing them would recurse as deep as the input nests).
std::string Shown(const json& value) {
  if (value.is_string()) return fmt::format("'{}'", Printable(value.get_ref<const std::string&>()));
  // A float by fmt: nlohmann's dump of a long double passes it to printf's %g (undefined).
  if (value.is_number_float()) return fmt::format("{}", value.get<long double>());
  if (value.is_number() || value.is_boolean() || value.is_null()) return value.dump();
  return std::string(TypeDescription(value));
}

// nlohmann::json's message without its "[json.exception.parse_error.101] " tag.
std::string_view JsonErrorText(const json::exception& error) {
  std::string_view text = error.what();
  const size_t tag_end = text.find("] ");
  if (tag_end != std::string_view::npos) text.remove_prefix(tag_end + 2);
  return text;
}

// "parse error at line 3, column 5: syntax error while parsing value - invalid literal; ..." ->
// "line 3, column 5: while parsing value - invalid literal; ...".
std::string SyntaxErrorText(const json::parse_error& error) {
  constexpr std::string_view kAt = "parse error at ";
  constexpr std::string_view kSyntaxError = "syntax error ";
  std::string_view text = JsonErrorText(error);
  if (text.starts_with(kAt)) text.remove_prefix(kAt.size());
  const size_t syntax_error = text.find(kSyntaxError);
  if (syntax_error == std::string_view::npos) return Printable(text, 300);
  return Printable(text.substr(0, syntax_error), 300) +
         Printable(text.substr(syntax_error + kSyntaxError.size()), 300);
}

ParseError ErrorIn(const std::string& source, std::string_view message) {
  return ParseError{fmt::format("{}: {}", source, message)};
}

EventProblem Without(std::string_view label, std::string_view field) {
  return EventProblem{fmt::format("{} event without {}", label, field)};
}

char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) { return AsciiLower(x) == AsciiLower(y); });
}

bool StartsWithIgnoringCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && EqualsIgnoringCase(text.substr(0, prefix.size()), prefix);
}

bool ContainsIgnoringCase(std::string_view text, std::string_view part) {
  for (size_t at = 0; at + part.size() <= text.size(); ++at) {
    if (EqualsIgnoringCase(text.substr(at, part.size()), part)) return true;
  }
  return false;
}

// --- JSON fields ---

// object[key] when it is a string, else "".
std::string_view StringField(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

// args[key], or nullptr when the event has no args object or args has no such key.
const json* Arg(const json& event, const char* key) {
  const auto args = event.find("args");
  if (args == event.end() || !args->is_object()) return nullptr;
  const auto it = args->find(key);
  return it == args->end() ? nullptr : &*it;
}

// The whole of a decimal string as a number of type Number.
template <typename Number>
std::optional<Number> ParseWhole(const std::string& text) {
  Number number{};
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, number);
  if (error != std::errc() || stop != end) return std::nullopt;
  return number;
}

// A JSON number, or a numeric string (some exporters quote numbers).
std::optional<long double> ReadNumber(const json& value) {
  if (value.is_number()) return value.get<long double>();
  if (value.is_string()) return ParseWhole<long double>(value.get_ref<const std::string&>());
  return std::nullopt;
}

constexpr double kTwoTo63 = 0x1p63;
constexpr double kTwoTo64 = 0x1p64;

bool IsWhole(double number) { return std::trunc(number) == number; }

// An integer: a JSON integer, a float with no fraction, or a decimal string.
std::optional<int64_t> ReadInteger(const json& value) {
  if (value.is_number_unsigned()) {
    const auto number = value.get<uint64_t>();
    if (number > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(number);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    const auto number = value.get<double>();
    if (!(number >= -kTwoTo63 && number < kTwoTo63) || !IsWhole(number)) return std::nullopt;
    return static_cast<int64_t>(number);
  }
  if (value.is_string()) return ParseWhole<int64_t>(value.get_ref<const std::string&>());
  return std::nullopt;
}

// A count: as ReadInteger, but from 0 to 2^64 - 1.
std::optional<uint64_t> ReadCount(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) {
    const auto number = value.get<int64_t>();
    if (number < 0) return std::nullopt;
    return static_cast<uint64_t>(number);
  }
  if (value.is_number_float()) {
    const auto number = value.get<double>();
    if (!(number >= 0 && number < kTwoTo64) || !IsWhole(number)) return std::nullopt;
    return static_cast<uint64_t>(number);
  }
  if (value.is_string()) return ParseWhole<uint64_t>(value.get_ref<const std::string&>());
  return std::nullopt;
}

// args[key] as an integer: nullopt when it is absent, a problem when it is not an integer.
EventResult<std::optional<int64_t>> IntArg(const json& event, std::string_view label,
                                           const char* key) {
  const json* value = Arg(event, key);
  if (value == nullptr) return std::optional<int64_t>();
  const std::optional<int64_t> number = ReadInteger(*value);
  if (!number) {
    return EventProblem{
        fmt::format("{} event args.{} {} is not an integer", label, key, Shown(*value))};
  }
  return number;
}

EventResult<int64_t> ReadCorrelation(const json& event, std::string_view label) {
  const EventResult<std::optional<int64_t>> correlation = IntArg(event, label, "correlation");
  if (!correlation.ok()) return correlation.error();
  return correlation.value().value_or(kNoCorrelation);
}

EventResult<int32_t> ReadDevice(const json& event, std::string_view label) {
  const EventResult<std::optional<int64_t>> device = IntArg(event, label, "device");
  if (!device.ok()) return device.error();
  if (!device.value()) return Without(label, "args.device");
  const int64_t index = *device.value();
  if (index < 0 || index > std::numeric_limits<int32_t>::max()) {
    return EventProblem{fmt::format("{} event args.device {} is not a device index", label, index)};
  }
  return static_cast<int32_t>(index);
}

EventResult<int64_t> ReadStream(const json& event, std::string_view label) {
  const EventResult<std::optional<int64_t>> stream = IntArg(event, label, "stream");
  if (!stream.ok()) return stream.error();
  if (!stream.value()) return Without(label, "args.stream");
  return *stream.value();
}

// --- Times ---

// Starts less than 2^62 ns from the clock's zero and durations up to 2^61 ns: a start from the
// earliest event, and that plus a duration, both fit in int64.
constexpr long double kMaxAbsStartNs = 0x1p62L;
constexpr long double kMaxDurationNs = 0x1p61L;
constexpr int64_t kMaxRelativeStartNs = int64_t{1} << 62;

struct EventTimes {
  int64_t start_ns = 0;  // on the trace's clock, not yet from its earliest event
  int64_t dur_ns = 0;
};

// A field in microseconds, finite.
EventResult<long double> ReadMicros(const json& event, std::string_view label, const char* key) {
  const auto it = event.find(key);
  if (it == event.end()) return Without(label, key);
  const std::optional<long double> micros = ReadNumber(*it);
  if (!micros || !std::isfinite(*micros)) {
    return EventProblem{fmt::format("{} is {}, not a finite number", key, Shown(*it))};
  }
  return *micros;
}

EventResult<EventTimes> ReadTimes(const json& event, std::string_view label) {
  const EventResult<long double> ts = ReadMicros(event, label, "ts");
  if (!ts.ok()) return ts.error();
  const EventResult<long double> dur = ReadMicros(event, label, "dur");
  if (!dur.ok()) return dur.error();
  const long double start_ns = ts.value() * 1000.0L;
  const long double dur_ns = dur.value() * 1000.0L;
  if (!(std::fabs(start_ns) < kMaxAbsStartNs)) {
    return EventProblem{fmt::format("ts {} us is out of range (over 2^62 ns)", ts.value())};
  }
  if (dur_ns < 0) return EventProblem{fmt::format("dur {} is negative", dur.value())};
  if (!(dur_ns <= kMaxDurationNs)) {
    return EventProblem{fmt::format("dur {} us is too long (over 2^61 ns)", dur.value())};
  }
  return EventTimes{std::llround(start_ns), std::llround(dur_ns)};
}

// --- Categories and kinds ---

enum class Category : uint8_t { kSkipped, kRuntime, kKernel, kMemcpy, kMemset, kSync };

struct CategoryName {
  std::string_view name;  // compared ignoring case
  Category category;
};

// The names Kineto has used: current ones first, then the older "Kernel", "Memcpy", "Runtime".
constexpr std::array<CategoryName, 9> kCategoryNames = {{
    {"cuda_runtime", Category::kRuntime},
    {"cuda_driver", Category::kRuntime},
    {"kernel", Category::kKernel},
    {"gpu_memcpy", Category::kMemcpy},
    {"gpu_memset", Category::kMemset},
    {"cuda_sync", Category::kSync},
    {"runtime", Category::kRuntime},
    {"memcpy", Category::kMemcpy},
    {"memset", Category::kMemset},
}};

// What an event is to the model: complete events ("ph": "X") of the categories read.
Category CategoryOf(const json& event) {
  if (StringField(event, "ph") != "X") return Category::kSkipped;
  const std::string_view cat = StringField(event, "cat");
  for (const CategoryName& known : kCategoryNames) {
    if (EqualsIgnoringCase(cat, known.name)) return known.category;
  }
  return Category::kSkipped;
}

// "Memcpy HtoD (Pinned -> Device)" and the older "Memcpy HtoD" -> "HtoD".
std::string_view MemcpyDirection(std::string_view name) {
  constexpr std::string_view kPrefix = "Memcpy";
  if (!StartsWithIgnoringCase(name, kPrefix)) return {};
  std::string_view rest = name.substr(kPrefix.size());
  rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
  return rest.substr(0, rest.find_first_of(" ("));
}

std::optional<GpuOpKind> MemcpyKind(std::string_view direction) {
  struct Direction {
    std::string_view name;
    GpuOpKind kind;
  };
  static constexpr std::array<Direction, 4> kDirections = {{
      {"HtoD", GpuOpKind::kMemcpyHtoD},
      {"DtoH", GpuOpKind::kMemcpyDtoH},
      {"DtoD", GpuOpKind::kMemcpyDtoD},
      {"PtoP", GpuOpKind::kMemcpyPeer},
  }};
  for (const Direction& known : kDirections) {
    if (EqualsIgnoringCase(direction, known.name)) return known.kind;
  }
  return std::nullopt;
}

EventResult<GpuOpKind> ReadOpKind(const json& event, Category category, std::string_view label) {
  if (category == Category::kKernel) return GpuOpKind::kKernel;
  if (category == Category::kMemset) return GpuOpKind::kMemset;
  const std::string_view name = StringField(event, "name");
  const std::string_view direction = MemcpyDirection(name);
  if (const std::optional<GpuOpKind> kind = MemcpyKind(direction)) return *kind;
  return EventProblem{
      fmt::format("unknown {} direction '{}' in name '{}' (known: Memcpy HtoD, DtoH, DtoD, PtoP)",
                  label, Printable(direction), Printable(name))};
}

// Copies need their size; memsets have gone without it in older traces (0 then); kernels: 0.
EventResult<uint64_t> ReadBytes(const json& event, Category category, std::string_view label) {
  if (category == Category::kKernel) return uint64_t{0};
  const json* bytes = Arg(event, "bytes");
  if (bytes == nullptr) {
    if (category == Category::kMemset) return uint64_t{0};
    return Without(label, "args.bytes");
  }
  const std::optional<uint64_t> count = ReadCount(*bytes);
  if (!count) {
    return EventProblem{fmt::format("{} event args.bytes {} is not a byte count (an integer >= 0)",
                                    label, Shown(*bytes))};
  }
  return *count;
}

// "cudaMemcpyAsync_ptsz", "cuMemcpyHtoD_v2" -> the API's name without its per-thread-stream or
// version suffix.
std::string_view ApiName(std::string_view name) { return name.substr(0, name.find('_')); }

// HIP's runtime names as CUDA's ("hipMemcpyAsync" -> "cudaMemcpyAsync"): PyTorch on ROCm
// (roctracer through Kineto) records them under the same categories, with the same meanings.
std::string CudaApiName(std::string_view name) {
  const std::string_view api = ApiName(name);
  if (api.starts_with("hip")) return "cuda" + std::string(api.substr(3));
  return std::string(api);
}

bool IsLaunchApi(std::string_view api) {
  if (api == "cudaGraphLaunch" || api == "cuGraphLaunch") return true;
  // hipExtLaunchKernel, hipModuleLaunchKernel, hipExtModuleLaunchKernel: launches by other names.
  if (api.ends_with("LaunchKernel")) return true;
  // These enqueue a host function, not a kernel.
  if (api == "cudaLaunchHostFunc" || api == "cuLaunchHostFunc") return false;
  return api.starts_with("cudaLaunch") || api.starts_with("cuLaunch");
}

bool IsSyncApi(std::string_view api) {
  static constexpr std::array<std::string_view, 7> kSyncApis = {
      "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
      "cudaThreadSynchronize", "cuStreamSynchronize",   "cuCtxSynchronize",
      "cuEventSynchronize",
  };
  return std::ranges::find(kSyncApis, api) != kSyncApis.end();
}

// Calls that never wait for the GPU, whatever cuda_sync event Kineto records beside them: a
// stream made to wait for an event (the GPU waits, not the host), and queries that return at
// once whether the work is done or not.
// `api`: CudaApiName's.
bool NeverWaits(std::string_view api) {
  static constexpr std::array<std::string_view, 6> kNonBlocking = {
      "cudaStreamWaitEvent", "cuStreamWaitEvent", "cudaEventQuery",
      "cuEventQuery",        "cudaStreamQuery",   "cuStreamQuery",
  };
  return std::ranges::find(kNonBlocking, api) != kNonBlocking.end();
}

// `api`: CudaApiName's.
CallKind CallKindOf(std::string_view api) {
  if (IsLaunchApi(api)) return CallKind::kLaunch;
  if (api.starts_with("cudaMemcpy") || api.starts_with("cuMemcpy")) {
    return api.find("Async") != std::string_view::npos ? CallKind::kCopy : CallKind::kSyncCopy;
  }
  // Even the synchronous memsets return before the GPU runs them (on device memory).
  if (api.starts_with("cudaMemset") || api.starts_with("cuMemset")) return CallKind::kMemset;
  if (IsSyncApi(api)) return CallKind::kSync;
  return CallKind::kOther;
}

// --- Host threads ---

// Host thread ids, (pid << 32) | (tid & 0xffffffff). A pid or tid that is not an integer (a name
// such as "MainThread") gets a dense id with the top bit set, numbered in order of appearance.
class ThreadIds {
 public:
  // Rank 0's processes keep their pids; another rank's are named apart from every other's
  // (two hosts' processes may have the same pid).
  int64_t Of(const json& event, uint32_t rank) {
    const uint64_t pid = rank == 0 ? Id32(event, "pid") : RankPid(event, rank);
    const uint64_t tid = Id32(event, "tid");
    return static_cast<int64_t>(pid << 32 | tid);
  }

 private:
  static constexpr uint32_t kNamedBit = uint32_t{1} << 31;

  uint32_t Id32(const json& event, const char* key) {
    const auto it = event.find(key);
    if (it == event.end()) return 0;
    if (const std::optional<int64_t> number = ReadInteger(*it)) {
      return static_cast<uint32_t>(static_cast<uint64_t>(*number));
    }
    return NameId(it->is_string() ? it->get<std::string>() : Shown(*it));
  }

  uint32_t RankPid(const json& event, uint32_t rank) {
    const auto it = event.find("pid");
    return NameId(fmt::format("rank {} pid {}", rank, it == event.end() ? "" : Shown(*it)));
  }

  uint32_t NameId(std::string name) {
    const auto next = static_cast<uint32_t>(names_.size()) & ~kNamedBit;
    return names_.try_emplace(std::move(name), kNamedBit | next).first->second;
  }

  std::unordered_map<std::string, uint32_t> names_;
};

// --- Building the trace ---

// *size_from_call: a copy without args.bytes, as roctracer writes them (the size is its host
// call's args.size): 0 bytes here, the call's size later.
EventResult<GpuOp> ReadGpuOp(const json& event, Category category, std::string_view label,
                             bool* size_from_call) {
  const EventResult<GpuOpKind> kind = ReadOpKind(event, category, label);
  if (!kind.ok()) return kind.error();
  const EventResult<EventTimes> times = ReadTimes(event, label);
  if (!times.ok()) return times.error();
  const EventResult<int32_t> device = ReadDevice(event, label);
  if (!device.ok()) return device.error();
  const EventResult<int64_t> stream = ReadStream(event, label);
  if (!stream.ok()) return stream.error();
  const EventResult<int64_t> correlation = ReadCorrelation(event, label);
  if (!correlation.ok()) return correlation.error();
  *size_from_call = category == Category::kMemcpy && Arg(event, "bytes") == nullptr &&
                    correlation.value() != kNoCorrelation;
  const EventResult<uint64_t> bytes =
      *size_from_call ? uint64_t{0} : ReadBytes(event, category, label);
  if (!bytes.ok()) return bytes.error();
  GpuOp op;
  op.kind = kind.value();
  op.device = device.value();
  op.stream = stream.value();
  op.start_ns = times.value().start_ns;
  op.dur_ns = times.value().dur_ns;
  op.bytes = bytes.value();
  op.correlation = correlation.value();
  if (op.kind == GpuOpKind::kMemcpyPeer) {
    // Where the copy went, when the trace says (the project's own recorder does).
    const EventResult<std::optional<int64_t>> dst = IntArg(event, label, "dst device");
    if (!dst.ok()) return dst.error();
    if (dst.value()) {
      if (*dst.value() < 0 || *dst.value() > std::numeric_limits<int32_t>::max()) {
        return EventProblem{
            fmt::format("{} event args.dst device {} is not a device index", label, *dst.value())};
      }
      op.peer_device = static_cast<int32_t>(*dst.value());
    }
  }
  return op;
}

// --- Collectives ---

// What PyTorch's "Collective name" names ("allreduce", "_allgather_base", "reduce_scatter_tensor",
// "all_to_all", "send", ...); nullopt for one the model does not time (a barrier, an unknown one).
std::optional<CollectiveKind> CollectiveKindOf(std::string_view name) {
  std::string plain;
  for (const char c : name) {
    if (c != '_') plain.push_back(AsciiLower(c));
  }
  if (plain.find("reducescatter") != std::string::npos) return CollectiveKind::kReduceScatter;
  if (plain.find("allreduce") != std::string::npos) return CollectiveKind::kAllReduce;
  if (plain.find("allgather") != std::string::npos) return CollectiveKind::kAllGather;
  if (plain.find("alltoall") != std::string::npos) return CollectiveKind::kAllToAll;
  if (plain.find("broadcast") != std::string::npos) return CollectiveKind::kBroadcast;
  if (plain.find("send") != std::string::npos || plain.find("recv") != std::string::npos)
    return CollectiveKind::kSendRecv;
  if (plain.find("reduce") != std::string::npos) return CollectiveKind::kReduce;
  return std::nullopt;
}

// Bytes per element of PyTorch's dtype names ("Float", "BFloat16", "float16", "Long", ...).
std::optional<uint64_t> DtypeBytes(std::string_view dtype) {
  static const std::pair<std::string_view, uint64_t> kSizes[] = {
      {"float", 4},  {"float32", 4}, {"half", 2},  {"float16", 2},       {"bfloat16", 2},
      {"double", 8}, {"float64", 8}, {"int", 4},   {"int32", 4},         {"long", 8},
      {"int64", 8},  {"short", 2},   {"int16", 2}, {"char", 1},          {"int8", 1},
      {"byte", 1},   {"uint8", 1},   {"bool", 1},  {"float8_e4m3fn", 1}, {"float8_e5m2", 1}};
  for (const auto& [name, bytes] : kSizes) {
    if (EqualsIgnoringCase(dtype, name)) return bytes;
  }
  return std::nullopt;
}

// An NCCL/RCCL kernel's collective, where its args describe it (PyTorch 2.x writes "Collective
// name", "In msg nelems", "Out msg nelems", "Group size" and "dtype" on it); nullopt where they
// do not, or describe nothing the model can time.
std::optional<Collective> ReadCollective(const json& event) {
  const json* name = Arg(event, "Collective name");
  const json* group = Arg(event, "Group size");
  const json* dtype = Arg(event, "dtype");
  if (name == nullptr || !name->is_string() || group == nullptr || dtype == nullptr ||
      !dtype->is_string())
    return std::nullopt;
  const std::optional<CollectiveKind> kind = CollectiveKindOf(name->get_ref<const std::string&>());
  const std::optional<uint64_t> size = DtypeBytes(dtype->get_ref<const std::string&>());
  const std::optional<uint64_t> ranks = ReadCount(*group);
  if (!kind || !size || !ranks || *ranks == 0 || *ranks > 65536) return std::nullopt;
  uint64_t elements = 0;
  for (const char* key : {"In msg nelems", "Out msg nelems"}) {
    if (const json* n = Arg(event, key)) {
      const std::optional<uint64_t> count = ReadCount(*n);
      if (!count) return std::nullopt;
      elements = std::max(elements, *count);
    }
  }
  if (elements > (uint64_t{1} << 50) / *size) return std::nullopt;  // past any GPU's memory
  Collective c;
  c.kind = *kind;
  c.bytes = elements * *size;
  c.ranks = static_cast<uint32_t>(*ranks);
  c.algorithm = ContainsIgnoringCase(StringField(event, "name"), "tree")
                    ? CollectiveAlgorithm::kTree
                    : CollectiveAlgorithm::kRing;
  return c;
}

// Calls and operations as read, with their place in traceEvents for messages about them later.
struct PendingCall {
  RuntimeCall call;
  uint64_t index = 0;
  bool never_waits = false;  // NeverWaits: a cuda_sync event beside it does not make it a sync
};
struct PendingOp {
  GpuOp op;  // its devices the rank's own until RankDevices
  uint64_t index = 0;
  bool size_from_call = false;  // its bytes are its host call's args.size (ROCm)
  uint32_t rank = 0;
};

// Several ranks' traces read as one (ReadKinetoTraceDirectory): each rank's correlation IDs
// above this many bits' worth of its own, so that equal IDs of two ranks stay apart.
constexpr int kRankShift = 40;
constexpr uint32_t kMaxRanks = 4096;

// Collects the events read, then makes the Trace of them.
class TraceBuilder {
 public:
  // The events added from now on are rank `rank`'s (0 until called): its correlation IDs, host
  // processes and devices its own.
  void StartRank(uint32_t rank) {
    rank_ = rank;
    ranks_ = std::max(ranks_, rank + 1);
  }
  // One element of traceEvents, an object; what is wrong with it, if anything.
  std::optional<EventProblem> Add(const json& event, uint64_t index);
  ParseResult<Trace> Finish(const std::string& source);

 private:
  std::optional<EventProblem> AddCall(const json& event, std::string_view label, uint64_t index);
  std::optional<EventProblem> AddOp(const json& event, Category category, std::string_view label,
                                    uint64_t index);
  std::optional<EventProblem> AddSync(const json& event, std::string_view label);
  EventResult<int64_t> KeyedCorrelation(const json& event, std::string_view label) const;
  void RankDevices();
  std::optional<std::string> CheckCorrelationsPerProcess() const;
  std::optional<std::string> StartFromEarliest();
  void PromoteSyncedCalls();
  std::optional<std::string> SizesFromCalls();
  std::optional<std::string> CheckInterpretable() const;
  std::vector<std::string> Warnings() const;
  uint32_t NameOf(std::string_view name);
  std::vector<RuntimeCall> SortedCalls() const;
  std::vector<GpuOp> SortedOps() const;

  std::vector<PendingCall> calls_;
  std::vector<PendingOp> ops_;
  struct SyncEvent {
    int64_t correlation;
    int32_t device;
    int64_t stream;  // kAnyStream unless a "Stream Sync" with args.stream
    uint32_t rank;
  };
  std::vector<SyncEvent> sync_events_;  // of cuda_sync events with a correlation
  std::vector<int64_t> pageable_dtoh_;  // correlations of device-to-pageable copies
  std::vector<std::pair<int64_t, uint64_t>> call_sizes_;  // (correlation, a call's args.size)
  // What the model does not time as it is (Warnings()).
  uint64_t collective_kernels_ = 0;                          // NCCL/RCCL kernels
  std::vector<Collective> collectives_;                      // ... their args describe
  uint64_t graph_launches_ = 0;                              // cudaGraphLaunch
  std::map<std::string, uint32_t, std::less<>> name_index_;  // Trace::names, each once
  std::vector<std::string> names_;
  ThreadIds threads_;
  uint32_t rank_ = 0;
  uint32_t ranks_ = 1;
  uint64_t read_ = 0;
  uint64_t skipped_ = 0;
};

std::optional<EventProblem> TraceBuilder::Add(const json& event, uint64_t index) {
  const Category category = CategoryOf(event);
  if (category == Category::kSkipped) {
    ++skipped_;
    return std::nullopt;
  }
  ++read_;
  const std::string_view label = StringField(event, "cat");
  switch (category) {
    case Category::kRuntime:
      return AddCall(event, label, index);
    case Category::kKernel:
    case Category::kMemcpy:
    case Category::kMemset:
      return AddOp(event, category, label, index);
    case Category::kSync:
      return AddSync(event, label);
    case Category::kSkipped:
      break;
  }
  return std::nullopt;
}

std::optional<EventProblem> TraceBuilder::AddCall(const json& event, std::string_view label,
                                                  uint64_t index) {
  const EventResult<EventTimes> times = ReadTimes(event, label);
  if (!times.ok()) return times.error();
  const EventResult<int64_t> correlation = KeyedCorrelation(event, label);
  if (!correlation.ok()) return correlation.error();
  const std::string_view name = StringField(event, "name");
  const std::string api = CudaApiName(name);  // once: every call event comes through here
  RuntimeCall call;
  call.kind = CallKindOf(api);
  call.thread = threads_.Of(event, rank_);
  call.start_ns = times.value().start_ns;
  call.dur_ns = times.value().dur_ns;
  call.correlation = correlation.value();
  call.name = NameOf(name);
  calls_.push_back({call, index, NeverWaits(api)});
  if (api == "cudaGraphLaunch") ++graph_launches_;
  // A copy's size on the host call (hipMemcpy*'s args.size), for GPU copies without args.bytes.
  if (const json* size = Arg(event, "size");
      size != nullptr && call.correlation != kNoCorrelation &&
      (call.kind == CallKind::kCopy || call.kind == CallKind::kSyncCopy)) {
    const std::optional<uint64_t> count = ReadCount(*size);
    if (!count) {
      return EventProblem{
          fmt::format("{} event args.size {} is not a byte count", label, Shown(*size))};
    }
    call_sizes_.emplace_back(call.correlation, *count);
  }
  return std::nullopt;
}

std::optional<EventProblem> TraceBuilder::AddOp(const json& event, Category category,
                                                std::string_view label, uint64_t index) {
  bool size_from_call = false;
  EventResult<GpuOp> op = ReadGpuOp(event, category, label, &size_from_call);
  if (!op.ok()) return op.error();
  if (const EventResult<int64_t> keyed = KeyedCorrelation(event, label); keyed.ok()) {
    op.value().correlation = keyed.value();
  } else {
    return keyed.error();
  }
  op.value().name = NameOf(StringField(event, "name"));
  if (op.value().kind == GpuOpKind::kKernel) {
    const std::string_view name = StringField(event, "name");
    if (StartsWithIgnoringCase(name, "nccl") || StartsWithIgnoringCase(name, "rccl")) {
      ++collective_kernels_;
      if (const std::optional<Collective> c = ReadCollective(event)) {
        op.value().collective = static_cast<uint32_t>(collectives_.size());
        collectives_.push_back(*c);
      }
    }
  }
  ops_.push_back({op.value(), index, size_from_call, rank_});
  // "Memcpy DtoH (Device -> Pageable)": the host's memory is not pinned, so the runtime copies
  // through a staging buffer and the call returns only when the copy is done, Async or not.
  if (op.value().kind == GpuOpKind::kMemcpyDtoH && op.value().correlation != kNoCorrelation &&
      ContainsIgnoringCase(StringField(event, "name"), "Pageable")) {
    pageable_dtoh_.push_back(op.value().correlation);
  }
  return std::nullopt;
}

// A cuda_sync event is the GPU's side of a host call that waited: its correlation, and for a
// "Stream Sync" the stream waited for (args.device and args.stream, both optional).
std::optional<EventProblem> TraceBuilder::AddSync(const json& event, std::string_view label) {
  const EventResult<int64_t> correlation = KeyedCorrelation(event, label);
  if (!correlation.ok()) return correlation.error();
  if (correlation.value() == kNoCorrelation) return std::nullopt;
  SyncEvent sync{correlation.value(), 0, kAnyStream, rank_};
  if (EqualsIgnoringCase(StringField(event, "name"), "Stream Sync")) {
    const EventResult<std::optional<int64_t>> stream = IntArg(event, label, "stream");
    if (!stream.ok()) return stream.error();
    const EventResult<std::optional<int64_t>> device = IntArg(event, label, "device");
    if (!device.ok()) return device.error();
    const int64_t index = device.value().value_or(0);
    if (stream.value() && index >= 0 && index <= std::numeric_limits<int32_t>::max()) {
      sync.stream = *stream.value();
      sync.device = static_cast<int32_t>(index);
    }
  }
  sync_events_.push_back(sync);
  return std::nullopt;
}

ParseResult<Trace> TraceBuilder::Finish(const std::string& source) {
  if (ops_.empty()) {
    return ErrorIn(source, fmt::format("no GPU activity (no kernel, gpu_memcpy or gpu_memset event "
                                       "in {} events): was the profiler run with "
                                       "ProfilerActivity.CUDA?",
                                       read_ + skipped_));
  }
  if (const std::optional<std::string> problem = CheckCorrelationsPerProcess()) {
    return ErrorIn(source, *problem);
  }
  if (const std::optional<std::string> problem = StartFromEarliest()) {
    return ErrorIn(source, *problem);
  }
  RankDevices();
  PromoteSyncedCalls();
  if (std::optional<std::string> problem = SizesFromCalls()) return ErrorIn(source, *problem);
  if (std::optional<std::string> problem = CheckInterpretable()) return ErrorIn(source, *problem);
  Trace trace;
  trace.calls = SortedCalls();
  trace.ops = SortedOps();
  trace.source = source;
  trace.events_read = read_;
  trace.events_skipped = skipped_;
  trace.warnings = Warnings();
  trace.names = names_;
  trace.collectives = collectives_;
  return trace;
}

// The event's correlation ID, above its rank's bits when several ranks are read.
EventResult<int64_t> TraceBuilder::KeyedCorrelation(const json& event,
                                                    std::string_view label) const {
  EventResult<int64_t> correlation = ReadCorrelation(event, label);
  if (!correlation.ok() || rank_ == 0 || correlation.value() == kNoCorrelation) return correlation;
  if (correlation.value() < 0 || correlation.value() >= (int64_t{1} << kRankShift)) {
    return EventProblem{
        fmt::format("{} event args.correlation {} is too large to tell ranks "
                    "apart (at most 2^{})",
                    label, correlation.value(), kRankShift)};
  }
  return (static_cast<int64_t>(rank_) << kRankShift) | correlation.value();
}

// Several ranks: ranks on one node number their GPUs alike (rank 1's is its device 1), and the
// numbers stay. Ranks on several nodes each have a device 0: then the devices the ranks' work
// ran on become the trace's 0, 1, ... in rank order (then of the rank's own index), and those
// they only copied into or waited for come after them.
void TraceBuilder::RankDevices() {
  if (ranks_ <= 1) return;
  using RankDevice = std::pair<uint32_t, int32_t>;
  std::set<RankDevice> worked;
  std::map<int32_t, uint32_t> rank_of_device;
  bool shared = false;  // a device number two ranks' work ran on
  for (const PendingOp& pending : ops_) {
    worked.emplace(pending.rank, pending.op.device);
    const auto [it, added] = rank_of_device.emplace(pending.op.device, pending.rank);
    shared |= it->second != pending.rank;
  }
  if (!shared) return;
  std::map<RankDevice, int32_t> global;
  int32_t next = 0;
  for (const RankDevice& d : worked) global.emplace(d, next++);
  const auto number = [&](uint32_t rank, int32_t device) {
    const auto [it, added] = global.emplace(RankDevice(rank, device), next);
    if (added) ++next;
    return it->second;
  };
  for (PendingOp& pending : ops_) {
    pending.op.device = number(pending.rank, pending.op.device);
    if (pending.op.peer_device != kNoDevice)
      pending.op.peer_device = number(pending.rank, pending.op.peer_device);
  }
  for (SyncEvent& sync : sync_events_) sync.device = number(sync.rank, sync.device);
}

// A correlation ID names one host call: within a process. Two processes' calls with the same ID
// that GPU work names (ranks merged into one file) cannot be told apart by the GPU's side, which
// names no process: refused rather than paired at random.
std::optional<std::string> TraceBuilder::CheckCorrelationsPerProcess() const {
  std::unordered_map<int64_t, int64_t> process_of;  // correlation -> the first call's process
  std::set<int64_t> shared;                         // correlations of calls of two processes
  for (const PendingCall& pending : calls_) {
    if (pending.call.correlation == kNoCorrelation) continue;
    const int64_t process = pending.call.thread >> 32;
    const auto [it, added] = process_of.emplace(pending.call.correlation, process);
    if (!added && it->second != process) shared.insert(pending.call.correlation);
  }
  if (shared.empty()) return std::nullopt;
  for (const PendingOp& pending : ops_) {
    if (!shared.contains(pending.op.correlation)) continue;
    return fmt::format(
        "traceEvents[{}]: its correlation {} names host calls of two processes: ranks merged "
        "into one file, whose GPU work cannot be matched to its calls; give each rank's trace as "
        "its own file in one directory (dxpu model DIR)",
        pending.index, pending.op.correlation & ((int64_t{1} << kRankShift) - 1));
  }
  return std::nullopt;
}

// Start times from the earliest call or operation instead of the trace's clock.
std::optional<std::string> TraceBuilder::StartFromEarliest() {
  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (const PendingCall& pending : calls_) earliest = std::min(earliest, pending.call.start_ns);
  for (const PendingOp& pending : ops_) earliest = std::min(earliest, pending.op.start_ns);
  // Every start is less than 2^62 ns from zero (ReadTimes): the differences fit in int64.
  const auto rebase = [earliest](int64_t& start_ns, uint64_t index) -> std::optional<std::string> {
    start_ns -= earliest;
    if (start_ns <= kMaxRelativeStartNs) return std::nullopt;
    return fmt::format("traceEvents[{}]: ts is too far from the earliest event's (over 2^62 ns)",
                       index);
  };
  for (PendingCall& pending : calls_) {
    if (auto problem = rebase(pending.call.start_ns, pending.index)) return problem;
  }
  for (PendingOp& pending : ops_) {
    if (auto problem = rebase(pending.op.start_ns, pending.index)) return problem;
  }
  return std::nullopt;
}

// A call the names do not make a sync, whose GPU side is a cuda_sync event, waited all the same;
// a "Stream Sync" says which stream a synchronisation waited for.
void TraceBuilder::PromoteSyncedCalls() {
  std::ranges::stable_sort(sync_events_, {}, &SyncEvent::correlation);
  std::ranges::sort(pageable_dtoh_);
  for (PendingCall& pending : calls_) {
    RuntimeCall& call = pending.call;
    if (call.correlation == kNoCorrelation || pending.never_waits) continue;
    if (call.kind == CallKind::kCopy &&
        std::ranges::binary_search(pageable_dtoh_, call.correlation))
      call.kind = CallKind::kSyncCopy;  // a copy to pageable memory returns when it is done
    const auto it =
        std::ranges::lower_bound(sync_events_, call.correlation, {}, &SyncEvent::correlation);
    if (it == sync_events_.end() || it->correlation != call.correlation) continue;
    if (call.kind == CallKind::kOther) call.kind = CallKind::kSync;
    if (call.kind == CallKind::kSync && it->stream != kAnyStream) {
      call.sync_device = it->device;
      call.sync_stream = it->stream;
    }
  }
}

// Copies without args.bytes take their host call's args.size, shared evenly when several
// copies of one call have none (a staged copy's chunks); one whose call has none is an error,
// as a copy of unknown size always was.
std::optional<std::string> TraceBuilder::SizesFromCalls() {
  std::ranges::sort(call_sizes_);
  std::map<int64_t, uint64_t> sharing;  // correlation -> copies without a size
  for (const PendingOp& pending : ops_) {
    if (pending.size_from_call) ++sharing[pending.op.correlation];
  }
  for (PendingOp& pending : ops_) {
    if (!pending.size_from_call) continue;
    const auto it = std::ranges::lower_bound(call_sizes_, pending.op.correlation, {},
                                             &std::pair<int64_t, uint64_t>::first);
    if (it == call_sizes_.end() || it->first != pending.op.correlation) {
      return fmt::format(
          "traceEvents[{}]: gpu_memcpy event without args.bytes, and no host call "
          "of correlation {} says args.size",
          pending.index, pending.op.correlation);
    }
    pending.op.bytes = it->second / sharing[pending.op.correlation];
  }
  return std::nullopt;
}

// Host calls none of which the model knows (no launch, copy, memset or synchronisation among
// them: another runtime's names) would be timed as host work only and read 0.00%: said instead.
std::optional<std::string> TraceBuilder::CheckInterpretable() const {
  if (calls_.empty()) return std::nullopt;  // GPU activity alone: no host side to re-time
  for (const PendingCall& pending : calls_) {
    if (pending.call.kind != CallKind::kOther) return std::nullopt;
  }
  return fmt::format(
      "none of its {} host calls is a launch, copy, memset or synchronisation the "
      "model knows (CUDA's or HIP's runtime and driver names): it cannot say what "
      "DxPU would cost this workload",
      calls_.size());
}

// The index of `name` in Trace::names, added the first time; kNoName for none (or past 2^32 - 2
// distinct names, which a limit on events keeps far off).
uint32_t TraceBuilder::NameOf(std::string_view name) {
  if (name.empty()) return kNoName;
  if (const auto it = name_index_.find(name); it != name_index_.end()) return it->second;
  if (names_.size() >= kNoName) return kNoName;
  const auto index = static_cast<uint32_t>(names_.size());
  names_.emplace_back(name);
  name_index_.emplace(std::string(name), index);
  return index;
}

// One sentence for each thing in the trace the model times other than it ran, or not at all.
std::vector<std::string> TraceBuilder::Warnings() const {
  std::vector<std::string> w;
  if (collective_kernels_ > 0) {
    const uint64_t undescribed = collective_kernels_ - collectives_.size();
    w.push_back(fmt::format(
        "{} NCCL/RCCL kernels: {} described (collective, size, group) and timed from the GPUs' "
        "placement (dxpu model --placement; all in one box by default); {} without that "
        "description timed as fixed-length kernels",
        collective_kernels_, collectives_.size(), undescribed));
  }
  if (graph_launches_ > 0) {
    w.push_back(
        fmt::format("{} CUDA graph launches are each one launch: the graph's own kernels "
                    "are timed as the trace shows them, their launches inside the GPU "
                    "unchanged",
                    graph_launches_));
  }
  uint64_t peer_copies = 0, peer_nowhere = 0;
  for (const PendingOp& pending : ops_) {
    if (pending.op.kind != GpuOpKind::kMemcpyPeer) continue;
    ++peer_copies;
    peer_nowhere += pending.op.peer_device == kNoDevice;
  }
  if (peer_copies > 0) {
    w.push_back(fmt::format(
        "{} peer copies (Memcpy PtoP) cost nothing inside one box; between boxes (dxpu model "
        "--placement) they cross the fabric twice, through the host; {} of them name no "
        "destination (args.\"dst device\") and are taken as to the next GPU",
        peer_copies, peer_nowhere));
  }
  std::map<int64_t, bool> gives_work;  // host thread -> whether it makes any call but "other"
  for (const PendingCall& pending : calls_)
    gives_work[pending.call.thread] |= pending.call.kind != CallKind::kOther;
  const auto idle = std::ranges::count_if(gives_work, [](const auto& t) { return !t.second; });
  if (idle > 0 && idle < static_cast<std::ptrdiff_t>(gives_work.size())) {
    w.push_back(
        fmt::format("{} host threads make no launch, copy or synchronisation (watchdogs, "
                    "pollers): their calls keep their native times and do not decide "
                    "when the workload ends",
                    idle));
  }
  return w;
}

std::vector<RuntimeCall> TraceBuilder::SortedCalls() const {
  std::vector<RuntimeCall> calls;
  calls.reserve(calls_.size());
  for (const PendingCall& pending : calls_) calls.push_back(pending.call);
  std::ranges::stable_sort(calls, [](const RuntimeCall& a, const RuntimeCall& b) {
    return std::pair(a.thread, a.start_ns) < std::pair(b.thread, b.start_ns);
  });
  return calls;
}

std::vector<GpuOp> TraceBuilder::SortedOps() const {
  std::vector<GpuOp> ops;
  ops.reserve(ops_.size());
  for (const PendingOp& pending : ops_) ops.push_back(pending.op);
  std::ranges::stable_sort(ops, {}, &GpuOp::start_ns);
  return ops;
}

// --- Parsing the JSON ---

// Deeper than Kineto's own traces nest (6 or 7): stops a file of "[[[[..." from taking memory
// many times its size.
constexpr int kMaxDepth = 100;

// Thrown by EventStream, from inside the parser, to stop it at the first problem with the trace.
struct StopParsing {};

// Follows nlohmann::json's parse events to hand each element of the top-level traceEvents array
// to a TraceBuilder as soon as it is parsed, and drop it from the document.
class EventStream {
 public:
  EventStream(TraceBuilder& builder, uint64_t max_events)
      : builder_(builder), max_events_(max_events) {}

  // nlohmann::json's parser callback: true keeps the value in the document. Throws StopParsing
  // at the first problem.
  bool OnParseEvent(int depth, json::parse_event_t event, const json& parsed);

  bool saw_events_array() const { return saw_events_array_; }
  uint64_t events() const { return next_index_; }
  // The problem that stopped the parser.
  const std::optional<std::string>& problem() const { return problem_; }

 private:
  bool OnTopLevel(json::parse_event_t event, const json& parsed);
  bool OnEvent(const json& element);
  [[noreturn]] void Stop(std::string problem);

  TraceBuilder& builder_;
  uint64_t max_events_;
  uint64_t next_index_ = 0;
  bool key_is_trace_events_ = false;  // the top-level key just read is "traceEvents"
  bool in_events_ = false;            // inside the traceEvents array
  bool saw_events_array_ = false;
  std::optional<std::string> problem_;
};

bool EventStream::OnParseEvent(int depth, json::parse_event_t event, const json& parsed) {
  if (depth > kMaxDepth) Stop(fmt::format("JSON nested deeper than {} levels", kMaxDepth));
  if (depth == 1) return OnTopLevel(event, parsed);
  if (depth != 2 || !in_events_) return true;
  // An element of traceEvents: complete when its value or its closing bracket is parsed.
  switch (event) {
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
    case json::parse_event_t::value:
      return OnEvent(parsed);
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
    case json::parse_event_t::key:
      break;
  }
  return true;
}

bool EventStream::OnTopLevel(json::parse_event_t event, const json& parsed) {
  if (event == json::parse_event_t::key) {
    key_is_trace_events_ =
        parsed.is_string() && parsed.get_ref<const std::string&>() == "traceEvents";
    if (key_is_trace_events_ && saw_events_array_) Stop("more than one traceEvents array");
  } else if (event == json::parse_event_t::array_start && key_is_trace_events_) {
    in_events_ = true;
    saw_events_array_ = true;
  } else if (event == json::parse_event_t::array_end) {
    in_events_ = false;
  }
  return true;
}

bool EventStream::OnEvent(const json& element) {
  if (next_index_ == max_events_) {
    Stop(fmt::format("more than {} events in traceEvents (the limit)", max_events_));
  }
  const uint64_t index = next_index_++;
  if (!element.is_object()) {
    Stop(fmt::format("traceEvents[{}]: event is {}, not an object", index,
                     TypeDescription(element)));
  }
  if (const std::optional<EventProblem> problem = builder_.Add(element, index)) {
    Stop(fmt::format("traceEvents[{}]: {}", index, problem->text));
  }
  return false;  // the builder has kept what it needs
}

void EventStream::Stop(std::string problem) {
  problem_ = std::move(problem);
  throw StopParsing{};
}

std::optional<std::string> TopLevelProblem(const json& top, const EventStream& events) {
  if (!top.is_object()) {
    return fmt::format("the top level is {}, not an object with traceEvents", TypeDescription(top));
  }
  if (events.saw_events_array()) return std::nullopt;
  if (top.contains("traceEvents")) return "traceEvents is not an array";
  return "no traceEvents array";
}

// Parses the text as it is read, each event to the builder as soon as it is parsed; at most
// *events_left events (less those read). A problem with the input (a truncated gzip stream, a
// limit) is reported rather than what the parser made of the text that ended early.
std::optional<ParseError> ParseEvents(TraceText& text, const std::string& source,
                                      TraceBuilder& builder, uint64_t* events_left) {
  if (text.problem()) return ErrorIn(source, *text.problem());
  EventStream events(builder, *events_left);
  std::istream stream(&text);
  json top;
  try {
    top = json::parse(stream, [&events](int depth, json::parse_event_t event, json& parsed) {
      return events.OnParseEvent(depth, event, parsed);
    });
  } catch (const StopParsing&) {
    if (text.problem()) return ErrorIn(source, *text.problem());
    return ErrorIn(source, events.problem().value_or("stopped"));
  } catch (const json::parse_error& error) {
    if (text.problem()) return ErrorIn(source, *text.problem());
    return ErrorIn(source, fmt::format("not JSON: syntax error at byte {}, {}", error.byte,
                                       SyntaxErrorText(error)));
  } catch (const json::exception& error) {
    if (text.problem()) return ErrorIn(source, *text.problem());
    return ErrorIn(source, fmt::format("not JSON: {}", Printable(JsonErrorText(error), 300)));
  }
  // The whole text parsed; the input may still be wrong after it (a gzip trailer's CRC).
  if (text.problem()) return ErrorIn(source, *text.problem());
  if (const std::optional<std::string> problem = TopLevelProblem(top, events)) {
    return ErrorIn(source, *problem);
  }
  *events_left -= events.events();
  return std::nullopt;
}

ParseResult<Trace> ParseText(TraceText& text, const std::string& source,
                             const ParseLimits& limits) {
  TraceBuilder builder;
  uint64_t events_left = limits.max_events;
  if (std::optional<ParseError> error = ParseEvents(text, source, builder, &events_left))
    return *error;
  return builder.Finish(source);
}

// The trace files directly in `dir` (*.json, *.json.gz), in name order.
util::Expected<std::vector<std::string>, std::string> RankFiles(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file(error)) continue;
    if (name.ends_with(".json") || name.ends_with(".json.gz")) files.push_back(entry.path());
  }
  if (error) return fmt::format("cannot list: {}", error.message());
  if (files.empty()) return std::string("no trace files (*.json, *.json.gz) in the directory");
  if (files.size() > kMaxRanks) {
    return fmt::format("{} trace files: more ranks than the {} the model takes", files.size(),
                       kMaxRanks);
  }
  std::ranges::sort(files);
  return files;
}

// Runs `parse`, turning what it throws into a ParseError.
template <typename Parse>
ParseResult<Trace> Guarded(const std::string& source, Parse&& parse) {
  try {
    return parse();
  } catch (const std::bad_alloc&) {
    return ErrorIn(source, "out of memory (the trace is too large for this machine)");
  } catch (const std::exception& error) {
    return ErrorIn(source, fmt::format("unexpected error: {}", error.what()));
  } catch (...) {
    return ErrorIn(source, "unexpected error");
  }
}

}  // namespace

ParseResult<Trace> ParseKinetoTrace(std::span<const uint8_t> bytes, const std::string& source,
                                    const ParseLimits& limits) {
  return Guarded(source, [&] {
    const std::unique_ptr<TraceText> text = TraceText::FromMemory(bytes, limits.max_file_bytes);
    return ParseText(*text, source, limits);
  });
}

ParseResult<Trace> ReadKinetoTraceFile(const std::string& path, const ParseLimits& limits) {
  return Guarded(path, [&] {
    const std::unique_ptr<TraceText> text = TraceText::FromFile(path, limits.max_file_bytes);
    return ParseText(*text, path, limits);
  });
}

ParseResult<Trace> ReadKinetoTraceDirectory(const std::string& dir, const ParseLimits& limits) {
  return Guarded(dir, [&]() -> ParseResult<Trace> {
    const util::Expected<std::vector<std::string>, std::string> files = RankFiles(dir);
    if (!files.ok()) return ErrorIn(dir, files.error());
    TraceBuilder builder;
    uint64_t events_left = limits.max_events;
    for (size_t rank = 0; rank < files.value().size(); ++rank) {
      const std::string& path = files.value()[rank];
      builder.StartRank(static_cast<uint32_t>(rank));
      const std::unique_ptr<TraceText> text = TraceText::FromFile(path, limits.max_file_bytes);
      if (std::optional<ParseError> error = ParseEvents(*text, path, builder, &events_left))
        return *error;
    }
    return builder.Finish(dir);
  });
}

ParseResult<Trace> ReadKinetoTrace(const std::string& path, const ParseLimits& limits) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return ReadKinetoTraceDirectory(path, limits);
  return ReadKinetoTraceFile(path, limits);
}

}  // namespace dxpu::perfmodel
