// status.h - errors as values for libdxgpu and its ports: a code a program can switch on and
// a message a person can read. Status is "ok or an error"; Expected<T> is "a T or an error".
#ifndef DXPU_LIB_DXGPU_STATUS_H_
#define DXPU_LIB_DXGPU_STATUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dxpu::dxgpu {

enum class ErrorCode : uint8_t {
  kOk = 0,
  kInvalidArgument,  // a null or out-of-range argument, a size of 0, a bad handle
  kOutOfMemory,      // device or pinned host memory exhausted
  kNoDevice,         // no such device index
  kDeviceLost,       // the device is gone: link down past its bound, surprise removal
  kDeviceError,      // the device reported an error (channel error code in the message)
  kTimeout,          // a wait passed its bound
  kBusError,         // a configuration or MMIO request completed with UR/CA
  kUnavailable,      // the port cannot be used here (not built, not loaded, not reachable)
  kInternal,
};

// A stable lower-case name ("device-lost") for scripts and logs.
std::string_view ErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return {}; }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "device-lost: the session to 127.0.0.1:17480 went down (no progress for 1 s)"
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}       // NOLINT(google-explicit-constructor)
  Expected(Status error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  // The error; an ok Status when this holds a value.
  Status status() const { return ok() ? Status{} : std::get<Status>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace dxpu::dxgpu

#endif  // DXPU_LIB_DXGPU_STATUS_H_
