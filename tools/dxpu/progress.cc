// progress.cc - a progress line on stderr for slow work.
#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

namespace dxpu::cli {
namespace {

constexpr auto kQuietFor = std::chrono::seconds(1);
constexpr auto kRefresh = std::chrono::milliseconds(200);
constexpr uint64_t kCheckClockEvery = 256;  // calls between clock reads

}  // namespace

Progress::Progress(std::string label)
    : label_(std::move(label)),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(Clock::now()),
      last_print_(start_) {}

Progress::~Progress() {
  if (printed_) std::fprintf(stderr, "\r%s: done\x1b[K\n", label_.c_str());
}

void Progress::Update(uint64_t done, uint64_t total) {
  if (!enabled_ || total == 0 || ++calls_ % kCheckClockEvery != 0) return;
  Clock::time_point now = Clock::now();
  if (now - start_ < kQuietFor || now - last_print_ < kRefresh) return;
  last_print_ = now;
  printed_ = true;
  std::fprintf(stderr, "\r%s: %3llu%%", label_.c_str(),
               static_cast<unsigned long long>(done * 100 / total));
  std::fflush(stderr);
}

}  // namespace dxpu::cli
