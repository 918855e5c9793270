// help_formatter.cc - wrapped --help descriptions; hidden alias names.
#include "lib/cli/help_formatter.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lib/cli/options.h"

namespace dxpu::cli {
namespace {

constexpr size_t kDefaultWidth = 80;
constexpr size_t kNameColumn = 30;
constexpr size_t kNarrowestText = 30;

size_t TerminalWidth() {
  winsize ws{};
  if (isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return ws.ws_col;
  }
  return kDefaultWidth;
}

// Breaks text into lines of at most width characters at spaces (a longer word gets a line of
// its own); existing line breaks are kept.
std::string Wrap(const std::string& text, size_t width) {
  std::string out;
  std::istringstream paragraphs(text);
  std::string paragraph;
  bool first_paragraph = true;
  while (std::getline(paragraphs, paragraph)) {
    if (!first_paragraph) out += '\n';
    first_paragraph = false;
    std::istringstream words(paragraph);
    std::string word;
    size_t line = 0;
    while (words >> word) {
      if (line > 0 && line + 1 + word.size() > width) {
        out += '\n';
        line = 0;
      } else if (line > 0) {
        out += ' ';
        ++line;
      }
      out += word;
      line += word.size();
    }
  }
  return out;
}

class DxpuHelpFormatter : public CLI::Formatter {
 public:
  DxpuHelpFormatter() {
    column_width(kNameColumn);
    const size_t width = TerminalWidth();
    text_width_ = width > kNameColumn + kNarrowestText ? width - kNameColumn : kNarrowestText;
  }

  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    if (is_positional) return opt->get_name(true, false);
    std::string names;
    for (const std::string& s : opt->get_snames()) {
      names += (names.empty() ? "-" : ", -") + s;
    }
    const std::vector<std::string>& longs = opt->get_lnames();
    if (!longs.empty()) names += (names.empty() ? "--" : ", --") + longs.front();
    return names;
  }

  std::string make_group(std::string group, bool is_positional,
                         std::vector<const CLI::Option*> opts) const override {
    if (group == kHiddenOptionGroup) return "";
    return CLI::Formatter::make_group(std::move(group), is_positional, std::move(opts));
  }

  std::string make_option_desc(const CLI::Option* opt) const override {
    return Wrap(opt->get_description(), text_width_);
  }

  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             Wrap(sub->get_description(), text_width_), column_width_);
    return out.str();
  }

  std::string make_description(const CLI::App* app) const override {
    std::string desc = app->get_description();
    if (desc.empty()) return CLI::Formatter::make_description(app);
    // The base formatter's text starts with the description and adds option-group notes.
    const std::string base = CLI::Formatter::make_description(app);
    return Wrap(desc, text_width_ + kNameColumn) + base.substr(desc.size());
  }

 private:
  size_t text_width_ = kDefaultWidth - kNameColumn;
};

}  // namespace

void UseDxpuHelpFormatter(CLI::App& app) { app.formatter(std::make_shared<DxpuHelpFormatter>()); }

}  // namespace dxpu::cli
