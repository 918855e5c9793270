// errno_text.h - an errno value as its message ("No such file or directory"), thread-safely
// (strerror is not).
#ifndef DXPU_LIB_UTIL_ERRNO_TEXT_H_
#define DXPU_LIB_UTIL_ERRNO_TEXT_H_

#include <string>
#include <system_error>

namespace dxpu::util {

inline std::string ErrnoText(int err) {
  return std::error_code(err, std::system_category()).message();
}

}  // namespace dxpu::util

#endif  // DXPU_LIB_UTIL_ERRNO_TEXT_H_
