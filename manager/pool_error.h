// pool_error.h - the pool manager's errors as values: a kind that fixes the HTTP status, a
// stable lower-case name scripts match ("unknown-host"), and a sentence for people.
#ifndef DXPU_MANAGER_POOL_ERROR_H_
#define DXPU_MANAGER_POOL_ERROR_H_

#include <cstdint>
#include <string>

#include "lib/util/expected.h"

namespace dxpu::manager {

enum class ErrorKind : uint8_t {
  kBadRequest,   // 400: a malformed body, a field out of range
  kForbidden,    // 403: the client's identity may not do this (docs/manager.md "Roles")
  kNotFound,     // 404: no such host, box, GPU or allocation
  kConflict,     // 409: not possible in the pool's present state (a double release, too few GPUs)
  kUnavailable,  // 503: the store or a component cannot be reached now; try again
  kInternal,     // 500
};

// The HTTP status the REST API answers an error of this kind with.
int HttpStatusOf(ErrorKind kind);

struct PoolError {
  ErrorKind kind = ErrorKind::kInternal;
  std::string name;     // "unknown-host", "insufficient-gpus", "already-released", ...
  std::string message;  // for people
};

// A T, or the PoolError that says why not.
template <typename T>
using PoolResult = util::Expected<T, PoolError>;

// For operations with nothing to return.
struct Done {};

}  // namespace dxpu::manager

#endif  // DXPU_MANAGER_POOL_ERROR_H_
