// gpu_test_util.h - helpers shared by the lib/gpu tests.
#ifndef DXPU_TESTS_GPU_GPU_TEST_UTIL_H_
#define DXPU_TESTS_GPU_GPU_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/config_space.h"

namespace dxpu::gpu::test {

// The built-in profile's configuration space; throws (failing the test) if it cannot be made.
ConfigSpace MakeConfigSpace(std::string_view profile_name);

// The built-in profile; throws if there is none by that name.
DeviceProfile Profile(std::string_view profile_name);

// All 4096 bytes, read through the DW interface as a host dumping config space would.
std::vector<uint8_t> Dump(const ConfigSpace& config);

// Little-endian register values out of a dump.
uint16_t Get16(const std::vector<uint8_t>& dump, uint32_t offset);
uint32_t Get32(const std::vector<uint8_t>& dump, uint32_t offset);

// Config reads that must succeed (the test fails otherwise).
uint32_t Read32(const ConfigSpace& config, uint32_t offset);
uint16_t Read16(const ConfigSpace& config, uint32_t offset);

// $DXPU_SEED if set, else a fresh seed (printed by the caller).
uint64_t TestSeed();

// A profile name as a test-name suffix ('-' is not allowed there).
std::string ParamName(const ::testing::TestParamInfo<std::string_view>& info);

}  // namespace dxpu::gpu::test

#endif  // DXPU_TESTS_GPU_GPU_TEST_UTIL_H_
