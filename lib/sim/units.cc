// units.cc - exact decimal quantities with units.
#include "sim/units.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace dxpu::sim {
namespace {

constexpr size_t kMaxDigits = 30;  // keeps mantissa * unit and 10^fraction in 128 bits

struct Unit {
  std::string_view name;
  uint64_t scale;
};

constexpr std::array<Unit, 4> kTimeUnits = {{
    {"s", kSecond},
    {"ms", kMillisecond},
    {"us", kMicrosecond},
    {"ns", kNanosecond},
}};

constexpr std::array<Unit, 4> kRateUnits = {{
    {"g", 1'000'000'000},
    {"m", 1'000'000},
    {"k", 1'000},
    {"", 1},
}};

Quantity Error(std::string message) { return {std::nullopt, std::move(message)}; }

// `number` * `scale`, where number is digits with at most one '.', exactly; an error if
// it is not a number or the result is not a whole number below `limit`.
Quantity ScaleDecimal(std::string_view number, uint64_t scale, uint64_t limit,
                      std::string_view base_unit) {
  unsigned __int128 mantissa = 0;
  unsigned __int128 divisor = 1;
  size_t digits = 0;
  bool seen_point = false;
  for (const char c : number) {
    if (c == '.' && !seen_point) {
      seen_point = true;
    } else if (c >= '0' && c <= '9') {
      if (++digits > kMaxDigits) return Error("'" + std::string(number) + "' has too many digits");
      mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
      if (seen_point) divisor *= 10;
    } else {
      return Error("'" + std::string(number) + "' is not a number");
    }
  }
  if (digits == 0) return Error("'" + std::string(number) + "' is not a number");
  const unsigned __int128 scaled = mantissa * scale;
  if (scaled % divisor != 0) {
    return Error("'" + std::string(number) + "' is not a whole number of " +
                 std::string(base_unit));
  }
  if (scaled / divisor >= limit) return Error("'" + std::string(number) + "' is too large");
  return {static_cast<uint64_t>(scaled / divisor), {}};
}

// Splits "12.5ms" into "12.5" and "ms".
std::pair<std::string_view, std::string_view> SplitUnit(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  return {text.substr(0, i), text.substr(i)};
}

std::string FormatScaled(uint64_t value, const std::array<Unit, 4>& units) {
  for (const Unit& u : units) {
    if (value % u.scale == 0 && (value != 0 || u.scale == 1)) {
      return std::to_string(value / u.scale) + std::string(u.name);
    }
  }
  return std::to_string(value);  // not reached: the last unit has scale 1
}

}  // namespace

Quantity ParseDuration(std::string_view text) {
  const auto [number, unit] = SplitUnit(text);
  if (number.empty()) return Error("'" + std::string(text) + "' is not a number");
  if (unit.empty()) return Error("'" + std::string(text) + "' has no time unit (ns, us, ms or s)");
  for (const Unit& u : kTimeUnits) {
    if (unit == u.name) return ScaleDecimal(number, u.scale, kNever, "nanoseconds");
  }
  return Error("unknown time unit '" + std::string(unit) + "' (ns, us, ms or s)");
}

Quantity ParseBitRate(std::string_view text) {
  const auto [number, unit] = SplitUnit(text);
  if (number.empty()) return Error("'" + std::string(text) + "' is not a number");
  for (const Unit& u : kRateUnits) {
    if (unit == u.name) return ScaleDecimal(number, u.scale, UINT64_MAX, "bits/s");
  }
  return Error("unknown bandwidth unit '" + std::string(unit) + "' (k, m or g, bits/s)");
}

Quantity ParseBytes(std::string_view text) {
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return Error("'" + std::string(text) + "' is not a whole number of bytes");
    }
  }
  return ScaleDecimal(text, 1, UINT64_MAX, "bytes");
}

std::string FormatDuration(Nanos d) { return FormatScaled(d, kTimeUnits); }

std::string FormatBitRate(uint64_t bps) { return FormatScaled(bps, kRateUnits); }

}  // namespace dxpu::sim
