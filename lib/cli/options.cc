// options.cc - CLI11 options in the DxPU vocabulary.
#include "lib/cli/options.h"

#include <fmt/format.h>

#include <functional>
#include <utility>

namespace dxpu::cli {
namespace {

// A callback storing one duration argument into *target; a malformed one is a usage error.
std::function<void(const std::string&)> Store(std::string name,
                                              std::optional<DurationUnit> bare_unit,
                                              std::chrono::nanoseconds* target) {
  return [name = std::move(name), bare_unit, target](const std::string& text) {
    auto parsed = ParseDuration(text, bare_unit);
    if (!parsed.ok()) throw CLI::ValidationError(name, parsed.error());
    *target = parsed.value();
  };
}

}  // namespace

CLI::Option* AddDurationOption(CLI::App& app, const std::string& name,
                               std::chrono::nanoseconds* target, const std::string& description,
                               std::initializer_list<LegacyDurationName> legacy,
                               std::optional<DurationUnit> bare_unit) {
  CLI::Option* primary =
      app.add_option_function<std::string>(name, Store(name, bare_unit, target), description)
          ->type_name("DURATION")
          ->default_str(FormatDuration(*target));
  for (const LegacyDurationName& old : legacy) {
    CLI::Option* alias =
        app.add_option_function<std::string>(old.name, Store(old.name, old.unit, target), "")
            ->group(kHiddenOptionGroup)
            ->excludes(primary);
    primary->remove_excludes(alias);  // one way: the help of the new name does not list the old
  }
  return primary;
}

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
