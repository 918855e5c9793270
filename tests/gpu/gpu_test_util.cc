// gpu_test_util.cc - helpers shared by the lib/gpu tests.
#include "gpu_test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

namespace dxpu::gpu::test {

DeviceProfile Profile(std::string_view profile_name) {
  std::optional<DeviceProfile> p = FindProfile(profile_name);
  if (!p) throw std::runtime_error("no profile " + std::string(profile_name));
  return *p;
}

ConfigSpace MakeConfigSpace(std::string_view profile_name) {
  std::string error;
  std::optional<ConfigSpace> config = ConfigSpace::Create(Profile(profile_name), &error);
  if (!config) throw std::runtime_error(error);
  return std::move(*config);
}

std::vector<uint8_t> Dump(const ConfigSpace& config) {
  std::vector<uint8_t> out;
  out.reserve(ConfigSpace::kSize);
  for (uint32_t dw = 0; dw < ConfigSpace::kSize / 4; ++dw) {
    const ConfigRead r = config.ReadDw(dw);
    EXPECT_TRUE(r.ok()) << "DW " << dw;
    for (uint32_t k = 0; k < 4; ++k) out.push_back(static_cast<uint8_t>(r.value >> (8 * k)));
  }
  return out;
}

uint16_t Get16(const std::vector<uint8_t>& dump, uint32_t offset) {
  return static_cast<uint16_t>(dump.at(offset) | (dump.at(offset + 1) << 8));
}

uint32_t Get32(const std::vector<uint8_t>& dump, uint32_t offset) {
  return Get16(dump, offset) | (static_cast<uint32_t>(Get16(dump, offset + 2)) << 16);
}

uint32_t Read32(const ConfigSpace& config, uint32_t offset) {
  const ConfigRead r = config.Read(offset, 4);
  EXPECT_TRUE(r.ok()) << "read of 4 bytes at " << offset << ": " << ToString(r.status);
  return r.value;
}

uint16_t Read16(const ConfigSpace& config, uint32_t offset) {
  const ConfigRead r = config.Read(offset, 2);
  EXPECT_TRUE(r.ok()) << "read of 2 bytes at " << offset << ": " << ToString(r.status);
  return static_cast<uint16_t>(r.value);
}

uint64_t TestSeed() {
  // Tests read the environment before any thread starts.
  if (const char* env = std::getenv("DXPU_SEED");  // NOLINT(concurrency-mt-unsafe)
      env != nullptr && *env != '\0') {
    return std::strtoull(env, nullptr, 0);
  }
  return std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32);
}

std::string ParamName(const ::testing::TestParamInfo<std::string_view>& info) {
  std::string name(info.param);
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

}  // namespace dxpu::gpu::test
