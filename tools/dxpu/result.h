// result.h - errors as values: a value of type T, or an Error that says why not.
#ifndef DXPU_TOOLS_DXPU_RESULT_H_
#define DXPU_TOOLS_DXPU_RESULT_H_

#include <string>
#include <utility>
#include <variant>

namespace dxpu::cli {

// Why an operation failed: a short stable identifier ("bad-hex", "short-header") that
// scripts can match, and a sentence for people.
struct Error {
  std::string name;
  std::string message;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_RESULT_H_
