// progress.h - progress on stderr for work that turns out to be slow. Nothing is printed for
// work that finishes within a second. On a terminal one line is redrawn in place; otherwise
// (a log, a pipe, CI) a plain line is printed every few seconds, so a slow command is never
// silent wherever its stderr goes.
#ifndef DXPU_TOOLS_DXPU_PROGRESS_H_
#define DXPU_TOOLS_DXPU_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace dxpu::cli {

class Progress {
 public:
  explicit Progress(std::string label);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress();

  // Reports done of total units; cheap enough to call for every unit.
  void Update(uint64_t done, uint64_t total);

 private:
  using Clock = std::chrono::steady_clock;

  std::string label_;
  bool terminal_;
  bool printed_ = false;
  uint64_t calls_ = 0;
  Clock::time_point start_;
  Clock::time_point last_print_;
};

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_PROGRESS_H_
