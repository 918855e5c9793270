// tlp_commands.cc - `dxpu tlp decode` and `dxpu tlp encode`: the CLI11 wiring and the runs.
#include "tlp_commands.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_validators.h"
#include "error_report.h"
#include "hex.h"
#include "tlp_build.h"
#include "tlp_describe.h"
#include "tlp_io.h"

namespace dxpu::cli {
namespace {

// Hex text read from stdin is bounded: the largest TLP is 4116 bytes, 8232 digits.
constexpr size_t kMaxStdinHex = 1 << 20;

struct DecodeOptions {
  std::vector<std::string> hex;
  bool json = false;
};

Result<std::string> DecodeInputText(const DecodeOptions& opts) {
  if (opts.hex.size() == 1 && opts.hex[0] == "-") return ReadAll(std::cin, kMaxStdinHex);
  std::string joined;
  for (const std::string& part : opts.hex) {
    if (part == "-") return Error{"bad-option", "\"-\" (stdin) must be the only HEX argument"};
    joined += part;
    joined += ' ';
  }
  return joined;
}

int RunDecode(const DecodeOptions& opts) {
  constexpr std::string_view kCmd = "tlp decode";
  Result<std::string> text = DecodeInputText(opts);
  if (!text.ok()) {
    int rc = text.error().name == "bad-option" ? kExitUsage : kExitFailure;
    return ReportError(kCmd, text.error(), opts.json, std::cout, std::cerr, rc);
  }
  Result<Bytes> bytes = ParseHex(text.value());
  if (!bytes.ok())
    return ReportError(kCmd, bytes.error(), opts.json, std::cout, std::cerr, kExitFailure);
  spdlog::debug("decoding {} bytes: {}", bytes.value().size(), FormatHex(bytes.value()));
  Result<dxpu_tlp> tlp = DecodeTlp(bytes.value());
  if (!tlp.ok()) {
    return ReportError(kCmd, tlp.error(), opts.json, std::cout, std::cerr, kExitFailure,
                       fmt::format("{} bytes given", bytes.value().size()));
  }
  if (opts.json) {
    std::cout << TlpToJson(tlp.value(), bytes.value()).dump() << '\n';
  } else {
    std::cout << DescribeTlp(tlp.value(), bytes.value());
  }
  return kExitOk;
}

Command AddDecode(CLI::App& tlp) {
  auto opts = std::make_shared<DecodeOptions>();
  CLI::App* cmd =
      tlp.add_subcommand("decode", "Decode one TLP from hex bytes and print every header field");
  cmd->add_option("hex", opts->hex,
                  "TLP bytes in hex, header first as on the wire. Several arguments are "
                  "joined; spaces, ':', ',' '_' and 0x prefixes are allowed. '-' reads the "
                  "hex from stdin.")
      ->required()
      ->type_name("HEX");
  cmd->add_flag("--json", opts->json,
                "Print one JSON object (snake_case field names) instead of text; errors as "
                "{\"error\": NAME, \"message\": TEXT}");
  cmd->footer(
      "Prints kind, Fmt/Type, header size, TC, Attr, flags, IDs (bb:dd.f), tag, address, byte\n"
      "enables, configuration target and register, completion fields, message code and\n"
      "routing, and the payload. The bytes are checked against every rule of the DxPU codec:\n"
      "a TLP that breaks one is reported on stderr by the rule's name (e.g. short-header),\n"
      "exit code 1; so is malformed hex.\n"
      "\n"
      "Examples:\n"
      "  dxpu tlp decode 00000001 0100070f f0000010\n"
      "  dxpu tlp encode mrd --addr 0x1000 | dxpu tlp decode --json -");
  return {cmd, [opts] { return RunDecode(*opts); }};
}

struct EncodeOptions {
  TlpSpec spec;
  bool json = false;
};

int RunEncode(const EncodeOptions& opts) {
  constexpr std::string_view kCmd = "tlp encode";
  Result<BuiltTlp> built = BuildTlp(opts.spec);
  if (!built.ok()) {
    return ReportError(kCmd, built.error(), opts.json, std::cout, std::cerr, kExitUsage);
  }
  dxpu_tlp tlp = built.value().Tlp();
  Result<Bytes> bytes = EncodeTlp(tlp);
  if (!bytes.ok()) {
    Error error = bytes.error();
    // lib/core says only that some field is out of range: name the option, its value and the
    // rule it breaks.
    if (error.name == dxpu_tlp_err_name(DXPU_TLP_ERR_FIELD_RANGE)) {
      if (std::string why = ExplainFieldRange(opts.spec, tlp); !why.empty())
        error.message = std::move(why);
    }
    return ReportError(kCmd, error, opts.json, std::cout, std::cerr, kExitFailure);
  }
  spdlog::info("encoded {}", FormatTlpLine(tlp));
  std::string hex = FormatHex(bytes.value(), 4);
  if (opts.json) {
    std::cout << nlohmann::ordered_json{{"hex", hex}, {"length", bytes.value().size()}}.dump()
              << '\n';
  } else {
    std::cout << hex << '\n';
  }
  return kExitOk;
}

Command AddEncode(CLI::App& tlp) {
  auto opts = std::make_shared<EncodeOptions>();
  TlpSpec& s = opts->spec;
  CLI::App* cmd = tlp.add_subcommand(
      "encode", "Build one TLP from options and print its bytes as hex, in 4-byte groups");
  std::string kinds;
  for (std::string_view k : EncodeKindNames())
    kinds += fmt::format("{}{}", kinds.empty() ? "" : ", ", k);
  cmd->add_option("kind", s.kind, "TLP kind: " + kinds)
      ->required()
      ->transform(CLI::IsMember(
          std::vector<std::string>(EncodeKindNames().begin(), EncodeKindNames().end()),
          CLI::ignore_case))
      ->type_name("KIND");
  auto num = [cmd](const char* name, std::string& field, uint64_t max, const char* help) {
    cmd->add_option(name, field, help)->check(UintArg(max))->type_name("N");
  };
  auto bdf = [cmd](const char* name, std::string& field, const char* help) {
    cmd->add_option(name, field, help)->check(BdfArg())->type_name("BB:DD.F");
  };
  num("--addr", s.addr, UINT64_MAX, "memory: DW-aligned address; >= 4 GiB gives a 4DW header");
  num("--len", s.len, 0xffff, "Length in DW, 1..1024 (default: 1, or the --data size)");
  cmd->add_option("--data", s.data, "payload bytes in hex, whole DWs (MWr, CfgWr, CplD, MsgD)")
      ->check(HexArg())
      ->type_name("HEX");
  bdf("--req", s.req, "Requester ID (default 00:00.0)");
  num("--tag", s.tag, 0xffff, "tag, 0..1023 (10-bit)");
  num("--first-be", s.first_be, 0xff, "First DW byte enables (default 0xf)");
  num("--last-be", s.last_be, 0xff, "Last DW byte enables (default 0xf, 0 for 1 DW)");
  num("--tc", s.tc, 0xff, "Traffic Class 0..7");
  num("--attr", s.attr, 0xff, "Attr bits: 1 No Snoop, 2 Relaxed Ordering, 4 ID-based Ordering");
  num("--at", s.at, 0xff, "memory: Address Type 0..2");
  num("--ph", s.ph, 0xff, "memory with --th: Processing Hint 0..3");
  num("--st", s.st, 0xff, "memory with --th: Steering Tag ST[7:0]");
  bdf("--target", s.target, "configuration: target bb:dd.f; message by ID: target ID");
  num("--reg", s.reg, 0xffff, "configuration: register byte offset, DW-aligned, 0..0xffc");
  bdf("--completer", s.completer, "completion: Completer ID (default 00:00.0)");
  cmd->add_option("--status", s.status, "completion status: sc, ur, crs, ca or a number")
      ->type_name("STATUS");
  num("--byte-count", s.byte_count, 0xffff, "completion: Byte Count 1..4096");
  num("--lower-addr", s.lower_addr, 0xff, "completion: Lower Address 0..127");
  num("--code", s.code, 0xff, "message: Message Code (e.g. 0x20 Assert_INTA)");
  cmd->add_option("--routing", s.routing,
                  "message: routing 0..5 or to-rc, by-address, by-id, broadcast, local, "
                  "gather (default: the code's own, else to-rc)")
      ->type_name("ROUTING");
  cmd->add_option("--msg-hdr", s.msg_hdr, "message: header bytes 8..15, 8 bytes of hex")
      ->check(HexArg())
      ->type_name("HEX");
  num("--digest", s.digest, 0xffffffff, "ECRC value carried with --td");
  cmd->add_flag("--td", s.td, "TLP digest present");
  cmd->add_flag("--ep", s.ep, "poisoned");
  cmd->add_flag("--th", s.th, "memory: TLP Processing Hints present");
  cmd->add_flag("--ln", s.ln, "Lightweight Notification");
  cmd->add_flag("--bcm", s.bcm, "completion: Byte Count Modified");
  cmd->add_flag("--json", opts->json, R"(print {"hex": ..., "length": ...})");
  cmd->footer(
      "Defaults: Length 1 DW (or the --data size); every byte of the first and last DW\n"
      "enabled (Last BE 0 for 1 DW); IDs 00:00.0; tag 0; TC 0; status SC; a zero payload for\n"
      "kinds with data; a Byte Count that covers the payload. Options of another kind are\n"
      "passed on, so the codec can name the rule they break. The TLP is checked by the DxPU\n"
      "codec: a rule it breaks is printed by name (e.g. crosses-4k), exit code 1.\n"
      "\n"
      "Examples:\n"
      "  dxpu tlp encode mrd --addr 0x1000 --len 4 --req 01:00.0 --tag 7\n"
      "  dxpu tlp encode mwr --addr 0x4_0000_0010 --data 78563412\n"
      "  dxpu tlp encode cfgrd0 --target 01:00.0 --reg 0x10\n"
      "  dxpu tlp encode cpld --completer 01:00.0 --req 00:00.0 --tag 7 --byte-count 4 "
      "--lower-addr 0x10 --data 78563412\n"
      "  dxpu tlp encode msg --code 0x20 --routing 4");
  return {cmd, [opts] { return RunEncode(*opts); }};
}

}  // namespace

std::vector<Command> AddTlpCommands(CLI::App& parent) {
  CLI::App* tlp = parent.add_subcommand(
      "tlp", "Encode and decode PCIe Transaction Layer Packets with the DxPU codec");
  tlp->require_subcommand(1);
  tlp->footer("Run 'dxpu tlp decode --help' or 'dxpu tlp encode --help' for their arguments.");
  return {AddDecode(*tlp), AddEncode(*tlp)};
}

}  // namespace dxpu::cli
