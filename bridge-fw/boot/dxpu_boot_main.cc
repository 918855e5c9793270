// dxpu_boot_main.cc - dxpu-boot, the bridge's boot loader (docs/firmware.md, "Booting:
// dxpu-boot"): chooses a slot of the flash, extracts its dxpu-bridge and runs it, and chooses
// again when the bridge asks for a reboot (exit 75) or dies.
//
// Signals: SIGINT, SIGTERM and SIGCHLD are blocked for the whole run and taken with
// sigtimedwait, so nothing runs in a signal handler; the bridge gets the mask dxpu-boot started
// with.
#include <fcntl.h>
#include <pthread.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bridge-fw/boot/boot_loader.h"
#include "bridge-fw/firmware/boot_protocol.h"
#include "lib/cli/duration.h"
#include "lib/cli/help_formatter.h"
#include "lib/cli/options.h"
#include "link/unique_fd.h"
#include "util/errno_text.h"

namespace {

using dxpu::firmware::BootPlan;
using dxpu::firmware::FirmwareResult;
using std::chrono::milliseconds;

struct Options {
  std::string flash;
  std::string work_dir;
  std::string config;  // overrides the image's configuration when set
  uint64_t max_boots = 0;
  std::chrono::nanoseconds restart_delay = std::chrono::milliseconds(500);
  std::string log_level = "info";
  bool once = false;
  bool json = false;
  std::vector<std::string> bridge_args;
};

// "SIGTERM"; "signal 64" for one without a name.
std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

// SIGINT, SIGTERM and SIGCHLD blocked while this lives, and taken one at a time.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &set_, &original_);
  }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;
  ~BlockedSignals() { pthread_sigmask(SIG_SETMASK, &original_, nullptr); }

  // The next of the three signals, waiting at most `timeout` (forever without one); 0 when none
  // came in time.
  int Next(std::optional<milliseconds> timeout) const {
    for (;;) {
      int sig = 0;
      if (timeout) {
        const timespec ts{static_cast<time_t>(timeout->count() / 1000),
                          static_cast<long>(timeout->count() % 1000) * 1'000'000};
        sig = sigtimedwait(&set_, nullptr, &ts);
      } else {
        sig = sigwaitinfo(&set_, nullptr);
      }
      if (sig > 0) return sig;
      if (errno == EAGAIN) return 0;
      // EINTR: a signal outside the set had a handler; wait again.
    }
  }

  // Whether SIGINT or SIGTERM comes within `duration` (SIGCHLD of a child already reaped is
  // dropped).
  bool StopWithin(milliseconds duration) const {
    const auto deadline = std::chrono::steady_clock::now() + duration;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      const int sig = Next(std::max(left, milliseconds(0)));
      if (sig == SIGINT || sig == SIGTERM) {
        spdlog::info("{}: stopping", SignalName(sig));
        return true;
      }
      if (sig == 0) return false;
    }
  }

  const sigset_t& original() const { return original_; }

 private:
  sigset_t set_{};
  sigset_t original_{};
};

std::vector<std::string> BridgeArgv(const Options& o, const BootPlan& plan) {
  std::vector<std::string> argv = {plan.executable,
                                   "-c",
                                   plan.config,
                                   dxpu::firmware::kFlashOption,
                                   o.flash,
                                   dxpu::firmware::kSlotOption,
                                   std::string(dxpu::firmware::SlotName(plan.slot))};
  argv.insert(argv.end(), o.bridge_args.begin(), o.bridge_args.end());
  return argv;
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecChild(const std::vector<char*>& argv, const sigset_t& mask, pid_t parent,
                            int report_fd) {
  sigprocmask(SIG_SETMASK, &mask, nullptr);  // NOLINT(concurrency-mt-unsafe): one thread here
  // The bridge is stopped if dxpu-boot dies without stopping it.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(128 + SIGTERM);
  // Descriptors dxpu-boot inherited do not reach the bridge (its own are O_CLOEXEC already).
  close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  execv(argv[0], argv.data());
  const int err = errno;
  (void)!write(report_fd, &err, sizeof(err));
  _exit(127);
}

// How a bridge run ended: its wait status, or that it could not be started.
struct ChildEnd {
  int status = 0;
  int exec_errno = 0;    // nonzero: execv failed with this
  bool stopped = false;  // we forwarded SIGINT or SIGTERM to it
};

// Starts argv[0]; the child's pid, or why not (exec_errno set, child reaped).
std::optional<pid_t> Spawn(const std::vector<std::string>& args, const BlockedSignals& signals,
                           ChildEnd& end) {
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  argv.reserve(copy.size() + 1);
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::array<int, 2> fds{};
  if (pipe2(fds.data(), O_CLOEXEC) != 0) {
    end.exec_errno = errno;
    return std::nullopt;
  }
  dxpu::link::UniqueFd read_end(fds[0]);
  dxpu::link::UniqueFd write_end(fds[1]);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) ExecChild(argv, signals.original(), parent, write_end.get());
  if (pid < 0) {
    end.exec_errno = errno;
    return std::nullopt;
  }
  write_end.Reset();
  int err = 0;
  ssize_t n = 0;
  do {
    n = read(read_end.get(), &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  if (n == sizeof(err)) {  // exec failed: the child exits at once
    waitpid(pid, &end.status, 0);
    end.exec_errno = err;
    return std::nullopt;
  }
  return pid;
}

// Runs the bridge until it exits; SIGINT and SIGTERM are forwarded to it meanwhile.
ChildEnd RunBridge(const std::vector<std::string>& argv, const BlockedSignals& signals) {
  ChildEnd end;
  const std::optional<pid_t> pid = Spawn(argv, signals, end);
  if (!pid) return end;
  spdlog::info("started {} (pid {})", argv[0], *pid);
  for (;;) {
    const int sig = signals.Next(std::nullopt);
    if (sig == SIGCHLD) {
      const pid_t r = waitpid(*pid, &end.status, WNOHANG);
      if (r == *pid) return end;
      if (r < 0 && errno == ECHILD) {  // not ours any more: nothing left to wait for
        spdlog::error("lost the bridge (pid {}): {}", *pid, dxpu::util::ErrnoText(errno));
        return end;
      }
      continue;
    }
    spdlog::info("{}: passing it to the bridge (pid {})", SignalName(sig), *pid);
    kill(*pid, sig);
    end.stopped = true;
  }
}

std::string StatusText(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("was killed by {}", SignalName(WTERMSIG(status)));
  return fmt::format("ended with wait status {:#x}", status);
}

// Logs how the bridge ended; whether to choose again at once (a reboot it asked for).
bool LogEnd(const ChildEnd& end, const std::string& exe) {
  if (end.exec_errno != 0) {
    spdlog::warn("cannot start {}: {}", exe, dxpu::util::ErrnoText(end.exec_errno));
    return false;
  }
  if (end.stopped) {
    spdlog::info("the bridge {}; exiting", StatusText(end.status));
    return false;
  }
  if (WIFEXITED(end.status) && WEXITSTATUS(end.status) == dxpu::firmware::kRebootExitStatus) {
    spdlog::info("the bridge exited with status {}: reboot requested", WEXITSTATUS(end.status));
    return true;
  }
  spdlog::warn("the bridge {} without being asked to stop", StatusText(end.status));
  return false;
}

std::string PlanNotes(const BootPlan& plan) {
  std::string text;
  for (const std::string& n : plan.notes) text += "note: " + n + "\n";
  return text;
}

void PrintPlan(const BootPlan& plan, bool json) {
  const std::string slot(dxpu::firmware::SlotName(plan.slot));
  if (json) {
    const nlohmann::json j = {{"slot", slot},
                              {"trial", plan.trial},
                              {"version", plan.version.ToString()},
                              {"build_id", plan.build_id},
                              {"executable", plan.executable},
                              {"config", plan.config},
                              {"notes", plan.notes}};
    std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return;
  }
  std::printf("slot: %s\ntrial: %s\nversion: %s\nbuild id: %s\nexecutable: %s\nconfig: %s\n%s",
              slot.c_str(), plan.trial ? "yes" : "no", plan.version.ToString().c_str(),
              plan.build_id.empty() ? "-" : plan.build_id.c_str(),  // as flash inspect says it
              plan.executable.c_str(), plan.config.c_str(), PlanNotes(plan).c_str());
}

FirmwareResult<BootPlan> Prepare(const Options& o) {
  FirmwareResult<BootPlan> plan = dxpu::firmware::PrepareBoot(o.flash, o.work_dir);
  if (!plan.ok()) {
    const dxpu::firmware::FirmwareError& e = plan.error();
    spdlog::critical("cannot boot: {}: {}", e.name, e.message);
  }
  return plan;
}

// The boot loop: prepare, run, choose again; the exit status of dxpu-boot.
int BootLoop(const Options& o) {
  const BlockedSignals signals;
  for (uint64_t boots = 0;;) {
    if (signals.StopWithin(milliseconds(0))) return 0;
    FirmwareResult<BootPlan> plan = Prepare(o);
    if (!plan.ok()) return 1;
    const BootPlan& p = plan.value();
    if (signals.StopWithin(milliseconds(0))) return 0;
    spdlog::info("booting slot {}{}, version {}, build {}", dxpu::firmware::SlotName(p.slot),
                 p.trial ? " (on trial)" : "", p.version.ToString(), p.build_id);
    const ChildEnd end = RunBridge(BridgeArgv(o, p), signals);
    ++boots;
    const bool reboot = LogEnd(end, p.executable);
    if (end.stopped) return 0;
    if (o.max_boots != 0 && boots >= o.max_boots) {
      spdlog::info("--max-boots {} reached: exiting", o.max_boots);
      return 0;
    }
    if (reboot) continue;
    spdlog::warn("choosing again in {}", dxpu::cli::FormatDuration(o.restart_delay));
    if (signals.StopWithin(std::chrono::ceil<milliseconds>(o.restart_delay))) return 0;
  }
}

void SetUpLogging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("dxpu-boot");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%f %^%l%$ dxpu-boot: %v");
}

void AddOptions(CLI::App& app, Options& o) {
  app.add_option("--flash", o.flash, "the bridge's flash file")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--work-dir", o.work_dir,
                 "where the chosen slot's files are extracted (DIR/slot-A/, DIR/slot-B/)")
      ->required();
  // Kept to refuse it clearly: every image carries a signed configuration (docs/firmware.md,
  // "The signed configuration").
  app.add_option("--config", o.config,
                 "refused: the image's signed configuration is the bridge's; a new one comes "
                 "in a signed image (dxpu flash sign --config)");
  app.add_option("--max-boots", o.max_boots,
                 "exit 0 after the N-th bridge run ended (0: never; for tests)")
      ->capture_default_str();
  dxpu::cli::AddDurationOption(app, "--restart-delay", &o.restart_delay,
                               "wait before choosing again after the bridge died (at most 60min)",
                               {{"--restart-delay-ms", dxpu::cli::DurationUnit::kMilliseconds}});
  app.add_option("--log-level", o.log_level, "trace, debug, info, warn, error, critical, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_flag("--once", o.once,
               "prepare one boot (the boot state is written and the files extracted, as for a "
               "real boot), print the plan and exit without running the bridge");
  app.add_flag("--json", o.json, "with --once: print the plan as JSON");
  app.add_option("bridge-args", o.bridge_args,
                 "after --: more arguments for dxpu-bridge, after the ones dxpu-boot passes");
}

int Main(int argc, char** argv) {
  CLI::App app{
      "dxpu-boot: the bridge's boot loader. Chooses a slot (A or B) of the bridge's flash by the\n"
      "boot state, verifies its signed image, extracts its dxpu-bridge and configuration into\n"
      "--work-dir and runs `dxpu-bridge -c CONFIG --flash FILE --slot A|B [ARGS]`. A slot on\n"
      "trial uses up one of its tries at every boot; when they are gone it is marked bad and the\n"
      "other slot boots. The bridge exiting with 75 asks for a reboot: dxpu-boot chooses again at\n"
      "once. Any other end it did not ask for (a crash, a signal, any exit status) is logged and\n"
      "it chooses again after --restart-delay. SIGINT/SIGTERM are passed to the bridge, then\n"
      "dxpu-boot exits 0 once it is gone. With no valid image it logs why and exits 1: the\n"
      "bridge stays down rather than run an unsigned image. Logs go to stderr.\n"
      "Exit status: 0 stopped (or --once, --max-boots), 1 nothing to boot or a flash error, 2\n"
      "bad usage. docs/firmware.md, \"Booting: dxpu-boot\"."};
  dxpu::cli::UseDxpuHelpFormatter(app);
  Options o;
  AddOptions(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (o.restart_delay > std::chrono::minutes(60)) {
    std::fprintf(stderr, "dxpu-boot: --restart-delay %s: at most 60min\n",
                 dxpu::cli::FormatDuration(o.restart_delay).c_str());
    return 2;
  }
  if (o.json && !o.once) {
    std::fprintf(stderr, "dxpu-boot: --json goes with --once\n");
    return 2;
  }
  if (const std::optional<std::string> why =
          dxpu::firmware::ConfigOverride(o.config, o.bridge_args)) {
    std::fprintf(stderr, "dxpu-boot: %s\n", why->c_str());
    return 2;
  }
  SetUpLogging(o.log_level);
  o.flash = std::filesystem::absolute(o.flash).string();
  if (!o.once) return BootLoop(o);
  FirmwareResult<BootPlan> plan = Prepare(o);
  if (!plan.ok()) return 1;
  PrintPlan(plan.value(), o.json);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dxpu-boot: %s\n", e.what());
    return 1;
  }
}
