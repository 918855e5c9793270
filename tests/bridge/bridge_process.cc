// bridge_process.cc - the real dxpu-bridge daemon as a child process (bridge_process.h).
#include "bridge_process.h"

#include "core/dxpu_mgmt.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

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

std::string HttpGet(uint16_t port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string out;
  std::vector<char> buf(65536);
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 3000) == 1) {
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

int SendManagementDatagram(const std::string& mgmt, const std::vector<uint8_t>& bytes) {
  const std::string me = FreshSocketPath("bridge-test-raw");
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un local{}, to{};
  local.sun_family = to.sun_family = AF_UNIX;
  std::snprintf(local.sun_path, sizeof(local.sun_path), "%s", me.c_str());
  std::snprintf(to.sun_path, sizeof(to.sun_path), "%s", mgmt.c_str());
  int status = -1;
  std::vector<uint8_t> in(DXPU_MGMT_MAX_MSG);
  pollfd p{fd, POLLIN, 0};
  dxpu_mgmt_msg m{};
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) == 0 &&
      sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof(to)) ==
          static_cast<ssize_t>(bytes.size()) &&
      poll(&p, 1, 2000) == 1) {
    const ssize_t n = recv(fd, in.data(), in.size(), 0);
    if (n > 0 && dxpu_mgmt_decode(in.data(), static_cast<size_t>(n), &m) == DXPU_MGMT_ERR_OK)
      status = m.status;
  }
  close(fd);
  unlink(me.c_str());
  return status;
}

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
  return Start(extra_arg.empty() ? std::vector<std::string>{}
                                 : std::vector<std::string>{extra_arg});
}

bool BridgeProcess::Start(const std::vector<std::string>& extra_args) {
  // $DXPU_TEST_DATAPATH picks the bridge's data plane (the tests run again with rtl: the
  // Verilated data path in the loop).
  const char* env = std::getenv("DXPU_TEST_DATAPATH");  // NOLINT(concurrency-mt-unsafe)
  const std::string datapath = env != nullptr && *env != '\0' ? env : "golden";
  std::vector<std::string> args = {binary_, "--config", config_.string(), "--datapath", datapath};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    // Its output goes to its log, every start appended: a failing test prints the tail
    // (LogTail) instead of the whole run drowning the test's own messages.
    const int log = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log >= 0) {
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
    }
    execv(argv[0], argv.data());
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
