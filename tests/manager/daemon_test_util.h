// daemon_test_util.h - what the tests of the pool's daemons on loopback share: an HTTP answer,
// waiting for a condition, counting log lines.
#ifndef DXPU_TESTS_MANAGER_DAEMON_TEST_UTIL_H_
#define DXPU_TESTS_MANAGER_DAEMON_TEST_UTIL_H_

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

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

}  // namespace dxpu::test

#endif  // DXPU_TESTS_MANAGER_DAEMON_TEST_UTIL_H_
