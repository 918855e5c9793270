// hex.h - hex text to bytes and back, for the commands that take or print raw bytes.
#ifndef DXPU_TOOLS_DXPU_HEX_H_
#define DXPU_TOOLS_DXPU_HEX_H_

#include <cstddef>
#include <cstdint>
#include <istream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace dxpu::cli {

using Bytes = std::vector<uint8_t>;

// Parses hex digits into bytes. Whitespace, ':', ',' and '_' separate nothing and are
// skipped; a "0x" prefix at the start of a word is skipped too. Errors: "bad-hex" for any
// other character, "odd-hex" for an odd number of digits. Empty text gives no bytes.
Result<Bytes> ParseHex(std::string_view text);

// Lower-case hex, a space between groups of group_size bytes (0: no spaces).
std::string FormatHex(std::span<const uint8_t> bytes, size_t group_size = 4);

// The first max_bytes bytes as "aa bb cc", with " ..." when there are more.
std::string FormatHexPrefix(std::span<const uint8_t> bytes, size_t max_bytes);

// Reads a whole stream, refusing more than max_bytes ("too-long"); "read-error" on I/O
// failure.
Result<std::string> ReadAll(std::istream& in, size_t max_bytes);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_HEX_H_
