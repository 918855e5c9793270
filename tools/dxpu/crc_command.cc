// crc_command.cc - `dxpu crc32c` over hex bytes, a file or stdin.
#include "crc_command.h"

#include <core/crc32c.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "error_report.h"
#include "hex.h"

namespace dxpu::cli {
namespace {

struct CrcOptions {
  std::string hex;
  bool hex_given = false;
  std::string file;
  bool json = false;
};

struct Crc {
  uint32_t value = 0;
  uint64_t length = 0;
};

// CRC32C of a whole stream, read in chunks.
Result<Crc> CrcOfStream(std::istream& in, const std::string& what) {
  Crc crc;
  std::array<char, size_t{64} << 10> chunk{};
  while (in) {
    in.read(chunk.data(), chunk.size());
    auto n = static_cast<size_t>(in.gcount());
    crc.value = dxpu_crc32c(crc.value, chunk.data(), n);
    crc.length += n;
  }
  if (in.bad()) return Error{"read-error", fmt::format("cannot read {}", what)};
  return crc;
}

Result<Crc> ComputeCrc(const CrcOptions& opts) {
  if (opts.hex_given) {
    Result<Bytes> bytes = ParseHex(opts.hex);
    if (!bytes.ok()) return bytes.error();
    return Crc{dxpu_crc32c(0, bytes.value().data(), bytes.value().size()), bytes.value().size()};
  }
  if (opts.file.empty() || opts.file == "-") return CrcOfStream(std::cin, "stdin");
  std::error_code ec;
  if (std::filesystem::is_directory(opts.file, ec)) {
    return Error{"open-error", fmt::format("\"{}\" is a directory", opts.file)};
  }
  std::ifstream f(opts.file, std::ios::binary);
  if (!f) return Error{"open-error", fmt::format("cannot open \"{}\"", opts.file)};
  return CrcOfStream(f, fmt::format("\"{}\"", opts.file));
}

int RunCrc(const CrcOptions& opts) {
  Result<Crc> crc = ComputeCrc(opts);
  if (!crc.ok()) {
    return ReportError("crc32c", crc.error(), opts.json, std::cout, std::cerr, kExitFailure);
  }
  spdlog::debug("crc32c over {} bytes", crc.value().length);
  std::string hex = fmt::format("0x{:08x}", crc.value().value);
  if (opts.json) {
    std::cout << nlohmann::ordered_json{{"crc32c", hex},
                                        {"value", crc.value().value},
                                        {"length", crc.value().length}}
                     .dump()
              << '\n';
  } else {
    std::cout << hex << '\n';
  }
  return kExitOk;
}

}  // namespace

Command AddCrcCommand(CLI::App& parent) {
  auto opts = std::make_shared<CrcOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "crc32c", "Print the CRC32C (DxFP's frame check) of hex bytes, a file or stdin");
  CLI::Option* hex =
      cmd->add_option("--hex", opts->hex, "the bytes, in hex (see tlp decode)")->type_name("HEX");
  cmd->add_option("file", opts->file, "file to read; '-' or nothing reads stdin")
      ->type_name("FILE")
      ->excludes(hex);
  cmd->add_flag("--json", opts->json, R"(print {"crc32c": "0x...", "value": N, "length": N})");
  cmd->footer(
      "CRC32C is the Castagnoli CRC (polynomial 0x1EDC6F41, as iSCSI, SCTP and ext4 use it)\n"
      "that protects every DxFP frame. It is printed as 0x%08x.\n"
      "\n"
      "Examples:\n"
      "  printf 123456789 | dxpu crc32c        # 0xe3069283\n"
      "  dxpu crc32c --hex 313233343536373839\n"
      "  dxpu crc32c --json firmware.img");
  return {cmd, [opts, hex] {
            opts->hex_given = hex->count() > 0;
            return RunCrc(*opts);
          }};
}

}  // namespace dxpu::cli
