// PrometheusWriter (lib/metrics/prometheus_writer.h): the text exposition format 0.0.4 written
// exactly, HELP and TYPE once per family however the samples arrive, escaping, validation of
// names, and a seeded random mix checked by reading the text back.
#include "metrics/prometheus_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tlp_testutil.h"

namespace dxpu::metrics {
namespace {

TEST(PrometheusWriter, CounterAndGauge) {
  PrometheusWriter w;
  EXPECT_TRUE(w.Counter("dxpu_frames_total", "Frames received.", {{"link", "0"}}, 42));
  EXPECT_TRUE(w.Gauge("dxpu_sessions", "Sessions up.", {}, 3));
  EXPECT_EQ(w.Finish(),
            "# HELP dxpu_frames_total Frames received.\n"
            "# TYPE dxpu_frames_total counter\n"
            "dxpu_frames_total{link=\"0\"} 42\n"
            "# HELP dxpu_sessions Sessions up.\n"
            "# TYPE dxpu_sessions gauge\n"
            "dxpu_sessions 3\n");
  EXPECT_TRUE(w.errors().empty());
  EXPECT_EQ(w.Finish(), "");  // emptied by the first Finish
}

// Samples of two families arrive interleaved; each family is written once, together.
TEST(PrometheusWriter, FamilyWrittenOnceWithManyLabelSets) {
  PrometheusWriter w;
  EXPECT_TRUE(w.Counter("rx_total", "Received.", {{"link", "0"}, {"kind", "tlp"}}, 1));
  EXPECT_TRUE(w.Gauge("up", "Up.", {{"link", "0"}}, 1));
  EXPECT_TRUE(
      w.Counter("rx_total", "ignored: the first help stays", {{"link", "1"}, {"kind", "tlp"}}, 2));
  EXPECT_TRUE(w.Gauge("up", "Up.", {{"link", "1"}}, 0));
  EXPECT_TRUE(w.Counter("rx_total", "", {{"link", "0"}, {"kind", "ack"}}, 3));
  EXPECT_EQ(w.Finish(),
            "# HELP rx_total Received.\n"
            "# TYPE rx_total counter\n"
            "rx_total{link=\"0\",kind=\"tlp\"} 1\n"
            "rx_total{link=\"1\",kind=\"tlp\"} 2\n"
            "rx_total{link=\"0\",kind=\"ack\"} 3\n"
            "# HELP up Up.\n"
            "# TYPE up gauge\n"
            "up{link=\"0\"} 1\n"
            "up{link=\"1\"} 0\n");
}

TEST(PrometheusWriter, Escaping) {
  PrometheusWriter w;
  EXPECT_TRUE(w.Gauge("g", "A \\ backslash,\na newline and \"quotes\".",
                      {{"path", "C:\\dir\\\"x\"\nend"}}, 1));
  EXPECT_EQ(w.Finish(),
            "# HELP g A \\\\ backslash,\\na newline and \"quotes\".\n"
            "# TYPE g gauge\n"
            "g{path=\"C:\\\\dir\\\\\\\"x\\\"\\nend\"} 1\n");
  EXPECT_EQ(PrometheusWriter::EscapeLabelValue("plain"), "plain");
  EXPECT_EQ(PrometheusWriter::EscapeLabelValue("\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9");  // UTF-8
  EXPECT_EQ(PrometheusWriter::EscapeHelp("tab\tstays"), "tab\tstays");
}

TEST(PrometheusWriter, NoHelpLineForEmptyHelp) {
  PrometheusWriter w;
  EXPECT_TRUE(w.Counter("c_total", "", {}, 0));
  EXPECT_EQ(w.Finish(), "# TYPE c_total counter\nc_total 0\n");
}

TEST(PrometheusWriter, Names) {
  for (const char* ok : {"a", "_", ":", "a_b:c", "dxpu:rx_total", "A9", "_9"}) {
    EXPECT_TRUE(PrometheusWriter::ValidMetricName(ok)) << ok;
  }
  for (const char* bad : {"", "9a", "a-b", "a b", "a.b", "é", "a{", "a\n"}) {
    EXPECT_FALSE(PrometheusWriter::ValidMetricName(bad)) << bad;
  }
  for (const char* ok : {"a", "_a", "link", "a_9", "_"}) {
    EXPECT_TRUE(PrometheusWriter::ValidLabelName(ok)) << ok;
  }
  for (const char* bad : {"", "9", "__name__", "__x", "a:b", "a-b", "a b"}) {
    EXPECT_FALSE(PrometheusWriter::ValidLabelName(bad)) << bad;
  }
}

TEST(PrometheusWriter, RefusesWhatPrometheusWouldReject) {
  PrometheusWriter w;
  EXPECT_TRUE(w.Counter("ok_total", "Fine.", {{"a", "1"}}, 1));
  EXPECT_FALSE(w.Counter("9bad", "", {}, 1));
  EXPECT_FALSE(w.Counter("ok_total", "", {{"__reserved", "1"}}, 1));
  EXPECT_FALSE(w.Counter("ok_total", "", {{"a-b", "1"}}, 1));
  EXPECT_FALSE(w.Counter("ok_total", "", {{"a", "1"}, {"a", "2"}}, 1));  // a label twice
  EXPECT_FALSE(w.Counter("ok_total", "", {{"a", "1"}}, 2));              // a sample twice
  EXPECT_FALSE(w.Gauge("ok_total", "", {{"a", "2"}}, 2));                // another type
  EXPECT_FALSE(w.Gauge("bad_label", "", {{"x", "1"}, {"", "2"}}, 2));
  EXPECT_EQ(w.errors(), (std::vector<std::string>{
                            "'9bad' is not a metric name",
                            "ok_total: '__reserved' is not a label name",
                            "ok_total: 'a-b' is not a label name",
                            "ok_total: label 'a' given twice",
                            "ok_total{a=\"1\"}: sample given twice",
                            "ok_total: a gauge here, a counter before",
                            "bad_label: '' is not a label name",
                        }));
  // Nothing refused reached the text, and a refused first sample leaves no empty family.
  EXPECT_EQ(w.Finish(), "# HELP ok_total Fine.\n# TYPE ok_total counter\nok_total{a=\"1\"} 1\n");
}

TEST(PrometheusWriter, Values) {
  EXPECT_EQ(PrometheusWriter::FormatValue(0), "0");
  EXPECT_EQ(PrometheusWriter::FormatValue(-3), "-3");
  EXPECT_EQ(PrometheusWriter::FormatValue(1.5), "1.5");
  EXPECT_EQ(PrometheusWriter::FormatValue(0.1), "0.1");
  EXPECT_EQ(PrometheusWriter::FormatValue(1e20), "1e+20");
  EXPECT_EQ(PrometheusWriter::FormatValue(123456789.0), "123456789");
  EXPECT_EQ(PrometheusWriter::FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(PrometheusWriter::FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(PrometheusWriter::FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  for (double v : {2.5e-9, 1.0 / 3, 6.02214076e23, -0.75}) {
    EXPECT_EQ(std::stod(PrometheusWriter::FormatValue(v)), v) << v;  // reads back exactly
  }
  PrometheusWriter w;
  EXPECT_TRUE(w.Counter("max_total", "", {}, UINT64_MAX));
  EXPECT_EQ(w.Finish(), "# TYPE max_total counter\nmax_total 18446744073709551615\n");
}

// Reverses EscapeLabelValue, for reading the text back.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char n = s[++i];
    out += n == 'n' ? '\n' : n;
  }
  return out;
}

// Random samples over a few families, label values full of characters that need escaping;
// the text, read back line by line, has each family's HELP and TYPE once, right before all of
// its samples, and every label value as given.
TEST(PrometheusWriter, RandomSamplesReadBack) {
  const uint64_t seed = dxpu::test::test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const std::vector<std::string> names = {"a_total", "b", "c:d", "e_total", "f"};
  const std::string alphabet = "ab\\\"\n{}=, \xc3\xa9";
  std::map<std::string, std::vector<std::string>> want;  // family -> label values, in order
  PrometheusWriter w;
  for (int i = 0; i < 300; ++i) {
    const std::string& name = names[rng() % names.size()];
    std::string value = std::to_string(i) + ":";
    for (int k = static_cast<int>(rng() % 8); k > 0; --k)
      value += alphabet[rng() % alphabet.size()];
    const bool counter = name.ends_with("_total");
    const bool ok = counter ? w.Counter(name, "help of " + name, {{"v", value}}, rng())
                            : w.Gauge(name, "help of " + name, {{"v", value}}, 1.5);
    ASSERT_TRUE(ok) << "seed=" << seed;
    want[name].push_back(value);
  }
  const std::string text = w.Finish();
  std::map<std::string, std::vector<std::string>> got;
  std::map<std::string, int> helps, types;
  std::string current;  // the family whose TYPE line came last
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("# HELP ")) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      ++helps[name];
      EXPECT_EQ(line, std::string("# HELP ").append(name).append(" help of ").append(name));
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      current = line.substr(7, line.find(' ', 7) - 7);
      ++types[current];
      EXPECT_EQ(line, "# TYPE " + current + (current.ends_with("_total") ? " counter" : " gauge"));
      continue;
    }
    // A sample: name{v="..."} value, and it belongs to the family announced last.
    ASSERT_TRUE(line.starts_with(current + "{v=\"")) << line << " seed=" << seed;
    const size_t start = current.size() + 4;
    const size_t end = line.rfind("\"} ");
    ASSERT_NE(end, std::string::npos) << line;
    got[current].push_back(Unescape(std::string_view(line).substr(start, end - start)));
  }
  EXPECT_EQ(got, want) << "seed=" << seed;
  for (const auto& [name, values] : want) {
    EXPECT_EQ(helps[name], 1) << name;
    EXPECT_EQ(types[name], 1) << name;
  }
}

}  // namespace
}  // namespace dxpu::metrics
