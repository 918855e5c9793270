// help_formatter.h - the --help layout of every DxPU program: descriptions wrapped to the
// terminal's width (80 columns when it is not a terminal) under their own column, an option
// shown by its short names and first long name (later long names are hidden aliases).
#ifndef DXPU_LIB_CLI_HELP_FORMATTER_H_
#define DXPU_LIB_CLI_HELP_FORMATTER_H_

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

namespace dxpu::cli {

// Text re-wrapped to width: prose paragraphs filled (a single line break inside prose is soft;
// an empty line, a line ending in ':' and a heading such as "Exit status:" break), indented
// lines (examples, lists) kept as written.
std::string WrapHelpText(const std::string& text, size_t width);

// Installs the formatter on app (subcommands created afterwards inherit it).
void UseDxpuHelpFormatter(CLI::App& app);

}  // namespace dxpu::cli

#endif  // DXPU_LIB_CLI_HELP_FORMATTER_H_
