// Tests for ScheduleFaults: partition and crash windows on the scheduler, nesting, hooks.
#include "sim/fault_schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/fault_plan.h"
#include "sim_testutil.h"

namespace dxpu::sim {
namespace {

const std::vector<FaultNode> kNodes = {{"a", kA}, {"b", kB}, {"c", kC}};

FaultPlan Plan(const char* spec) {
  FaultPlanResult r = ParseFaultSpec(spec);
  EXPECT_TRUE(r.ok()) << r.error;
  return r.plan.value_or(FaultPlan{});
}

TEST(FaultSchedule, PartitionCutsEveryPairThenHeals) {
  Scheduler s;
  Network net(s, 1);
  ASSERT_EQ(ScheduleFaults(Plan("partition=5ms+2ms"), net, kNodes), "");
  s.RunUntil(5 * kMillisecond - 1);
  EXPECT_FALSE(net.path(kA, kB).partitioned);
  s.RunUntil(5 * kMillisecond);
  for (const PortId from : {kA, kB, kC}) {
    for (const PortId to : {kA, kB, kC}) {
      if (from != to) {
        EXPECT_TRUE(net.path(from, to).partitioned) << from << "->" << to;
      }
    }
  }
  s.RunUntil(7 * kMillisecond);
  EXPECT_FALSE(net.path(kA, kB).partitioned);
  EXPECT_FALSE(net.path(kC, kB).partitioned);
  EXPECT_TRUE(s.Empty());
}

TEST(FaultSchedule, ACutIsOneWay) {
  Scheduler s;
  Network net(s, 1);
  Recorder rec(net, {kA, kB});
  ASSERT_EQ(ScheduleFaults(Plan("cut=a>b@1ms+1ms"), net, kNodes), "");
  s.RunUntil(1 * kMillisecond);
  EXPECT_TRUE(net.path(kA, kB).partitioned);
  EXPECT_FALSE(net.path(kB, kA).partitioned);
  EXPECT_FALSE(net.path(kA, kC).partitioned);
  net.Send(kA, kB, NumberedFrame(1));
  net.Send(kB, kA, NumberedFrame(2));
  s.RunUntil(2 * kMillisecond);
  EXPECT_FALSE(net.path(kA, kB).partitioned);
  net.Send(kA, kB, NumberedFrame(3));
  s.RunAll();
  EXPECT_EQ(rec.Numbers(), (std::vector<uint32_t>{2, 3}));
}

TEST(FaultSchedule, ACutInsideAPartitionKeepsItsDirectionDown) {
  Scheduler s;
  Network net(s, 1);
  ASSERT_EQ(ScheduleFaults(Plan("partition=1ms+2ms,cut=b>a@2ms+5ms"), net, kNodes), "");
  s.RunUntil(3 * kMillisecond);  // the partition is over; the cut is not
  EXPECT_FALSE(net.path(kA, kB).partitioned);
  EXPECT_TRUE(net.path(kB, kA).partitioned);
  s.RunAll();
  EXPECT_FALSE(net.path(kB, kA).partitioned);
}

TEST(FaultSchedule, OverlappingPartitionsNest) {
  Scheduler s;
  Network net(s, 1);
  ASSERT_EQ(ScheduleFaults(Plan("partition=1ms+2ms,partition=2ms+2ms"), net, kNodes), "");
  s.RunUntil(3 * kMillisecond);  // the first window is over, the second is not
  EXPECT_TRUE(net.path(kA, kB).partitioned);
  s.RunUntil(4 * kMillisecond);
  EXPECT_FALSE(net.path(kA, kB).partitioned);
}

TEST(FaultSchedule, APartitionWithoutDurationLasts) {
  Scheduler s;
  Network net(s, 1);
  ASSERT_EQ(ScheduleFaults(Plan("partition=1ms"), net, kNodes), "");
  s.RunAll();
  EXPECT_TRUE(net.path(kB, kA).partitioned);
}

TEST(FaultSchedule, CrashTakesThePortDownAndCallsTheHooks) {
  Scheduler s;
  Network net(s, 1);
  std::vector<std::string> log;
  FaultHooks hooks;
  hooks.on_crash = [&](const FaultNode& n) {
    EXPECT_TRUE(net.IsPortDown(n.port));
    log.push_back("crash " + n.name + " " + std::to_string(s.Now()));
  };
  hooks.on_restart = [&](const FaultNode& n) {
    EXPECT_FALSE(net.IsPortDown(n.port));
    log.push_back("restart " + n.name + " " + std::to_string(s.Now()));
  };
  ASSERT_EQ(ScheduleFaults(Plan("crash=b@8ms+1ms,crash=c@2ms"), net, kNodes, hooks), "");
  s.RunUntil(8 * kMillisecond);
  EXPECT_TRUE(net.IsPortDown(kB));
  EXPECT_FALSE(net.IsPortDown(kA));
  s.RunAll();
  EXPECT_FALSE(net.IsPortDown(kB));
  EXPECT_TRUE(net.IsPortDown(kC));  // never restarts
  EXPECT_EQ(log,
            (std::vector<std::string>{"crash c 2000000", "crash b 8000000", "restart b 9000000"}));
}

TEST(FaultSchedule, OverlappingCrashesOfOneNodeNest) {
  Scheduler s;
  Network net(s, 1);
  int crashes = 0, restarts = 0;
  FaultHooks hooks;
  hooks.on_crash = [&](const FaultNode&) { ++crashes; };
  hooks.on_restart = [&](const FaultNode&) { ++restarts; };
  ASSERT_EQ(ScheduleFaults(Plan("crash=a@1ms+5ms,crash=a@2ms+1ms"), net, kNodes, hooks), "");
  s.RunUntil(4 * kMillisecond);
  EXPECT_TRUE(net.IsPortDown(kA));
  s.RunAll();
  EXPECT_FALSE(net.IsPortDown(kA));
  EXPECT_EQ(crashes, 1);
  EXPECT_EQ(restarts, 1);
}

TEST(FaultSchedule, UnknownNodeIsAnErrorAndSchedulesNothing) {
  Scheduler s;
  Network net(s, 1);
  const std::string err = ScheduleFaults(Plan("partition=1ms,crash=z@1ms"), net, kNodes);
  EXPECT_NE(err.find("crash: no node named 'z'"), std::string::npos) << err;
  EXPECT_TRUE(s.Empty());
  const std::string cut_err = ScheduleFaults(Plan("partition=1ms,cut=a>q@1ms"), net, kNodes);
  EXPECT_NE(cut_err.find("cut: no node named 'q'"), std::string::npos) << cut_err;
  EXPECT_TRUE(s.Empty());
}

TEST(FaultSchedule, FramesDuringTheWindowsAreDropped) {
  Scheduler s;
  PathConfig cfg;
  cfg.latency = 100 * kMicrosecond;
  Network net(s, 1, cfg);
  Recorder rec(net, {kA, kB});
  ASSERT_EQ(ScheduleFaults(Plan("partition=1ms+1ms,crash=b@3ms+1ms"), net, kNodes), "");
  for (uint32_t i = 0; i < 50; ++i) {  // one frame every 100 us for 5 ms
    net.Send(kA, kB, NumberedFrame(i));
    s.RunUntil(s.Now() + 100 * kMicrosecond);
  }
  s.RunAll();
  // Sent at i * 100 us, arriving 100 us later. Partition: sent in [1 ms, 2 ms) dropped.
  // Crash of b: arriving in [3 ms, 4 ms) dropped, i.e. sent in [2.9 ms, 3.9 ms).
  std::vector<uint32_t> expect;
  for (uint32_t i = 0; i < 50; ++i) {
    if ((i < 10 || i >= 20) && (i < 29 || i >= 39)) expect.push_back(i);
  }
  EXPECT_EQ(rec.Numbers(), expect);
  EXPECT_EQ(net.counters(kA, kB).partition_drops, 10U);
  EXPECT_EQ(net.counters(kA, kB).port_down_drops, 10U);
}

}  // namespace
}  // namespace dxpu::sim
