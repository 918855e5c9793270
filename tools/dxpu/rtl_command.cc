// rtl_command.cc - see rtl_command.h.
#include "rtl_command.h"

#include <fcntl.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "build_paths.h"
#include "error_report.h"
#include "numbers.h"
#include "result.h"

namespace dxpu::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kCommand = "rtl regress";

// The build directory, CMake and CTest that built this dxpu (build_paths.h, which
// tools/CMakeLists.txt writes).
constexpr const char* kDefaultBuildDir = kBuildPathsBuildDir;
constexpr const char* kCmake = kBuildPathsCmake;
constexpr const char* kCtest = kBuildPathsCtest;
constexpr const char* kCoverageTool = "verilator_coverage";
constexpr const char* kBuildTarget = "rtl_testbenches";
constexpr auto kPollEvery = std::chrono::milliseconds(10);
constexpr size_t kBuildLogTail = 40;    // lines of a failed build shown
constexpr size_t kFailureExcerpt = 10;  // lines of a failed test's log shown, at most

unsigned DefaultJobs() { return std::max(1u, std::thread::hardware_concurrency() / 2); }

struct RegressArgs {
  std::string build_dir = kDefaultBuildDir;
  bool no_build = false;
  uint64_t seeds = 3;
  uint64_t first_seed = 0;
  std::string filter;
  std::string label = "rtl";
  unsigned jobs = DefaultJobs();
  std::chrono::nanoseconds timeout = std::chrono::seconds(600);  // per run
  std::string out;
  bool json = false;
  bool verbose = false;
};

// Where a run's files go, all absolute (the testbenches run in their own directories).
struct Paths {
  fs::path build;
  fs::path out;
  fs::path logs() const { return out / "logs"; }
  fs::path fst() const { return out / "fst"; }
  fs::path cov() const { return out / "cov"; }
};

// ---- child processes ------------------------------------------------------------------

// How a child process ended.
struct Exit {
  bool timed_out = false;
  int code = -1;   // its exit status; -1 if a signal ended it
  int signal = 0;  // the signal that ended it
  bool ok() const { return !timed_out && code == 0; }
};

std::string Describe(const Exit& e, std::chrono::nanoseconds timeout) {
  if (e.timed_out) return "timed out after " + FormatDuration(timeout);
  if (e.signal != 0) return "killed by signal " + std::to_string(e.signal);
  return "exit " + std::to_string(e.code);
}

Exit FromWaitStatus(int status) {
  Exit e;
  if (WIFEXITED(status)) e.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  return e;
}

// A child: argv run directly (no shell), stdin from /dev/null, stdout to `out`, stderr to
// `err` (empty: with stdout).
struct ChildSpec {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // NAME=value, replacing or adding to ours
  std::string cwd;               // empty: ours
  std::string out;
  std::string err;
};

std::string NameOf(const std::string& assignment) {
  return assignment.substr(0, assignment.find('='));
}

// Our environment with `overrides` applied, the last of a name winning.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  for (const std::string& o : overrides) {
    const std::string name = NameOf(o);
    std::erase_if(env, [&](const std::string& kv) { return NameOf(kv) == name; });
    env.push_back(o);
  }
  return env;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> v;
  v.reserve(strings.size() + 1);
  for (std::string& s : strings) v.push_back(s.data());
  v.push_back(nullptr);
  return v;
}

Result<pid_t> Spawn(const ChildSpec& spec) {
  std::vector<std::string> argv = spec.argv;
  std::vector<std::string> env = ChildEnvironment(spec.env);
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_env = CStrings(env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, spec.out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (spec.err.empty()) {
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, spec.err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, c_argv[0], &actions, nullptr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return Error{"spawn-failed", "cannot run " + spec.argv[0] + ": " +
                                     std::error_code(rc, std::generic_category()).message()};
  }
  return pid;
}

// Waits for pid; with block false, returns nothing while it still runs.
std::optional<Exit> Reap(pid_t pid, bool block) {
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, block ? 0 : WNOHANG);
    if (r == pid) return FromWaitStatus(status);
    if (r == 0) return std::nullopt;
    if (errno != EINTR) return Exit{};  // not our child any more: count it as failed
  }
}

Result<Exit> RunToEnd(const ChildSpec& spec) {
  Result<pid_t> pid = Spawn(spec);
  if (!pid.ok()) return pid.error();
  return *Reap(pid.value(), true);
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> LinesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A word as a POSIX shell reads it back: quoted only when it has to be.
std::string ShellQuote(const std::string& word) {
  static const std::regex kPlain("[A-Za-z0-9_@%+=:,./-]+");
  if (!word.empty() && std::regex_match(word, kPlain)) return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) line += (line.empty() ? "" : " ") + ShellQuote(a);
  return line;
}

// ---- the tests ------------------------------------------------------------------------

// One ctest test: one GoogleTest test of a testbench.
struct RtlTest {
  std::string name;
  std::vector<std::string> command;
  std::string cwd;
  std::vector<std::string> env;  // its ENVIRONMENT property
  std::string stem;              // its files' names: testbench.Suite_N.Test
};

// A test's name as a file name: what is not [A-Za-z0-9._-] becomes '_'.
std::string FileStem(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    if (!plain) c = '_';
  }
  return s;
}

// The name a test's files go by: the testbench and its --gtest_filter (shorter than ctest's
// names of typed tests), else its ctest name; made unique.
void NameFiles(std::vector<RtlTest>& tests) {
  std::vector<std::string> taken;
  for (RtlTest& t : tests) {
    std::string name = t.name;
    for (const std::string& arg : t.command) {
      if (arg.starts_with("--gtest_filter=")) {
        name = fs::path(t.command[0]).filename().string() + "." + arg.substr(15);
        break;
      }
    }
    t.stem = FileStem(name);
    const std::string base = t.stem;
    for (int n = 2; std::find(taken.begin(), taken.end(), t.stem) != taken.end(); ++n)
      t.stem = base + "." + std::to_string(n);
    taken.push_back(t.stem);
  }
}

// The tests `ctest --show-only=json-v1` lists with exactly `label` whose names match `filter`.
Result<std::vector<RtlTest>> SelectTests(const std::string& json_text, const std::string& label,
                                         const std::optional<std::regex>& filter) {
  const nlohmann::json list = nlohmann::json::parse(json_text, nullptr, false);
  if (list.is_discarded() || !list.contains("tests") || !list["tests"].is_array())
    return Error{"bad-test-list", "ctest's --show-only=json-v1 output is not its JSON"};
  std::vector<RtlTest> tests;
  std::vector<std::string> not_built;  // gtest_discover_tests' stand-ins for unbuilt executables
  for (const nlohmann::json& t : list["tests"]) {
    RtlTest test;
    test.name = t.value("name", "");
    if (test.name.ends_with("_NOT_BUILT")) {
      not_built.push_back(test.name.substr(0, test.name.size() - 10));
      continue;
    }
    bool labelled = false;
    bool disabled = false;
    for (const nlohmann::json& p : t.value("properties", nlohmann::json::array())) {
      const std::string name = p.value("name", "");
      const nlohmann::json& value = p.contains("value") ? p["value"] : nlohmann::json();
      if (name == "LABELS" && value.is_array()) {
        labelled = std::find(value.begin(), value.end(), label) != value.end();
      } else if (name == "WORKING_DIRECTORY" && value.is_string()) {
        test.cwd = value.get<std::string>();
      } else if (name == "ENVIRONMENT" && value.is_array()) {
        for (const nlohmann::json& kv : value)
          if (kv.is_string()) test.env.push_back(kv.get<std::string>());
      } else if (name == "DISABLED" && value.is_boolean()) {
        disabled = value.get<bool>();
      }
    }
    if (!labelled || disabled) continue;
    if (filter && !std::regex_search(test.name, *filter)) continue;
    if (!t.contains("command") || !t["command"].is_array() || t["command"].empty())
      return Error{"bad-test-list", "ctest test " + test.name + " has no command"};
    for (const nlohmann::json& arg : t["command"]) test.command.push_back(arg.get<std::string>());
    tests.push_back(std::move(test));
  }
  if (!not_built.empty()) {
    std::string names;
    for (const std::string& n : not_built) names += (names.empty() ? "" : ", ") + n;
    spdlog::warn(
        "{} test executables are not built ({}): any tests labelled {} in them are missing",
        not_built.size(), names, label);
  }
  NameFiles(tests);
  return tests;
}

// One test run with one seed.
struct Run {
  const RtlTest* test = nullptr;
  uint64_t seed = 0;
  fs::path log;
  fs::path fst_dir;
  fs::path cov_dir;
  Exit exit;
  bool no_test_ran = false;  // exited 0 without running a test (the list is stale)
  std::string spawn_error;
  double seconds = 0;
  std::vector<std::string> fsts;  // the waveforms kept (failed runs only)
  bool passed() const { return exit.ok() && !no_test_ran && spawn_error.empty(); }
};

std::string ReplayCommand(const Run& r) {
  std::string cmd;
  if (!r.test->cwd.empty()) cmd = "cd " + ShellQuote(r.test->cwd) + " && ";
  cmd += "DXPU_SEED=" + std::to_string(r.seed) + " ";
  for (const std::string& kv : r.test->env) cmd += ShellQuote(kv) + " ";
  return cmd + CommandLine(r.test->command);
}

std::string Why(const Run& r, std::chrono::nanoseconds timeout) {
  if (!r.spawn_error.empty()) return r.spawn_error;
  if (r.no_test_ran) return "no test ran (rebuild: the test list is stale)";
  return Describe(r.exit, timeout);
}

// After a run: keep its waveforms if it failed, drop them if it passed.
void Settle(Run& r) {
  const std::string log = ReadFile(r.log);
  r.no_test_ran = r.exit.ok() && log.find("Running 0 tests") != std::string::npos;
  std::error_code ec;
  if (r.passed()) {
    fs::remove_all(r.fst_dir, ec);
    return;
  }
  for (const auto& entry : fs::directory_iterator(r.fst_dir, ec))
    if (entry.path().extension() == ".fst") r.fsts.push_back(entry.path().string());
  std::sort(r.fsts.begin(), r.fsts.end());
  if (r.fsts.empty()) fs::remove_all(r.fst_dir, ec);
}

// The first GoogleTest failure in a log: its lines up to GoogleTest's next, at most 10.
std::vector<std::string> FailureExcerpt(const fs::path& log) {
  const std::vector<std::string> lines = LinesOf(ReadFile(log));
  std::vector<std::string> excerpt;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("Failure") == std::string::npos) continue;
    for (size_t j = i; j < lines.size() && excerpt.size() < kFailureExcerpt; ++j) {
      if (j > i && lines[j].starts_with("[")) break;  // GoogleTest's next [ FAILED ] etc.
      excerpt.push_back(lines[j]);
    }
    break;
  }
  return excerpt;
}

void PrintFailure(const Run& r, std::chrono::nanoseconds timeout) {
  std::cout << "FAILED " << r.test->name << " seed " << r.seed << ": " << Why(r, timeout) << " ("
            << std::fixed << std::setprecision(1) << r.seconds << " s)\n";
  std::cout << "  log:      " << r.log.string() << '\n';
  if (r.fsts.empty()) std::cout << "  waveform: none written\n";
  for (const std::string& f : r.fsts) std::cout << "  waveform: " << f << '\n';
  std::cout << "  replay:   " << ReplayCommand(r) << '\n';
  for (const std::string& line : FailureExcerpt(r.log)) std::cout << "  | " << line << '\n';
  std::cout.flush();
}

Run PlanRun(const RtlTest& test, uint64_t seed, const Paths& p) {
  Run r;
  r.test = &test;
  r.seed = seed;
  const std::string stem = test.stem + "." + std::to_string(seed);
  r.log = p.logs() / (stem + ".log");
  r.fst_dir = p.fst() / stem;
  r.cov_dir = p.cov() / std::to_string(seed) / test.stem;
  return r;
}

ChildSpec RunSpec(const Run& r) {
  ChildSpec spec;
  spec.argv = r.test->command;
  spec.env = r.test->env;
  spec.env.push_back("DXPU_SEED=" + std::to_string(r.seed));
  spec.env.push_back("DXPU_RTL_COV_DIR=" + r.cov_dir.string());
  spec.env.push_back("DXPU_RTL_FST_DIR=" + r.fst_dir.string());
  spec.cwd = r.test->cwd;
  spec.out = r.log.string();
  return spec;
}

// Runs every test with every seed, `jobs` at a time, calling done(run, finished, total) as each
// one ends.
std::vector<Run> RunAll(const std::vector<RtlTest>& tests, const RegressArgs& a, const Paths& p,
                        const std::function<void(const Run&, size_t, size_t)>& done) {
  std::vector<Run> runs;
  for (uint64_t i = 0; i < a.seeds; ++i)
    for (const RtlTest& t : tests) runs.push_back(PlanRun(t, a.first_seed + i, p));
  struct Active {
    size_t run;
    pid_t pid;
    Clock::time_point start;
  };
  std::vector<Active> active;
  size_t next = 0;
  size_t finished = 0;
  const std::chrono::nanoseconds timeout = a.timeout;
  auto finish = [&](Run& r, Clock::time_point start) {
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    Settle(r);
    ++finished;
    done(r, finished, runs.size());
  };
  while (finished < runs.size()) {
    while (next < runs.size() && active.size() < a.jobs) {
      Run& r = runs[next];
      const auto start = Clock::now();
      Result<pid_t> pid = Spawn(RunSpec(r));
      if (pid.ok()) {
        active.push_back({next, pid.value(), start});
      } else {
        r.spawn_error = pid.error().message;
        finish(r, start);
      }
      ++next;
    }
    for (auto it = active.begin(); it != active.end();) {
      Run& r = runs[it->run];
      std::optional<Exit> e = Reap(it->pid, false);
      if (!e && Clock::now() - it->start > timeout) {
        kill(it->pid, SIGKILL);
        e = Reap(it->pid, true);
        e->timed_out = true;
      }
      if (!e) {
        ++it;
        continue;
      }
      r.exit = *e;
      finish(r, it->start);
      it = active.erase(it);
    }
    if (!active.empty()) std::this_thread::sleep_for(kPollEvery);
  }
  return runs;
}

// ---- coverage -------------------------------------------------------------------------

struct Coverage {
  size_t inputs = 0;  // .dat files merged
  fs::path dat;
  fs::path info;
  fs::path annotated;
  std::optional<uint64_t> covered;
  std::optional<uint64_t> points;
  std::optional<double> percent;
};

// "Total coverage (148/194) 76.00%", which verilator_coverage --annotate prints. 5.006 divides
// as integers before it scales (148/194 is 76.29%), so the percentage is computed here.
void ParseTotal(const std::string& output, Coverage& c) {
  static const std::regex kTotal(R"(Total coverage \((\d+)/(\d+)\))");
  std::smatch m;
  if (!std::regex_search(output, m, kTotal)) return;
  c.covered = std::stoull(m[1].str());
  c.points = std::stoull(m[2].str());
  c.percent = *c.points == 0
                  ? 0.0
                  : 100.0 * static_cast<double>(*c.covered) / static_cast<double>(*c.points);
}

Result<Coverage> MergeCoverage(const Paths& p) {
  Coverage c;
  std::vector<std::string> inputs;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(p.cov(), ec))
    if (entry.is_regular_file() && entry.path().extension() == ".dat")
      inputs.push_back(entry.path().string());
  std::sort(inputs.begin(), inputs.end());
  c.inputs = inputs.size();
  if (inputs.empty()) {
    return Error{"no-coverage", "no run wrote a coverage file under " + p.cov().string() +
                                    " (are the testbenches built with coverage?)"};
  }
  c.dat = p.out / "coverage.dat";
  c.info = p.out / "coverage.info";
  c.annotated = p.out / "coverage-annotated";
  const fs::path log = p.out / "coverage.log";
  std::vector<std::string> merge = {kCoverageTool, "--write", c.dat.string(), "--write-info",
                                    c.info.string()};
  merge.insert(merge.end(), inputs.begin(), inputs.end());
  Result<Exit> merged = RunToEnd({merge, {}, {}, log.string(), {}});
  if (!merged.ok()) return merged.error();
  if (!merged.value().ok()) {
    return Error{"coverage-failed", "verilator_coverage --write failed (" +
                                        Describe(merged.value(), {}) + "); see " + log.string()};
  }
  const fs::path annotate_log = p.out / "coverage-annotate.log";
  Result<Exit> annotated = RunToEnd(
      {{kCoverageTool, "--annotate", c.annotated.string(), "--annotate-all", c.dat.string()},
       {},
       {},
       annotate_log.string(),
       {}});
  if (!annotated.ok()) return annotated.error();
  if (!annotated.value().ok()) {
    return Error{"coverage-failed", "verilator_coverage --annotate failed (" +
                                        Describe(annotated.value(), {}) + "); see " +
                                        annotate_log.string()};
  }
  ParseTotal(ReadFile(annotate_log), c);
  return c;
}

// ---- the command ----------------------------------------------------------------------

int Fail(const RegressArgs& a, const Error& e, std::string_view detail = {}) {
  return ReportError(kCommand, e, a.json, std::cout, std::cerr, kExitFailure, detail);
}

// Clears what an earlier regression left in OUT (and nothing else there).
Result<bool> PrepareOut(const Paths& p) {
  std::error_code ec;
  for (const fs::path& d : {p.logs(), p.fst(), p.cov(), p.out / "coverage-annotated"})
    fs::remove_all(d, ec);
  for (const char* f : {"coverage.dat", "coverage.info", "coverage.log", "coverage-annotate.log",
                        "report.json", "build.log", "tests.json", "tests.err"})
    fs::remove(p.out / f, ec);
  for (const fs::path& d : {p.logs(), p.fst(), p.cov()}) {
    fs::create_directories(d, ec);
    if (ec) return Error{"bad-out", "cannot create " + d.string() + ": " + ec.message()};
  }
  return true;
}

Result<bool> Build(const RegressArgs& a, const Paths& p) {
  const std::vector<std::string> argv = {kCmake, "--build", p.build.string(), "--target",
                                         kBuildTarget};
  const fs::path log = p.out / "build.log";
  if (!a.json)
    std::cerr << "dxpu rtl regress: building: " << CommandLine(argv) << " (log: " << log.string()
              << ")\n";
  Result<Exit> built = RunToEnd({argv, {}, {}, log.string(), {}});
  if (!built.ok()) return built.error();
  if (built.value().ok()) return true;
  const std::vector<std::string> lines = LinesOf(ReadFile(log));
  const size_t from = lines.size() > kBuildLogTail ? lines.size() - kBuildLogTail : 0;
  std::cerr << "dxpu rtl regress: the build failed; the last " << lines.size() - from
            << " lines of " << log.string() << ":\n";
  for (size_t i = from; i < lines.size(); ++i) std::cerr << "  " << lines[i] << '\n';
  return Error{"build-failed", CommandLine(argv) + " failed (" + Describe(built.value(), {}) +
                                   "); log: " + log.string()};
}

Result<std::vector<RtlTest>> ListTests(const RegressArgs& a, const Paths& p) {
  const std::vector<std::string> argv = {kCtest, "--test-dir", p.build.string(), "-N",
                                         "--show-only=json-v1"};
  const fs::path out = p.out / "tests.json";
  const fs::path err = p.out / "tests.err";
  Result<Exit> listed = RunToEnd({argv, {}, {}, out.string(), err.string()});
  if (!listed.ok()) return listed.error();
  if (!listed.value().ok()) {
    return Error{"list-failed", CommandLine(argv) + " failed (" + Describe(listed.value(), {}) +
                                    "): " + ReadFile(err)};
  }
  std::optional<std::regex> filter;
  if (!a.filter.empty()) filter.emplace(a.filter, std::regex::ECMAScript);
  Result<std::vector<RtlTest>> tests = SelectTests(ReadFile(out), a.label, filter);
  if (tests.ok() && tests.value().empty()) {
    std::string why = "ctest lists no test with label '" + a.label + "'";
    if (!a.filter.empty()) why += " whose name matches '" + a.filter + "'";
    return Error{"no-tests", why + " in " + p.build.string()};
  }
  return tests;
}

nlohmann::ordered_json RunJson(const Run& r, std::chrono::nanoseconds timeout) {
  nlohmann::ordered_json j = {{"test", r.test->name},
                              {"seed", r.seed},
                              {"passed", r.passed()},
                              {"seconds", r.seconds},
                              {"log", r.log.string()}};
  if (!r.passed()) {
    j["why"] = Why(r, timeout);
    j["timed_out"] = r.exit.timed_out;
    j["fst"] = r.fsts;
    j["replay"] = ReplayCommand(r);
  }
  return j;
}

nlohmann::ordered_json CoverageJson(const Result<Coverage>& c) {
  if (!c.ok()) return {{"error", c.error().name}, {"message", c.error().message}};
  const Coverage& v = c.value();
  nlohmann::ordered_json j = {{"inputs", v.inputs},
                              {"file", v.dat.string()},
                              {"info", v.info.string()},
                              {"annotated", v.annotated.string()}};
  if (v.points) {
    j["covered"] = *v.covered;
    j["points"] = *v.points;
    j["percent"] = *v.percent;
  }
  return j;
}

void PrintCoverage(const Result<Coverage>& c) {
  if (!c.ok()) return;
  const Coverage& v = c.value();
  std::cout << "coverage: " << v.dat.string() << " (" << v.inputs << " files merged; lcov "
            << v.info.string() << ", annotated sources " << v.annotated.string() << "/)";
  if (v.points) {
    std::cout << ": " << *v.covered << "/" << *v.points << " points, " << std::fixed
              << std::setprecision(2) << *v.percent << "%";
  }
  std::cout << '\n';
}

int RunRegress(RegressArgs a) {
  Paths p;
  p.build = fs::absolute(a.build_dir).lexically_normal();
  p.out =
      fs::absolute(a.out.empty() ? p.build / "rtl-regress" : fs::path(a.out)).lexically_normal();
  Result<bool> prepared = PrepareOut(p);
  if (!prepared.ok()) return Fail(a, prepared.error());
  if (!a.no_build) {
    Result<bool> built = Build(a, p);
    if (!built.ok()) return Fail(a, built.error());
  }
  Result<std::vector<RtlTest>> tests = ListTests(a, p);
  if (!tests.ok()) return Fail(a, tests.error());
  if (!a.json) {
    std::cout << "rtl regress: " << tests.value().size() << " tests x " << a.seeds
              << " seeds (--seed " << a.first_seed << " --seeds " << a.seeds << "), " << a.jobs
              << (a.jobs == 1 ? " job" : " jobs") << ", output in " << p.out.string() << '\n';
    std::cout.flush();
  }
  uint64_t passed = 0;
  uint64_t failed = 0;
  const std::vector<Run> runs = RunAll(tests.value(), a, p, [&](const Run& r, size_t n, size_t of) {
    (r.passed() ? passed : failed)++;
    // A line on stderr as each run ends, terminal or not (--json included: stdout stays JSON).
    std::cerr << '[' << n << '/' << of << "] " << (r.passed() ? "pass " : "FAIL ") << r.test->name
              << " seed " << r.seed << (r.passed() ? "" : ": " + Why(r, a.timeout)) << " ("
              << std::fixed << std::setprecision(1) << r.seconds << " s)" << std::endl;
    if (a.json) return;
    if (!r.passed()) PrintFailure(r, a.timeout);
    if (a.verbose && r.passed()) {
      std::cout << "ok " << r.test->name << " seed " << r.seed << " (" << std::fixed
                << std::setprecision(1) << r.seconds << " s)\n";
    }
  });
  const Result<Coverage> coverage = MergeCoverage(p);
  if (!coverage.ok()) ReportError(kCommand, coverage.error(), false, std::cout, std::cerr, 0);
  const std::string summary =
      std::to_string(passed) + " passed, " + std::to_string(failed) + " failed";
  nlohmann::ordered_json report = {{"build_dir", p.build.string()},
                                   {"out", p.out.string()},
                                   {"label", a.label},
                                   {"first_seed", a.first_seed},
                                   {"seeds", a.seeds},
                                   {"tests", tests.value().size()},
                                   {"runs", nlohmann::ordered_json::array()},
                                   {"coverage", CoverageJson(coverage)},
                                   {"passed", passed},
                                   {"failed", failed},
                                   {"summary", summary}};
  for (const Run& r : runs) report["runs"].push_back(RunJson(r, a.timeout));
  const std::string text =
      report.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  std::ofstream(p.out / "report.json") << text << '\n';
  if (a.json) {
    std::cout << text << '\n';
    std::cerr << summary << '\n';  // stdout stays one JSON document
  } else {
    PrintCoverage(coverage);
    std::cout << summary << '\n';
  }
  return failed == 0 && coverage.ok() ? kExitOk : kExitFailure;
}

}  // namespace

Command AddRtlCommand(CLI::App& parent) {
  CLI::App* rtl = parent.add_subcommand(
      "rtl", "The bridge's data path in RTL (rtl-sim/, docs/rtl.md): regression runs");
  rtl->require_subcommand(1);
  auto args = std::make_shared<RegressArgs>();
  CLI::App* regress = rtl->add_subcommand(
      "regress",
      "Build the RTL testbenches (cmake --build BUILD --target rtl_testbenches), then run every "
      "ctest test labelled rtl - one GoogleTest test of a Verilated testbench - once per seed, "
      "directly with DXPU_SEED, DXPU_RTL_COV_DIR and DXPU_RTL_FST_DIR set. Each run's output "
      "goes to OUT/logs/<test>.<seed>.log. A passing run's FST waveform is deleted; a failing "
      "run (non-zero exit, a signal, or the timeout) keeps its waveform under OUT/fst/ and "
      "prints the test, the seed, the log, the waveform and the command that replays it. As "
      "each run ends, a line on stderr says which of how many, pass or FAIL, and how long it "
      "took: '[12/45] pass rtl_x_tb.Suite.Test seed 2 (3.1 s)'. The "
      "coverage of every run is merged with verilator_coverage into OUT/coverage.dat, "
      "OUT/coverage.info (lcov) and OUT/coverage-annotated/, and its total is printed. "
      "OUT/report.json holds the summary. Ends with 'N passed, M failed' (test x seed runs); "
      "exit status 1 if any failed, if the build failed, or if no coverage could be merged.");
  std::string build_help = "the CMake build directory holding the testbenches";
  if (*kDefaultBuildDir != '\0') build_help += " (default: the one this dxpu was built in)";
  CLI::Option* build_dir = regress->add_option("--build-dir", args->build_dir, build_help);
  if (*kDefaultBuildDir != '\0') build_dir->capture_default_str();
  regress->add_flag("--no-build", args->no_build, "do not build: run the testbenches as they are");
  regress->add_option("--seeds", args->seeds, "number of seeds each test runs with")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}))
      ->capture_default_str();
  CLI::Option* seed =
      regress->add_option("--seed", args->first_seed,
                          "first seed: the runs use S, S+1, ..., S+N-1 (default: random, printed)");
  regress->add_option("--filter", args->filter,
                      "run only the tests whose ctest name (testbench.Suite.Test) matches this "
                      "regular expression (ECMAScript, searched)");
  regress->add_option("--label", args->label, "run the ctest tests carrying exactly this label")
      ->capture_default_str();
  regress->add_option("--jobs,-j", args->jobs, "test processes at a time")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  AddBoundedDuration(*regress, "--timeout", &args->timeout,
                     "how long a run may take; longer is a failure (a bare number: seconds)",
                     {std::chrono::seconds(1), std::chrono::hours(24)}, {}, DurationUnit::kSeconds);
  regress->add_option("--out", args->out,
                      "where logs, waveforms, coverage and report.json go (default: "
                      "BUILD/rtl-regress); what an earlier run left there is removed first");
  regress->add_flag("--json", args->json,
                    "print the summary and every run as JSON on stdout (the last line, 'N passed, "
                    "M failed', then goes to stderr)");
  regress->add_flag(
      "--verbose,-v", args->verbose,
      "print a line on stdout for every passing run too (stderr has one for every run)");
  regress->footer(
      "Examples:\n"
      "  dxpu rtl regress\n"
      "  dxpu rtl regress --seeds 20 --jobs 4 --filter Random\n"
      "  dxpu rtl regress --no-build --seed 42 --seeds 1 --json");
  return {rtl, [args, regress, seed] {
            if (!regress->parsed()) return kExitUsage;
            RegressArgs a = *args;
            if (a.build_dir.empty()) {
              std::cerr << "dxpu rtl regress: --build-dir is required\n";
              return kExitUsage;
            }
            if (!a.filter.empty()) {
              try {
                std::regex check(a.filter, std::regex::ECMAScript);
              } catch (const std::regex_error& e) {
                std::cerr << "dxpu rtl regress: --filter: not a regular expression: " << e.what()
                          << '\n';
                return kExitUsage;
              }
            }
            if (seed->count() == 0) {
              a.first_seed = std::random_device{}();
            } else if (a.first_seed > std::numeric_limits<uint64_t>::max() - (a.seeds - 1)) {
              std::cerr << "dxpu rtl regress: --seed + --seeds overflows 64 bits\n";
              return kExitUsage;
            }
            return RunRegress(a);
          }};
}

}  // namespace dxpu::cli
