// checks.h - the demo's internal checks: each one counted, each failure logged and kept.
#ifndef DXPU_TOOLS_DXPU_CHECKS_H_
#define DXPU_TOOLS_DXPU_CHECKS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dxpu::cli {

class Checks {
 public:
  // Counts one check; a failed one is logged at error level and remembered. Returns ok.
  bool Expect(bool ok, std::string_view what);

  uint64_t passed() const { return passed_; }
  uint64_t failed() const { return failures_.size(); }
  const std::vector<std::string>& failures() const { return failures_; }

 private:
  uint64_t passed_ = 0;
  std::vector<std::string> failures_;
};

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_CHECKS_H_
