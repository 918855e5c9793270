// text.h - small helpers libdxgpu's messages are written with.
#ifndef DXPU_LIB_DXGPU_TEXT_H_
#define DXPU_LIB_DXGPU_TEXT_H_

#include <cstdint>
#include <string>

namespace dxpu::dxgpu {

// "0x1f00"
inline std::string Hex(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[v & 0xf]);
    v >>= 4;
  } while (v != 0);
  return "0x" + out;
}

}  // namespace dxpu::dxgpu

#endif  // DXPU_LIB_DXGPU_TEXT_H_
