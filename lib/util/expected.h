// expected.h - errors as values: a T, or an E that says why not. The one template behind
// dxpu::cli::Result (tools/dxpu/result.h), dxpu::manager::PoolResult and the firmware's
// FirmwareResult; each names its own error type. (libdxgpu's Expected<T> carries its public
// Status and stays its own.)
#ifndef DXPU_LIB_UTIL_EXPECTED_H_
#define DXPU_LIB_UTIL_EXPECTED_H_

#include <utility>
#include <variant>

namespace dxpu::util {

template <typename T, typename E>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(E error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const E& error() const { return std::get<E>(v_); }

 private:
  std::variant<T, E> v_;
};

}  // namespace dxpu::util

#endif  // DXPU_LIB_UTIL_EXPECTED_H_
