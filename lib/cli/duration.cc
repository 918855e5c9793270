// duration.cc - durations on command lines: "500ms", "15s", "1.5us".
#include "lib/cli/duration.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

namespace dxpu::cli {
namespace {

struct UnitSpelling {
  std::string_view suffix;
  DurationUnit unit;
  int64_t nanoseconds;
};

// Longest suffix first where one is a suffix of another ("ms" before "s").
constexpr std::array<UnitSpelling, 6> kUnits = {{
    {"h", DurationUnit::kHours, 3'600'000'000'000},
    {"min", DurationUnit::kMinutes, 60'000'000'000},
    {"ns", DurationUnit::kNanoseconds, 1},
    {"us", DurationUnit::kMicroseconds, 1'000},
    {"ms", DurationUnit::kMilliseconds, 1'000'000},
    {"s", DurationUnit::kSeconds, 1'000'000'000},
}};

// The units FormatDuration writes, largest first (minutes and hours are read, never written).
constexpr std::array<UnitSpelling, 4> kFormatUnits = {{
    {"s", DurationUnit::kSeconds, 1'000'000'000},
    {"ms", DurationUnit::kMilliseconds, 1'000'000},
    {"us", DurationUnit::kMicroseconds, 1'000},
    {"ns", DurationUnit::kNanoseconds, 1},
}};

int64_t NanosecondsPer(DurationUnit unit) {
  for (const UnitSpelling& u : kUnits) {
    if (u.unit == unit) return u.nanoseconds;
  }
  return 1;
}

std::string Example(std::optional<DurationUnit> bare_unit) {
  return bare_unit ? fmt::format("15{}", UnitSuffix(*bare_unit)) : "500ms or 15s";
}

}  // namespace

std::string_view UnitSuffix(DurationUnit unit) {
  for (const UnitSpelling& u : kUnits) {
    if (u.unit == unit) return u.suffix;
  }
  return "";
}

util::Expected<std::chrono::nanoseconds, std::string> ParseDuration(
    std::string_view text, std::optional<DurationUnit> bare_unit) {
  const std::string shown(text);
  size_t number_end = 0;
  while (number_end < text.size() &&
         ((text[number_end] >= '0' && text[number_end] <= '9') || text[number_end] == '.')) {
    ++number_end;
  }
  std::string_view number = text.substr(0, number_end);
  std::string_view suffix = text.substr(number_end);
  if (number.empty()) {
    return fmt::format(
        "'{}' is not a duration: write a number and a unit (ns, us, ms, s, min, h), "
        "e.g. {}",
        shown, Example(bare_unit));
  }
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size() || !std::isfinite(value)) {
    return fmt::format("'{}' is not a duration: '{}' is not a number", shown, number);
  }
  int64_t scale = 0;
  if (suffix.empty()) {
    if (value == 0) return std::chrono::nanoseconds(0);  // 0 needs no unit
    if (!bare_unit) {
      return fmt::format("'{}' has no unit: write e.g. {}{} or {}ms (units: ns, us, ms, s, min, h)",
                         shown, shown, "s", shown);
    }
    scale = NanosecondsPer(*bare_unit);
  } else {
    for (const UnitSpelling& u : kUnits) {
      if (suffix == u.suffix) scale = u.nanoseconds;
    }
    if (scale == 0) {
      return fmt::format("'{}': unknown unit '{}' (units: ns, us, ms, s, min, h)", shown, suffix);
    }
  }
  const double ns = std::round(value * static_cast<double>(scale));
  if (ns > static_cast<double>(std::numeric_limits<int64_t>::max()) / 2) {
    return fmt::format("'{}' is too long a duration", shown);
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(ns));
}

std::string FormatDuration(std::chrono::nanoseconds d) {
  const int64_t ns = d.count();
  if (ns == 0) return "0s";
  // The largest unit (up to seconds) that shows the value with at most three decimals.
  for (const UnitSpelling& u : kFormatUnits) {
    const int64_t per = u.nanoseconds;
    if (std::llabs(ns) >= per && (ns % (per / 1000 > 0 ? per / 1000 : 1)) == 0) {
      if (ns % per == 0) return fmt::format("{}{}", ns / per, u.suffix);
      std::string s = fmt::format("{:.3f}", static_cast<double>(ns) / static_cast<double>(per));
      while (s.back() == '0') s.pop_back();
      return s + std::string(u.suffix);
    }
  }
  return fmt::format("{}ns", ns);
}

}  // namespace dxpu::cli
