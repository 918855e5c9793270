// command.h - how a command module hands its subcommand to main.
#ifndef DXPU_TOOLS_DXPU_COMMAND_H_
#define DXPU_TOOLS_DXPU_COMMAND_H_

#include <CLI/CLI.hpp>
#include <functional>

namespace dxpu::cli {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // invalid input, failed check
inline constexpr int kExitUsage = 2;    // bad command line

// A registered subcommand: the CLI11 app (owned by its parent app) and what to run once
// the command line has parsed and selected it. run returns the process exit code.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_COMMAND_H_
