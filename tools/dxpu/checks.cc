// checks.cc - counted internal checks.
#include "checks.h"

#include <spdlog/spdlog.h>

namespace dxpu::cli {

bool Checks::Expect(bool ok, std::string_view what) {
  if (ok) {
    ++passed_;
    spdlog::debug("check ok: {}", what);
  } else {
    failures_.emplace_back(what);
    spdlog::error("check failed: {}", what);
  }
  return ok;
}

}  // namespace dxpu::cli
