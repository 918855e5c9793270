// openb_trace.cc - the openb CSV readers (openb_trace.h).
#include "manager/simulate/openb_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

namespace dxpu::poolsim {
namespace {

constexpr std::string_view kNodeHeader = "sn,cpu_milli,memory_mib,gpu,model";
constexpr std::string_view kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time";
constexpr std::string_view kShortPodHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli";

std::vector<std::string_view> SplitFields(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    const size_t at = line.find(sep, start);
    out.push_back(line.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

// A decimal number, nothing else; nullopt for anything else or past max.
std::optional<uint64_t> Number(std::string_view field, uint64_t max) {
  uint64_t v = 0;
  if (field.empty()) return std::nullopt;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size() || v > max) return std::nullopt;
  return v;
}

// The lines of a CSV file: the header checked against the accepted ones (its index returned
// through *form), then each data line handed over with its number; '\r' before '\n' dropped,
// blank lines skipped. An error names the line.
template <typename OnRow>
std::string ForEachRow(std::string_view text, std::initializer_list<std::string_view> headers,
                       size_t* form, const OnRow& on_row) {
  if (text.size() > kMaxTraceBytes) return fmt::format("larger than {} MiB", kMaxTraceBytes >> 20);
  size_t line_no = 0;
  size_t rows = 0;
  bool header_seen = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (!header_seen) {
      const auto* const it = std::find(headers.begin(), headers.end(), line);
      if (it == headers.end()) {
        return fmt::format("line {}: the header is not {}", line_no,
                           fmt::format("'{}'", fmt::join(headers, "' or '")));
      }
      *form = static_cast<size_t>(it - headers.begin());
      header_seen = true;
      continue;
    }
    if (++rows > kMaxTraceRows) return fmt::format("more than {} rows", kMaxTraceRows);
    on_row(line, line_no);
  }
  if (!header_seen) return "empty: no header";
  return {};
}

std::string ReadWhole(const std::filesystem::path& path, std::string* text) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return fmt::format("{}: {}", path.string(), ec.message());
  if (size > kMaxTraceBytes)
    return fmt::format("{}: larger than {} MiB", path.string(), kMaxTraceBytes >> 20);
  std::ifstream in(path, std::ios::binary);
  if (!in) return fmt::format("{}: cannot be opened", path.string());
  std::ostringstream all;
  all << in.rdbuf();
  *text = std::move(all).str();
  return {};
}

// The file read whole, then parsed; an error names the path.
template <typename List>
List ReadList(const std::filesystem::path& path, List (*parse)(std::string_view)) {
  std::string text;
  if (std::string e = ReadWhole(path, &text); !e.empty()) return List{{}, {}, e};
  List list = parse(text);
  if (!list.ok()) list.error = path.string() + ": " + list.error;
  return list;
}

}  // namespace

NodeList ParseNodeList(std::string_view text) {
  NodeList out;
  std::set<std::string, std::less<>> names;
  size_t form = 0;
  out.error = ForEachRow(text, {kNodeHeader}, &form, [&](std::string_view line, size_t) {
    const std::vector<std::string_view> f = SplitFields(line, ',');
    if (f.size() != 5) {
      ++out.skipped["wrong-column-count"];
      return;
    }
    TraceNode n;
    n.name = f[0];
    const std::optional<uint64_t> cpu = Number(f[1], kMaxCpuMilli);
    const std::optional<uint64_t> mem = Number(f[2], kMaxMemoryMib);
    const std::optional<uint64_t> gpus = Number(f[3], kMaxGpusPerRow);
    if (n.name.empty()) {
      ++out.skipped["no-name"];
    } else if (!cpu || !mem || !gpus) {
      ++out.skipped["bad-number"];
    } else if (*gpus > 0 && f[4].empty()) {
      ++out.skipped["gpus-without-model"];
    } else if (!names.insert(n.name).second) {
      ++out.skipped["duplicate-name"];
    } else {
      n.cpu_milli = *cpu;
      n.memory_mib = *mem;
      n.gpus = static_cast<uint32_t>(*gpus);
      n.model = *gpus > 0 ? std::string(f[4]) : std::string();
      out.rows.push_back(std::move(n));
    }
  });
  if (!out.ok()) out.rows.clear();
  return out;
}

PodList ParsePodList(std::string_view text) {
  PodList out;
  size_t form = 0;
  out.error =
      ForEachRow(text, {kPodHeader, kShortPodHeader}, &form, [&](std::string_view line, size_t) {
        const std::vector<std::string_view> f = SplitFields(line, ',');
        if (f.size() != (form == 0 ? 11u : 5u)) {
          ++out.skipped["wrong-column-count"];
          return;
        }
        TracePod p;
        p.name = f[0];
        const std::optional<uint64_t> cpu = Number(f[1], kMaxCpuMilli);
        const std::optional<uint64_t> mem = Number(f[2], kMaxMemoryMib);
        const std::optional<uint64_t> num_gpu = Number(f[3], kMaxGpusPerRow);
        const std::optional<uint64_t> gpu_milli = Number(f[4], UINT32_MAX);
        if (p.name.empty()) {
          ++out.skipped["no-name"];
          return;
        }
        if (!cpu || !mem || !num_gpu || !gpu_milli) {
          ++out.skipped["bad-number"];
          return;
        }
        if (*num_gpu > 0 && (*gpu_milli == 0 || *gpu_milli > kMilliPerGpu)) {
          ++out.skipped["gpu-milli-out-of-range"];
          return;
        }
        if (*num_gpu == 0 && *gpu_milli != 0) {
          ++out.skipped["gpu-milli-without-gpus"];
          return;
        }
        p.cpu_milli = *cpu;
        p.memory_mib = *mem;
        p.num_gpu = static_cast<uint32_t>(*num_gpu);
        p.gpu_milli = static_cast<uint32_t>(*gpu_milli);
        if (form == 0) {
          for (std::string_view model : SplitFields(f[5], '|')) {
            if (!model.empty() &&
                std::find(p.gpu_spec.begin(), p.gpu_spec.end(), model) == p.gpu_spec.end())
              p.gpu_spec.emplace_back(model);
          }
          if (!f[8].empty()) p.creation_time = Number(f[8], UINT64_MAX);
          if (!f[9].empty()) p.deletion_time = Number(f[9], UINT64_MAX);
          if ((!f[8].empty() && !p.creation_time) || (!f[9].empty() && !p.deletion_time)) {
            ++out.skipped["bad-time"];
            return;
          }
          if (p.creation_time && p.deletion_time && *p.deletion_time < *p.creation_time) {
            ++out.skipped["deleted-before-created"];
            return;
          }
        }
        out.rows.push_back(std::move(p));
      });
  if (!out.ok()) out.rows.clear();
  return out;
}

NodeList ReadNodeList(const std::filesystem::path& path) { return ReadList(path, ParseNodeList); }

PodList ReadPodList(const std::filesystem::path& path) { return ReadList(path, ParsePodList); }

}  // namespace dxpu::poolsim
