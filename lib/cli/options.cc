// options.cc - CLI11 options in the DxPU vocabulary.
#include "lib/cli/options.h"

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

}  // namespace dxpu::cli
