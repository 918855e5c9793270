// fault_plan.cc - parsing and printing fault specs, and drawing per-seed fault mixes.
#include "sim/fault_plan.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "sim/units.h"

namespace dxpu::sim {
namespace {

constexpr std::string_view kKeys =
    "loss, dup, reorder, reorder_delay, corrupt, latency, jitter, bw, queue, partition, cut, "
    "crash";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

// Each parser stores into *out and returns "" or the problem with the value.
std::string ParseProbability(std::string_view text, double* out) {
  double p = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, p);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(p)) {
    return Quote(text) + " is not a number";
  }
  if (p < 0 || p > 1) return Quote(text) + " is not a probability in [0, 1]";
  *out = p;
  return {};
}

std::string Store(const Quantity& q, uint64_t* out) {
  if (!q.ok()) return q.error;
  *out = *q.value;
  return {};
}

// "T" or "T+D".
std::string ParseWindow(std::string_view text, Nanos* at, Nanos* duration) {
  const size_t plus = text.find('+');
  if (std::string err = Store(ParseDuration(text.substr(0, plus)), at); !err.empty()) {
    return err;
  }
  *duration = kNever;
  if (plus == std::string_view::npos) return {};
  return Store(ParseDuration(text.substr(plus + 1)), duration);
}

bool IsNodeName(std::string_view name) {
  return !name.empty() && std::ranges::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

std::string CheckNodeName(std::string_view name) {
  if (IsNodeName(name)) return {};
  return "node name " + Quote(name) + " is not letters, digits, '_' and '-'";
}

// "NODE@T" or "NODE@T+D".
std::string ParseCrash(std::string_view text, CrashWindow* crash) {
  const size_t at = text.find('@');
  if (at == std::string_view::npos) return "expected NODE@TIME or NODE@TIME+DURATION";
  const std::string_view node = text.substr(0, at);
  if (std::string err = CheckNodeName(node); !err.empty()) return err;
  crash->node = std::string(node);
  return ParseWindow(text.substr(at + 1), &crash->at, &crash->duration);
}

// "FROM>TO@T" or "FROM>TO@T+D".
std::string ParseCut(std::string_view text, PartitionWindow* w) {
  const size_t at = text.find('@');
  const size_t arrow = text.substr(0, at).find('>');
  if (at == std::string_view::npos || arrow == std::string_view::npos) {
    return "expected FROM>TO@TIME or FROM>TO@TIME+DURATION";
  }
  const std::string_view from = text.substr(0, arrow);
  const std::string_view to = text.substr(arrow + 1, at - arrow - 1);
  if (std::string err = CheckNodeName(from); !err.empty()) return err;
  if (std::string err = CheckNodeName(to); !err.empty()) return err;
  if (from == to) return "a node cannot be cut from itself";
  w->from = std::string(from);
  w->to = std::string(to);
  return ParseWindow(text.substr(at + 1), &w->at, &w->duration);
}

// Applies one key=value; returns "" or the problem.
std::string ApplyItem(FaultPlan& plan, std::string_view key, std::string_view value,
                      std::set<std::string, std::less<>>& seen) {
  if (key == "partition") {
    PartitionWindow w;
    std::string err = ParseWindow(value, &w.at, &w.duration);
    if (err.empty()) plan.partitions.push_back(w);
    return err;
  }
  if (key == "cut") {
    PartitionWindow w;
    std::string err = ParseCut(value, &w);
    if (err.empty()) plan.partitions.push_back(std::move(w));
    return err;
  }
  if (key == "crash") {
    CrashWindow c;
    std::string err = ParseCrash(value, &c);
    if (err.empty()) plan.crashes.push_back(std::move(c));
    return err;
  }
  if (!seen.insert(std::string(key)).second) return Quote(key) + " given twice";
  if (key == "loss") return ParseProbability(value, &plan.loss);
  if (key == "dup") return ParseProbability(value, &plan.duplicate);
  if (key == "reorder") return ParseProbability(value, &plan.reorder);
  if (key == "corrupt") return ParseProbability(value, &plan.corrupt);
  if (key == "reorder_delay") return Store(ParseDuration(value), &plan.reorder_delay);
  if (key == "latency") return Store(ParseDuration(value), &plan.latency);
  if (key == "jitter") return Store(ParseDuration(value), &plan.jitter);
  if (key == "bw") return Store(ParseBitRate(value), &plan.bandwidth_bps);
  if (key == "queue") return Store(ParseBytes(value), &plan.queue_limit_bytes);
  return "unknown key " + Quote(key) + " (keys: " + std::string(kKeys) + ")";
}

std::string FormatProbability(double p) {
  std::array<char, 32> buf{};
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), p);
  return ec == std::errc() ? std::string(buf.data(), end) : std::string("?");
}

std::string FormatWindow(Nanos at, Nanos duration) {
  std::string s = FormatDuration(at);
  if (duration != kNever) s += "+" + FormatDuration(duration);
  return s;
}

}  // namespace

FaultPlanResult ParseFaultSpec(std::string_view spec) {
  FaultPlan plan;
  std::set<std::string, std::less<>> seen;
  if (Trim(spec).empty()) return {std::move(plan), {}};
  while (true) {
    const size_t comma = spec.find(',');
    const std::string_view item = Trim(spec.substr(0, comma));
    const size_t eq = item.find('=');
    std::string err;
    if (item.empty()) {
      err = "empty item (two commas, or a comma at an end)";
    } else if (eq == std::string_view::npos) {
      err = "not key=value";
    } else {
      err = ApplyItem(plan, Trim(item.substr(0, eq)), Trim(item.substr(eq + 1)), seen);
    }
    if (!err.empty()) return {std::nullopt, "fault spec item " + Quote(item) + ": " + err};
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return {std::move(plan), {}};
}

std::string ToString(const FaultPlan& plan) {
  const FaultPlan d;
  std::string out;
  const auto add = [&out](std::string_view key, const std::string& value) {
    if (!out.empty()) out += ',';
    out += std::string(key) + "=" + value;
  };
  if (plan.loss != d.loss) add("loss", FormatProbability(plan.loss));
  if (plan.duplicate != d.duplicate) add("dup", FormatProbability(plan.duplicate));
  if (plan.reorder != d.reorder) add("reorder", FormatProbability(plan.reorder));
  if (plan.reorder_delay != d.reorder_delay) {
    add("reorder_delay", FormatDuration(plan.reorder_delay));
  }
  if (plan.corrupt != d.corrupt) add("corrupt", FormatProbability(plan.corrupt));
  if (plan.latency != d.latency) add("latency", FormatDuration(plan.latency));
  if (plan.jitter != d.jitter) add("jitter", FormatDuration(plan.jitter));
  if (plan.bandwidth_bps != d.bandwidth_bps) add("bw", FormatBitRate(plan.bandwidth_bps));
  if (plan.queue_limit_bytes != d.queue_limit_bytes) {
    add("queue", std::to_string(plan.queue_limit_bytes));
  }
  for (const PartitionWindow& w : plan.partitions) {
    if (w.from.empty()) {
      add("partition", FormatWindow(w.at, w.duration));
    } else {
      add("cut", w.from + ">" + w.to + "@" + FormatWindow(w.at, w.duration));
    }
  }
  for (const CrashWindow& c : plan.crashes) {
    add("crash", c.node + "@" + FormatWindow(c.at, c.duration));
  }
  return out;
}

FaultPlan RandomizeFaultPlan(Rng& rng, const FaultPlan& max) {
  FaultPlan plan = max;
  plan.loss = rng.UniformDouble() * max.loss;
  plan.duplicate = rng.UniformDouble() * max.duplicate;
  plan.reorder = rng.UniformDouble() * max.reorder;
  plan.corrupt = rng.UniformDouble() * max.corrupt;
  return plan;
}

PathConfig ToPathConfig(const FaultPlan& plan) {
  PathConfig c;
  c.latency = plan.latency;
  c.jitter = plan.jitter;
  c.bandwidth_bps = plan.bandwidth_bps;
  c.queue_limit_bytes = plan.queue_limit_bytes;
  c.loss = plan.loss;
  c.duplicate = plan.duplicate;
  c.reorder = plan.reorder;
  c.reorder_delay = plan.reorder_delay;
  c.corrupt = plan.corrupt;
  return c;
}

}  // namespace dxpu::sim
