// direct_port_tests.cc - the runtime's API tests over the direct port (GPU models in this
// process, lib/host/direct_port.h), and what needs two devices.
#include <cstring>
#include <vector>

#include "host/direct_port.h"
#include "runtime_fixture.h"

namespace dxpu::dxgpu::test {
namespace {

PortFactory DirectPortFactory() {
  return {.name = "direct", .open = [] { return host::OpenDirectPort({}); }, .options = {}};
}

INSTANTIATE_TEST_SUITE_P(Direct, RuntimeTest, ::testing::Values(DirectPortFactory()),
                         PortFactoryName);

TEST(DirectTwoDevices, EachDeviceItsOwnMemoryChannelAndClock) {
  Expected<std::unique_ptr<Port>> port = host::OpenDirectPort({.profiles = {"dxgpu", "a100-40g"}});
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  Expected<std::unique_ptr<Runtime>> opened = Runtime::Open(std::move(port).value());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Runtime& rt = **opened;
  ASSERT_EQ(rt.device_count(), 2u);
  EXPECT_EQ(rt.GetDeviceProperties(1)->profile, "a100-40g");
  EXPECT_EQ(rt.GetDeviceProperties(1)->memory_bytes, uint64_t{40} << 30);
  EXPECT_EQ(rt.GetDeviceProperties(1)->peak_fp32_flops, 19.5e12);

  const std::vector<float> x = RandomFloats(1000, TestSeed());
  const DevicePtr d0 = Upload(rt, 0, x);
  const DevicePtr d1 = Upload(rt, 1, x);
  Expected<Stream> s0 = rt.CreateStream(0);
  Expected<Stream> s1 = rt.CreateStream(1);
  Expected<Event> e0 = rt.CreateEvent();
  Expected<Event> e1 = rt.CreateEvent();
  ASSERT_TRUE(s0.ok() && s1.ok() && e0.ok() && e1.ok());
  // A pointer on device 1 used on device 0's stream, and device-to-device across devices.
  EXPECT_EQ(rt.LaunchAxpy(*s0, 1000, 1.0f, d1, d0).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rt.MemcpyDtoD(d0, d1, 4).code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(rt.LaunchAxpy(*s0, 1000, 1.0f, d0, d0).ok());
  ASSERT_TRUE(rt.LaunchAxpy(*s1, 1000, 3.0f, d1, d1).ok());
  ASSERT_TRUE(rt.RecordEvent(*e0, *s0).ok());
  ASSERT_TRUE(rt.RecordEvent(*e1, *s1).ok());
  ASSERT_TRUE(rt.SynchronizeDevice(0).ok());
  ASSERT_TRUE(rt.SynchronizeDevice(1).ok());
  std::vector<float> want0(1000);
  std::vector<float> want1(1000);
  for (size_t i = 0; i < 1000; ++i) {
    want0[i] = 1.0f * x[i] + x[i];
    want1[i] = 3.0f * x[i] + x[i];
  }
  EXPECT_TRUE(NearlyEqual(Download(rt, d0, 1000), want0));
  EXPECT_TRUE(NearlyEqual(Download(rt, d1, 1000), want1));
  // The devices' clocks are not comparable.
  EXPECT_EQ(rt.EventElapsedNs(*e0, *e1).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace dxpu::dxgpu::test
