// units.h - exact parsing and printing of the quantities in a fault spec: durations
// ("10us", "1.5ms"), bit rates ("100g") and byte counts. Decimal fractions are read
// exactly (no floating point), and must come to a whole number of the base unit.
#ifndef DXPU_LIB_SIM_UNITS_H_
#define DXPU_LIB_SIM_UNITS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/clock.h"

namespace dxpu::sim {

// A parsed quantity in its base unit, or why the text is not one (the error does not
// repeat the text's key).
struct Quantity {
  std::optional<uint64_t> value;
  std::string error;

  bool ok() const { return value.has_value(); }
};

// A number and a unit, one of ns, us, ms, s; below kNever nanoseconds.
Quantity ParseDuration(std::string_view text);
// A number of bits/s with an optional decimal suffix k (10^3), m (10^6) or g (10^9).
Quantity ParseBitRate(std::string_view text);
// A whole number of bytes, no suffix.
Quantity ParseBytes(std::string_view text);

// In the largest unit that divides the value exactly: "10us", "1500ns", "0ns".
std::string FormatDuration(Nanos d);
// In the largest suffix that divides the value exactly: "100g", "1500k", "7".
std::string FormatBitRate(uint64_t bps);

}  // namespace dxpu::sim

#endif  // DXPU_LIB_SIM_UNITS_H_
