// xml_escape.h - text made safe for XML 1.0 content and attribute values (the SVG charts of
// `dxpu model --sweep` and `dxpu pool simulate --svg`): & < > " escaped, control characters
// (not allowed in XML 1.0 text) dropped, tabs kept.
#ifndef DXPU_LIB_UTIL_XML_ESCAPE_H_
#define DXPU_LIB_UTIL_XML_ESCAPE_H_

#include <string>
#include <string_view>

namespace dxpu::util {

inline std::string XmlEscape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
    }
  }
  return out;
}

}  // namespace dxpu::util

#endif  // DXPU_LIB_UTIL_XML_ESCAPE_H_
