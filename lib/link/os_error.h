// os_error.h - turns errno into a std::error_code, logging the context at debug level.
#ifndef DXPU_LIB_LINK_OS_ERROR_H_
#define DXPU_LIB_LINK_OS_ERROR_H_

#include <string_view>
#include <system_error>

namespace dxpu::link {

// The error in errno, as a std::error_code; logs "what: message" at debug level.
std::error_code LastOsError(std::string_view what);

// err as a std::error_code; logs "what: message" at debug level.
std::error_code OsError(int err, std::string_view what);

}  // namespace dxpu::link

#endif  // DXPU_LIB_LINK_OS_ERROR_H_
