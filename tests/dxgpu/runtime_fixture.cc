// runtime_fixture.cc - the port-parameterised fixture and the tests' helpers.
#include "runtime_fixture.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace dxpu::dxgpu::test {

std::string PortFactoryName(const ::testing::TestParamInfo<PortFactory>& info) {
  return info.param.name;
}

void RuntimeTest::SetUp() {
  runtime_ = OpenRuntime(GetParam().options);
  ASSERT_NE(runtime_, nullptr);
}

void RuntimeTest::TearDown() { runtime_.reset(); }

std::unique_ptr<Runtime> RuntimeTest::OpenRuntime(const RuntimeOptions& options) {
  Expected<std::unique_ptr<Port>> port = GetParam().open();
  EXPECT_TRUE(port.ok()) << port.status().ToString();
  if (!port.ok()) return nullptr;
  Expected<std::unique_ptr<Runtime>> rt = Runtime::Open(std::move(port).value(), options);
  EXPECT_TRUE(rt.ok()) << rt.status().ToString();
  if (!rt.ok()) return nullptr;
  return std::move(rt).value();
}

uint32_t TestSeed() {
  static const uint32_t seed = [] {
    const char* env = std::getenv("DXPU_SEED");  // NOLINT(concurrency-mt-unsafe): read once
    const uint32_t s = env != nullptr ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10))
                                      : std::random_device{}();
    std::printf("DXPU_SEED=%u\n", s);
    return s;
  }();
  return seed;
}

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

std::vector<float> RandomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> out(n);
  for (float& f : out) f = dist(rng);
  return out;
}

void ReferenceGemm(uint64_t m, uint64_t n, uint64_t k, float alpha, const std::vector<float>& a,
                   const std::vector<float>& b, float beta, std::vector<float>& c) {
  for (uint64_t i = 0; i < m; ++i) {
    for (uint64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (uint64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
      c[i * n + j] = beta == 0.0f ? alpha * sum : alpha * sum + beta * c[i * n + j];
    }
  }
}

float ReferenceReduceSum(const std::vector<float>& x) {
  double sum = 0;
  for (const float v : x) sum += v;
  return static_cast<float>(sum);
}

DevicePtr Upload(Runtime& rt, size_t device, const std::vector<float>& values) {
  Expected<DevicePtr> ptr = rt.Malloc(device, values.size() * sizeof(float));
  EXPECT_TRUE(ptr.ok()) << ptr.status().ToString();
  if (!ptr.ok()) return {};
  const Status status = rt.MemcpyHtoD(*ptr, values.data(), values.size() * sizeof(float));
  EXPECT_TRUE(status.ok()) << status.ToString();
  return *ptr;
}

std::vector<float> Download(Runtime& rt, DevicePtr src, size_t count) {
  std::vector<float> out(count);
  const Status status = rt.MemcpyDtoH(out.data(), src, count * sizeof(float));
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out;
}

::testing::AssertionResult NearlyEqual(const std::vector<float>& got,
                                       const std::vector<float>& want, float tolerance) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  }
  size_t bad = 0;
  size_t first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tolerance * std::max(1.0f, std::fabs(want[i])))) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " differ; first at "
                                       << first << ": " << got[first] << " vs " << want[first];
}

}  // namespace dxpu::dxgpu::test
