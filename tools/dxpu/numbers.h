// numbers.h - the number and PCI ID syntax the commands accept and print.
#ifndef DXPU_TOOLS_DXPU_NUMBERS_H_
#define DXPU_TOOLS_DXPU_NUMBERS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

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

// Durations: lib/cli/duration.h and lib/cli/options.h (docs/cli.md).

// Microseconds, for the figures and fields that stay in them.
inline double Microseconds(std::chrono::nanoseconds d) {
  return static_cast<double>(d.count()) / 1e3;
}

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_NUMBERS_H_
