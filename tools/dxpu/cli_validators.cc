// cli_validators.cc - CLI11 validators for numbers, PCI IDs and hex bytes.
#include "cli_validators.h"

#include <string>

#include "hex.h"
#include "numbers.h"

namespace dxpu::cli {

CLI::Validator UintArg(uint64_t max) {
  return {[max](std::string& s) -> std::string {
            Result<uint64_t> r = ParseUint(s, max);
            return r.ok() ? std::string() : r.error().message;
          },
          ""};
}

CLI::Validator BdfArg() {
  return {[](std::string& s) -> std::string {
            Result<uint16_t> r = ParseBdf(s);
            return r.ok() ? std::string() : r.error().message;
          },
          ""};
}

CLI::Validator HexArg() {
  return {[](std::string& s) -> std::string {
            Result<Bytes> r = ParseHex(s);
            return r.ok() ? std::string() : r.error().message;
          },
          ""};
}

}  // namespace dxpu::cli
