// progress.cc - progress on stderr for slow work.
#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

namespace dxpu::cli {
namespace {

constexpr auto kQuietFor = std::chrono::seconds(1);
constexpr auto kTerminalRefresh = std::chrono::milliseconds(200);
constexpr auto kLogRefresh = std::chrono::seconds(5);  // a line per 5 s in a log
constexpr uint64_t kCheckClockEvery = 256;             // calls between clock reads

}  // namespace

Progress::Progress(std::string label)
    : label_(std::move(label)),
      terminal_(isatty(STDERR_FILENO) == 1),
      start_(Clock::now()),
      last_print_(start_) {}

Progress::~Progress() {
  if (!printed_) return;
  if (terminal_) {
    std::fprintf(stderr, "\r%s: done\x1b[K\n", label_.c_str());
  } else {
    std::fprintf(stderr, "%s: done\n", label_.c_str());
  }
}

void Progress::Update(uint64_t done, uint64_t total) {
  if (total == 0 || (++calls_ % kCheckClockEvery != 0 && done != total)) return;
  Clock::time_point now = Clock::now();
  if (now - start_ < kQuietFor) return;
  const auto refresh = terminal_ ? Clock::duration(kTerminalRefresh) : Clock::duration(kLogRefresh);
  if (printed_ && now - last_print_ < refresh) return;
  if (!terminal_ && !printed_ && now - start_ < kLogRefresh) return;
  last_print_ = now;
  printed_ = true;
  const auto percent = static_cast<unsigned long long>(done * 100 / total);
  if (terminal_) {
    std::fprintf(stderr, "\r%s: %3llu%%", label_.c_str(), percent);
  } else {
    std::fprintf(stderr, "%s: %llu%% (%llu of %llu)\n", label_.c_str(), percent,
                 static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  }
  std::fflush(stderr);
}

}  // namespace dxpu::cli
