// duration.h - one syntax for every time value a DxPU command line takes: a number and a unit,
// "500ms", "15s", "2us", "1.5us", "100ns", "2min", "1h". The vocabulary is in docs/cli.md.
#ifndef DXPU_LIB_CLI_DURATION_H_
#define DXPU_LIB_CLI_DURATION_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "lib/util/expected.h"

namespace dxpu::cli {

enum class DurationUnit { kNanoseconds, kMicroseconds, kMilliseconds, kSeconds, kMinutes, kHours };

// Parses a non-negative duration. A number without a unit is refused ("give a unit: 15s"; 0 is
// 0 in any unit),
// unless bare_unit says what a bare number meant before units were required (an option whose
// name did not change keeps accepting its old spelling). Rounded to whole nanoseconds.
util::Expected<std::chrono::nanoseconds, std::string> ParseDuration(
    std::string_view text, std::optional<DurationUnit> bare_unit = std::nullopt);

// The shortest exact spelling ParseDuration reads back: "500ms", "15s", "1.5us", "0s".
std::string FormatDuration(std::chrono::nanoseconds d);

// The unit's suffix as written on a command line: "ns", "us", "ms", "s", "min", "h".
std::string_view UnitSuffix(DurationUnit unit);

}  // namespace dxpu::cli

#endif  // DXPU_LIB_CLI_DURATION_H_
