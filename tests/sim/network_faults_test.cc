// Tests for the Network's per-frame faults: loss, duplication, reordering and corruption
// happen at about their configured rates and do what they say.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "sim/clock.h"
#include "sim/network.h"
#include "sim_testutil.h"

namespace dxpu::sim {
namespace {

constexpr uint32_t kFrames = 100'000;

// Sends kFrames numbered frames A->B, one every 100 ns, and runs the network dry.
Recorder SendMany(Network& net, Scheduler& s, size_t size = 64) {
  Recorder rec(net, {kB});
  for (uint32_t i = 0; i < kFrames; ++i) {
    net.Send(kA, kB, NumberedFrame(i, size));
    s.RunUntil(s.Now() + 100);
  }
  s.RunAll();
  return rec;
}

// Bounds of 6 standard deviations around n*p: a correct simulator essentially never fails.
void ExpectNearRate(uint64_t count, double p) {
  const double mean = kFrames * p;
  const double sd = std::sqrt(kFrames * p * (1 - p));
  EXPECT_GT(static_cast<double>(count), mean - 6 * sd) << "p=" << p;
  EXPECT_LT(static_cast<double>(count), mean + 6 * sd) << "p=" << p;
}

TEST(NetworkFaults, LossRateIsNearP) {
  for (const double p : {0.001, 0.01, 0.1, 0.5}) {
    Scheduler s;
    PathConfig cfg;
    cfg.latency = 1000;
    cfg.loss = p;
    Network net(s, 42, cfg);
    const Recorder rec = SendMany(net, s);
    const PathCounters c = net.counters(kA, kB);
    ExpectNearRate(c.lost, p);
    EXPECT_EQ(c.sent, kFrames);
    EXPECT_EQ(c.delivered + c.lost, kFrames);
    EXPECT_EQ(rec.arrivals.size(), c.delivered);
    // Losses are spread out: both halves of the run lose frames.
    std::vector<uint32_t> got = rec.Numbers();
    const auto half =
        static_cast<uint32_t>(std::lower_bound(got.begin(), got.end(), kFrames / 2) - got.begin());
    EXPECT_LT(half, kFrames / 2);
    EXPECT_LT(got.size() - half, kFrames / 2);
  }
}

TEST(NetworkFaults, NoFaultsDeliversEverythingInOrder) {
  Scheduler s;
  Network net(s, 42);
  const Recorder rec = SendMany(net, s);
  const std::vector<uint32_t> got = rec.Numbers();
  ASSERT_EQ(got.size(), kFrames);
  for (uint32_t i = 0; i < kFrames; ++i) ASSERT_EQ(got[i], i);
}

TEST(NetworkFaults, DuplicatesArriveTwiceAndIntact) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 1000;
  cfg.duplicate = 0.05;
  Network net(s, 7, cfg);
  const Recorder rec = SendMany(net, s);
  const PathCounters c = net.counters(kA, kB);
  ExpectNearRate(c.duplicated, 0.05);
  EXPECT_EQ(c.delivered, kFrames + c.duplicated);
  std::map<uint32_t, int> seen;
  for (const Arrival& a : rec.arrivals) {
    ASSERT_EQ(a.bytes, NumberedFrame(FrameNumber(a.bytes)));
    ++seen[FrameNumber(a.bytes)];
  }
  EXPECT_EQ(seen.size(), kFrames);
  uint64_t twice = 0;
  for (const auto& [n, times] : seen) twice += times == 2 ? 1 : 0;
  EXPECT_EQ(twice, c.duplicated);
}

TEST(NetworkFaults, ReorderingActuallyReorders) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 10 * kMicrosecond;
  cfg.reorder = 0.05;
  cfg.reorder_delay = 5 * kMicrosecond;  // 50 frame gaps: later frames overtake
  Network net(s, 8, cfg);
  const Recorder rec = SendMany(net, s);
  const PathCounters c = net.counters(kA, kB);
  ExpectNearRate(c.reordered, 0.05);
  const std::vector<uint32_t> got = rec.Numbers();
  ASSERT_EQ(got.size(), kFrames);  // nothing lost or duplicated
  uint64_t overtaken = 0;          // frames that arrived after a higher-numbered one
  uint32_t highest = 0;
  for (const uint32_t n : got) {
    if (n < highest) ++overtaken;
    highest = std::max(highest, n);
  }
  EXPECT_GT(overtaken, c.reordered / 2);
  EXPECT_LE(overtaken, c.reordered);
  std::vector<uint32_t> sorted = got;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < kFrames; ++i) ASSERT_EQ(sorted[i], i);
  // A held-back frame is late by at most reorder_delay.
  for (const Arrival& a : rec.arrivals) {
    ASSERT_LE(a.time, FrameNumber(a.bytes) * 100ULL + cfg.latency + cfg.reorder_delay);
  }
}

TEST(NetworkFaults, CorruptionFlipsOneToThreeBitsAndKeepsTheLength) {
  Scheduler s;
  PathConfig cfg;
  cfg.corrupt = 0.02;
  Network net(s, 9, cfg);
  const Recorder rec = SendMany(net, s, 40);
  const PathCounters c = net.counters(kA, kB);
  ExpectNearRate(c.corrupted, 0.02);
  ASSERT_EQ(rec.arrivals.size(), kFrames);
  uint64_t changed = 0;
  std::map<int, int> flips;  // bits flipped -> frames
  for (uint32_t i = 0; i < kFrames; ++i) {
    const std::vector<uint8_t>& got = rec.arrivals[i].bytes;
    const std::vector<uint8_t> sent = NumberedFrame(i, 40);  // in order: no reorder
    ASSERT_EQ(got.size(), sent.size());
    int bits = 0;
    for (size_t j = 0; j < got.size(); ++j) bits += std::popcount<uint8_t>(got[j] ^ sent[j]);
    if (bits != 0) {
      ++changed;
      ++flips[bits];
      ASSERT_LE(bits, 3);
    }
  }
  EXPECT_EQ(changed, c.corrupted);
  EXPECT_GT(flips[1], 0);
  EXPECT_GT(flips[2], 0);
  EXPECT_GT(flips[3], 0);
}

TEST(NetworkFaults, CorruptionReachesEveryPartOfTheFrame) {
  Scheduler s;
  PathConfig cfg;
  cfg.corrupt = 1.0;
  Network net(s, 10, cfg);
  std::vector<int> hits(16, 0);
  net.Attach(kB, [&](std::span<const uint8_t> f) {
    for (size_t j = 0; j < f.size(); ++j) hits[j] += f[j] != 0 ? 1 : 0;
  });
  const std::vector<uint8_t> zeros(16, 0);
  for (int i = 0; i < 2000; ++i) net.Send(kA, kB, zeros);
  s.RunAll();
  for (const int h : hits) EXPECT_GT(h, 150);  // 2000 * 2 bits / 16 bytes = 250 expected
  EXPECT_EQ(net.counters(kA, kB).corrupted, 2000U);
}

TEST(NetworkFaults, EmptyFramesAreDeliveredButNeverCorrupted) {
  Scheduler s;
  PathConfig cfg;
  cfg.corrupt = 1.0;
  Network net(s, 11, cfg);
  int empty = 0;
  net.Attach(kB, [&](std::span<const uint8_t> f) { empty += f.empty() ? 1 : 0; });
  net.Send(kA, kB, std::span<const uint8_t>());
  s.RunAll();
  EXPECT_EQ(empty, 1);
  EXPECT_EQ(net.counters(kA, kB).corrupted, 0U);
}

TEST(NetworkFaults, OtherFaultKindsDoNotChangeWhichFramesAreLost) {
  // Duplication and reordering (which keep the bytes, so frames stay identifiable) on top of
  // the same loss leave exactly the same frames lost.
  const auto arrived = [](double other) {
    Scheduler s;
    PathConfig cfg;
    cfg.latency = 1000;
    cfg.loss = 0.1;
    cfg.duplicate = other;
    cfg.reorder = other;
    Network net(s, 77, cfg);
    std::vector<bool> seen(1000, false);
    net.Attach(kB, [&](std::span<const uint8_t> f) { seen[FrameNumber(f)] = true; });
    for (uint32_t i = 0; i < 1000; ++i) {
      net.Send(kA, kB, NumberedFrame(i));
      s.RunUntil(s.Now() + 100);
    }
    s.RunAll();
    EXPECT_EQ(net.counters(kA, kB).duplicated > 0, other > 0);
    return seen;
  };
  const std::vector<bool> plain = arrived(0.0);
  EXPECT_GT(std::count(plain.begin(), plain.end(), false), 50);
  EXPECT_EQ(plain, arrived(0.3));
}

TEST(NetworkFaults, LostFramesStillUseTheWire) {
  Scheduler s;
  PathConfig cfg;
  cfg.bandwidth_bps = 1'000'000'000;
  cfg.loss = 1.0;
  Network net(s, 12, cfg);
  Recorder rec(net, {kB});
  net.Send(kA, kB, NumberedFrame(0, 1500));
  cfg.loss = 0;
  net.SetPath(kA, kB, cfg);
  net.Send(kA, kB, NumberedFrame(1, 1500));
  s.RunAll();
  ASSERT_EQ(rec.arrivals.size(), 1U);
  EXPECT_EQ(rec.arrivals[0].time, 24 * kMicrosecond);
}

}  // namespace
}  // namespace dxpu::sim
