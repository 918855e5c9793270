// numbers.cc - number and PCI ID parsing and printing.
#include "numbers.h"

#include <dxpu/tlp.h>
#include <spdlog/fmt/fmt.h>

#include <functional>
#include <limits>
#include <utility>

namespace dxpu::cli {
namespace {

int DigitValue(char c, unsigned base) {
  int v = -1;
  if (c >= '0' && c <= '9') v = c - '0';
  if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
  if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
  return v >= 0 && static_cast<unsigned>(v) < base ? v : -1;
}

// Digits of one base, '_' allowed between them. False on anything else or overflow.
bool ParseDigits(std::string_view s, unsigned base, uint64_t* value) {
  uint64_t v = 0;
  bool any = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && any && i + 1 < s.size()) continue;
    int d = DigitValue(s[i], base);
    if (d < 0) return false;
    if (v > (std::numeric_limits<uint64_t>::max() - static_cast<uint64_t>(d)) / base) {
      return false;
    }
    v = v * base + static_cast<uint64_t>(d);
    any = true;
  }
  *value = v;
  return any;
}

}  // namespace

Result<uint64_t> ParseUint(std::string_view text, uint64_t max) {
  std::string_view digits = text;
  unsigned base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    digits.remove_prefix(2);
    base = 16;
  }
  uint64_t v = 0;
  if (!ParseDigits(digits, base, &v)) {
    return Error{"bad-number", fmt::format("\"{}\" is not a number (decimal or 0x hex)", text)};
  }
  if (v > max) {
    return Error{"bad-number", fmt::format("{} is larger than {} (0x{:x})", text, max, max)};
  }
  return v;
}

Result<uint16_t> ParseBdf(std::string_view text) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    Result<uint64_t> n = ParseUint(text, 0xffff);
    if (!n.ok()) {
      return Error{"bad-bdf",
                   fmt::format("\"{}\" is not a PCI ID (bb:dd.f or a 16-bit number)", text)};
    }
    return static_cast<uint16_t>(n.value());
  }
  size_t dot = text.find('.', colon);
  uint64_t bus = 0;
  uint64_t dev = 0;
  uint64_t fn = 0;
  if (dot == std::string_view::npos || !ParseDigits(text.substr(0, colon), 16, &bus) ||
      !ParseDigits(text.substr(colon + 1, dot - colon - 1), 16, &dev) ||
      !ParseDigits(text.substr(dot + 1), 16, &fn) || bus > 0xff || dev > 0x1f || fn > 7) {
    return Error{"bad-bdf",
                 fmt::format("\"{}\" is not a PCI ID: bus 00-ff, device 00-1f, function 0-7 "
                             "(bb:dd.f)",
                             text)};
  }
  return DXPU_BDF(bus, dev, fn);
}

std::string FormatBdf(uint16_t id) {
  return fmt::format("{:02x}:{:02x}.{:x}", DXPU_BDF_BUS(id), DXPU_BDF_DEV(id), DXPU_BDF_FN(id));
}

// ---- durations ---------------------------------------------------------------------------

namespace {

// Checks each argument of an option (or of its legacy spelling `legacy_name`, read with
// `bare_unit`) against `range`. What does not parse is left to the option's own callback, whose
// message says why. CLI11 prefixes the message with the option's name, except for a hidden
// option (a legacy spelling), whose message therefore names it itself.
CLI::Validator InRange(DurationRange range, std::optional<DurationUnit> bare_unit,
                       const std::string& legacy_name = {}) {
  return {[range, bare_unit, legacy_name](std::string& text) -> std::string {
            auto d = ParseDuration(text, bare_unit);
            if (!d.ok() || (d.value() >= range.min && d.value() <= range.max)) return {};
            const std::string what = legacy_name.empty()
                                         ? FormatDuration(d.value())
                                         : fmt::format("{} ({})", text, FormatDuration(d.value()));
            return fmt::format("{} is outside {}..{}", what, FormatDuration(range.min),
                               FormatDuration(range.max));
          },
          ""};
}

void CheckLegacy(CLI::App& app, std::initializer_list<LegacyDurationName> legacy,
                 DurationRange range) {
  for (const LegacyDurationName& old : legacy) {
    if (CLI::Option* o = app.get_option_no_throw(old.name))
      o->check(InRange(range, old.unit, old.name));
  }
}

std::string Joined(const std::vector<std::chrono::nanoseconds>& list) {
  std::string s;
  for (std::chrono::nanoseconds d : list) s += (s.empty() ? "" : ",") + FormatDuration(d);
  return s;
}

// Stores a whole list into *target; a malformed element is a usage error.
std::function<void(const std::vector<std::string>&)> StoreList(
    std::string name, std::optional<DurationUnit> bare_unit,
    std::vector<std::chrono::nanoseconds>* target) {
  return [name = std::move(name), bare_unit, target](const std::vector<std::string>& items) {
    std::vector<std::chrono::nanoseconds> list;
    for (const std::string& item : items) {
      auto d = ParseDuration(item, bare_unit);
      if (!d.ok()) throw CLI::ValidationError(name, d.error());
      list.push_back(d.value());
    }
    *target = std::move(list);
  };
}

}  // namespace

CLI::Option* AddBoundedDuration(CLI::App& app, const std::string& name,
                                std::chrono::nanoseconds* target, const std::string& description,
                                DurationRange range,
                                std::initializer_list<LegacyDurationName> legacy,
                                std::optional<DurationUnit> bare_unit) {
  CLI::Option* o = AddDurationOption(app, name, target, description, legacy, bare_unit);
  o->check(InRange(range, bare_unit));
  CheckLegacy(app, legacy, range);
  return o;
}

CLI::Option* AddDurationListOption(CLI::App& app, const std::string& name,
                                   std::vector<std::chrono::nanoseconds>* target,
                                   const std::string& description, DurationRange range,
                                   std::initializer_list<LegacyDurationName> legacy,
                                   std::optional<DurationUnit> bare_unit) {
  CLI::Option* primary = app.add_option_function<std::vector<std::string>>(
                                name, StoreList(name, bare_unit, target), description)
                             ->delimiter(',')
                             ->type_name("DURATION,...")
                             ->default_str(Joined(*target))
                             ->check(InRange(range, bare_unit));
  for (const LegacyDurationName& old : legacy) {
    CLI::Option* alias = app.add_option_function<std::vector<std::string>>(
                                old.name, StoreList(old.name, old.unit, target), "")
                             ->delimiter(',')
                             ->group(kHiddenOptionGroup)
                             ->excludes(primary)
                             ->check(InRange(range, old.unit, old.name));
    primary->remove_excludes(alias);
  }
  return primary;
}

}  // namespace dxpu::cli
