// cli_validators.h - CLI11 validators for the argument syntax in numbers.h and hex.h, so a
// malformed argument is a usage error reported before any command runs.
#ifndef DXPU_TOOLS_DXPU_CLI_VALIDATORS_H_
#define DXPU_TOOLS_DXPU_CLI_VALIDATORS_H_

#include <CLI/CLI.hpp>
#include <cstdint>

namespace dxpu::cli {

// Each validator has no description of its own: the option's type_name says the syntax.
// Decimal or 0x hex, at most max.
CLI::Validator UintArg(uint64_t max);
// bb:dd.f or a 16-bit number.
CLI::Validator BdfArg();
// Hex bytes (see ParseHex).
CLI::Validator HexArg();

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_CLI_VALIDATORS_H_
