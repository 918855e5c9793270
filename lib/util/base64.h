// base64.h - RFC 4648 base64 (the standard alphabet, '=' padding), as etcd's JSON API carries
// keys and values. Decoding takes untrusted text: anything that is not canonical base64 is
// refused (nullopt), never guessed at.
#ifndef DXPU_LIB_UTIL_BASE64_H_
#define DXPU_LIB_UTIL_BASE64_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dxpu::util {

inline constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

inline std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<uint8_t>(bytes[i])} << 16) |
                       (uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8) |
                       uint32_t{static_cast<uint8_t>(bytes[i + 2])};
    for (int shift = 18; shift >= 0; shift -= 6) out += kBase64Alphabet[(v >> shift) & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out += kBase64Alphabet[(v >> 18) & 63];
    out += kBase64Alphabet[(v >> 12) & 63];
    out += rest == 2 ? kBase64Alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

inline std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  constexpr std::array<int8_t, 256> kValue = [] {
    std::array<int8_t, 256> t{};
    t.fill(-1);
    for (size_t i = 0; i < kBase64Alphabet.size(); ++i)
      t[static_cast<uint8_t>(kBase64Alphabet[i])] = static_cast<int8_t>(i);
    return t;
  }();
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = !last ? 0 : text[i + 3] != '=' ? 0 : text[i + 2] != '=' ? 1 : 2;
    uint32_t v = 0;
    for (size_t j = 0; j < 4; ++j) {
      const bool is_pad = static_cast<int>(j) >= 4 - pad;
      const int d = is_pad ? 0 : int{kValue[static_cast<uint8_t>(text[i + j])]};
      if (d < 0) return std::nullopt;  // not of the alphabet, or '=' before the end
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    // Canonical: the bits a padded quantum leaves over must be zero.
    if ((pad == 1 && (v & 0xff) != 0) || (pad == 2 && (v & 0xffff) != 0)) return std::nullopt;
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

}  // namespace dxpu::util

#endif  // DXPU_LIB_UTIL_BASE64_H_
