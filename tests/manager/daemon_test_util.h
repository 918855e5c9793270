// daemon_test_util.h - what the tests of the pool's daemons on loopback share: an HTTP answer,
// waiting for a condition, counting log lines, raw TCP connections.
#ifndef DXPU_TESTS_MANAGER_DAEMON_TEST_UTIL_H_
#define DXPU_TESTS_MANAGER_DAEMON_TEST_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "link/unique_fd.h"

namespace dxpu::test {

struct Answer {
  int status = 0;
  nlohmann::json body;
};

// Polls `done` every 20 ms until it holds or `limit` has passed; whether it held.
inline bool WaitFor(const std::function<bool()>& done,
                    std::chrono::milliseconds limit = std::chrono::milliseconds(20'000)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// Counts the lines of `log` that hold `needle`.
inline int CountLines(const std::filesystem::path& log, const std::string& needle) {
  std::ifstream in(log);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

// A TCP connection to 127.0.0.1:port that sends what the test says, when it says.
inline link::UniqueFd Connect(uint16_t port) {
  link::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) return {};
  return fd;
}

// Whether the server has closed `fd` (EOF or reset) within `limit`.
inline bool ClosedByServer(int fd, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  char buf[512];
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) == 1) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) return true;  // 0: EOF; < 0: reset
    }
  }
  return false;
}

}  // namespace dxpu::test

#endif  // DXPU_TESTS_MANAGER_DAEMON_TEST_UTIL_H_
