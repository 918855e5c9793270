// cli_vocabulary_test.cc - durations with units, old option spellings as hidden aliases, and the
// --help layout every DxPU program shares (lib/cli, docs/cli.md).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "lib/cli/duration.h"
#include "lib/cli/help_formatter.h"
#include "lib/cli/options.h"

namespace dxpu::cli {
namespace {

using std::chrono::nanoseconds;
using namespace std::chrono_literals;

nanoseconds Parsed(std::string_view text, std::optional<DurationUnit> bare = std::nullopt) {
  auto d = ParseDuration(text, bare);
  EXPECT_TRUE(d.ok()) << text << ": " << (d.ok() ? "" : d.error());
  return d.ok() ? d.value() : nanoseconds(-1);
}

std::string ParseError(std::string_view text, std::optional<DurationUnit> bare = std::nullopt) {
  auto d = ParseDuration(text, bare);
  EXPECT_FALSE(d.ok()) << text << " parsed as " << (d.ok() ? d.value().count() : 0) << " ns";
  return d.ok() ? "" : d.error();
}

TEST(Duration, EveryUnit) {
  EXPECT_EQ(Parsed("100ns"), 100ns);
  EXPECT_EQ(Parsed("2us"), 2us);
  EXPECT_EQ(Parsed("1.5us"), 1500ns);
  EXPECT_EQ(Parsed("500ms"), 500ms);
  EXPECT_EQ(Parsed("15s"), 15s);
  EXPECT_EQ(Parsed("0.25s"), 250ms);
  EXPECT_EQ(Parsed("2min"), 120s);
  EXPECT_EQ(Parsed("0s"), 0ns);
  EXPECT_EQ(Parsed("0"), 0ns);  // zero needs no unit
  EXPECT_EQ(Parsed("0.0"), 0ns);
}

TEST(Duration, ABareNumberNeedsTheOptionsOldUnit) {
  EXPECT_NE(ParseError("15").find("no unit"), std::string::npos);
  EXPECT_EQ(Parsed("15", DurationUnit::kSeconds), 15s);
  EXPECT_EQ(Parsed("250", DurationUnit::kMilliseconds), 250ms);
  // A unit given wins over the old bare unit.
  EXPECT_EQ(Parsed("250ms", DurationUnit::kSeconds), 250ms);
}

TEST(Duration, MalformedInputIsAClearError) {
  EXPECT_NE(ParseError("fast").find("not a duration"), std::string::npos);
  EXPECT_NE(ParseError("5 hours").find("unknown unit"), std::string::npos);
  EXPECT_NE(ParseError("5d").find("unknown unit 'd'"), std::string::npos);
  EXPECT_EQ(Parsed("1h"), 3600s);
  EXPECT_NE(ParseError("-5s").find("not a duration"), std::string::npos);
  EXPECT_NE(ParseError("1.2.3s").find("not a number"), std::string::npos);
  EXPECT_NE(ParseError("").find("not a duration"), std::string::npos);
  EXPECT_NE(ParseError("1e30s").find("unknown unit"), std::string::npos);
  EXPECT_NE(ParseError("99999999999999999999s").find("too long"), std::string::npos);
}

TEST(Duration, FormatReadsBack) {
  EXPECT_EQ(FormatDuration(0ns), "0s");
  EXPECT_EQ(FormatDuration(500ms), "500ms");
  EXPECT_EQ(FormatDuration(15s), "15s");
  EXPECT_EQ(FormatDuration(1500ns), "1.5us");
  EXPECT_EQ(FormatDuration(1500ms), "1.5s");
  EXPECT_EQ(FormatDuration(120s), "120s");
  EXPECT_EQ(FormatDuration(7ns), "7ns");
  EXPECT_EQ(FormatDuration(1234567ns), "1234.567us");
  for (nanoseconds d : std::vector<nanoseconds>{1ns, 999ns, 1us, 1001ns, 2500us, 61s,
                                                nanoseconds(3s + 1ms), 123456789ns}) {
    EXPECT_EQ(Parsed(FormatDuration(d)), d) << FormatDuration(d);
  }
}

struct ParsedCommand {
  nanoseconds timeout = 3s;
  std::string bridge = "unset";
  std::string error;
};

ParsedCommand ParseArgs(std::vector<std::string> args) {
  ParsedCommand out;
  CLI::App app("test");
  AddDurationOption(app, "--timeout", &out.timeout, "how long to wait",
                    {{"--timeout-ms", DurationUnit::kMilliseconds}}, DurationUnit::kSeconds);
  app.add_option("--bridge,--to", out.bridge, "the bridge");
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    out.error = e.what();
  }
  return out;
}

TEST(DurationOption, NewSpellingOldSpellingAndBareNumber) {
  EXPECT_EQ(ParseArgs({"--timeout", "500ms"}).timeout, 500ms);
  EXPECT_EQ(ParseArgs({"--timeout-ms", "250"}).timeout, 250ms);
  EXPECT_EQ(ParseArgs({"--timeout", "4"}).timeout, 4s);  // the old bare seconds
  EXPECT_EQ(ParseArgs({}).timeout, 3s);
}

TEST(DurationOption, BadValueAndBothSpellingsAreUsageErrors) {
  ParsedCommand bad = ParseArgs({"--timeout", "soon"});
  EXPECT_NE(bad.error.find("--timeout"), std::string::npos) << bad.error;
  EXPECT_NE(bad.error.find("not a duration"), std::string::npos) << bad.error;
  ParsedCommand both = ParseArgs({"--timeout", "1s", "--timeout-ms", "5"});
  EXPECT_NE(both.error.find("--timeout-ms excludes --timeout"), std::string::npos) << both.error;
  ParsedCommand bad_old = ParseArgs({"--timeout-ms", "5x"});
  EXPECT_NE(bad_old.error.find("--timeout-ms: '5x'"), std::string::npos) << bad_old.error;
}

TEST(HiddenAlias, OldNameSetsTheSameOption) {
  EXPECT_EQ(ParseArgs({"--to", "unix:/run/b.sock"}).bridge, "unix:/run/b.sock");
  EXPECT_EQ(ParseArgs({"--bridge", "127.0.0.1:7000"}).bridge, "127.0.0.1:7000");
}

std::string Help(CLI::App& app) {
  UseDxpuHelpFormatter(app);
  return app.help();
}

TEST(HelpFormatter, ShowsNewNamesAndDefaultsNotAliases) {
  CLI::App app("test");
  nanoseconds timeout = 3s;
  std::string bridge;
  bool verbose = false;
  AddDurationOption(app, "--timeout", &timeout, "how long to wait",
                    {{"--timeout-ms", DurationUnit::kMilliseconds}});
  app.add_option("--bridge,--to", bridge, "the bridge");
  app.add_flag("-v,--verbose", verbose, "say more");
  const std::string help = Help(app);
  EXPECT_NE(help.find("--timeout DURATION=3s"), std::string::npos) << help;
  EXPECT_NE(help.find("--bridge"), std::string::npos) << help;
  EXPECT_NE(help.find("-v, --verbose"), std::string::npos) << help;
  EXPECT_EQ(help.find("--to"), std::string::npos) << help;
  EXPECT_EQ(help.find("timeout-ms"), std::string::npos) << help;
}

TEST(HelpFormatter, WrapsLongDescriptionsUnderTheirColumn) {
  CLI::App app("test");
  std::string long_text;
  for (int i = 0; i < 60; ++i) long_text += "word" + std::to_string(i) + " ";
  app.add_subcommand("sub", long_text);
  std::string value;
  app.add_option("--value", value, long_text);
  const std::string help = Help(app);
  std::istringstream lines(help);
  std::string line;
  size_t description_lines = 0;
  while (std::getline(lines, line)) {
    EXPECT_LE(line.size(), 80U) << line;
    if (line.find("word") != std::string::npos) ++description_lines;
  }
  EXPECT_GE(description_lines, 2U * 4U) << help;      // both texts, each over several lines
  EXPECT_NE(help.find("word59"), std::string::npos);  // nothing lost
}

TEST(HelpFormatter, SoftLineBreaksJoinExamplesStayAsWritten) {
  const std::string text =
      "A description its author broke\nfor his editor, mid-sentence, and then\nwent on.\n"
      "Exit status: 0 done, 1 failed.\n"
      "Examples:\n"
      "  dxpu demo --quick --link mem --no-sim --out ''   # a comment that makes it long\n"
      "  dxpu pool hosts\n"
      "\n"
      "A last paragraph.";
  EXPECT_EQ(WrapHelpText(text, 40),
            "A description its author broke for his\n"
            "editor, mid-sentence, and then went on.\n"
            "Exit status: 0 done, 1 failed.\n"
            "Examples:\n"
            "  dxpu demo --quick --link mem --no-sim --out ''   # a comment that makes it long\n"
            "  dxpu pool hosts\n"
            "\n"
            "A last paragraph.");
  // A word longer than the width gets a line of its own; nothing is lost or added.
  EXPECT_EQ(WrapHelpText("a verylongwordindeed b", 8), "a\nverylongwordindeed\nb");
  EXPECT_EQ(WrapHelpText("", 40), "");
}

}  // namespace
}  // namespace dxpu::cli
