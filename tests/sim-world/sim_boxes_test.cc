// sim_boxes_test.cc - the simulator's DxPU port with its GPUs placed over several bridge boxes
// (sim-world/sim_port.h, SimPortOptions::gpus_per_box): mlp-train on 4 GPUs in one box, 2+2 and
// 1+1+1+1 runs verified; spread over boxes its peer copies cross the fabric twice through the
// host proxy (which counts them) and it takes longer; bad placements are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dxgpu/runtime.h"
#include "gpu/activity.h"
#include "host/host_port.h"
#include "host/host_proxy.h"
#include "sim-world/sim_host.h"
#include "sim-world/sim_port.h"
#include "workloads/workload.h"

namespace dxpu::host {
namespace {

constexpr uint64_t kSeed = 7;
constexpr size_t kGpus = 4;
constexpr uint64_t kFairBytes = 4 << 20;  // a copy that takes long beside a frame's time

SimPortOptions DxpuOptions(std::vector<size_t> gpus_per_box, size_t gpus = kGpus) {
  SimPortOptions o;
  o.through_dxpu = true;
  o.profiles = std::vector<std::string>(gpus, "dxgpu");
  o.gpus_per_box = std::move(gpus_per_box);
  return o;
}

// What the host proxy and the boxes counted of the traffic between GPUs.
struct PeerCounts {
  uint64_t proxy_routed = 0;   // TLPs the host proxy routed from one box's path to another's
  uint64_t proxy_dropped = 0;  // and dropped
  uint64_t in_boxes = 0;       // TLPs behind the boxes' own switches
  uint64_t writes_split = 0;   // writes the boxes cut to their GPUs' MPS (a peer's, combined)
  uint64_t lost = 0;           // TLPs the boxes dropped for want of room towards the host
  size_t boxes = 0;
};

PeerCounts CountPeers(dxgpu::Port& port) {
  auto& host_port = dynamic_cast<HostPort&>(port);
  auto& sim = dynamic_cast<SimHost&>(host_port.driver());
  PeerCounts c;
  sim.Run([&](HostProxy& proxy, uint64_t) {
    c.proxy_routed = proxy.peer_tlps();
    c.proxy_dropped = proxy.peer_dropped();
  });
  c.boxes = sim.box_count();
  for (size_t k = 0; k < sim.box_count(); ++k) {
    c.in_boxes += sim.box(k)->counters().tlps_peer;
    c.writes_split += sim.box(k)->counters().writes_split;
    c.lost += sim.box(k)->counters().host_queue_full;
  }
  return c;
}

struct PlacedRun {
  workloads::WorkloadResult result;
  PeerCounts peers;
};

// mlp-train (data-parallel: every step each GPU copies its gradients to every other) on the
// dxpu port placed as given, with its own checks against the CPU.
PlacedRun RunMlpTrain(std::vector<size_t> gpus_per_box) {
  PlacedRun r;
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port =
      OpenSimulatedPort(DxpuOptions(std::move(gpus_per_box)));
  EXPECT_TRUE(port.ok()) << port.status().ToString();
  if (!port.ok()) return r;
  dxgpu::Expected<std::unique_ptr<dxgpu::Runtime>> rt =
      dxgpu::Runtime::Open(std::move(port).value());
  EXPECT_TRUE(rt.ok()) << rt.status().ToString();
  if (!rt.ok()) return r;
  r.result = workloads::RunWorkload("mlp-train", **rt, kGpus, workloads::Scale::kTest, kSeed);
  r.peers = CountPeers((*rt)->port());
  return r;
}

TEST(SimBoxes, MlpTrainRunsVerifiedInEveryPlacement) {
  const PlacedRun one = RunMlpTrain({});
  const PlacedRun two = RunMlpTrain({2, 2});
  const PlacedRun four = RunMlpTrain({1, 1, 1, 1});
  for (const PlacedRun* r : {&one, &two, &four}) {
    SCOPED_TRACE(std::to_string(r->peers.boxes) + " box(es)");
    ASSERT_TRUE(r->result.ok) << r->result.error;
    EXPECT_EQ(r->result.iterations, 3U);
    EXPECT_LE(r->result.max_abs_error, 1e-3);
    // Per step, every GPU copies its gradients to every other: 4 x 3 peer copies.
    EXPECT_EQ(r->result.stats.copy_async.calls, 3U * ((kGpus * kGpus) + 1));
    EXPECT_EQ(r->peers.proxy_dropped, 0U);
    EXPECT_EQ(r->peers.lost, 0U);
  }
  EXPECT_EQ(one.peers.boxes, 1U);
  EXPECT_EQ(two.peers.boxes, 2U);
  EXPECT_EQ(four.peers.boxes, 4U);
  // The same numbers wherever the GPUs sit: only the time differs.
  EXPECT_EQ(one.result.summary, two.result.summary);
  EXPECT_EQ(one.result.summary, four.result.summary);
  std::printf(
      "mlp-train x4 through DxPU (1 us added): 1 box %.1f us, 2+2 %.1f us, 1+1+1+1 %.1f us\n",
      static_cast<double>(one.result.elapsed_ns) / 1e3,
      static_cast<double>(two.result.elapsed_ns) / 1e3,
      static_cast<double>(four.result.elapsed_ns) / 1e3);
}

// In one box the GPUs' peer traffic stays behind the box's switch and the host proxy routes
// none; spread over boxes, what goes between boxes crosses the fabric up to the host proxy and
// down again, so the workload takes longer, and longer still when no two GPUs share a box.
TEST(SimBoxes, PeerCopiesBetweenBoxesCrossTheFabricThroughTheHost) {
  const PlacedRun one = RunMlpTrain({});
  const PlacedRun two = RunMlpTrain({2, 2});
  const PlacedRun four = RunMlpTrain({1, 1, 1, 1});
  ASSERT_TRUE(one.result.ok && two.result.ok && four.result.ok)
      << one.result.error << two.result.error << four.result.error;
  EXPECT_EQ(one.peers.proxy_routed, 0U);
  EXPECT_EQ(one.peers.writes_split, 0U);
  EXPECT_GT(one.peers.in_boxes, 0U);
  // The source's bridge combines the writes it sends up; the target's cuts them to its GPU's MPS.
  EXPECT_GT(two.peers.writes_split, 0U);
  EXPECT_GT(four.peers.writes_split, 0U);
  EXPECT_GT(two.peers.proxy_routed, 0U);
  EXPECT_GT(two.peers.in_boxes, 0U);  // GPUs 0-1 and 2-3 still share a box
  EXPECT_GT(four.peers.proxy_routed, two.peers.proxy_routed);
  EXPECT_EQ(four.peers.in_boxes, 0U);
  EXPECT_GT(two.result.elapsed_ns, one.result.elapsed_ns);
  EXPECT_GT(four.result.elapsed_ns, two.result.elapsed_ns);
}

// Every GPU in one box, said or not, is the same world: the same time to the nanosecond.
TEST(SimBoxes, OneBoxNamedIsTheDefault) {
  const PlacedRun unnamed = RunMlpTrain({});
  const PlacedRun named = RunMlpTrain({kGpus});
  ASSERT_TRUE(unnamed.result.ok && named.result.ok) << unnamed.result.error << named.result.error;
  EXPECT_EQ(named.result.elapsed_ns, unnamed.result.elapsed_ns);
  EXPECT_EQ(named.peers.boxes, 1U);
}

TEST(SimBoxes, BadPlacementsAreRefused) {
  struct Bad {
    std::vector<size_t> placement;
    const char* says;
  };
  for (const Bad& bad : {Bad{{2, 1}, "places 3 GPUs, but the port has 4"},
                         Bad{{2, 3}, "places 5 GPUs, but the port has 4"},
                         Bad{{2, 0, 2}, "box 1 holds no GPU"}, Bad{{0}, "box 0 holds no GPU"}}) {
    dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port =
        OpenSimulatedPort(DxpuOptions(bad.placement));
    ASSERT_FALSE(port.ok()) << bad.says;
    EXPECT_EQ(port.status().code(), dxgpu::ErrorCode::kInvalidArgument);
    EXPECT_NE(port.status().message().find(bad.says), std::string::npos) << port.status().message();
    EXPECT_NE(port.status().message().find("gpus_per_box"), std::string::npos)
        << port.status().message();
  }
}

// A native port has no boxes: it ignores the placement, so one set of options opens both.
TEST(SimBoxes, NativePortIgnoresThePlacement) {
  SimPortOptions o = DxpuOptions({1, 1, 1, 1});
  o.through_dxpu = false;
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port = OpenSimulatedPort(o);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_EQ((*port)->kind(), "native-sim");
  EXPECT_EQ((*port)->device_count(), kGpus);
}

// The port's devices keep their order across boxes: device i is the i-th profile wherever it
// sits, each at a host BDF of its own.
TEST(SimBoxes, DevicesKeepTheirOrderAcrossBoxes) {
  SimPortOptions o = DxpuOptions({1, 2}, 3);
  o.profiles = {"dxgpu", "a100-40g", "dxgpu"};
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port = OpenSimulatedPort(o);
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  ASSERT_EQ((*port)->device_count(), 3U);
  EXPECT_EQ((*port)->device_info(0).profile, "dxgpu");
  EXPECT_EQ((*port)->device_info(1).profile, "a100-40g");
  EXPECT_EQ((*port)->device_info(2).profile, "dxgpu");
  EXPECT_NE((*port)->device_info(0).location.find("sim-fabric dev 01:00.0"), std::string::npos)
      << (*port)->device_info(0).location;
  EXPECT_NE((*port)->device_info(1).location.find("sim-fabric-1 dev 02:00.0"), std::string::npos)
      << (*port)->device_info(1).location;
  EXPECT_NE((*port)->device_info(2).location.find("sim-fabric-1 dev 03:00.0"), std::string::npos)
      << (*port)->device_info(2).location;
}

// Every GPU copies a gradient-sized set (5.5 MB, as mlp-train's at kDemo) to every other at once,
// three rounds: every byte lands. The boxes' queues towards the host run full here, where a
// bridge used to drop a combined write (its room checked against the wrong class, or the byte
// ring's wrap not counted) and mlp-train's loss came out wrong at kDemo in 2+2.
TEST(SimBoxes, AllToAllPeerCopiesLandWhole) {
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port = OpenSimulatedPort(DxpuOptions({2, 2}));
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  dxgpu::Expected<std::unique_ptr<dxgpu::Runtime>> opened =
      dxgpu::Runtime::Open(std::move(port).value());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  dxgpu::Runtime& rt = **opened;
  constexpr uint64_t kSet = 5'505'028;
  const auto byte = [](size_t from, uint64_t k) {
    return static_cast<uint8_t>((k * 7) + (from * 13) + 1);
  };
  std::vector<dxgpu::DevicePtr> buf(kGpus);
  std::vector<dxgpu::Stream> streams(kGpus);
  for (size_t i = 0; i < kGpus; ++i) {
    dxgpu::Expected<dxgpu::DevicePtr> m = rt.Malloc(i, kSet * kGpus);
    dxgpu::Expected<dxgpu::Stream> s = rt.CreateStream(i);
    ASSERT_TRUE(m.ok() && s.ok());
    buf[i] = *m;
    streams[i] = *s;
    std::vector<uint8_t> data(kSet * kGpus, 0);
    for (uint64_t k = 0; k < kSet; ++k) data[(i * kSet) + k] = byte(i, k);
    ASSERT_TRUE(rt.MemcpyHtoD(buf[i], data.data(), data.size()).ok());
  }
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < kGpus; ++i) {
      for (size_t j = 0; j < kGpus; ++j) {
        if (j == i) continue;
        ASSERT_TRUE(
            rt.MemcpyPeerAsync(streams[i], buf[j] + (i * kSet), buf[i] + (i * kSet), kSet).ok());
      }
    }
    for (size_t i = 0; i < kGpus; ++i) ASSERT_TRUE(rt.SynchronizeStream(streams[i]).ok());
    for (size_t j = 0; j < kGpus; ++j) {
      std::vector<uint8_t> got(kSet * kGpus);
      ASSERT_TRUE(rt.MemcpyDtoH(got.data(), buf[j], got.size()).ok());
      for (size_t i = 0; i < kGpus; ++i) {
        uint64_t wrong = 0;
        for (uint64_t k = 0; k < kSet; ++k) wrong += got[(i * kSet) + k] != byte(i, k) ? 1 : 0;
        EXPECT_EQ(wrong, 0U) << "round " << round << ": GPU " << i << "'s set on GPU " << j;
      }
    }
  }
  const PeerCounts c = CountPeers(rt.port());
  EXPECT_GT(c.proxy_routed, 0U);
  EXPECT_EQ(c.proxy_dropped, 0U);
  EXPECT_EQ(c.lost, 0U);
}

// Copies made at once, one per writer (`copy` on the writer's own stream, `bytes[k]` from a
// buffer of the largest), and when each GPU's last copy ended (its activity, the simulator's
// clock); the time they were made is end_ns's last entry.
using CopyAtOnce = std::function<dxgpu::Status(dxgpu::Runtime&, size_t writer, dxgpu::Stream,
                                               dxgpu::DevicePtr, uint64_t bytes)>;
std::vector<uint64_t> RunAtOnce(std::vector<size_t> gpus_per_box, size_t gpus,
                                std::span<const size_t> writers, std::span<const uint64_t> bytes,
                                const CopyAtOnce& copy) {
  std::vector<uint64_t> end_ns(gpus + 1, 0);
  SimPortOptions o = DxpuOptions(std::move(gpus_per_box), gpus);
  o.gpu_activity = [&end_ns](size_t device, const gpu::CommandActivity& a) {
    if (gpu::IsCopy(a.kind)) end_ns[device] = std::max(end_ns[device], a.end_ns);
  };
  dxgpu::Expected<std::unique_ptr<dxgpu::Port>> port = OpenSimulatedPort(o);
  EXPECT_TRUE(port.ok()) << port.status().ToString();
  if (!port.ok()) return end_ns;
  dxgpu::Expected<std::unique_ptr<dxgpu::Runtime>> opened =
      dxgpu::Runtime::Open(std::move(port).value());
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (!opened.ok()) return end_ns;
  dxgpu::Runtime& rt = **opened;
  const uint64_t largest = *std::ranges::max_element(bytes);
  std::vector<dxgpu::Stream> streams;
  std::vector<dxgpu::DevicePtr> bufs;
  for (const size_t w : writers) {
    dxgpu::Expected<dxgpu::DevicePtr> m = rt.Malloc(w, largest);
    dxgpu::Expected<dxgpu::Stream> st = rt.CreateStream(w);
    EXPECT_TRUE(m.ok() && st.ok());
    if (!m.ok() || !st.ok()) return end_ns;
    bufs.push_back(*m);
    streams.push_back(*st);
  }
  end_ns[gpus] = rt.port().Now();
  for (size_t k = 0; k < writers.size(); ++k)
    EXPECT_TRUE(copy(rt, writers[k], streams[k], bufs[k], bytes[k]).ok());
  for (const dxgpu::Stream st : streams) EXPECT_TRUE(rt.SynchronizeStream(st).ok());
  return end_ns;
}

// Two GPUs of one box writing to their host at once share the box's way to the host, as a
// switch's port arbitration shares its upstream port: the bridge lets its devices take turns
// (bridge_box.cc, PumpDevices), so the second GPU's copy, half the first's, ends first. Polled
// in order, device 0 took all the room and device 1 waited until its copy had ended.
TEST(SimBoxes, TwoGpusOfABoxCopyingToTheHostTakeTurns) {
  const std::array<size_t, 2> writers = {0, 1};
  const std::array<uint64_t, 2> sizes = {2 * kFairBytes, kFairBytes};
  const std::vector<uint64_t> end = RunAtOnce(
      {2}, 2, writers, sizes,
      [](dxgpu::Runtime& rt, size_t, dxgpu::Stream st, dxgpu::DevicePtr src, uint64_t bytes) {
        dxgpu::Expected<void*> h = rt.MallocHost(bytes);
        if (!h.ok()) return h.status();
        return rt.MemcpyDtoHAsync(st, *h, src, bytes);
      });
  ASSERT_GT(end[0], 0U);
  ASSERT_GT(end[1], 0U);
  EXPECT_LT(end[1], end[0]);
}

// Two GPUs in two boxes writing to a GPU in a third at once share the way into it (the host
// proxy forwards the TLPs its paths hold for the third box's as its queue takes them), so the
// second GPU's copy, half the first's, ends first.
TEST(SimBoxes, TwoBoxesWritingToAThirdTakeTurns) {
  const std::array<size_t, 2> writers = {1, 2};
  const std::array<uint64_t, 2> sizes = {2 * kFairBytes, kFairBytes};
  std::optional<dxgpu::DevicePtr> target;
  const std::vector<uint64_t> end = RunAtOnce(
      {1, 1, 1}, 3, writers, sizes,
      [&](dxgpu::Runtime& rt, size_t writer, dxgpu::Stream st, dxgpu::DevicePtr src,
          uint64_t bytes) {
        if (!target) {
          dxgpu::Expected<dxgpu::DevicePtr> m = rt.Malloc(0, 4 * kFairBytes);
          if (!m.ok()) return m.status();
          target = *m;
        }
        return rt.MemcpyPeerAsync(st, *target + ((writer - 1) * 2 * kFairBytes), src, bytes);
      });
  ASSERT_GT(end[1], 0U);
  ASSERT_GT(end[2], 0U);
  EXPECT_LT(end[2], end[1]);
}

// Three GPUs, each in its own box, writing 5.3 MiB each to a GPU in a fourth at once share the
// way into it evenly: more than the host proxy's queue towards that box holds, so the host proxy
// forwards what its paths hold for it as room frees, and its paths take turns (host_proxy.cc,
// ForwardPeers). Path by path, the lowest-numbered box took the room first: its copy ended 10%
// sooner than the last.
TEST(SimBoxes, ThreeBoxesWritingToAFourthEndTogether) {
  constexpr uint64_t kSet = 5'505'028;
  const std::array<size_t, 3> writers = {1, 2, 3};
  const std::array<uint64_t, 3> sizes = {kSet, kSet, kSet};
  std::optional<dxgpu::DevicePtr> target;
  const std::vector<uint64_t> end_ns = RunAtOnce(
      {1, 1, 1, 1}, 4, writers, sizes,
      [&](dxgpu::Runtime& rt, size_t writer, dxgpu::Stream st, dxgpu::DevicePtr src, uint64_t n) {
        if (!target) {
          dxgpu::Expected<dxgpu::DevicePtr> m = rt.Malloc(0, 3 * kSet);
          if (!m.ok()) return m.status();
          target = *m;
        }
        return rt.MemcpyPeerAsync(st, *target + ((writer - 1) * kSet), src, n);
      });
  const uint64_t start = end_ns[4];
  const auto [first, last] = std::minmax_element(end_ns.begin() + 1, end_ns.begin() + 4);
  ASSERT_GT(*first, start);
  EXPECT_LT(static_cast<double>(*last - *first), 0.06 * static_cast<double>(*last - start))
      << "ends " << end_ns[1] - start << ", " << end_ns[2] - start << ", " << end_ns[3] - start
      << " ns";
}

}  // namespace
}  // namespace dxpu::host
