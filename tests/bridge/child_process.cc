// child_process.cc - a daemon as a child process (child_process.h).
#include "child_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "bridge_process.h"

namespace dxpu::test {

void ChildProcess::Start() {
  exit_status_.reset();
  pid_ = fork();
  if (pid_ == 0) {
    FILE* out = std::fopen(log_.c_str(), "a");
    if (out != nullptr) {
      dup2(fileno(out), STDOUT_FILENO);
      dup2(fileno(out), STDERR_FILENO);
    }
    std::vector<char*> args;
    for (std::string& a : argv_) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
}

bool ChildProcess::Reap(int options) {
  int status = 0;
  if (pid_ <= 0 || waitpid(pid_, &status, options) != pid_) return false;
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  pid_ = -1;
  return true;
}

bool ChildProcess::Alive() { return pid_ > 0 && !Reap(WNOHANG); }

void ChildProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  Reap(0);
}

std::optional<int> ChildProcess::Wait(int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Alive()) {
    if (std::chrono::steady_clock::now() > end) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return exit_status_;
}

std::optional<int> ChildProcess::Terminate(int timeout_ms) {
  if (pid_ > 0) kill(pid_, SIGTERM);
  std::optional<int> status = Wait(timeout_ms);
  if (!status) Kill();
  return status;
}

std::string ChildProcess::LogTail(size_t max_bytes) const { return FileTail(log_, max_bytes); }

}  // namespace dxpu::test
