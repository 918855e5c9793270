// firmware_error.h - the firmware code's errors as values: a stable lower-case name scripts
// match ("bad-signature", "power-lost") and a sentence for people (docs/firmware.md).
#ifndef DXPU_BRIDGE_FW_FIRMWARE_FIRMWARE_ERROR_H_
#define DXPU_BRIDGE_FW_FIRMWARE_FIRMWARE_ERROR_H_

#include <string>

#include "lib/util/expected.h"

namespace dxpu::firmware {

struct FirmwareError {
  std::string name;
  std::string message;
};

template <typename T>
using FirmwareResult = util::Expected<T, FirmwareError>;

// For operations with nothing to return.
struct Ok {};

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_FIRMWARE_ERROR_H_
