// bridge_process.cc - the real dxpu-bridge daemon as a child process (bridge_process.h).
#include "bridge_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace dxpu::test {

namespace fs = std::filesystem;

namespace {

// Whether a socket of this type can bind 127.0.0.1:port now.
bool CanBind(int type, uint16_t port) {
  const int fd = socket(AF_INET, type, 0);
  if (fd < 0) return false;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(port);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
  close(fd);
  return ok;
}

}  // namespace

uint16_t FreePort(int type) {
  // 20000..32767, starting from a point of this process's own and stepping by a prime, so
  // test processes running side by side rarely try the same ports.
  constexpr uint32_t kFirst = 20000, kCount = 12768, kStep = 7919;
  static std::atomic<uint32_t> next{static_cast<uint32_t>(getpid()) * 104729u};
  for (int tries = 0; tries < 2000; ++tries) {
    const auto port = static_cast<uint16_t>(kFirst + (next.fetch_add(kStep) % kCount));
    if (CanBind(type, port)) return port;
  }
  return 0;
}

bool WaitForPath(const std::string& path) {
  for (int i = 0; i < 500 && !fs::exists(path); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return fs::exists(path);
}

std::string FileTail(const fs::path& path, size_t max_bytes) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
}

std::string FreshSocketPath(const std::string& name) {
  static std::atomic<int> sockets{0};
  const fs::path path =
      fs::temp_directory_path() / ("dxpu-" + name + "-" + std::to_string(getpid()) + "-" +
                                   std::to_string(sockets.fetch_add(1)) + ".sock");
  std::error_code ignored;
  fs::remove(path, ignored);
  return path.string();
}

BridgeProcess::BridgeProcess(const std::string& config_text, std::string binary)
    : binary_(std::move(binary)) {
  static std::atomic<int> instances{0};
  dir_ = fs::temp_directory_path() / ("dxpu-bridge-test-" + std::to_string(getpid()) + "-" +
                                      std::to_string(instances.fetch_add(1)));
  fs::create_directories(dir_);
  config_ = dir_ / "bridge.json";
  log_ = dir_ / "bridge.log";
  std::ofstream(config_) << config_text;
}

BridgeProcess::~BridgeProcess() {
  Kill();
  fs::remove_all(dir_);
}

bool BridgeProcess::Start(const std::string& extra_arg) {
  // $DXPU_TEST_DATAPATH picks the bridge's data plane (the tests run again with rtl: the
  // Verilated data path in the loop).
  const char* env = std::getenv("DXPU_TEST_DATAPATH");  // NOLINT(concurrency-mt-unsafe)
  const std::string datapath = env != nullptr && *env != '\0' ? env : "golden";
  pid_ = fork();
  if (pid_ == 0) {
    // Its output goes to its log, every start appended: a failing test prints the tail
    // (LogTail) instead of the whole run drowning the test's own messages.
    const int log = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log >= 0) {
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
    }
    if (extra_arg.empty()) {
      execl(binary_.c_str(), binary_.c_str(), "--config", config_.c_str(), "--datapath",
            datapath.c_str(), nullptr);
    } else {
      execl(binary_.c_str(), binary_.c_str(), "--config", config_.c_str(), "--datapath",
            datapath.c_str(), extra_arg.c_str(), nullptr);
    }
    _exit(127);
  }
  return pid_ > 0;
}

int BridgeProcess::Terminate() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 500; ++i) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

void BridgeProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string BridgeProcess::LogTail(size_t max_bytes) const { return FileTail(log_, max_bytes); }

bool BridgeProcess::Alive() {
  if (pid_ <= 0) return false;
  if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

}  // namespace dxpu::test
