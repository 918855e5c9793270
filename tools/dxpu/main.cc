// main.cc - the dxpu command-line tool: CLI11 wiring, logging, and dispatch to the commands.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "bench_command.h"
#include "bridge_command.h"
#include "command.h"
#include "crc_command.h"
#include "demo.h"
#include "flash_command.h"
#include "keygen_command.h"
#include "lib/cli/help_formatter.h"
#include "lspci_command.h"
#include "model_command.h"
#include "pki_command.h"
#include "pool_command.h"
#include "rtl_command.h"
#include "run_command.h"
#include "sim_command.h"
#include "tlp_commands.h"
#include "trace_command.h"

#ifndef DXPU_VERSION
#error "DXPU_VERSION must be defined by the build (the CMake project version)"
#endif

namespace dxpu::cli {
namespace {

constexpr const char* kDescription =
    "dxpu - tools for DxPU, PCIe-level GPU disaggregation: hosts borrow remote GPUs whose "
    "PCIe Transaction Layer Packets (TLPs) are carried over an Ethernet/IP fabric (DxFP).\n"
    "Commands decode and build TLPs with the same codec the kernel module and the bridge "
    "use, compute the fabric's CRC32C, run the demo, run the workloads on the GPUs dxpu.ko "
    "attached, list those devices, ask the pool manager for GPUs, run the RTL testbenches' "
    "regression, flash bridge firmware and predict what DxPU costs a workload.";

Command AddVersionCommand(CLI::App& parent) {
  CLI::App* cmd = parent.add_subcommand("version", "Print the dxpu version");
  return {cmd, [] {
            std::cout << "dxpu " << DXPU_VERSION << '\n';
            return kExitOk;
          }};
}

// Logs go to stderr so that stdout stays clean for hex and JSON.
void SetUpLogging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("dxpu");
  logger->set_pattern("dxpu: %^%l%$: %v");
  logger->set_level(spdlog::level::from_str(level));
  spdlog::set_default_logger(std::move(logger));
}

int Main(int argc, char** argv) {
  CLI::App app(kDescription, "dxpu");
  UseDxpuHelpFormatter(app);  // before the subcommands: they inherit it
  app.set_version_flag("--version", DXPU_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // --log-level is accepted after the command too
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "log verbosity on stderr")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();

  std::vector<Command> commands = AddTlpCommands(app);
  commands.push_back(AddCrcCommand(app));
  commands.push_back(AddDemoCommand(app));
  commands.push_back(AddRunCommand(app));
  commands.push_back(AddLspciCommand(app));
  commands.push_back(AddSimCommand(app));
  commands.push_back(AddBenchCommand(app));
  commands.push_back(AddBridgeCommand(app));
  commands.push_back(AddPoolCommand(app));
  commands.push_back(AddPkiCommand(app));
  commands.push_back(AddRtlCommand(app));
  commands.push_back(AddFlashCommand(app));
  commands.push_back(AddKeygenCommand(app));
  commands.push_back(AddModelCommand(app));
  commands.push_back(AddTraceCommand(app));
  commands.push_back(AddVersionCommand(app));
  // After the subcommands: CLI11 copies a parent's footer into subcommands made later.
  app.footer(
      "Examples:\n"
      "  dxpu tlp decode 00000001 0100070f f0000010\n"
      "  dxpu tlp encode mrd --addr 0x1000 --len 4 --req 01:00.0 --tag 7\n"
      "  printf 123456789 | dxpu crc32c\n"
      "  dxpu demo --json\n"
      "  dxpu run --device /dev/dxgpu0\n"
      "  dxpu lspci\n"
      "  dxpu sim fabric --seeds 2000\n"
      "  dxpu bench fabric\n"
      "  dxpu pool gpus --free\n"
      "  dxpu rtl regress --seeds 3\n"
      "Run 'dxpu COMMAND --help' for a command's arguments.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);  // prints help, the version, or the usage error
    return rc == 0 ? kExitOk : kExitUsage;
  }
  SetUpLogging(log_level);
  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  std::cerr << app.help();
  return kExitUsage;
}

}  // namespace
}  // namespace dxpu::cli

int main(int argc, char** argv) {
  try {
    return dxpu::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "dxpu: internal error: " << e.what() << '\n';
    return dxpu::cli::kExitFailure;
  }
}
