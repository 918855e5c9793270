// os_error.cc - turns errno into a std::error_code.
#include "link/os_error.h"

#include <spdlog/spdlog.h>

#include <cerrno>

namespace dxpu::link {

std::error_code OsError(int err, std::string_view what) {
  std::error_code ec(err, std::system_category());
  spdlog::debug("link: {}: {}", what, ec.message());
  return ec;
}

std::error_code LastOsError(std::string_view what) { return OsError(errno, what); }

}  // namespace dxpu::link
