// child_process.h - a daemon as a child process for tests (dxpu-manager, dxpu-agent, dxpu-boot):
// its output appended to a log file, stopped with SIGTERM or SIGKILL, always reaped.
#ifndef DXPU_TESTS_BRIDGE_CHILD_PROCESS_H_
#define DXPU_TESTS_BRIDGE_CHILD_PROCESS_H_

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dxpu::test {

class ChildProcess {
 public:
  // argv[0] is the executable's path.
  ChildProcess(std::vector<std::string> argv, std::filesystem::path log)
      : argv_(std::move(argv)), log_(std::move(log)) {}
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { Kill(); }

  void Start();
  // Whether it is still running (reaps it if not; exit_status() then says how it ended).
  bool Alive();
  // SIGKILL, as a crash would end it; reaped.
  void Kill();
  // SIGTERM, then its exit status; nullopt if it did not exit within timeout_ms (then killed).
  std::optional<int> Terminate(int timeout_ms = 5000);
  // Waits for it to exit by itself: its exit status (128 + signal if killed by one), or
  // nullopt after timeout_ms (still running).
  std::optional<int> Wait(int timeout_ms);
  // Replaces the arguments for the next Start (a restart without a crash hook).
  void SetArgs(std::vector<std::string> argv) { argv_ = std::move(argv); }
  const std::filesystem::path& log() const { return log_; }
  // The log's last `max_bytes` bytes, for a failure message.
  std::string LogTail(size_t max_bytes = 4000) const;
  std::optional<int> exit_status() const { return exit_status_; }
  // Its process ID while it runs (0: not running), for signals a test sends (SIGSTOP).
  pid_t pid() const { return pid_; }

 private:
  bool Reap(int options);

  std::vector<std::string> argv_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
  std::optional<int> exit_status_;
};

}  // namespace dxpu::test

#endif  // DXPU_TESTS_BRIDGE_CHILD_PROCESS_H_
