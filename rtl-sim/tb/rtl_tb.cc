// rtl_tb.cc - see rtl_tb.h.
#include "rtl_tb.h"

#include <gtest/gtest.h>
#include <verilated_cov.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

namespace dxpu::rtl {

std::vector<uint32_t> HeaderWords(std::span<const uint8_t> bytes) {
  std::array<uint8_t, 16> h{};
  for (size_t i = 0; i < h.size() && i < bytes.size(); ++i) h[i] = bytes[i];
  std::vector<uint32_t> w(4);
  for (size_t dw = 0; dw < 4; ++dw)
    w[3 - dw] = static_cast<uint32_t>(h[4 * dw]) << 24 |
                static_cast<uint32_t>(h[4 * dw + 1]) << 16 |
                static_cast<uint32_t>(h[4 * dw + 2]) << 8 | h[4 * dw + 3];
  return w;
}

std::array<uint8_t, 16> HeaderBytes(std::span<const uint32_t> words) {
  std::array<uint8_t, 16> h{};
  for (size_t dw = 0; dw < 4 && 3 - dw < words.size(); ++dw)
    for (size_t b = 0; b < 4; ++b)
      h[4 * dw + b] = static_cast<uint8_t>(words[3 - dw] >> (24 - 8 * b));
  return h;
}

unsigned NextSimSerial() {
  static std::atomic<unsigned> serial{0};
  return serial++;
}

std::string ArtifactPath(const char* env_var, unsigned serial, const char* ext) {
  // Testbenches read the environment before any thread of theirs starts.
  const char* dir = std::getenv(env_var);  // NOLINT(concurrency-mt-unsafe)
  if (dir == nullptr || *dir == '\0') return {};
  std::string test = "sim";
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info())
    test = std::string(info->test_suite_name()) + "." + info->name();
  for (char& c : test) {
    if (c == '/') c = '_';  // typed tests are named Suite/0
  }
  std::filesystem::create_directories(dir);
  return std::string(dir) + "/" + test + "." + std::to_string(serial) + "." + ext;
}

void WriteCoverage(VerilatedContext& ctx, unsigned serial) {
  const std::string path = ArtifactPath("DXPU_RTL_COV_DIR", serial, "dat");
  if (!path.empty()) ctx.coveragep()->write(path.c_str());
}

}  // namespace dxpu::rtl
