// status.cc - the names of libdxgpu's error codes and a Status's text.
#include "dxgpu/status.h"

#include <string>
#include <string_view>

namespace dxpu::dxgpu {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidArgument:
      return "invalid-argument";
    case ErrorCode::kOutOfMemory:
      return "out-of-memory";
    case ErrorCode::kNoDevice:
      return "no-device";
    case ErrorCode::kDeviceLost:
      return "device-lost";
    case ErrorCode::kDeviceError:
      return "device-error";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kBusError:
      return "bus-error";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  std::string text(ErrorCodeName(code_));
  if (!message_.empty()) {
    text += ": ";
    text += message_;
  }
  return text;
}

}  // namespace dxpu::dxgpu
