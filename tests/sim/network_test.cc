// Tests for the Network's timing and topology: latency and serialization arithmetic, FIFO
// queues, tail drop, partitions, ports going down, and determinism.
#include "sim/network.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/clock.h"
#include "sim_testutil.h"

namespace dxpu::sim {
namespace {

TEST(Network, DeliversACopyAfterTheLatency) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 10 * kMicrosecond;
  Network net(s, 1, cfg);
  Recorder rec(net, {kB});
  std::vector<uint8_t> frame = NumberedFrame(7);
  const std::vector<uint8_t> sent = frame;
  net.Send(kA, kB, frame);
  frame[0] = 0xff;  // the network copied it
  s.RunAll();
  ASSERT_EQ(rec.arrivals.size(), 1U);
  EXPECT_EQ(rec.arrivals[0], (Arrival{10 * kMicrosecond, kB, sent}));
  const PathCounters c = net.counters(kA, kB);
  EXPECT_EQ(c.sent, 1U);
  EXPECT_EQ(c.delivered, 1U);
  EXPECT_EQ(c.bytes_sent, 64U);
  EXPECT_EQ(c.bytes_delivered, 64U);
  EXPECT_EQ(net.counters(kB, kA), PathCounters{});
}

TEST(Network, SerializationAndLatencyAddUpExactly) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 5 * kMicrosecond;
  cfg.bandwidth_bps = 1'000'000'000;  // 1500 bytes = 12,000 bits = 12 us
  Network net(s, 1, cfg);
  Recorder rec(net, {kB});
  for (uint32_t i = 0; i < 3; ++i) net.Send(kA, kB, NumberedFrame(i, 1500));
  s.RunUntil(100 * kMicrosecond);
  // Back to back: each waits for the one ahead of it on the sender's side.
  ASSERT_EQ(rec.arrivals.size(), 3U);
  EXPECT_EQ(rec.arrivals[0].time, 17 * kMicrosecond);
  EXPECT_EQ(rec.arrivals[1].time, 29 * kMicrosecond);
  EXPECT_EQ(rec.arrivals[2].time, 41 * kMicrosecond);
  // An idle wire starts at once.
  net.Send(kA, kB, NumberedFrame(3, 1500));
  s.RunAll();
  EXPECT_EQ(rec.arrivals[3].time, 117 * kMicrosecond);
}

TEST(Network, FractionalSerializationTimesAccumulateExactly) {
  Scheduler s;
  PathConfig cfg;
  cfg.bandwidth_bps = 3'000'000'000;  // 8 bits take 8/3 ns
  Network net(s, 1, cfg);
  Recorder rec(net, {kB});
  for (uint32_t i = 0; i < 3; ++i) net.Send(kA, kB, std::vector<uint8_t>{1});
  s.RunAll();
  ASSERT_EQ(rec.arrivals.size(), 3U);
  // Last bits leave at 2.67, 5.33 and 8 ns; a frame arrives at the next whole ns.
  EXPECT_EQ(rec.arrivals[0].time, 3U);
  EXPECT_EQ(rec.arrivals[1].time, 6U);
  EXPECT_EQ(rec.arrivals[2].time, 8U);
}

TEST(Network, HundredGigabitFrameTimes) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 1 * kMicrosecond;
  cfg.bandwidth_bps = 100'000'000'000;
  Network net(s, 1, cfg);
  Recorder rec(net, {kB});
  net.Send(kA, kB, NumberedFrame(0, 9000));  // 72,000 bits = 720 ns
  s.RunAll();
  ASSERT_EQ(rec.arrivals.size(), 1U);
  EXPECT_EQ(rec.arrivals[0].time, 1720U);
}

TEST(Network, FifoWithoutReorderEvenWithJitter) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 10 * kMicrosecond;
  cfg.jitter = 50 * kMicrosecond;  // far more than the gap between frames
  cfg.bandwidth_bps = 10'000'000'000;
  Network net(s, 3, cfg);
  Recorder rec(net, {kB});
  for (uint32_t i = 0; i < 2000; ++i) {
    net.Send(kA, kB, NumberedFrame(i, 100 + (i % 7) * 100));
    s.RunUntil(s.Now() + 200);
  }
  s.RunAll();
  std::vector<uint32_t> expect(2000);
  for (uint32_t i = 0; i < 2000; ++i) expect[i] = i;
  EXPECT_EQ(rec.Numbers(), expect);
  // Jitter did spread the arrivals: not every frame took the minimum.
  Nanos spread = 0;
  for (size_t i = 1; i < rec.arrivals.size(); ++i) {
    spread = std::max(spread, rec.arrivals[i].time - rec.arrivals[i - 1].time);
  }
  EXPECT_GT(spread, 10 * kMicrosecond);
}

TEST(Network, QueueTailDropsAreCounted) {
  Scheduler s;
  PathConfig cfg;
  cfg.bandwidth_bps = 1'000'000'000;
  cfg.queue_limit_bytes = 4000;  // two 1500-byte frames fit, the third does not
  Network net(s, 1, cfg);
  Recorder rec(net, {kB});
  for (uint32_t i = 0; i < 5; ++i) net.Send(kA, kB, NumberedFrame(i, 1500));
  EXPECT_EQ(net.counters(kA, kB).queue_drops, 3U);
  // After the first frame's last bit (12 us) there is room for one more.
  s.RunUntil(12 * kMicrosecond);
  net.Send(kA, kB, NumberedFrame(5, 1500));
  net.Send(kA, kB, NumberedFrame(6, 1500));
  s.RunAll();
  EXPECT_EQ(rec.Numbers(), (std::vector<uint32_t>{0, 1, 5}));
  const PathCounters c = net.counters(kA, kB);
  EXPECT_EQ(c.sent, 7U);
  EXPECT_EQ(c.queue_drops, 4U);
  EXPECT_EQ(c.delivered, 3U);
  EXPECT_EQ(rec.arrivals[2].time, 36 * kMicrosecond);
}

TEST(Network, PartitionDropsBothWaysUntilHealed) {
  Scheduler s;
  Network net(s, 1);
  Recorder rec(net, {kA, kB, kC});
  net.Partition(kA, kB);
  EXPECT_TRUE(net.path(kA, kB).partitioned);
  EXPECT_TRUE(net.path(kB, kA).partitioned);
  net.Send(kA, kB, NumberedFrame(1));
  net.Send(kB, kA, NumberedFrame(2));
  net.Send(kA, kC, NumberedFrame(3));  // other paths are untouched
  s.RunAll();
  EXPECT_EQ(rec.Numbers(), (std::vector<uint32_t>{3}));
  EXPECT_EQ(net.counters(kA, kB).partition_drops, 1U);
  EXPECT_EQ(net.counters(kB, kA).partition_drops, 1U);
  net.Heal(kA, kB);
  net.Send(kA, kB, NumberedFrame(4));
  net.Send(kB, kA, NumberedFrame(5));
  s.RunAll();
  EXPECT_EQ(rec.Numbers(), (std::vector<uint32_t>{3, 4, 5}));
}

TEST(Network, AFrameInFlightWhenThePartitionStartsStillArrives) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 10 * kMicrosecond;
  Network net(s, 1, cfg);
  Recorder rec(net, {kB});
  net.Send(kA, kB, NumberedFrame(1));
  s.RunUntil(5 * kMicrosecond);
  net.Partition(kA, kB);
  s.RunAll();
  EXPECT_EQ(rec.Numbers(), (std::vector<uint32_t>{1}));
}

TEST(Network, APortDownNeitherSendsNorReceives) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 10 * kMicrosecond;
  Network net(s, 1, cfg);
  Recorder rec(net, {kA, kB});
  net.SetPortDown(kB, true);
  EXPECT_TRUE(net.IsPortDown(kB));
  net.Send(kA, kB, NumberedFrame(1));
  net.Send(kB, kA, NumberedFrame(2));
  s.RunAll();
  EXPECT_TRUE(rec.arrivals.empty());
  EXPECT_EQ(net.counters(kA, kB).port_down_drops, 1U);
  EXPECT_EQ(net.counters(kB, kA).port_down_drops, 1U);
}

TEST(Network, ArrivalWhileDownIsDroppedArrivalAfterRestartIsDelivered) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 10 * kMicrosecond;
  Network net(s, 1, cfg);
  Recorder rec(net, {kA, kB});
  net.Send(kA, kB, NumberedFrame(1));  // arrives at 10 us, while B is down
  s.RunUntil(2 * kMicrosecond);
  net.Send(kA, kB, NumberedFrame(2));  // arrives at 12 us, after B is back
  net.Send(kB, kA, NumberedFrame(3));  // sent by B before it crashed: still arrives
  s.RunUntil(3 * kMicrosecond);
  net.SetPortDown(kB, true);
  s.RunUntil(11 * kMicrosecond);
  net.SetPortDown(kB, false);
  EXPECT_FALSE(net.IsPortDown(kB));
  s.RunAll();
  EXPECT_EQ(rec.Numbers(), (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(net.counters(kA, kB).port_down_drops, 1U);
}

TEST(Network, NoReceiverCountsAsPortDown) {
  Scheduler s;
  Network net(s, 1);
  net.Send(kA, kB, NumberedFrame(1));
  s.RunAll();
  EXPECT_EQ(net.counters(kA, kB).port_down_drops, 1U);
  Recorder rec(net, {kB});
  net.Detach(kB);
  net.Send(kA, kB, NumberedFrame(2));
  s.RunAll();
  EXPECT_EQ(net.counters(kA, kB).port_down_drops, 2U);
  EXPECT_TRUE(rec.arrivals.empty());
}

TEST(Network, AReceiverMayReplyAndReattachFromItsCallback) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 1000;
  Network net(s, 1, cfg);
  Recorder rec(net, {kA});
  int pings = 0;
  net.Attach(kB, [&](std::span<const uint8_t> f) {
    ++pings;
    const std::vector<uint8_t> before(f.begin(), f.end());
    for (uint32_t i = 0; i < 1000; ++i) net.Send(kB, kC, NumberedFrame(i));  // grows the pool
    EXPECT_EQ(std::vector<uint8_t>(f.begin(), f.end()), before);             // f is still valid
    net.Send(kB, kA, f);
    net.Attach(kB, [&](std::span<const uint8_t>) { ++pings; });  // replaces itself
    net.Attach(kC + 100, [](std::span<const uint8_t>) {});       // grows the table
  });
  net.Send(kA, kB, NumberedFrame(9));
  net.Send(kA, kB, NumberedFrame(10));
  s.RunAll();
  EXPECT_EQ(pings, 2);
  ASSERT_EQ(rec.arrivals.size(), 1U);
  EXPECT_EQ(rec.arrivals[0].time, 2000U);
}

TEST(Network, SetPathChangesOneDirectionForLaterFrames) {
  Scheduler s;
  Network net(s, 1);
  Recorder rec(net, {kA, kB});
  PathConfig slow;
  slow.latency = 7 * kMicrosecond;
  net.Send(kA, kB, NumberedFrame(1));
  net.SetPath(kA, kB, slow);
  EXPECT_EQ(net.path(kA, kB).latency, 7 * kMicrosecond);
  EXPECT_EQ(net.path(kB, kA).latency, 0U);
  net.Send(kA, kB, NumberedFrame(2));
  net.Send(kB, kA, NumberedFrame(3));
  s.RunAll();
  ASSERT_EQ(rec.arrivals.size(), 3U);
  EXPECT_EQ(rec.arrivals[0].time, 0U);
  EXPECT_EQ(rec.arrivals[1], (Arrival{0, kA, NumberedFrame(3)}));
  EXPECT_EQ(rec.arrivals[2].time, 7 * kMicrosecond);
}

// A run with every fault on, as a trace of (time, port, bytes).
std::vector<Arrival> FaultyRun(uint64_t seed) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 3 * kMicrosecond;
  cfg.jitter = 2 * kMicrosecond;
  cfg.bandwidth_bps = 25'000'000'000;
  cfg.queue_limit_bytes = 20'000;
  cfg.loss = 0.05;
  cfg.duplicate = 0.05;
  cfg.reorder = 0.1;
  cfg.corrupt = 0.05;
  Network net(s, seed, cfg);
  Recorder rec(net, {kA, kB});
  for (uint32_t i = 0; i < 3000; ++i) {
    net.Send(kA, kB, NumberedFrame(i, 64 + i % 1400));
    if (i % 3 == 0) net.Send(kB, kA, NumberedFrame(i, 64));
    s.RunUntil(s.Now() + 150);
  }
  s.RunAll();
  // Every frame is accounted for once the network is idle.
  const PathCounters c = net.TotalCounters();
  EXPECT_EQ(c.sent + c.duplicated,
            c.delivered + c.lost + c.queue_drops + c.partition_drops + c.port_down_drops);
  EXPECT_EQ(c.delivered, rec.arrivals.size());
  EXPECT_GT(c.queue_drops, 0U);
  EXPECT_GT(c.lost, 0U);
  EXPECT_GT(c.duplicated, 0U);
  EXPECT_GT(c.reordered, 0U);
  EXPECT_GT(c.corrupted, 0U);
  return rec.arrivals;
}

TEST(Network, SameSeedSameTraceDifferentSeedDifferentTrace) {
  const std::vector<Arrival> a = FaultyRun(1234);
  EXPECT_GT(a.size(), 3000U);
  EXPECT_EQ(a, FaultyRun(1234));
  EXPECT_NE(a, FaultyRun(1235));
}

TEST(Network, TrafficOnOnePathDoesNotPerturbAnother) {
  // The fates of A->B frames are the same whether or not C also sends to B.
  const auto run = [](bool with_c) {
    Scheduler s;
    PathConfig cfg;
    cfg.latency = 1000;
    cfg.loss = 0.2;
    cfg.reorder = 0.2;
    cfg.corrupt = 0.2;
    Network net(s, 99, cfg);
    std::vector<Arrival> from_a;
    net.Attach(kB, [&](std::span<const uint8_t> f) {
      if (f.size() == 64) from_a.push_back({s.Now(), kB, {f.begin(), f.end()}});
    });
    for (uint32_t i = 0; i < 1000; ++i) {
      net.Send(kA, kB, NumberedFrame(i, 64));
      if (with_c) net.Send(kC, kB, NumberedFrame(i, 32));
      s.RunUntil(s.Now() + 100);
    }
    s.RunAll();
    return from_a;
  };
  EXPECT_EQ(run(false), run(true));
}

TEST(Network, TotalCountersSumEveryPath) {
  Scheduler s;
  Network net(s, 1);
  Recorder rec(net, {kA, kB, kC});
  net.Send(kA, kB, NumberedFrame(1, 10));
  net.Send(kB, kC, NumberedFrame(2, 20));
  net.Send(kC, kA, NumberedFrame(3, 30));
  s.RunAll();
  const PathCounters t = net.TotalCounters();
  EXPECT_EQ(t.sent, 3U);
  EXPECT_EQ(t.delivered, 3U);
  EXPECT_EQ(t.bytes_delivered, 60U);
}

}  // namespace
}  // namespace dxpu::sim
