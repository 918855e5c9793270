// pool_error.cc - the HTTP status of each kind of pool manager error.
#include "manager/pool_error.h"

namespace dxpu::manager {

int HttpStatusOf(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadRequest:
      return 400;
    case ErrorKind::kForbidden:
      return 403;
    case ErrorKind::kNotFound:
      return 404;
    case ErrorKind::kConflict:
      return 409;
    case ErrorKind::kUnavailable:
      return 503;
    case ErrorKind::kInternal:
      return 500;
  }
  return 500;  // a value outside the enumeration
}

}  // namespace dxpu::manager
