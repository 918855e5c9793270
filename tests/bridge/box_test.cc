// box_test.cc - the GPU box end to end: the bridge, dxgpu models behind it and test hosts,
// over in-memory links and in the simulator's network (with loss and reordering). Hosts
// enumerate and size BARs, run kernels checked against the CPU, DMA both ways, get MSI-X;
// non-owners are refused, a hung device times out, a released device is reset and scrubbed.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "box_world.h"
#include "bridge-fw/management.h"
#include "core/dxpu_mgmt.h"
#include "gpu/device_profile.h"
#include "gpu/gpu_registers.h"
#include "gpu_driver.h"
#include "manager/bridge_steps.h"
#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

constexpr uint64_t kNodeA = 0xa0a0;
constexpr uint64_t kNodeB = 0xb0b0;
constexpr uint16_t kHostBdf = 0x0100;     // 01:00.0 in each host's domain
constexpr uint64_t kSrc = 0x1'0000'0000;  // host buffers the device is granted
constexpr uint64_t kDst = 0x2'0000'0000;
constexpr uint64_t kBufBytes = (64ULL << 20) + 8192;

bridge::BridgeBoxConfig BoxConfig(size_t devices) {
  bridge::BridgeBoxConfig c;
  c.node_id = 0xb0c5;
  c.epoch = 77;
  for (size_t i = 0; i < devices; ++i) {
    bridge::BoxDeviceConfig d;
    d.profile = *gpu::FindProfile("dxgpu");
    d.box_bdf = static_cast<uint16_t>(0x0100 + (i << 8));
    d.memory_bytes = 256ULL << 20;
    c.devices.push_back(d);
  }
  c.completion_timeout_ns = 5'000'000;
  c.max_pending_per_host = 8;  // small, so that the quota test reaches it
  c.tag_quarantine_ns = 10'000'000;
  return c;
}

sim::PathConfig LossyPath() {
  sim::PathConfig p;
  p.latency = 5 * sim::kMicrosecond;
  p.bandwidth_bps = 25'000'000'000ULL;
  p.loss = 0.01;
  p.reorder = 0.01;
  return p;
}

class BoxTest : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    const bool sim = GetParam() == Transport::kSimulator;
    world_ = std::make_unique<BoxWorld>(BoxConfig(2), GetParam(), test_seed(),
                                        sim ? LossyPath() : sim::PathConfig{});
  }

  // A host holding device d at kHostBdf, brought up; nullptr on failure (with a test failure).
  GpuDriver* Tenant(uint64_t node, bridge::DeviceIndex d) {
    TestHost& h = world_->AddHost(node);
    EXPECT_TRUE(world_->Connect(h));
    EXPECT_EQ(world_->box().Assign(d, node, kHostBdf), bridge::ManageResult::kOk);
    drivers_.push_back(std::make_unique<GpuDriver>(*world_, h, kHostBdf));
    const std::string err = drivers_.back()->BringUp(d);
    EXPECT_EQ(err, "");
    if (!err.empty()) return nullptr;
    h.AddMemory(kSrc, kBufBytes);
    h.AddMemory(kDst, kBufBytes);
    EXPECT_EQ(world_->box().GrantDma(d, {kSrc, kSrc, kBufBytes}), bridge::ManageResult::kOk);
    EXPECT_EQ(world_->box().GrantDma(d, {kDst, kDst, kBufBytes}), bridge::ManageResult::kOk);
    return drivers_.back().get();
  }

  std::unique_ptr<BoxWorld> world_;
  std::vector<std::unique_ptr<GpuDriver>> drivers_;
};

std::vector<float> RandomFloats(std::mt19937_64& rng, size_t n) {
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

void Put(TestHost& h, uint64_t addr, const void* data, size_t n) {
  std::span<uint8_t> m = h.Memory(addr, n);
  ASSERT_EQ(m.size(), n);
  std::memcpy(m.data(), data, n);
}

std::vector<float> GetFloats(TestHost& h, uint64_t addr, size_t n) {
  std::vector<float> v(n);
  std::span<uint8_t> m = h.Memory(addr, n * 4);
  if (m.size() == n * 4) std::memcpy(v.data(), m.data(), n * 4);
  return v;
}

TEST_P(BoxTest, HostEnumeratesAndSizesBars) {
  TestHost& h = world_->AddHost(kNodeA);
  ASSERT_TRUE(world_->Connect(h));
  ASSERT_EQ(world_->box().Assign(0, kNodeA, kHostBdf), bridge::ManageResult::kOk);
  const auto id = world_->CfgRead(h, kHostBdf, 0x00);
  ASSERT_TRUE(id.has_value());
  const gpu::DeviceProfile p = *gpu::FindProfile("dxgpu");
  EXPECT_EQ(*id, p.vendor_id | (uint32_t{p.device_id} << 16));
  GpuDriver drv(*world_, h, kHostBdf);
  ASSERT_EQ(drv.BringUp(0), "");
  for (const gpu::BarSpec& b : p.bars)
    EXPECT_EQ(drv.bar_sizes()[b.index], b.size) << "BAR" << +b.index;
  // The host's addresses read back; the device's real BAR stays where the box put it.
  EXPECT_EQ(world_->CfgRead(h, kHostBdf, 0x10).value_or(0) & ~0xfU, drv.layout().bar0);
  const auto box_bar0 = world_->box().device(0).config().bar(0);
  ASSERT_TRUE(box_bar0.has_value());
  EXPECT_NE(box_bar0->address, drv.layout().bar0);
  // MMIO through the window reaches BAR0: the ID register, and a register written back.
  EXPECT_EQ(drv.Read(gpu::regs::kId), gpu::regs::kIdValue);
  EXPECT_EQ(drv.Read(gpu::regs::kGpfifoEntries), 64U);
  // The session's frames went through the data plane's framing when it has one (the RTL port),
  // and its counters are the port's.
  const std::vector<bridge::HostStatus> hosts = world_->box().Hosts();
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0].framed, world_->plane_frames());
  EXPECT_GT(hosts[0].session.frames_tx, 0u);
  EXPECT_GT(hosts[0].session.frames_rx, 0u);
  EXPECT_GT(hosts[0].session.tlps_delivered, 0u);
  EXPECT_EQ(hosts[0].session.bad_crc + hosts[0].session.gap + hosts[0].session.bad_ack, 0u);
}

// A host re-placing its devices (after a reconnect, or attaching them again in another order)
// puts device 0's BARs where device 1's were: its latest placement is its address map, so
// device 0's windows are installed and device 1's stale ones dropped; MMIO there reaches
// device 0, not device 1.
TEST_P(BoxTest, ReplacingABarOverAnotherDevicesStaleOneGoesToTheNewDevice) {
  TestHost& h = world_->AddHost(kNodeA);
  ASSERT_TRUE(world_->Connect(h));
  constexpr uint16_t kOtherBdf = 0x0200;
  ASSERT_EQ(world_->box().Assign(0, kNodeA, kHostBdf), bridge::ManageResult::kOk);
  ASSERT_EQ(world_->box().Assign(1, kNodeA, kOtherBdf), bridge::ManageResult::kOk);
  GpuDriver first(*world_, h, kOtherBdf);  // device 1 at the default layout
  ASSERT_EQ(first.BringUp(1), "");
  GpuDriver second(*world_, h, kHostBdf);  // device 0 at the same addresses
  ASSERT_EQ(second.BringUp(0), "");
  const uint64_t reads0 = world_->box().device(0).counters().mmio_reads;
  const uint64_t reads1 = world_->box().device(1).counters().mmio_reads;
  EXPECT_EQ(second.Read(gpu::regs::kId), gpu::regs::kIdValue);
  EXPECT_EQ(world_->box().device(0).counters().mmio_reads, reads0 + 1) << "device 0 answered";
  EXPECT_EQ(world_->box().device(1).counters().mmio_reads, reads1) << "not device 1";
}

TEST_P(BoxTest, KernelsMatchTheCpu) {
  GpuDriver* drv = Tenant(kNodeA, 0);
  ASSERT_NE(drv, nullptr);
  TestHost& h = world_->host(0);
  std::mt19937_64 rng(test_seed());
  constexpr uint32_t kN = 4096;
  constexpr uint64_t kVec = uint64_t{kN} * 4;  // bytes of one vector
  const std::vector<float> x = RandomFloats(rng, kN);
  const std::vector<float> y = RandomFloats(rng, kN);
  Put(h, kSrc, x.data(), kVec);
  Put(h, kSrc + kVec, y.data(), kVec);
  constexpr uint64_t kX = 0, kY = kVec, kOut = 2 * kVec;
  const float a = 1.5F;
  Pushbuffer pb;
  pb.Copy(true, false, 2 * kVec, kSrc, kX).Axpy(kN, a, kX, kY).ReduceSum(kN, kY, kOut);
  pb.Copy(false, true, kVec + 4, kY, kDst);
  ASSERT_TRUE(drv->Run(pb));
  const std::vector<float> got = GetFloats(h, kDst, kN + 1);
  double sum = 0;
  for (uint32_t i = 0; i < kN; ++i) {
    const float want = a * x[i] + y[i];
    ASSERT_FLOAT_EQ(got[i], want) << i;
    sum += want;
  }
  EXPECT_FLOAT_EQ(got[kN], static_cast<float>(sum));

  // GEMM 33x17 * 17x29 (odd sizes), alpha and beta, then memset.
  constexpr size_t kM = 33, kK = 17, kP = 29;
  const std::vector<float> A = RandomFloats(rng, kM * kK);
  const std::vector<float> B = RandomFloats(rng, kK * kP);
  const std::vector<float> C = RandomFloats(rng, kM * kP);
  Put(h, kSrc, A.data(), A.size() * 4);
  Put(h, kSrc + 0x10000, B.data(), B.size() * 4);
  Put(h, kSrc + 0x20000, C.data(), C.size() * 4);
  Pushbuffer g;
  g.Copy(true, false, 0x30000, kSrc, 0x100000)
      .Gemm(static_cast<uint32_t>(kM), static_cast<uint32_t>(kP), static_cast<uint32_t>(kK), 0.5F,
            2.0F, 0x100000, 0x110000, 0x120000)
      .Copy(false, true, C.size() * 4, 0x120000, kDst)
      .Memset32(0x120000, 7, 0xdeadbeef)
      .Copy(false, true, 32, 0x120000, kDst + 0x10000);
  ASSERT_TRUE(drv->Run(g));
  const std::vector<float> c = GetFloats(h, kDst, C.size());
  for (size_t i = 0; i < kM; ++i) {
    for (size_t j = 0; j < kP; ++j) {
      double acc = 0;
      for (size_t k = 0; k < kK; ++k) acc += double{A[i * kK + k]} * B[k * kP + j];
      const double want = 0.5 * acc + 2.0 * C[i * kP + j];
      ASSERT_NEAR(c[i * kP + j], want, 1e-4) << i << "," << j;
    }
  }
  std::span<uint8_t> ms = h.Memory(kDst + 0x10000, 32);
  for (int i = 0; i < 7; ++i) {
    uint32_t v = 0;
    std::memcpy(&v, ms.data() + size_t{4} * i, 4);
    EXPECT_EQ(v, 0xdeadbeefU);
  }
  uint32_t beyond = 0;
  std::memcpy(&beyond, ms.data() + 28, 4);
  EXPECT_NE(beyond, 0xdeadbeefU);  // exactly 7 elements were set
}

TEST_P(BoxTest, DmaBothWaysAtEverySize) {
  GpuDriver* drv = Tenant(kNodeA, 0);
  ASSERT_NE(drv, nullptr);
  TestHost& h = world_->host(0);
  std::mt19937_64 rng(test_seed());
  std::vector<uint64_t> sizes = {1,   3,   4,    5,    63,   64,    65,
                                 255, 257, 4095, 4096, 4097, 65537, (1 << 20) + 13};
  // 64 MiB too over memory links; not through the RTL port (DXPU_TEST_DATAPATH=rtl), which
  // simulates every byte of every frame: a 1 MiB copy already spans hundreds of frames.
  if (GetParam() == Transport::kMemoryLink && !world_->plane_frames()) sizes.push_back(64ULL << 20);
  // The host completes at the device's MPS, then as a host proxy does over the fabric: up to
  // 4 KiB per completion, which the bridge splits to the device's MPS at RCB boundaries (the
  // device checks each piece's Byte Count and Lower Address against its read).
  for (const uint32_t payload : {256U, 4096U}) {
    h.completion_payload = payload;
    const uint64_t split_before = world_->box().counters().completions_split;
    const gpu::GpuCounters device_before = world_->box().device(0).counters();
    for (uint64_t size : sizes) {
      // Unaligned and 4 KiB-crossing: host source at an odd offset, device at another.
      const uint64_t src = kSrc + 4093 - (size % 7);
      const uint64_t dev = 0x1000 - 3 + (size % 5);
      const uint64_t dst = kDst + 4096 + 2 + (size % 11);
      std::vector<uint8_t> data(size);
      for (auto& b : data) b = static_cast<uint8_t>(rng());
      Put(h, src, data.data(), size);
      // Guard bytes on both sides of the destination must survive.
      constexpr uint64_t kGuard = 64;
      std::span<uint8_t> guarded = h.Memory(dst - kGuard, size + 2 * kGuard);
      ASSERT_EQ(guarded.size(), size + 2 * kGuard);
      std::memset(guarded.data(), 0xee, guarded.size());
      std::span<uint8_t> out = h.Memory(dst, size);
      Pushbuffer pb;
      pb.Copy(true, false, size, src, dev).Copy(false, true, size, dev, dst);
      ASSERT_TRUE(drv->Run(pb, 20'000'000'000ULL)) << size;
      ASSERT_EQ(std::memcmp(out.data(), data.data(), size), 0) << "size " << size;
      for (uint64_t i = 0; i < kGuard; ++i) {
        ASSERT_EQ(guarded[i], 0xee) << "size " << size << ": byte before dst - " << kGuard - i;
        ASSERT_EQ(guarded[kGuard + size + i], 0xee) << "size " << size << ": byte after, +" << i;
      }
    }
    // Pieces of completions above the device's MPS (as programmed: the driver may leave the
    // power-on 128): none when the host already completes within it, else at least one per MPS
    // of the 1 MiB + 13 copy alone.
    // The device's 256-byte writes to the host travel combined (up to what a frame carries).
    EXPECT_GT(world_->box().counters().writes_combined, 0U);
    const uint64_t split = world_->box().counters().completions_split - split_before;
    const uint32_t mps = world_->box().device(0).config().max_payload_size();
    if (payload <= mps) {
      EXPECT_EQ(split, 0U);
    } else {
      EXPECT_GE(split, (uint64_t{1} << 20) / mps);
    }
    // The device took every piece (in one step or one by one), and refused none.
    const gpu::GpuCounters& device = world_->box().device(0).counters();
    EXPECT_GE(device.tlps_in - device_before.tlps_in, split);
    EXPECT_EQ(device.malformed, device_before.malformed);
    EXPECT_EQ(device.unexpected_completions, device_before.unexpected_completions);
  }
}

TEST_P(BoxTest, MsixInterruptReachesTheHost) {
  GpuDriver* drv = Tenant(kNodeA, 0);
  ASSERT_NE(drv, nullptr);
  TestHost& h = world_->host(0);
  const gpu::DeviceProfile p = *gpu::FindProfile("dxgpu");
  const uint64_t table = drv->layout().bar0 + p.msix.table_offset;
  // Vector 2: address and data, unmasked; then MSI-X Enable in the capability.
  ASSERT_TRUE(h.MemWrite32(table + 32, 0xfee0'1000));
  ASSERT_TRUE(h.MemWrite32(table + 36, 0));
  ASSERT_TRUE(h.MemWrite32(table + 40, 0x4242));
  ASSERT_TRUE(h.MemWrite32(table + 44, 0));
  const uint16_t cap =
      *world_->box().device(0).config().capability_offset(gpu::CapabilityId::kMsix);
  ASSERT_TRUE(world_->CfgWrite(h, kHostBdf, cap, 0x8000'0000, 0x8));
  Pushbuffer pb;
  pb.Interrupt(2);
  ASSERT_TRUE(drv->Run(pb));
  ASSERT_TRUE(world_->RunUntil([&] { return !h.interrupts().empty(); }, 100'000'000));
  EXPECT_EQ(h.interrupts()[0].address, 0xfee0'1000U);
  EXPECT_EQ(h.interrupts()[0].data, 0x4242U);
}

TEST_P(BoxTest, NonOwnerIsRefused) {
  GpuDriver* a = Tenant(kNodeA, 0);
  ASSERT_NE(a, nullptr);
  TestHost& b = world_->AddHost(kNodeB);
  ASSERT_TRUE(world_->Connect(b));
  const uint64_t refused_before = world_->box().datapath_counters().ur_sent;
  // B names A's device by the BDF A uses, and A's BAR address: both unknown to B.
  auto cfg = world_->Wait(b, b.CfgRead(kHostBdf, 0x00));
  ASSERT_TRUE(cfg.has_value());
  EXPECT_EQ(cfg->status, DXPU_TLP_CPL_UR);
  auto mmio = world_->Wait(b, b.MemRead(a->layout().bar0, 4));
  ASSERT_TRUE(mmio.has_value());
  EXPECT_EQ(mmio->status, DXPU_TLP_CPL_UR);
  // A posted write from B is dropped and counted, and A's register is unchanged.
  const uint64_t dropped = world_->box().datapath_counters().dropped;
  ASSERT_TRUE(b.MemWrite32(a->layout().bar0 + gpu::regs::kGpfifoEntries, 8));
  world_->RunFor(1'000'000);
  EXPECT_GT(world_->box().datapath_counters().dropped, dropped);
  EXPECT_EQ(a->Read(gpu::regs::kGpfifoEntries), 64U);
  EXPECT_GE(world_->box().datapath_counters().ur_sent, refused_before + 2);
  // Assigning A's device to B is refused while A holds it.
  EXPECT_EQ(world_->box().Assign(0, kNodeB, kHostBdf), bridge::ManageResult::kDeviceBusy);
}

TEST_P(BoxTest, ReleaseResetsAndScrubsForTheNextTenant) {
  GpuDriver* a = Tenant(kNodeA, 0);
  ASSERT_NE(a, nullptr);
  TestHost& ha = world_->host(0);
  std::vector<uint8_t> secret(8192, 0x5a);
  Put(ha, kSrc, secret.data(), secret.size());
  Pushbuffer pb;
  pb.Copy(true, false, secret.size(), kSrc, 0x4000);
  ASSERT_TRUE(a->Run(pb));
  // A reads its secret back through the memory BAR.
  const uint64_t mem_bar = a->layout().bar_mem;
  auto seen = world_->MemRead(ha, mem_bar + 0x4000, 64);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ((*seen)[0], 0x5a);

  ASSERT_EQ(world_->box().Release(0, world_->now()), bridge::ManageResult::kOk);
  const auto status = world_->box().Devices();
  EXPECT_EQ(status[0].state, bridge::DeviceState::kFree);
  EXPECT_EQ(status[0].resets, 1U);
  EXPECT_GE(status[0].scrubbed_bytes, 256ULL << 20);
  // A lost access at once.
  auto after = world_->Wait(ha, ha.MemRead(mem_bar + 0x4000, 4));
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->status, DXPU_TLP_CPL_UR);

  // B gets the device, brings it up from power-on state, and reads zeros where A's data was.
  GpuDriver* b = Tenant(kNodeB, 0);
  ASSERT_NE(b, nullptr);
  TestHost& hb = world_->host(1);
  auto zeros = world_->MemRead(hb, b->layout().bar_mem + 0x4000, 4096);
  ASSERT_TRUE(zeros.has_value());
  EXPECT_EQ(std::count(zeros->begin(), zeros->end(), 0), 4096);
  // And through a copy engine too.
  Pushbuffer back;
  back.Copy(false, true, secret.size(), 0x4000, kDst);
  std::memset(hb.Memory(kDst, secret.size()).data(), 0xff, secret.size());
  ASSERT_TRUE(b->Run(back));
  std::span<uint8_t> got = hb.Memory(kDst, secret.size());
  EXPECT_EQ(std::count(got.begin(), got.end(), 0), static_cast<long>(secret.size()));
}

// Whether the pattern's first 64 bytes occur anywhere in device d's memory.
bool MemoryHolds(bridge::BridgeBox& box, bridge::DeviceIndex d, const std::vector<uint8_t>& pattern,
                 uint64_t memory_bytes) {
  const auto needle = std::span<const uint8_t>(pattern).first(64);
  std::vector<uint8_t> chunk((1 << 20) + needle.size());
  for (uint64_t at = 0; at < memory_bytes; at += 1 << 20) {
    const uint64_t n = std::min<uint64_t>(chunk.size(), memory_bytes - at);
    if (!box.device(d).ReadMemory(at, std::span<uint8_t>(chunk.data(), n))) return true;
    if (std::search(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n), needle.begin(),
                    needle.end()) != chunk.begin() + static_cast<std::ptrdiff_t>(n))
      return true;
  }
  return false;
}

// Issue 32 item 4: tenant A writes a pattern into its GPU, and its session is lost without a
// RELEASE. The GPU is quarantined: A's own return finds it as it was, but no one else gets it
// (ASSIGN refused, STATUS says "quarantined") until the manager's assign step has reset and
// scrubbed it; tenant B then finds none of A's pattern, through its BAR or anywhere in the
// GPU's memory.
TEST_P(BoxTest, ALostSessionsGpuIsQuarantinedUntilScrubbedForTheNextTenant) {
  GpuDriver* a = Tenant(kNodeA, 0);
  ASSERT_NE(a, nullptr);
  bridge::BridgeBox& box = world_->box();
  const uint64_t memory_bytes = box.Devices()[0].memory_bytes;
  std::vector<uint8_t> secret(8192);
  for (size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<uint8_t>(0xa5 ^ (i * 13));
  Put(world_->host(0), kSrc, secret.data(), secret.size());
  Pushbuffer pb;
  pb.Copy(true, false, secret.size(), kSrc, 0x4000);
  ASSERT_TRUE(a->Run(pb));
  ASSERT_TRUE(MemoryHolds(box, 0, secret, memory_bytes)) << "the pattern never reached the GPU";

  const auto lose_session = [&](TestHost& h) {
    h.endpoint().Close(world_->now(), DXFP_CLOSE_SHUTDOWN);
    return world_->RunUntil([&] { return box.Hosts().empty(); }, 100'000'000);
  };
  ASSERT_TRUE(lose_session(world_->host(0)));
  EXPECT_EQ(box.Devices()[0].state, bridge::DeviceState::kQuarantined);
  EXPECT_EQ(box.Devices()[0].owner_node, kNodeA);
  EXPECT_EQ(box.counters().quarantined, 1U);

  // A comes back (a new session of the same node): its GPU, as it left it.
  TestHost& again = world_->AddHost(kNodeA);
  ASSERT_TRUE(world_->Connect(again));
  EXPECT_EQ(box.Devices()[0].state, bridge::DeviceState::kAssigned);
  auto mine = world_->MemRead(again, a->layout().bar_mem + 0x4000, 64);
  ASSERT_TRUE(mine.has_value());
  EXPECT_TRUE(std::equal(mine->begin(), mine->end(), secret.begin()));
  ASSERT_TRUE(lose_session(again));
  ASSERT_EQ(box.Devices()[0].state, bridge::DeviceState::kQuarantined);

  // No one else gets it as it is.
  EXPECT_EQ(box.Assign(0, kNodeB, kHostBdf), bridge::ManageResult::kQuarantined);
  bridge::ManagementCounters counters;
  uint32_t request_id = 0;
  const manager::ManagementExchange exchange = [&](dxpu_mgmt_msg m) {
    m.request_id = ++request_id;
    std::vector<uint8_t> req(256);
    size_t len = 0;
    EXPECT_EQ(dxpu_mgmt_encode(&m, req.data(), req.size(), &len), DXPU_MGMT_ERR_OK);
    req.resize(len);
    bridge::ManagementReply reply;
    reply.bytes = bridge::HandleManagement(box, req, world_->now(), &counters);
    EXPECT_EQ(dxpu_mgmt_decode(reply.bytes.data(), reply.bytes.size(), &reply.msg),
              DXPU_MGMT_ERR_OK);
    return reply;
  };
  dxpu_mgmt_msg status_request{};
  status_request.type = DXPU_MGMT_STATUS;
  const bridge::ManagementReply status = exchange(status_request);
  dxpu_mgmt_device_entry entry{};
  ASSERT_TRUE(dxpu_mgmt_status_entry(&status.msg.body.status_report, 0, &entry));
  EXPECT_EQ(entry.state, DXPU_MGMT_DEV_QUARANTINED);
  EXPECT_EQ(entry.owner, kNodeA);
  EXPECT_STREQ(dxpu_mgmt_device_state_name(entry.state), "quarantined");

  // The manager lends it to B: its assign step meets the quarantine, releases (resets and
  // scrubs) the GPU, then assigns it.
  TestHost& hb = world_->AddHost(kNodeB);
  ASSERT_TRUE(world_->Connect(hb));
  manager::Action lend;
  lend.kind = manager::ActionKind::kBridgeAssign;
  lend.box.id = "box";
  lend.device = 0;
  lend.host.id = "tenant-b";
  lend.host.node_id = kNodeB;
  lend.host_bdf = kHostBdf;
  const manager::ActionResult done = manager::RunBridgeAction(lend, exchange);
  ASSERT_EQ(done.outcome, manager::ActionOutcome::kDone) << done.error;
  EXPECT_EQ(box.Devices()[0].state, bridge::DeviceState::kAssigned);
  EXPECT_EQ(box.Devices()[0].owner_node, kNodeB);
  EXPECT_EQ(box.Devices()[0].resets, 1U);

  // B reads where A's pattern was, and the whole GPU holds none of it.
  drivers_.push_back(std::make_unique<GpuDriver>(*world_, hb, kHostBdf));
  ASSERT_EQ(drivers_.back()->BringUp(0), "");
  auto seen = world_->MemRead(hb, drivers_.back()->layout().bar_mem + 0x4000, 4096);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(std::count(seen->begin(), seen->end(), 0), 4096);
  EXPECT_FALSE(MemoryHolds(box, 0, secret, memory_bytes));
}

TEST_P(BoxTest, HungDeviceTimesOutAndItsLateCompletionIsDropped) {
  GpuDriver* a = Tenant(kNodeA, 0);
  ASSERT_NE(a, nullptr);
  TestHost& h = world_->host(0);
  world_->box().StallDevice(0, true);
  const uint64_t t0 = world_->now();
  auto r = world_->Wait(h, h.MemRead(a->layout().bar0, 4));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, DXPU_TLP_CPL_UR);
  EXPECT_GE(world_->now() - t0, 5'000'000U);  // not before the completion timeout
  const auto before = world_->box().datapath_counters();
  EXPECT_GE(before.refused[static_cast<size_t>(bridge::Refusal::kCompletionTimeout)], 1U);
  world_->box().StallDevice(0, false);
  world_->RunFor(1'000'000);
  const auto after = world_->box().datapath_counters();
  EXPECT_EQ(after.refused[static_cast<size_t>(bridge::Refusal::kUnexpectedCpl)],
            before.refused[static_cast<size_t>(bridge::Refusal::kUnexpectedCpl)] + 1);
  EXPECT_EQ(h.unexpected_cpl, 0U);  // the host never saw the late one
  // The device works again.
  EXPECT_EQ(a->Read(gpu::regs::kId), gpu::regs::kIdValue);
}

TEST_P(BoxTest, VanishedHostLeavesTheOtherUnharmed) {
  GpuDriver* a = Tenant(kNodeA, 0);
  GpuDriver* b = Tenant(kNodeB, 1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  // A starts a large device->host copy, then its session dies (the host stops answering).
  Pushbuffer big;
  big.Copy(false, true, 8 << 20, 0, kDst);
  ASSERT_TRUE(a->Submit(big));
  world_->RunFor(200'000);
  world_->host(0).endpoint().Close(world_->now(), DXFP_CLOSE_SHUTDOWN);
  // B keeps working meanwhile.
  TestHost& hb = world_->host(1);
  std::vector<uint8_t> data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  Put(hb, kSrc, data.data(), data.size());
  Pushbuffer pb;
  pb.Copy(true, false, data.size(), kSrc, 0).Copy(false, true, data.size(), 0, kDst);
  ASSERT_TRUE(b->Run(pb));
  EXPECT_EQ(std::memcmp(hb.Memory(kDst, data.size()).data(), data.data(), data.size()), 0);
  ASSERT_TRUE(world_->RunUntil([&] { return world_->box().Hosts().size() == 1; }, 100'000'000));
  // A's device still belongs to A (it may reconnect) but nothing reaches the gone session.
  EXPECT_EQ(world_->box().Devices()[0].owner_node, kNodeA);
  EXPECT_FALSE(world_->box().Devices()[0].owner_connected);
}

TEST_P(BoxTest, TagQuotaDefersAHostWithoutStarvingAnother) {
  GpuDriver* a = Tenant(kNodeA, 0);
  GpuDriver* b = Tenant(kNodeB, 1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  TestHost& ha = world_->host(0);
  // A fills its quota of box tags (and more) while its device is hung for a moment.
  world_->box().StallDevice(0, true);
  std::vector<uint32_t> ids;
  for (int i = 0; i < 100; ++i) {
    const auto id = ha.MemRead(a->layout().bar0 + gpu::regs::kId, 4);
    ASSERT_TRUE(id.has_value());
    ids.push_back(*id);
  }
  // Deferred once more than its quota arrived (while the device is hung, so nothing frees a
  // tag): within some 200-500 us of virtual time with the RTL port framing the session (its
  // acknowledgements pace the host), sooner with lib/core; no fixed deadline is assumed.
  EXPECT_TRUE(world_->RunUntil([&] { return world_->box().counters().deferred > 0; }, 50'000'000));
  // B's requests still find tags at once.
  EXPECT_EQ(b->Read(gpu::regs::kId), gpu::regs::kIdValue);
  world_->box().StallDevice(0, false);
  // Every one of A's reads completes, correctly, once the device answers.
  ASSERT_TRUE(world_->RunUntil([&] {
    return std::all_of(ids.begin(), ids.end(), [&](uint32_t id) { return ha.request(id).done; });
  }));
  for (uint32_t id : ids) {
    const HostRequest& r = ha.request(id);
    ASSERT_EQ(r.status, DXPU_TLP_CPL_SC);
    uint32_t v = 0;
    std::memcpy(&v, r.data.data(), 4);
    ASSERT_EQ(v, gpu::regs::kIdValue);
  }
}

// A host sending random (well-formed) TLPs of every kind, to every address and BDF, gets
// refusals; another host's device and data are untouched and it keeps working.
TEST_P(BoxTest, RandomTlpsFromOneHostLeaveAnotherUnharmed) {
  GpuDriver* a = Tenant(kNodeA, 0);
  GpuDriver* b = Tenant(kNodeB, 1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  TestHost& ha = world_->host(0);
  TestHost& hb = world_->host(1);
  std::vector<uint8_t> pattern(64 << 10);
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint8_t>(i * 13 + 5);
  Put(hb, kSrc, pattern.data(), pattern.size());
  Pushbuffer load;
  load.Copy(true, false, pattern.size(), kSrc, 0x8000);
  ASSERT_TRUE(b->Run(load));

  std::mt19937_64 rng(test_seed());
  const std::vector<uint64_t> bases = {
      a->layout().bar0, a->layout().bar_mem, b->layout().bar0, b->layout().bar_mem, kSrc, 0,
      0xfee0'0000};
  static constexpr std::array<uint8_t, 8> kKinds = {DXPU_TLP_MRD,    DXPU_TLP_MWR, DXPU_TLP_CFGRD0,
                                                    DXPU_TLP_CFGWR0, DXPU_TLP_CPL, DXPU_TLP_CPLD,
                                                    DXPU_TLP_CFGRD1, DXPU_TLP_MSG};
  std::vector<uint8_t> payload(64);
  size_t sent = 0;
  for (int i = 0; i < 3000; ++i) {
    for (auto& byte : payload) byte = static_cast<uint8_t>(rng());
    dxpu_tlp t{};
    t.kind = kKinds[rng() % kKinds.size()];
    t.requester_id = static_cast<uint16_t>(rng() % 4 == 0 ? rng() : 0);
    t.tag = static_cast<uint16_t>(rng() & 0xff);
    if (dxpu_tlp_kind_is_mem(t.kind)) {
      t.addr = (bases[rng() % bases.size()] + (rng() % 0x2000'0000)) & ~3ULL;
      t.length_dw = static_cast<uint16_t>(1 + rng() % 16);
      if ((t.addr & 0xfff) + uint64_t{t.length_dw} * 4 > 0x1000) t.addr &= ~0xfffULL;
      t.first_be = 0xf;
      t.last_be = t.length_dw > 1 ? 0xf : 0;
    } else if (dxpu_tlp_kind_is_cfg(t.kind)) {
      t.length_dw = 1;
      t.first_be = static_cast<uint8_t>(1 + rng() % 15);
      t.cfg_target = static_cast<uint16_t>(rng() % 3 == 0 ? kHostBdf : rng());
      t.cfg_reg = static_cast<uint16_t>((rng() % 1024) * 4);
    } else if (dxpu_tlp_kind_is_cpl(t.kind)) {
      t.completer_id = static_cast<uint16_t>(rng());
      // To A's own device (which drops it as unexpected) or to a BDF A does not hold.
      t.requester_id = rng() % 2 == 0 ? kHostBdf : static_cast<uint16_t>(rng() | 0x8000);
      t.cpl_status = t.kind == DXPU_TLP_CPLD ? DXPU_TLP_CPL_SC : DXPU_TLP_CPL_UR;
      t.length_dw = t.kind == DXPU_TLP_CPLD ? 1 : 0;
      t.byte_count = 4;
    } else {
      t.msg_code = DXPU_TLP_MSG_VENDOR_TYPE1;
      t.msg_routing = DXPU_TLP_ROUTE_LOCAL;
    }
    t.payload = dxpu_tlp_kind_has_data(t.kind) ? payload.data() : nullptr;
    // Writes to A's own channel registers could legitimately stop A's channel; keep A's
    // BAR0 writes off the register page so that A can be checked afterwards too.
    if (t.kind == DXPU_TLP_MWR && t.addr >= a->layout().bar0 &&
        t.addr < a->layout().bar0 + 0x100'0000)
      continue;
    if (t.kind == DXPU_TLP_CFGWR0) continue;  // A may reconfigure its own device: not the point
    if (dxpu_tlp_validate(&t) != DXPU_TLP_OK) continue;
    if (!ha.endpoint().Submit(t, world_->now())) world_->RunFor(100'000);
    ++sent;
    if (i % 100 == 0) world_->RunFor(50'000);
  }
  world_->RunFor(20'000'000);
  EXPECT_GT(sent, 1000U);
  const bridge::DatapathCounters c = world_->box().datapath_counters();
  EXPECT_GT(c.refused[static_cast<size_t>(bridge::Refusal::kNoBarWindow)], 0U);
  EXPECT_GT(c.refused[static_cast<size_t>(bridge::Refusal::kUnsupported)], 0U);
  EXPECT_GT(c.refused[static_cast<size_t>(bridge::Refusal::kUnexpectedCpl)], 0U);
  EXPECT_GT(world_->box().device(0).counters().unexpected_completions, 0U);
  EXPECT_EQ(world_->box().device(1).counters().unexpected_completions, 0U);

  // B's data is intact and B's device still computes.
  Pushbuffer back;
  back.Copy(false, true, pattern.size(), 0x8000, kDst);
  ASSERT_TRUE(b->Run(back));
  EXPECT_EQ(std::memcmp(hb.Memory(kDst, pattern.size()).data(), pattern.data(), pattern.size()), 0);
  EXPECT_EQ(b->Read(gpu::regs::kId), gpu::regs::kIdValue);
  // And A's own device survived A's storm (reads of its registers still work).
  EXPECT_EQ(a->Read(gpu::regs::kId), gpu::regs::kIdValue);
}

INSTANTIATE_TEST_SUITE_P(Transports, BoxTest,
                         ::testing::Values(Transport::kMemoryLink, Transport::kSimulator),
                         [](const ::testing::TestParamInfo<Transport>& p) {
                           return p.param == Transport::kMemoryLink ? std::string("MemoryLink")
                                                                    : std::string("Simulator");
                         });

}  // namespace
}  // namespace dxpu::test
