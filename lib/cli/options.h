// options.h - CLI11 options in the DxPU vocabulary (docs/cli.md): durations with units, and
// old option spellings kept as hidden aliases for one release.
#ifndef DXPU_LIB_CLI_OPTIONS_H_
#define DXPU_LIB_CLI_OPTIONS_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "lib/cli/duration.h"

namespace dxpu::cli {

// An old spelling of a duration option: its name and the unit its bare number was in, e.g.
// {"--timeout-ms", DurationUnit::kMilliseconds}. Hidden from --help; writes the same target.
struct LegacyDurationName {
  std::string name;
  DurationUnit unit;
};

// Adds NAME (e.g. "--timeout") taking a DURATION ("500ms", "15s") into *target; the help shows
// *target's current value as the default. bare_unit: see ParseDuration (only for an option whose
// name is unchanged and took a bare number before). Each legacy name is a hidden option that
// takes a bare number in its unit (or a duration with a unit) and sets the same target; giving
// both spellings is a usage error.
CLI::Option* AddDurationOption(CLI::App& app, const std::string& name,
                               std::chrono::nanoseconds* target, const std::string& description,
                               std::initializer_list<LegacyDurationName> legacy = {},
                               std::optional<DurationUnit> bare_unit = std::nullopt);

// The range a duration option takes, inclusive.
struct DurationRange {
  std::chrono::nanoseconds min;
  std::chrono::nanoseconds max;
};

// AddDurationOption whose value, under every spelling (the legacy ones
// too), must lie in `range`: outside it is a usage error naming the option, the value and the
// range ("--duration: 5ms is outside 10ms..1min").
CLI::Option* AddBoundedDuration(CLI::App& app, const std::string& name,
                                std::chrono::nanoseconds* target, const std::string& description,
                                DurationRange range,
                                std::initializer_list<LegacyDurationName> legacy = {},
                                std::optional<DurationUnit> bare_unit = std::nullopt);

// A list of durations, comma-separated or as several arguments, each in `range`, into *target
// (replacing its default); legacy names as for AddDurationOption (hidden, their bare numbers in
// their unit). The help shows *target as the default.
CLI::Option* AddDurationListOption(CLI::App& app, const std::string& name,
                                   std::vector<std::chrono::nanoseconds>* target,
                                   const std::string& description, DurationRange range,
                                   std::initializer_list<LegacyDurationName> legacy = {},
                                   std::optional<DurationUnit> bare_unit = std::nullopt);

// Keeps an option out of --help (the help formatter skips its group) while CLI11 still names it
// in its errors; CLI11's own hiding, group(""), leaves an option nameless in its messages
// (": 5ms is outside ...", " excludes --timeout").
inline constexpr const char* kHiddenOptionGroup = "Hidden (old spellings)";
inline CLI::Option* Hide(CLI::Option* option) { return option->group(kHiddenOptionGroup); }

// A renamed option keeps its old spelling as a later long name of the same option:
// app.add_option("--bridge,--to", ...). The help formatter (help_formatter.h) shows short names
// and the first long name only, so "--to" works, is not listed, and errors name "--bridge".

}  // namespace dxpu::cli

#endif  // DXPU_LIB_CLI_OPTIONS_H_
