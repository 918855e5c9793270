// chrome_events.h - the events of a Chrome trace (the JSON that Kineto writes and
// chrome://tracing and Perfetto open), from times in ns: what the trace recorder and the
// timeline write.
#ifndef DXPU_LIB_PERFMODEL_CHROME_EVENTS_H_
#define DXPU_LIB_PERFMODEL_CHROME_EVENTS_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace dxpu::perfmodel {

// Nanoseconds as the trace's microseconds (a double whose shortest form has at most 3 decimals).
inline double ChromeMicros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// A metadata event ("ph": "M") naming a process or thread: `what` is "process_name" or
// "thread_name".
inline nlohmann::ordered_json ChromeMetadata(const char* what, int64_t pid, int64_t tid,
                                             const std::string& name) {
  return nlohmann::ordered_json{{"ph", "M"},  {"name", what},
                                {"pid", pid}, {"tid", tid},
                                {"ts", 0},    {"args", nlohmann::ordered_json{{"name", name}}}};
}

// A complete event ("ph": "X") from `start_ns` for `dur_ns`.
inline nlohmann::ordered_json ChromeComplete(const char* category, const char* name, int64_t pid,
                                             int64_t tid, int64_t start_ns, int64_t dur_ns) {
  return nlohmann::ordered_json{{"ph", "X"},
                                {"cat", category},
                                {"name", name},
                                {"pid", pid},
                                {"tid", tid},
                                {"ts", ChromeMicros(start_ns)},
                                {"dur", ChromeMicros(dur_ns)}};
}

}  // namespace dxpu::perfmodel

#endif  // DXPU_LIB_PERFMODEL_CHROME_EVENTS_H_
