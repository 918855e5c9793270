// prometheus_writer.h - builds the Prometheus text exposition format, version 0.0.4: for each
// metric family one "# HELP" and one "# TYPE" line, then its samples, whatever order the
// samples were added in. Names and label names are validated, label values and help texts
// escaped. A sample that cannot be written is refused (false) and its reason kept in errors().
//
//   PrometheusWriter w;
//   w.Counter("dxpu_frames_received_total", "DxFP frames received.", {{"link", "0"}}, 42);
//   w.Gauge("dxpu_sessions", "Host sessions established.", {}, 3);
//   std::string text = w.Finish();
#ifndef DXPU_LIB_METRICS_PROMETHEUS_WRITER_H_
#define DXPU_LIB_METRICS_PROMETHEUS_WRITER_H_

#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dxpu::metrics {

// The Content-Type of the format this writer produces.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

struct Label {
  std::string_view name;
  std::string_view value;
};

class PrometheusWriter {
 public:
  enum class Type : uint8_t { kCounter, kGauge };

  // Adds a sample to the family `name`. The family's help and type are those of its first
  // sample; a later sample of the same name with another type is refused, as are invalid
  // names ([a-zA-Z_:][a-zA-Z0-9_:]*), invalid or repeated label names ([a-zA-Z_][a-zA-Z0-9_]*,
  // not starting "__"), and a label set the family already has.
  bool Counter(std::string_view name, std::string_view help, std::initializer_list<Label> labels,
               uint64_t value);
  bool Gauge(std::string_view name, std::string_view help, std::initializer_list<Label> labels,
             double value);
  bool Add(std::string_view name, Type type, std::string_view help,
           std::initializer_list<Label> labels, std::string_view value);

  // The exposition: families in the order of their first sample, each sample on its own
  // line in the order added. The families are cleared for the next exposition; errors()
  // are kept.
  std::string Finish();

  // Why samples were refused, in order.
  const std::vector<std::string>& errors() const { return errors_; }

  static bool ValidMetricName(std::string_view name);
  static bool ValidLabelName(std::string_view name);
  // Label values: \ " and newline escaped. Help texts: \ and newline escaped.
  static std::string EscapeLabelValue(std::string_view value);
  static std::string EscapeHelp(std::string_view help);
  // A sample value: integers as they are, NaN, +Inf and -Inf by those names, other
  // doubles in the shortest form that reads back exactly.
  static std::string FormatValue(double value);

 private:
  struct Family {
    std::string name;
    Type type;
    std::string help;
    std::string samples;               // rendered sample lines
    std::set<std::string> label_sets;  // rendered "{...}" of each sample, to refuse repeats
  };

  bool Refuse(std::string why);

  std::vector<Family> families_;
  std::unordered_map<std::string, size_t> index_;  // name -> families_ index
  std::vector<std::string> errors_;
};

}  // namespace dxpu::metrics

#endif  // DXPU_LIB_METRICS_PROMETHEUS_WRITER_H_
