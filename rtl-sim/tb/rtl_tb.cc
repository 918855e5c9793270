// rtl_tb.cc - see rtl_tb.h.
#include "rtl_tb.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/tlp_testutil.h"

namespace dxpu::rtl {

TestSeed::TestSeed(const char* file, int line)
    : seed_(test::test_seed()), trace_(file, line, "DXPU_SEED=" + std::to_string(seed_)) {
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed_));
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

VerilatedModelOptions TestbenchOptions(unsigned serial) {
  VerilatedModelOptions o;
  o.instance = "dut";
  o.random_reset = true;
  o.traceable = false;
  o.fst_path = ArtifactPath("DXPU_RTL_FST_DIR", serial, "fst");
  o.coverage_path = ArtifactPath("DXPU_RTL_COV_DIR", serial, "dat");
  return o;
}

}  // namespace dxpu::rtl
