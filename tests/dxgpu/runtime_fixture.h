// runtime_fixture.h - the libdxgpu API tests run over any Port: a parameterised fixture
// whose parameter is a port factory. Each port instantiates the suites once (see
// direct_port_tests.cc):
//   INSTANTIATE_TEST_SUITE_P(Direct, RuntimeTest, ::testing::Values(DirectPortFactory()),
//                            PortFactoryName);
#ifndef DXPU_TESTS_DXGPU_RUNTIME_FIXTURE_H_
#define DXPU_TESTS_DXGPU_RUNTIME_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "dxgpu/port.h"
#include "dxgpu/runtime.h"

namespace dxpu::dxgpu::test {

struct PortFactory {
  std::string name;  // a test-name suffix: letters, digits, _
  // A new port with at least one "dxgpu"-profile device (device 0).
  std::function<Expected<std::unique_ptr<Port>>()> open;
  RuntimeOptions options;
};

// gtest prints the parameter by its name.
inline void PrintTo(const PortFactory& factory, std::ostream* os) { *os << factory.name; }
std::string PortFactoryName(const ::testing::TestParamInfo<PortFactory>& info);

class RuntimeTest : public ::testing::TestWithParam<PortFactory> {
 protected:
  void SetUp() override;
  void TearDown() override;

  Runtime& rt() { return *runtime_; }
  // Opens another runtime over a new port from the factory, with these options.
  static std::unique_ptr<Runtime> OpenRuntime(const RuntimeOptions& options);

  std::unique_ptr<Runtime> runtime_;
};

// Seeded random data; the seed is printed (DXPU_SEED=<n> replays it).
uint32_t TestSeed();
std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed);
std::vector<float> RandomFloats(size_t n, uint32_t seed);

// CPU references of the model's kernels (docs/dxgpu.md, "Kernels").
void ReferenceGemm(uint64_t m, uint64_t n, uint64_t k, float alpha, const std::vector<float>& a,
                   const std::vector<float>& b, float beta, std::vector<float>& c);
float ReferenceReduceSum(const std::vector<float>& x);

// Writes a vector to a new device allocation (synchronously).
DevicePtr Upload(Runtime& rt, size_t device, const std::vector<float>& values);
std::vector<float> Download(Runtime& rt, DevicePtr src, size_t count);

// |got - want| <= tolerance * max(1, |want|) for every element.
::testing::AssertionResult NearlyEqual(const std::vector<float>& got,
                                       const std::vector<float>& want, float tolerance = 1e-5f);

}  // namespace dxpu::dxgpu::test

#endif  // DXPU_TESTS_DXGPU_RUNTIME_FIXTURE_H_
