// numbers.cc - number and PCI ID parsing and printing.
#include "numbers.h"

#include <dxpu/tlp.h>
#include <spdlog/fmt/fmt.h>

#include <limits>

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

}  // namespace dxpu::cli
