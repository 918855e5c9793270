// prometheus_writer.cc - the Prometheus text exposition format 0.0.4.
#include "metrics/prometheus_writer.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace dxpu::metrics {
namespace {

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view TypeName(PrometheusWriter::Type type) {
  return type == PrometheusWriter::Type::kCounter ? "counter" : "gauge";
}

}  // namespace

bool PrometheusWriter::ValidMetricName(std::string_view name) {
  if (name.empty() || IsDigit(name.front())) return false;
  return std::ranges::all_of(
      name, [](char c) { return IsLetter(c) || IsDigit(c) || c == '_' || c == ':'; });
}

bool PrometheusWriter::ValidLabelName(std::string_view name) {
  if (name.empty() || IsDigit(name.front()) || name.starts_with("__")) return false;
  return std::ranges::all_of(name, [](char c) { return IsLetter(c) || IsDigit(c) || c == '_'; });
}

std::string PrometheusWriter::EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string PrometheusWriter::EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (const char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string PrometheusWriter::FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Whole numbers that a double holds exactly print without an exponent or a fraction.
  if (std::trunc(value) == value && std::fabs(value) < 9007199254740992.0) {
    return fmt::format("{}", static_cast<int64_t>(value));
  }
  return fmt::format("{}", value);
}

bool PrometheusWriter::Refuse(std::string why) {
  errors_.push_back(std::move(why));
  return false;
}

bool PrometheusWriter::Counter(std::string_view name, std::string_view help,
                               std::initializer_list<Label> labels, uint64_t value) {
  return Add(name, Type::kCounter, help, labels, fmt::format("{}", value));
}

bool PrometheusWriter::Gauge(std::string_view name, std::string_view help,
                             std::initializer_list<Label> labels, double value) {
  return Add(name, Type::kGauge, help, labels, FormatValue(value));
}

bool PrometheusWriter::Add(std::string_view name, Type type, std::string_view help,
                           std::initializer_list<Label> labels, std::string_view value) {
  if (!ValidMetricName(name)) return Refuse(fmt::format("'{}' is not a metric name", name));
  std::string label_set;
  for (const Label* l = labels.begin(); l != labels.end(); ++l) {
    if (!ValidLabelName(l->name)) {
      return Refuse(fmt::format("{}: '{}' is not a label name", name, l->name));
    }
    for (const Label* earlier = labels.begin(); earlier != l; ++earlier) {
      if (earlier->name == l->name) {
        return Refuse(fmt::format("{}: label '{}' given twice", name, l->name));
      }
    }
    label_set += fmt::format("{}{}=\"{}\"", label_set.empty() ? "{" : ",", l->name,
                             EscapeLabelValue(l->value));
  }
  if (!label_set.empty()) label_set += "}";

  auto [it, fresh] = index_.try_emplace(std::string(name), families_.size());
  if (fresh) {
    families_.push_back({std::string(name), type, std::string(help), {}, {}});
  }
  Family& f = families_[it->second];
  if (f.type != type) {
    return Refuse(
        fmt::format("{}: a {} here, a {} before", name, TypeName(type), TypeName(f.type)));
  }
  if (!f.label_sets.insert(label_set).second) {
    return Refuse(fmt::format("{}{}: sample given twice", name, label_set));
  }
  f.samples += fmt::format("{}{} {}\n", name, label_set, value);
  return true;
}

std::string PrometheusWriter::Finish() {
  std::string out;
  for (const Family& f : families_) {
    if (!f.help.empty()) out += fmt::format("# HELP {} {}\n", f.name, EscapeHelp(f.help));
    out += fmt::format("# TYPE {} {}\n", f.name, TypeName(f.type));
    out += f.samples;
  }
  families_.clear();
  index_.clear();
  return out;
}

}  // namespace dxpu::metrics
