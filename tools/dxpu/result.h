// result.h - errors as values: a value of type T, or an Error that says why not.
#ifndef DXPU_TOOLS_DXPU_RESULT_H_
#define DXPU_TOOLS_DXPU_RESULT_H_

#include <string>

#include "lib/util/expected.h"

namespace dxpu::cli {

// Why an operation failed: a short stable identifier ("bad-hex", "short-header") that
// scripts can match, and a sentence for people.
struct Error {
  std::string name;
  std::string message;
};

template <typename T>
using Result = util::Expected<T, Error>;

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_RESULT_H_
