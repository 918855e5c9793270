// hex.cc - hex text to bytes and back.
#include "hex.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <array>

namespace dxpu::cli {
namespace {

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsSeparator(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == ':' ||
         c == ',' || c == '_';
}

// A printable rendering of one input character for an error message.
std::string Printable(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

}  // namespace

Result<Bytes> ParseHex(std::string_view text) {
  Bytes out;
  out.reserve(text.size() / 2);
  int high = -1;  // pending high nibble
  bool word_start = true;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (IsSeparator(c)) {
      word_start = true;
      continue;
    }
    if (word_start && c == '0' && i + 1 < text.size() &&
        (text[i + 1] == 'x' || text[i + 1] == 'X')) {
      if (high >= 0) {
        return Error{"odd-hex", fmt::format("\"0x\" at position {} splits a byte", i + 1)};
      }
      ++i;
      word_start = false;
      continue;
    }
    word_start = false;
    int v = HexDigitValue(c);
    if (v < 0) {
      return Error{"bad-hex",
                   fmt::format("{} at position {} is not a hex digit", Printable(c), i + 1)};
    }
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<uint8_t>((high << 4) | v));
      high = -1;
    }
  }
  if (high >= 0) {
    return Error{"odd-hex", fmt::format("odd number of hex digits ({}); every byte takes two",
                                        out.size() * 2 + 1)};
  }
  return out;
}

std::string FormatHex(std::span<const uint8_t> bytes, size_t group_size) {
  static constexpr std::array<char, 16> kDigits = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                   '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::string s;
  s.reserve(bytes.size() * 3);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (group_size && i && i % group_size == 0) s.push_back(' ');
    s.push_back(kDigits[bytes[i] >> 4]);
    s.push_back(kDigits[bytes[i] & 0xf]);
  }
  return s;
}

std::string FormatHexPrefix(std::span<const uint8_t> bytes, size_t max_bytes) {
  std::string s = FormatHex(bytes.first(std::min(bytes.size(), max_bytes)), 1);
  if (bytes.size() > max_bytes) s += " ...";
  return s;
}

Result<std::string> ReadAll(std::istream& in, size_t max_bytes) {
  std::string s;
  std::array<char, 4096> chunk{};
  while (in) {
    in.read(chunk.data(), chunk.size());
    auto n = static_cast<size_t>(in.gcount());
    if (s.size() + n > max_bytes) {
      return Error{"too-long", fmt::format("input is longer than {} bytes", max_bytes)};
    }
    s.append(chunk.data(), n);
  }
  if (in.bad()) return Error{"read-error", "cannot read the input"};
  return s;
}

}  // namespace dxpu::cli
