// direct_port_tests.cc - the runtime's API tests over the direct port (GPU models in this
// process, lib/host/direct_port.h), and what needs two devices. Also over the direct port
// as the kernel port behaves: each device its own IOVA for a pinned buffer (no device reaches
// another's, so a command with the wrong device's address fails the test), and completion
// interrupts (the runtime's semaphores ask for one; INTR_ENABLE left alone).
#include <chrono>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "dxgpu/host_pools.h"
#include "dxgpu/pinned_memory.h"
#include "gpu/gpu_registers.h"
#include "host/direct_port.h"
#include "host/host_port.h"
#include "host/host_proxy.h"
#include "runtime_fixture.h"

namespace dxpu::dxgpu::test {
namespace {

PortFactory DirectPortFactory() {
  return {.name = "direct", .open = [] { return host::OpenDirectPort({}); }, .options = {}};
}

// The direct port as the kernel port is: its own IOVA for each device, interrupts asked for.
PortFactory DirectKernelLikeFactory() {
  return {.name = "direct_device_iovas",
          .open =
              [] {
                return host::OpenDirectPort(
                    {.separate_device_iovas = true, .completion_interrupts = true});
              },
          .options = {}};
}

INSTANTIATE_TEST_SUITE_P(Direct, RuntimeTest,
                         ::testing::Values(DirectPortFactory(), DirectKernelLikeFactory()),
                         PortFactoryName);

class DirectTwoDevices : public ::testing::TestWithParam<bool> {};  // separate IOVAs

TEST_P(DirectTwoDevices, EachDeviceItsOwnMemoryChannelAndClock) {
  Expected<std::unique_ptr<Port>> port = host::OpenDirectPort(
      {.profiles = {"dxgpu", "a100-40g"}, .separate_device_iovas = GetParam()});
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

// One pinned buffer, one timestamp page, one staging pool used by both devices: each device's
// commands must carry that device's IOVA of them (with separate IOVAs, the other's is refused).
TEST_P(DirectTwoDevices, SharedHostMemoryReachedByEachDevice) {
  Expected<std::unique_ptr<Port>> port =
      host::OpenDirectPort({.profiles = {"dxgpu", "dxgpu"}, .separate_device_iovas = GetParam()});
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  Expected<std::unique_ptr<Runtime>> opened =
      Runtime::Open(std::move(port).value(), {.staging_chunk_bytes = 4096});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Runtime& rt = **opened;
  constexpr size_t kCount = 3000;  // 12000 bytes: three staging chunks
  const std::vector<float> x = RandomFloats(kCount, TestSeed());
  Expected<void*> pinned = rt.MallocHost(2 * kCount * sizeof(float));
  ASSERT_TRUE(pinned.ok()) << pinned.status().ToString();
  auto* host = static_cast<float*>(*pinned);
  std::memcpy(host, x.data(), kCount * sizeof(float));
  Expected<Event> start[2] = {rt.CreateEvent(), rt.CreateEvent()};
  Expected<Event> end[2] = {rt.CreateEvent(), rt.CreateEvent()};
  for (uint32_t d = 0; d < 2; ++d) {
    Expected<Stream> s = rt.CreateStream(d);
    Expected<DevicePtr> ptr = rt.Malloc(d, kCount * sizeof(float));
    ASSERT_TRUE(s.ok() && ptr.ok() && start[d].ok() && end[d].ok());
    // Pinned, asynchronous: in from the first half, out into the second.
    ASSERT_TRUE(rt.RecordEvent(*start[d], *s).ok());
    ASSERT_TRUE(rt.MemcpyHtoDAsync(*s, *ptr, host, kCount * sizeof(float)).ok());
    ASSERT_TRUE(rt.LaunchAxpy(*s, kCount, static_cast<float>(d + 1), *ptr, *ptr).ok());
    ASSERT_TRUE(rt.MemcpyDtoHAsync(*s, host + kCount, *ptr, kCount * sizeof(float)).ok());
    ASSERT_TRUE(rt.RecordEvent(*end[d], *s).ok());
    const Status synced = rt.SynchronizeStream(*s);
    ASSERT_TRUE(synced.ok()) << synced.ToString();
    std::vector<float> want(kCount);
    for (size_t i = 0; i < kCount; ++i) want[i] = static_cast<float>(d + 2) * x[i];
    EXPECT_TRUE(NearlyEqual({host + kCount, host + 2 * kCount}, want)) << "device " << d;
    EXPECT_TRUE(rt.EventElapsedNs(*start[d], *end[d]).ok()) << "device " << d;
    // Synchronous: pinned (direct), then pageable (staged).
    ASSERT_TRUE(rt.MemcpyHtoD(*ptr, host, kCount * sizeof(float)).ok());
    std::vector<float> back(kCount);
    const Status copied = rt.MemcpyDtoH(back.data(), *ptr, kCount * sizeof(float));
    ASSERT_TRUE(copied.ok()) << copied.ToString();
    EXPECT_EQ(back, x) << "device " << d;
    EXPECT_EQ(Download(rt, Upload(rt, d, x), kCount), x) << "device " << d;
  }
}

INSTANTIATE_TEST_SUITE_P(Direct, DirectTwoDevices, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "SeparateIovas" : "SharedIovas";
                         });

TEST(DirectDeviceIovas, EachDeviceItsOwnAndNoneTheShared) {
  Expected<std::unique_ptr<Port>> port =
      host::OpenDirectPort({.profiles = {"dxgpu", "dxgpu"}, .separate_device_iovas = true});
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  Expected<HostBuffer> b = (*port)->AllocHost(100);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->device_iovas.size(), 2u);
  EXPECT_NE(b->IovaFor(0), b->IovaFor(1));
  EXPECT_NE(b->IovaFor(0), b->iova);
  EXPECT_TRUE((*port)->FreeHost(*b).ok());
  // Pinned first: too late to separate them.
  Expected<std::unique_ptr<Port>> shared = host::OpenDirectPort({});
  ASSERT_TRUE(shared.ok());
  Expected<HostBuffer> c = (*shared)->AllocHost(100);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->device_iovas.empty());
  EXPECT_EQ(c->IovaFor(0), c->iova);
  auto& host_port = dynamic_cast<host::HostPort&>(**shared);
  EXPECT_EQ(host_port.SeparateDeviceIovas(uint64_t{1} << 30).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(host_port.SeparateDeviceIovas(uint64_t{1} << 40).code(), ErrorCode::kInvalidArgument);
}

// A port that only pins memory (malloc'ed, no devices behind it), each of its devices at an
// IOVA of its own: what PinnedRegistry translates to, and what it refuses.
class PinOnlyPort final : public Port {
 public:
  PinOnlyPort(size_t devices, size_t iovas_given) : infos_(devices), iovas_given_(iovas_given) {}
  std::string_view kind() const override { return "pin-only"; }
  size_t device_count() const override { return infos_.size(); }
  const PortDeviceInfo& device_info(size_t device) const override { return infos_.at(device); }
  Expected<uint32_t> ReadRegister(size_t /*device*/, uint32_t /*offset*/) override {
    return Status(ErrorCode::kUnavailable, "no registers");
  }
  Status WriteRegister(size_t /*device*/, uint32_t /*offset*/, uint32_t /*value*/) override {
    return {ErrorCode::kUnavailable, "no registers"};
  }
  Expected<HostBuffer> AllocHost(uint64_t bytes) override {
    memory_.emplace_back(bytes);
    HostBuffer b{
        .data = memory_.back().data(), .iova = 0xdead'0000, .size = bytes, .device_iovas = {}};
    for (size_t d = 0; d < iovas_given_; ++d) b.device_iovas.push_back((d + 1) << 40);
    ++allocated_;
    return b;
  }
  Status FreeHost(const HostBuffer& /*buffer*/) override {
    ++freed_;
    return {};
  }
  Status Wait(size_t /*device*/, const std::function<bool()>& /*ready*/,
              uint64_t /*timeout_ns*/) override {
    return {};
  }
  uint64_t Now() const override { return 0; }
  Status Health(size_t /*device*/) const override { return {}; }

  int allocated_ = 0;
  int freed_ = 0;

 private:
  std::vector<PortDeviceInfo> infos_;
  size_t iovas_given_;
  std::deque<std::vector<uint8_t>> memory_;
};

TEST(PinnedRegistry, TranslatesToTheDevicesOwnIova) {
  PinOnlyPort port(3, 3);
  PinnedRegistry registry(port);
  Expected<HostBuffer> b = registry.Allocate(64);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  for (size_t d = 0; d < 3; ++d) {
    Expected<uint64_t> iova = registry.Translate(b->data + 5, 10, d);
    ASSERT_TRUE(iova.ok()) << iova.status().ToString();
    EXPECT_EQ(*iova, ((d + 1) << 40) + 5);
  }
  EXPECT_EQ(registry.Translate(b->data + 60, 10, 0).status().code(), ErrorCode::kInvalidArgument);
}

TEST(PinnedRegistry, ABufferWithTheWrongNumberOfDeviceIovasIsRefused) {
  PinOnlyPort port(3, 2);
  PinnedRegistry registry(port);
  Expected<HostBuffer> b = registry.Allocate(64);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), ErrorCode::kInternal);
  EXPECT_EQ(b.status().message(),
            "the port's AllocHost returned a buffer with 2 device IOVAs for 3 devices");
  EXPECT_EQ(port.freed_, 1) << "the refused buffer goes back to the port";
  EXPECT_EQ(registry.buffer_count(), 0u);
}

TEST(TimestampSlots, EachDeviceItsOwnIovaOfASlot) {
  PinOnlyPort port(2, 2);
  TimestampSlots slots(port);
  Expected<TimestampSlot> a = slots.Acquire();
  Expected<TimestampSlot> b = slots.Acquire();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(port.allocated_, 1) << "256 slots to a page";
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(a->IovaFor(d), ((d + 1) << 40) + a->offset);
    EXPECT_EQ(a->IovaFor(d) - b->IovaFor(d), static_cast<uint64_t>(a->data - b->data));
  }
}

// Completion interrupts: every submission's progress release sets INTR_STATUS bit 0, so its
// MSI-X message follows it; the runtime never writes INTR_ENABLE or INTR_STATUS (the port's
// driver owns them: here the test plays that driver, enabling and acknowledging).
TEST(DirectCompletionInterrupts, ReleasesAskForInterruptsAndInterruptRegistersAreLeftAlone) {
  for (const bool interrupts : {false, true}) {
    SCOPED_TRACE(interrupts ? "completion interrupts" : "polling");
    Expected<std::unique_ptr<Port>> opened_port =
        host::OpenDirectPort({.completion_interrupts = interrupts});
    ASSERT_TRUE(opened_port.ok()) << opened_port.status().ToString();
    Port& port = **opened_port;
    EXPECT_EQ(port.completion_interrupts(), interrupts);
    ASSERT_TRUE(port.WriteRegister(0, gpu::regs::kIntrEnable, gpu::regs::kIntrSemaphore).ok());
    Expected<std::unique_ptr<Runtime>> opened = Runtime::Open(port);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Runtime& rt = **opened;
    EXPECT_EQ(*port.ReadRegister(0, gpu::regs::kIntrEnable),
              interrupts ? gpu::regs::kIntrSemaphore : 0u)
        << "the runtime writes INTR_ENABLE only when it polls";
    Expected<Stream> s = rt.CreateStream(0);
    Expected<DevicePtr> p = rt.Malloc(0, 4096);
    ASSERT_TRUE(s.ok() && p.ok());
    constexpr int kRounds = 3;
    for (int i = 0; i < kRounds; ++i) {
      ASSERT_TRUE(rt.LaunchMemset32(*s, *p, i, 1024).ok());
      ASSERT_TRUE(rt.SynchronizeStream(*s).ok());
      EXPECT_EQ(*port.ReadRegister(0, gpu::regs::kIntrStatus),
                interrupts ? gpu::regs::kIntrSemaphore : 0u);
      // The driver's handler acknowledges.
      ASSERT_TRUE(port.WriteRegister(0, gpu::regs::kIntrStatus, gpu::regs::kIntrMask).ok());
    }
    // One message per acknowledged release, after the semaphore: wait for the last to land.
    auto& host_port = dynamic_cast<host::HostPort&>(port);
    const auto messages = [&] {
      uint64_t n = 0;
      host_port.driver().Run([&](host::HostProxy& proxy, uint64_t) {
        for (const auto& [data, count] : proxy.device(host_port.port_device(0).id).interrupts)
          n += count;
      });
      return n;
    };
    for (int tries = 0; tries < 1000 && messages() < (interrupts ? kRounds : 0); ++tries)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(messages(), interrupts ? kRounds : 0);
  }
}

}  // namespace
}  // namespace dxpu::dxgpu::test
