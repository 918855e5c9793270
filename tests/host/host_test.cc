// host_test.cc - the userspace host proxy through its libdxgpu ports: the direct port (GPU
// models in this process on an ideal link) and the dxpu port (a real dxpu-bridge process on
// loopback UDP). Each test drives a device the way a driver does: BAR0 registers, a GPFIFO
// ring and pushbuffers in pinned host memory, semaphores, MSI-X; and checks what the proxy
// refuses: DMA outside registered memory, a bridge that dies.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bridge-fw/management_client.h"
#include "bridge_process.h"
#include "dxgpu/runtime.h"
#include "gpu/commands.h"
#include "gpu/device_profile.h"
#include "gpu/gpu_registers.h"
#include "host/direct_port.h"
#include "host/host_port.h"
#include "host/proxy_port.h"
#include "link/udp_link.h"
#include "management_keys.h"
#include "sim-world/sim_host.h"
#include "sim-world/sim_port.h"

namespace dxpu::test {
namespace {

namespace regs = gpu::regs;
using dxgpu::ErrorCode;
using dxgpu::HostBuffer;
using dxgpu::Port;

constexpr uint64_t kRingEntries = 16;
constexpr uint64_t kSecond = 1'000'000'000;

// A channel driven by hand: ring at the start of a pinned buffer, then one pushbuffer slot
// per entry, then a semaphore word.
class HandChannel {
 public:
  HandChannel(Port& port, size_t device) : port_(port), device_(device) {
    auto b = port_.AllocHost(kRingEntries * 16 + kRingEntries * 4096 + 64);
    if (!b.ok()) return;
    buf_ = *b;
    ok_ =
        port_.WriteRegister(device_, regs::kGpfifoBaseLo, static_cast<uint32_t>(buf_.iova)).ok() &&
        port_.WriteRegister(device_, regs::kGpfifoBaseHi, static_cast<uint32_t>(buf_.iova >> 32))
            .ok() &&
        port_.WriteRegister(device_, regs::kGpfifoEntries, kRingEntries).ok() &&
        port_.WriteRegister(device_, regs::kControl, regs::kControlEnable).ok();
  }
  ~HandChannel() {
    if (buf_.data != nullptr) (void)port_.FreeHost(buf_);
  }
  bool ok() const { return ok_; }
  uint64_t semaphore_iova() const { return buf_.iova + kRingEntries * (16 + 4096); }
  uint32_t semaphore() const {
    uint32_t v = 0;
    std::memcpy(&v, buf_.data + kRingEntries * (16 + 4096), 4);
    return v;
  }

  // Appends a semaphore release of the next sequence number, submits, rings the doorbell.
  dxgpu::Status Submit(gpu::PushbufferBuilder pb) {
    pb.Semaphore({semaphore_iova(), ++sequence_, 0});
    const std::vector<uint8_t> bytes = pb.bytes();
    const uint32_t slot = put_ % kRingEntries;
    uint8_t* pb_at = buf_.data + kRingEntries * 16 + uint64_t{slot} * 4096;
    std::memcpy(pb_at, bytes.data(), bytes.size());
    const auto entry =
        gpu::EncodeGpfifoEntry({buf_.iova + kRingEntries * 16 + uint64_t{slot} * 4096,
                                static_cast<uint32_t>(bytes.size()), 0});
    std::memcpy(buf_.data + uint64_t{slot} * 16, entry.data(), entry.size());
    ++put_;
    return port_.WriteRegister(device_, regs::kGpPut, put_ % kRingEntries);
  }
  // Waits for the last submission's semaphore.
  dxgpu::Status Wait(uint64_t timeout = 5 * kSecond) {
    const uint32_t want = sequence_;
    return port_.Wait(
        device_, [&] { return semaphore() == want; }, timeout);
  }

 private:
  Port& port_;
  size_t device_;
  HostBuffer buf_;
  bool ok_ = false;
  uint32_t put_ = 0;
  uint32_t sequence_ = 0;
};

dxpu_host_counters Counters(Port& port) {
  auto& hp = dynamic_cast<host::HostPort&>(port);
  dxpu_host_counters c{};
  hp.driver().Run([&](host::HostProxy& proxy, uint64_t) { c = proxy.Counters(); });
  return c;
}

uint64_t Interrupts(Port& port, size_t device, uint32_t vector) {
  auto& hp = dynamic_cast<host::HostPort&>(port);
  uint64_t n = 0;
  hp.driver().Run([&](host::HostProxy& proxy, uint64_t) {
    const auto& m = proxy.device(hp.port_device(device).id).interrupts;
    auto it = m.find(vector);
    n = it == m.end() ? 0 : it->second;
  });
  return n;
}

// Polls `done` (which may call the port, unlike a Wait predicate) until it holds or
// timeout_ns passes on the port's clock.
bool PollUntil(Port& port, size_t device, const std::function<bool()>& done, uint64_t timeout_ns) {
  const uint64_t end = port.Now() + timeout_ns;
  while (!done()) {
    if (port.Now() >= end) return false;
    (void)port.Wait(
        device, [] { return false; }, 1'000'000);
  }
  return true;
}

// The checks every port must pass, on device `device` of `port`.
void ExpectWorkingDevice(Port& port, size_t device) {
  auto id = port.ReadRegister(device, regs::kId);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, regs::kIdValue);
  ASSERT_TRUE(port.WriteRegister(device, regs::kIntrEnable, regs::kIntrSemaphore).ok());
  auto enabled = port.ReadRegister(device, regs::kIntrEnable);
  ASSERT_TRUE(enabled.ok());
  EXPECT_EQ(*enabled, regs::kIntrSemaphore);

  HandChannel ch(port, device);
  ASSERT_TRUE(ch.ok());
  // 1 MiB + 13 bytes from an odd offset, host -> device -> host.
  constexpr uint64_t kBytes = (1u << 20) + 13;
  auto src = port.AllocHost(kBytes + 7);
  auto dst = port.AllocHost(kBytes + 7);
  ASSERT_TRUE(src.ok() && dst.ok());
  for (uint64_t i = 0; i < kBytes + 7; ++i) src->data[i] = static_cast<uint8_t>(i * 131 + 7);
  gpu::PushbufferBuilder pb;
  pb.Copy({gpu::kCopySrcHost, kBytes, src->iova + 3, 0x1000});
  pb.Copy({gpu::kCopyDstHost, kBytes, 0x1000, dst->iova + 5});
  pb.Interrupt(0);
  ASSERT_TRUE(ch.Submit(pb).ok());
  dxgpu::Status s = ch.Wait();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(std::memcmp(src->data + 3, dst->data + 5, kBytes), 0);
  EXPECT_EQ(dst->data[4], 0);
  EXPECT_EQ(dst->data[5 + kBytes], 0);
  // The MSI-X message arrived as an event of vector 0.
  EXPECT_TRUE(PollUntil(
      port, device, [&] { return Interrupts(port, device, 0) >= 1; }, kSecond));
  EXPECT_GE(Counters(port).dma_reads, kBytes / 4096);  // reads of at most MRRS (4 KiB)
  EXPECT_TRUE(port.FreeHost(*src).ok());
  EXPECT_TRUE(port.FreeHost(*dst).ok());
}

// A copy from host memory nobody registered: the host proxy answers UR, the channel stops
// with DMA_UR, and the refusal is counted.
void ExpectDmaOutsideWindowsRefused(Port& port, size_t device) {
  HandChannel ch(port, device);
  ASSERT_TRUE(ch.ok());
  const uint64_t before = Counters(port).dma_refused_reads;
  gpu::PushbufferBuilder pb;
  pb.Copy({gpu::kCopySrcHost, 4096, host::kDmaRangeBase + host::kDmaRangeSize - 8192, 0});
  ASSERT_TRUE(ch.Submit(pb).ok());
  EXPECT_TRUE(PollUntil(
      port, device, [&] { return Counters(port).dma_refused_reads > before; }, 5 * kSecond));
  // The UR reaches the channel, which stops with DMA_UR.
  EXPECT_TRUE(PollUntil(
      port, device,
      [&] {
        auto error = port.ReadRegister(device, regs::kErrorCode);
        return error.ok() && *error == static_cast<uint32_t>(gpu::ChannelError::kDmaUr);
      },
      5 * kSecond));
}

// Peer to peer through the runtime: copies between devices a and b (both ways, odd sizes and
// offsets) land exactly, the bytes around them untouched; a destination beyond the peer's
// memory window and a copy within one device are refused. Returns the port time the largest
// copy took.
uint64_t ExpectPeerCopies(Port& port, size_t a, size_t b) {
  auto opened = dxgpu::Runtime::Open(port);
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (!opened.ok()) return 0;
  dxgpu::Runtime& rt = **opened;
  const uint64_t window = port.device_info(b).memory_window_size;
  EXPECT_GE(window, uint64_t{64} << 20);
  EXPECT_NE(port.device_info(b).memory_window, 0U);
  constexpr uint64_t kMax = (uint64_t{4} << 20) + 1001;
  uint64_t largest_ns = 0;
  for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    auto src = rt.Malloc(from, kMax + 64);
    auto dst = rt.Malloc(to, kMax + 64);
    auto stream = rt.CreateStream(from);
    EXPECT_TRUE(src.ok() && dst.ok() && stream.ok());
    if (!src.ok() || !dst.ok() || !stream.ok()) return 0;
    std::vector<uint8_t> data(kMax + 64);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>((i * 29) + from);
    const std::vector<uint8_t> guard(kMax + 64, 0xee);
    EXPECT_TRUE(rt.MemcpyHtoD(*src, data.data(), data.size()).ok());
    for (const auto& [bytes, src_off, dst_off] : {std::tuple<uint64_t, uint64_t, uint64_t>{1, 0, 0},
                                                  {4095, 3, 1},
                                                  {70001, 7, 33},
                                                  {kMax, 1, 2}}) {
      EXPECT_TRUE(rt.MemcpyHtoD(*dst, guard.data(), guard.size()).ok());
      const uint64_t start = port.Now();
      const dxgpu::Status st = rt.MemcpyPeerAsync(*stream, *dst + dst_off, *src + src_off, bytes);
      EXPECT_TRUE(st.ok()) << st.ToString();
      const dxgpu::Status sync = rt.SynchronizeStream(*stream);
      EXPECT_TRUE(sync.ok()) << sync.ToString();
      if (bytes == kMax) largest_ns = std::max(largest_ns, port.Now() - start);
      std::vector<uint8_t> got(guard.size());
      EXPECT_TRUE(rt.MemcpyDtoH(got.data(), *dst, got.size()).ok());
      std::vector<uint8_t> want = guard;
      std::copy_n(data.begin() + static_cast<ptrdiff_t>(src_off), bytes,
                  want.begin() + static_cast<ptrdiff_t>(dst_off));
      EXPECT_TRUE(got == want) << bytes << " bytes from device " << from << " to " << to;
    }
    EXPECT_EQ(rt.MemcpyPeerAsync(*stream, *src, *src, 4).code(), ErrorCode::kInvalidArgument);
    EXPECT_TRUE(rt.Free(*src).ok() && rt.Free(*dst).ok() && rt.DestroyStream(*stream).ok());
  }
  // Beyond the window (where memory is larger than it): an allocation past its end.
  if (port.device_info(b).memory_bytes <= window) return largest_ns;
  auto below = rt.Malloc(b, window);
  auto beyond = rt.Malloc(b, 4096);
  auto s = rt.CreateStream(a);
  auto src = rt.Malloc(a, 4096);
  EXPECT_TRUE(below.ok() && beyond.ok() && s.ok() && src.ok());
  if (below.ok() && beyond.ok() && s.ok() && src.ok()) {
    EXPECT_GE(beyond->address, window);
    const dxgpu::Status st = rt.MemcpyPeerAsync(*s, *beyond, *src, 4096);
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(st.message().find("memory window"), std::string::npos) << st.ToString();
  }
  return largest_ns;
}

TEST(DirectPort, AttachesEveryProfileWithItsIdsAndMemory) {
  auto port = host::OpenDirectPort({{"dxgpu", "a100-40g", "h100-80g"}});
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  ASSERT_EQ((*port)->device_count(), 3U);
  EXPECT_EQ((*port)->kind(), "direct");
  const char* names[] = {"dxgpu", "a100-40g", "h100-80g"};
  for (size_t i = 0; i < 3; ++i) {
    const gpu::DeviceProfile p = *gpu::FindProfile(names[i]);
    const dxgpu::PortDeviceInfo& info = (*port)->device_info(i);
    EXPECT_EQ(info.profile, names[i]);
    EXPECT_EQ(info.vendor_id, p.vendor_id);
    EXPECT_EQ(info.device_id, p.device_id);
    EXPECT_EQ(info.memory_bytes, p.roofline.memory_bytes) << names[i];
    EXPECT_GT(info.msix_vectors, 0);
    EXPECT_TRUE((*port)->Health(i).ok());
  }
}

TEST(DirectPort, MovesDataBothWaysAndDeliversMsix) {
  auto port = host::OpenDirectPort({});
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  ExpectWorkingDevice(**port, 0);
}

TEST(DirectPort, PeerToPeerBetweenTwoDevices) {
  auto port = host::OpenDirectPort({.profiles = {"dxgpu", "dxgpu"}});
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  ExpectPeerCopies(**port, 0, 1);
}

TEST(DirectPort, RefusesDmaOutsidePinnedMemory) {
  auto port = host::OpenDirectPort({});
  ASSERT_TRUE(port.ok());
  ExpectDmaOutsideWindowsRefused(**port, 0);
}

TEST(DirectPort, RejectsBadArguments) {
  auto port = host::OpenDirectPort({});
  ASSERT_TRUE(port.ok());
  EXPECT_EQ((*port)->ReadRegister(5, 0).status().code(), ErrorCode::kNoDevice);
  EXPECT_EQ((*port)->AllocHost(0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ((*port)->FreeHost(HostBuffer{nullptr, 0x1234, 1, {}}).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(host::OpenDirectPort({{"no-such-gpu"}}).status().code(), ErrorCode::kInvalidArgument);
}

TEST(DirectPort, ServesSeveralThreadsAtOnce) {
  auto port = host::OpenDirectPort({{"dxgpu", "dxgpu"}});
  ASSERT_TRUE(port.ok());
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const size_t dev = t % 2;
      for (int i = 0; i < 200; ++i) {
        auto v = (*port)->ReadRegister(dev, regs::kId);
        if (!v.ok() || *v != regs::kIdValue) return;
      }
      good++;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(good.load(), 4);
}

// ------------------------------------------------------------------ through a real bridge

constexpr uint64_t kNode = 0x51;

struct BridgeSetup {
  std::unique_ptr<BridgeProcess> process;
  uint16_t port = 0;
  std::string mgmt;
};

// A dxpu-bridge process with `profiles`, every device assigned to kNode at bus i + first_bus and
// granted the host's DMA and MSI ranges. Its completion timeout is 2 s, not 50 ms: a register
// read waits in the bridge behind a 4 MiB peer copy's TLPs, which under the sanitizers with both
// cores busy took longer than 50 ms (the read then completed with UR).
BridgeSetup StartBridge(const std::vector<std::string>& profiles, const std::string& link_down,
                        uint16_t first_bus = 1) {
  BridgeSetup s;
  s.port = FreePort(SOCK_DGRAM);
  s.mgmt = FreshSocketPath("host-test-mgmt");
  std::string devices;
  for (size_t i = 0; i < profiles.size(); ++i) {
    devices += (i ? ", " : "") + std::string(R"({"profile": ")") + profiles[i] +
               R"(", "box_bdf": "0)" + std::to_string(i + 1) + R"(:00.0", "memory": "64MiB"})";
  }
  const TestManagementKey key = MakeTestManagementKey();
  const std::string text =
      R"({"node_id": "0xb1", "links": [{"type": "udp", "listen": "127.0.0.1:)" +
      std::to_string(s.port) + R"("}], "management": {"unix": ")" + s.mgmt +
      R"(", "trusted_keys": [")" + key.PublicHex() + R"("]}, "devices": [)" + devices +
      R"(], "limits": {"link_down": ")" + link_down + R"(", "completion_timeout": "2s"}})";
  s.process = std::make_unique<BridgeProcess>(text);
  if (!s.process->Start() || !WaitForPath(s.mgmt)) return s;
  const bridge::ManagementClient manager(link::LinkAddress::Unix(s.mgmt), 1000, 3, key.signer);
  for (size_t i = 0; i < profiles.size(); ++i) {
    const auto dev = static_cast<uint16_t>(i);
    EXPECT_TRUE(manager.Assign(dev, static_cast<uint16_t>((i + first_bus) << 8), kNode).ok());
    for (const host::HostDmaGrant& g : host::HostDmaGrants())
      EXPECT_TRUE(manager.Grant(dev, g.base, g.base, g.size).ok());
  }
  return s;
}

dxfp_session_config SlackSession(uint64_t link_down_ns) {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  c.link_down_ns = link_down_ns;
  return c;
}

dxgpu::Expected<std::unique_ptr<Port>> OpenThroughBridge(const BridgeSetup& b, size_t devices,
                                                         uint64_t link_down_ns) {
  host::ProxyPortOptions o;
  o.node_id = kNode;
  o.session = SlackSession(link_down_ns);
  host::BridgeAttachment a;
  a.name = "udp:127.0.0.1:" + std::to_string(b.port);
  a.link = link::UdpLink::Open("127.0.0.1", 0).link;
  a.peer = *link::LinkAddress::FromIp("127.0.0.1", b.port);
  for (size_t i = 0; i < devices; ++i) a.host_bdfs.push_back(static_cast<uint16_t>((i + 1) << 8));
  o.bridges.push_back(std::move(a));
  return host::OpenProxyPort(std::move(o));
}

TEST(ProxyPort, AttachesDevicesOfARealBridgeAndMovesData) {
  BridgeSetup b = StartBridge({"dxgpu", "a100-40g"}, "2s");
  ASSERT_TRUE(b.process->running());
  auto port = OpenThroughBridge(b, 2, 2 * kSecond);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  ASSERT_EQ((*port)->device_count(), 2U);
  EXPECT_EQ((*port)->kind(), "dxpu");
  EXPECT_EQ((*port)->device_info(1).profile, "a100-40g");
  EXPECT_EQ((*port)->device_info(1).memory_bytes, uint64_t{64} << 20);
  EXPECT_NE((*port)->device_info(0).location.find("udp:127.0.0.1"), std::string::npos);
  ExpectWorkingDevice(**port, 0);
  ExpectWorkingDevice(**port, 1);
  // Peer to peer between two GPUs of one box stays in the box (the bridge's switch).
  ExpectPeerCopies(**port, 0, 1);
}

// One host, two GPU boxes: a session to each, one port with a GPU from each.
TEST(ProxyPort, BorrowsFromTwoBridgesAtOnce) {
  // Each box's GPU at its own bus on this host, so a peer's completions are unambiguous.
  BridgeSetup first = StartBridge({"dxgpu"}, "2s");
  BridgeSetup second = StartBridge({"h100-80g"}, "2s", 2);
  host::ProxyPortOptions o;
  o.node_id = kNode;
  o.session = SlackSession(2 * kSecond);
  for (const BridgeSetup* b : {&first, &second}) {
    host::BridgeAttachment a;
    a.name = "udp:127.0.0.1:" + std::to_string(b->port);
    a.link = link::UdpLink::Open("127.0.0.1", 0).link;
    a.peer = *link::LinkAddress::FromIp("127.0.0.1", b->port);
    a.host_bdfs = {b == &first ? uint16_t{0x0100} : uint16_t{0x0200}};
    o.bridges.push_back(std::move(a));
  }
  auto port = host::OpenProxyPort(std::move(o));
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  ASSERT_EQ((*port)->device_count(), 2U);
  EXPECT_EQ((*port)->device_info(0).profile, "dxgpu");
  EXPECT_EQ((*port)->device_info(1).profile, "h100-80g");
  EXPECT_NE((*port)->device_info(1).location.find(std::to_string(second.port)), std::string::npos);
  ExpectWorkingDevice(**port, 0);
  ExpectWorkingDevice(**port, 1);
  // Peer to peer between boxes: through this host's proxy, which routes like a root complex.
  ExpectPeerCopies(**port, 0, 1);
  // One bridge going away loses its GPU only.
  second.process->Kill();
  EXPECT_TRUE(PollUntil(
      **port, 0, [&] { return (*port)->Health(1).code() == ErrorCode::kDeviceLost; },
      10 * kSecond));
  EXPECT_TRUE((*port)->Health(0).ok());
  ExpectWorkingDevice(**port, 0);
}

TEST(ProxyPort, RefusesDmaOutsidePinnedMemory) {
  BridgeSetup b = StartBridge({"dxgpu"}, "2s");
  auto port = OpenThroughBridge(b, 1, 2 * kSecond);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  ExpectDmaOutsideWindowsRefused(**port, 0);
}

TEST(ProxyPort, ADeviceNotAssignedToThisHostIsNotAttached) {
  BridgeSetup b = StartBridge({"dxgpu"}, "2s");
  auto port = OpenThroughBridge(b, 2, 2 * kSecond);  // bus 2 was never assigned
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().message().find("02:00.0"), std::string::npos) << port.status().ToString();
}

TEST(ProxyPort, NoBridgeListeningIsAClearError) {
  BridgeSetup b;
  b.port = FreePort(SOCK_DGRAM);
  host::ProxyPortOptions o;
  o.node_id = kNode;
  o.session = SlackSession(300'000'000);
  o.connect_timeout_ns = 500'000'000;
  host::BridgeAttachment a;
  a.name = "udp:127.0.0.1:" + std::to_string(b.port);
  a.link = link::UdpLink::Open("127.0.0.1", 0).link;
  a.peer = *link::LinkAddress::FromIp("127.0.0.1", b.port);
  a.host_bdfs = {0x0100};
  o.bridges.push_back(std::move(a));
  auto port = host::OpenProxyPort(std::move(o));
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(port.status().message().find(std::to_string(b.port)), std::string::npos);
}

// The bridge dies mid-workload: within the session's link-down bound the device is lost, a
// waiting call fails with kDeviceLost, and later calls fail at once.
TEST(ProxyPort, ABridgeThatDiesFailsPendingCallsWithinTheBound) {
  BridgeSetup b = StartBridge({"dxgpu"}, "2s");
  constexpr uint64_t kLinkDown = 300'000'000;
  auto port = OpenThroughBridge(b, 1, kLinkDown);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  HandChannel ch(**port, 0);
  ASSERT_TRUE(ch.ok());
  b.process->Kill();
  const auto start = std::chrono::steady_clock::now();
  gpu::PushbufferBuilder pb;
  pb.Memset32({0, 1024, 7});
  (void)ch.Submit(pb);  // posted: may still be queued
  dxgpu::Status s = ch.Wait(10 * kSecond);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), ErrorCode::kDeviceLost) << s.ToString();
  EXPECT_LT(took, std::chrono::nanoseconds(kLinkDown) + std::chrono::seconds(2));
  EXPECT_NE(s.message().find("session went down"), std::string::npos) << s.message();
  auto r = (*port)->ReadRegister(0, regs::kId);
  EXPECT_EQ(r.status().code(), ErrorCode::kDeviceLost);
  EXPECT_EQ((*port)->Health(0).code(), ErrorCode::kDeviceLost);
}

// The bridge process is killed while two threads copy and compute through the runtime: every
// thread's next call fails with kDeviceLost, naming the session, within the session's
// link-down bound (plus scheduling slack); none hangs.
TEST(ProxyPort, KillingTheBridgeMidWorkloadFailsEveryThreadCleanly) {
  BridgeSetup b = StartBridge({"dxgpu"}, "2s");
  constexpr uint64_t kLinkDown = 300'000'000;
  auto port = OpenThroughBridge(b, 1, kLinkDown);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  auto rt = dxgpu::Runtime::Open(std::move(*port));
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  dxgpu::Runtime& r = **rt;
  struct Worker {
    std::thread thread;
    std::atomic<int> rounds{0};
    std::atomic<bool> done{false};  // failure is set
    dxgpu::Status failure;
    std::chrono::steady_clock::time_point failed_at;
  };
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < 2; ++t) {
    workers.push_back(std::make_unique<Worker>());
    Worker* w = workers.back().get();
    w->thread = std::thread([&r, w] {
      constexpr uint64_t kBytes = 256u << 10;
      auto host = r.MallocHost(kBytes);
      auto dev = r.Malloc(0, kBytes);
      auto stream = r.CreateStream(0);
      if (!host.ok() || !dev.ok() || !stream.ok()) {
        w->failure = {ErrorCode::kInternal, "set-up failed"};
        w->done = true;
        return;
      }
      for (;;) {
        dxgpu::Status s = r.MemcpyHtoDAsync(*stream, *dev, *host, kBytes);
        if (s.ok()) s = r.LaunchAxpy(*stream, kBytes / 4, 0.5f, *dev, *dev);
        if (s.ok()) s = r.SynchronizeStream(*stream);
        if (!s.ok()) {
          w->failure = s;
          w->failed_at = std::chrono::steady_clock::now();
          w->done = true;
          return;
        }
        w->rounds++;
      }
    });
  }
  // Let them get going (a worker that fails first ends the wait), then kill the box.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((workers[0]->rounds < 3 || workers[1]->rounds < 3) && !workers[0]->done &&
         !workers[1]->done && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const bool going = !workers[0]->done && !workers[1]->done;
  b.process->Kill();
  const auto killed = std::chrono::steady_clock::now();
  for (auto& w : workers) w->thread.join();
  ASSERT_TRUE(going) << "a worker ended before the kill: " << workers[0]->failure.ToString()
                     << " / " << workers[1]->failure.ToString();
  for (auto& w : workers) {
    EXPECT_EQ(w->failure.code(), ErrorCode::kDeviceLost) << w->failure.ToString();
    EXPECT_NE(w->failure.message().find("session went down"), std::string::npos)
        << w->failure.message();
    EXPECT_LT(w->failed_at - killed, std::chrono::nanoseconds(kLinkDown) + std::chrono::seconds(2));
  }
}

// ------------------------------------------------------------------ in the simulator

TEST(SimulatedPort, NativeAndDxpuBothWork) {
  for (bool dxpu : {false, true}) {
    host::SimPortOptions o;
    o.through_dxpu = dxpu;
    o.profiles = {"dxgpu", "a100-40g"};
    auto port = host::OpenSimulatedPort(o);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    EXPECT_EQ((*port)->kind(), dxpu ? "dxpu-sim" : "native-sim");
    ASSERT_EQ((*port)->device_count(), 2U);
    EXPECT_EQ((*port)->device_info(1).profile, "a100-40g");
    ExpectWorkingDevice(**port, 0);
    ExpectDmaOutsideWindowsRefused(**port, 1);
  }
}

// Peer to peer in the simulator: natively through the root complex (two modelled PCIe links),
// through DxPU inside the box (the same two links, behind the bridge's switch): the fabric is
// not on the way, so the copy costs the same, not what the 100 Gb/s fabric would take.
TEST(SimulatedPort, PeerToPeerStaysInTheBox) {
  uint64_t times[2] = {};
  for (bool dxpu : {false, true}) {
    host::SimPortOptions o;
    o.through_dxpu = dxpu;
    o.profiles = {"dxgpu", "dxgpu"};
    auto port = host::OpenSimulatedPort(o);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    times[dxpu ? 1 : 0] = ExpectPeerCopies(**port, 0, 1);
  }
  const host::SimFabric f;
  const double bytes = (4 << 20) + 1001;
  const double fabric_ns = bytes * 8e9 / static_cast<double>(f.fabric_bandwidth_bps);
  EXPECT_GT(times[0], 0U);
  EXPECT_LT(static_cast<double>(times[1]), 0.75 * fabric_ns) << "native " << times[0];
  EXPECT_LT(static_cast<double>(times[1]), 1.1 * static_cast<double>(times[0]));
}

// The same copies between GPUs in two boxes (SimPortOptions::gpus_per_box): up the source's
// fabric path to the host proxy, which routes them as a root complex does, and down the
// target's; every byte lands where it should, and the largest copy takes at least what the
// 100 Gb/s fabric takes to carry it, not the box's PCIe.
TEST(SimulatedPort, PeerToPeerBetweenBoxesCrossesTheFabric) {
  host::SimPortOptions o;
  o.through_dxpu = true;
  o.profiles = {"dxgpu", "dxgpu"};
  o.gpus_per_box = {1, 1};
  auto port = host::OpenSimulatedPort(o);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  const uint64_t ns = ExpectPeerCopies(**port, 0, 1);
  const host::SimFabric f;
  const double bytes = (4 << 20) + 1001;
  const double fabric_ns = bytes * 8e9 / static_cast<double>(f.fabric_bandwidth_bps);
  EXPECT_GE(static_cast<double>(ns), fabric_ns);
  std::printf("sim: a 4 MiB peer copy between two boxes takes %lu ns\n", ns);
  uint64_t routed = 0;
  uint64_t dropped = 0;
  auto& sim = dynamic_cast<host::SimHost&>(dynamic_cast<host::HostPort&>(**port).driver());
  sim.Run([&](host::HostProxy& proxy, uint64_t) {
    routed = proxy.peer_tlps();
    dropped = proxy.peer_dropped();
  });
  // At least one write per 4 KiB of the largest copy, both ways.
  const auto pages = static_cast<uint64_t>(bytes / 4096);
  EXPECT_GE(routed, 2 * pages);
  EXPECT_EQ(dropped, 0U);
  // Combined by the source's bridge, cut to the target GPU's MPS by the target's: at least two
  // pieces a page.
  ASSERT_EQ(sim.box_count(), 2U);
  EXPECT_GE(sim.box(0)->counters().writes_split, 2 * pages);
  EXPECT_GE(sim.box(1)->counters().writes_split, 2 * pages);
}

// Virtual time of one H2D copy of `bytes` and the round trip of a register read.
struct SimTimes {
  uint64_t copy_ns = 0;
  uint64_t mmio_read_ns = 0;
};

SimTimes MeasureSim(bool dxpu, uint64_t added_latency_ns, uint64_t bytes) {
  host::SimPortOptions o;
  o.through_dxpu = dxpu;
  o.fabric.added_latency_ns = added_latency_ns;
  auto port = host::OpenSimulatedPort(o);
  EXPECT_TRUE(port.ok()) << port.status().ToString();
  if (!port.ok()) return {};
  Port& p = **port;
  SimTimes t;
  uint64_t start = p.Now();
  EXPECT_TRUE(p.ReadRegister(0, regs::kId).ok());
  t.mmio_read_ns = p.Now() - start;
  HandChannel ch(p, 0);
  auto src = p.AllocHost(bytes);
  EXPECT_TRUE(src.ok());
  gpu::PushbufferBuilder pb;
  pb.Copy({gpu::kCopySrcHost, bytes, src->iova, 0});
  start = p.Now();
  EXPECT_TRUE(ch.Submit(pb).ok());
  EXPECT_TRUE(ch.Wait().ok());
  t.copy_ns = p.Now() - start;
  return t;
}

// The simulator's times follow the modelled links: a register read costs a round trip, a
// large copy runs near the link's bandwidth, and DxPU adds what the fabric adds.
TEST(SimulatedPort, TimesFollowTheModelledLinks) {
  constexpr uint64_t kBytes = 16u << 20;
  const host::SimFabric f;
  const SimTimes native = MeasureSim(false, 0, kBytes);
  const SimTimes dxpu1 = MeasureSim(true, 1000, kBytes);
  const SimTimes dxpu5 = MeasureSim(true, 5000, kBytes);
  // A register read: at least one round trip on the link, and not much more.
  EXPECT_GE(native.mmio_read_ns, 2 * f.pcie_latency_ns);
  EXPECT_LT(native.mmio_read_ns, 2 * f.pcie_latency_ns + 1000);
  const uint64_t dxpu_rtt = 2 * (2 * f.pcie_latency_ns + 1000);
  EXPECT_GE(dxpu1.mmio_read_ns, dxpu_rtt);
  EXPECT_LT(dxpu1.mmio_read_ns, dxpu_rtt + 2000);
  EXPECT_GE(dxpu5.mmio_read_ns, dxpu1.mmio_read_ns + 8000);
  // The native copy is bounded by the PCIe link: within [1x, 1.5x] of bytes / bandwidth.
  const double pcie_ns =
      static_cast<double>(kBytes) * 8e9 / static_cast<double>(f.pcie_bandwidth_bps);
  EXPECT_GE(static_cast<double>(native.copy_ns), pcie_ns);
  EXPECT_LT(static_cast<double>(native.copy_ns), 1.5 * pcie_ns);
  // Through DxPU the fabric (100 Gb/s) is the bound, and more latency never helps.
  const double fabric_ns =
      static_cast<double>(kBytes) * 8e9 / static_cast<double>(f.fabric_bandwidth_bps);
  EXPECT_GE(static_cast<double>(dxpu1.copy_ns), fabric_ns);
  EXPECT_GE(dxpu5.copy_ns, dxpu1.copy_ns);
  std::printf(
      "sim: mmio read native %lu ns, dxpu(1us) %lu ns, dxpu(5us) %lu ns; 16 MiB H2D "
      "native %lu ns, dxpu(1us) %lu ns, dxpu(5us) %lu ns\n",
      native.mmio_read_ns, dxpu1.mmio_read_ns, dxpu5.mmio_read_ns, native.copy_ns, dxpu1.copy_ns,
      dxpu5.copy_ns);
}

// LaunchTimed (trace replay) in the simulator, native and through DxPU: the kernel adds exactly
// its ns to the device's time and to the port's virtual time. Port time across launch + sync is
// ns + fixed costs (doorbell, GPFIFO and pushbuffer reads, the progress write, none depending on
// ns), so it exceeds a TIMED 0's by exactly ns. Events around it: with a kernel queued ahead of
// the first event, the later entries' pushbuffers arrive while it runs (docs/dxgpu.md,
// "Fetching ahead") and the elapsed time is exactly ns; without it, the TIMED entry may start
// after its pushbuffer's fetch, which shows as well (ns + that latency). 60 s is accepted (with
// a sync timeout above it), beyond is kInvalidArgument with nothing submitted.
TEST(SimulatedPort, TimedKernelTakesExactlyItsTime) {
  constexpr uint64_t kNs = 123456;
  constexpr uint64_t kMax = 60'000'000'000;
  for (bool dxpu : {false, true}) {
    SCOPED_TRACE(dxpu ? "dxpu" : "native");
    host::SimPortOptions o;
    o.through_dxpu = dxpu;
    auto port = host::OpenSimulatedPort(o);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    Port& p = **port;
    dxgpu::RuntimeOptions ro;
    ro.sync_timeout_ns = kMax + 10'000'000'000;  // one wait lasts the 60 s kernel
    auto opened = dxgpu::Runtime::Open(p, ro);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    dxgpu::Runtime& rt = **opened;
    auto s = rt.CreateStream(0);
    auto e0 = rt.CreateEvent();
    auto e1 = rt.CreateEvent();
    ASSERT_TRUE(s.ok() && e0.ok() && e1.ok());
    const auto timed = [&](uint64_t ns) {
      const uint64_t start = p.Now();
      EXPECT_TRUE(rt.LaunchTimed(*s, ns).ok());
      EXPECT_TRUE(rt.SynchronizeStream(*s).ok());
      return p.Now() - start;
    };
    rt.ResetStats();
    const uint64_t fixed = timed(0);
    const uint64_t t = timed(kNs);
    EXPECT_GE(t, kNs);
    EXPECT_EQ(t, fixed + kNs) << "fixed costs " << fixed;
    const dxgpu::Stats st = rt.GetStats();
    EXPECT_EQ(st.launch.calls, 2U);
    EXPECT_EQ(st.submissions, 2U);

    ASSERT_TRUE(rt.RecordEvent(*e0, *s).ok());
    ASSERT_TRUE(rt.LaunchTimed(*s, kNs).ok());
    ASSERT_TRUE(rt.RecordEvent(*e1, *s).ok());
    ASSERT_TRUE(rt.SynchronizeEvent(*e1).ok());
    EXPECT_GE(rt.EventElapsedNs(*e0, *e1).value(), kNs) << "no kernel ahead";
    ASSERT_TRUE(rt.LaunchTimed(*s, 100'000).ok());  // the fetches of what follows hide behind it
    ASSERT_TRUE(rt.RecordEvent(*e0, *s).ok());
    ASSERT_TRUE(rt.LaunchTimed(*s, kNs).ok());
    ASSERT_TRUE(rt.RecordEvent(*e1, *s).ok());
    ASSERT_TRUE(rt.SynchronizeEvent(*e1).ok());
    EXPECT_EQ(rt.EventElapsedNs(*e0, *e1).value(), kNs);

    EXPECT_EQ(timed(kMax), fixed + kMax);
    const uint64_t submissions = rt.GetStats().submissions;
    const uint64_t now = p.Now();
    const dxgpu::Status too_big = rt.LaunchTimed(*s, kMax + 1);
    EXPECT_EQ(too_big.code(), ErrorCode::kInvalidArgument) << too_big.ToString();
    EXPECT_EQ(rt.GetStats().submissions, submissions) << "nothing submitted";
    EXPECT_EQ(p.Now(), now);
    EXPECT_TRUE(rt.SynchronizeStream(*s).ok());
  }
}

}  // namespace
}  // namespace dxpu::test
