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

// Appends words to out as lines of at most width characters (a longer word gets a line of its
// own).
void FillParagraph(const std::string& paragraph, size_t width, std::string* out) {
  std::istringstream words(paragraph);
  std::string word;
  size_t line = 0;
  while (words >> word) {
    if (line > 0 && line + 1 + word.size() > width) {
      *out += '\n';
      line = 0;
    } else if (line > 0) {
      *out += ' ';
      ++line;
    }
    *out += word;
    line += word.size();
  }
}

// Whether a source line starts a paragraph of its own: a heading such as "Exit status: ..." or
// "Examples:" (a capitalised label ending in ':' within its first words).
bool StartsAParagraph(const std::string& line) {
  if (line.empty() || line[0] < 'A' || line[0] > 'Z') return false;
  const size_t colon = line.find(':');
  return colon < 25 && line.find('.') > colon &&  // npos is no colon
         line.substr(0, colon).find_first_of(",;") == std::string::npos;
}

}  // namespace

std::string WrapHelpText(const std::string& text, size_t width) {
  // Source lines: an indented one (an example command, a list) stays as written; an empty one
  // separates paragraphs; the others are prose, and a line break inside prose is soft (authors
  // broke their lines for their editor, not for this terminal), except after a line ending in
  // ':' and before a heading.
  std::vector<std::string> out;
  std::string paragraph;
  auto flush = [&] {
    if (paragraph.empty()) return;
    std::string filled;
    FillParagraph(paragraph, width, &filled);
    std::istringstream filled_lines(filled);
    for (std::string l; std::getline(filled_lines, l);) out.push_back(l);
    paragraph.clear();
  };
  std::istringstream lines(text);
  bool previous_ends_with_colon = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == ' ' || line[0] == '\t') {
      flush();
      out.push_back(line);
    } else {
      if (previous_ends_with_colon || StartsAParagraph(line)) flush();
      paragraph += (paragraph.empty() ? "" : " ") + line;
    }
    previous_ends_with_colon = !line.empty() && line.back() == ':';
  }
  flush();
  std::string joined;
  for (size_t i = 0; i < out.size(); ++i) joined += (i == 0 ? "" : "\n") + out[i];
  return joined;
}

namespace {

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

  std::string make_footer(const CLI::App* app) const override {
    const std::string footer = app->get_footer();
    return footer.empty() ? std::string() : WrapHelpText(footer, text_width_ + kNameColumn) + "\n";
  }

  std::string make_option_desc(const CLI::Option* opt) const override {
    return WrapHelpText(opt->get_description(), text_width_);
  }

  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true),
                             WrapHelpText(sub->get_description(), text_width_), column_width_);
    return out.str();
  }

  std::string make_description(const CLI::App* app) const override {
    std::string desc = app->get_description();
    if (desc.empty()) return CLI::Formatter::make_description(app);
    // The base formatter's text starts with the description and adds option-group notes.
    const std::string base = CLI::Formatter::make_description(app);
    return WrapHelpText(desc, text_width_ + kNameColumn) + base.substr(desc.size());
  }

 private:
  size_t text_width_ = kDefaultWidth - kNameColumn;
};

}  // namespace

void UseDxpuHelpFormatter(CLI::App& app) { app.formatter(std::make_shared<DxpuHelpFormatter>()); }

}  // namespace dxpu::cli
