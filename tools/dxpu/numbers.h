// numbers.h - the number and PCI ID syntax the commands accept and print.
#ifndef DXPU_TOOLS_DXPU_NUMBERS_H_
#define DXPU_TOOLS_DXPU_NUMBERS_H_

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/cli/duration.h"
#include "lib/cli/options.h"
#include "result.h"

namespace dxpu::cli {

// Unsigned integer, decimal or "0x" hex, '_' allowed between digits ("0x4_0000_0000").
// Error "bad-number" if malformed or larger than max.
Result<uint64_t> ParseUint(std::string_view text, uint64_t max);

// PCI routing ID as "bb:dd.f" (hex bus 00-ff, device 00-1f, function 0-7), or a 16-bit
// number. Error "bad-bdf".
Result<uint16_t> ParseBdf(std::string_view text);

// "bb:dd.f".
std::string FormatBdf(uint16_t id);

// ---- durations (lib/cli/duration.h, docs/cli.md) ------------------------------------------

// The range a duration option takes, inclusive.
struct DurationRange {
  std::chrono::nanoseconds min;
  std::chrono::nanoseconds max;
};

// AddDurationOption (lib/cli/options.h) whose value, under every spelling (the legacy ones
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

// Microseconds, for the figures and fields that stay in them.
inline double Microseconds(std::chrono::nanoseconds d) {
  return static_cast<double>(d.count()) / 1e3;
}

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_NUMBERS_H_
