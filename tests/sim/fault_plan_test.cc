// Tests for fault specs: parsing good and bad input, printing back, randomised mixes.
#include "sim/fault_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/rng.h"

namespace dxpu::sim {
namespace {

FaultPlan Parse(const std::string& spec) {
  const FaultPlanResult r = ParseFaultSpec(spec);
  EXPECT_TRUE(r.ok()) << spec << ": " << r.error;
  return r.plan.value_or(FaultPlan{});
}

TEST(FaultPlan, ParsesTheExampleSpec) {
  const FaultPlan p = Parse(
      "loss=0.01,reorder=0.05,dup=0.01,corrupt=0.001,latency=10us,bw=100g,partition=5ms+2ms,"
      "crash=b@8ms+1ms");
  EXPECT_EQ(p.loss, 0.01);
  EXPECT_EQ(p.reorder, 0.05);
  EXPECT_EQ(p.duplicate, 0.01);
  EXPECT_EQ(p.corrupt, 0.001);
  EXPECT_EQ(p.latency, 10 * kMicrosecond);
  EXPECT_EQ(p.bandwidth_bps, 100'000'000'000U);
  ASSERT_EQ(p.partitions.size(), 1U);
  EXPECT_EQ(p.partitions[0], (PartitionWindow{5 * kMillisecond, 2 * kMillisecond, "", ""}));
  ASSERT_EQ(p.crashes.size(), 1U);
  EXPECT_EQ(p.crashes[0], (CrashWindow{"b", 8 * kMillisecond, 1 * kMillisecond}));
}

TEST(FaultPlan, EmptySpecIsThePerfectNetwork) {
  EXPECT_EQ(Parse(""), FaultPlan{});
  EXPECT_EQ(Parse("  "), FaultPlan{});
  EXPECT_EQ(ToString(FaultPlan{}), "");
}

TEST(FaultPlan, ParsesEveryKey) {
  const FaultPlan p = Parse(
      " loss = 1 , dup=0, reorder=1e-3,reorder_delay=20us,corrupt=0.5,latency=1.5ms,"
      "jitter=100ns,bw=2.5g,queue=65536,partition=1s,partition=2s+3s,crash=host_1@0ns,"
      "crash=bridge-2@7us+8us,cut=host_1>bridge-2@3ms+1ms");
  EXPECT_EQ(p.loss, 1.0);
  EXPECT_EQ(p.duplicate, 0.0);
  EXPECT_EQ(p.reorder, 0.001);
  EXPECT_EQ(p.reorder_delay, 20 * kMicrosecond);
  EXPECT_EQ(p.corrupt, 0.5);
  EXPECT_EQ(p.latency, 1'500'000U);
  EXPECT_EQ(p.jitter, 100U);
  EXPECT_EQ(p.bandwidth_bps, 2'500'000'000U);
  EXPECT_EQ(p.queue_limit_bytes, 65536U);
  EXPECT_EQ(p.partitions,
            (std::vector<PartitionWindow>{{kSecond, kNever, "", ""},
                                          {2 * kSecond, 3 * kSecond, "", ""},
                                          {3 * kMillisecond, kMillisecond, "host_1", "bridge-2"}}));
  EXPECT_EQ(p.crashes, (std::vector<CrashWindow>{{"host_1", 0, kNever}, {"bridge-2", 7000, 8000}}));
}

// Each bad spec, and words its error must contain (the item and the problem).
struct BadSpec {
  const char* spec;
  std::vector<const char*> words;
};

TEST(FaultPlan, BadSpecsNameTheProblem) {
  const BadSpec cases[] = {
      {"lose=0.1", {"'lose=0.1'", "unknown key 'lose'", "loss"}},
      {"loss=abc", {"'loss=abc'", "'abc' is not a number"}},
      {"loss=", {"'loss='", "is not a number"}},
      {"loss=0.1x", {"'0.1x' is not a number"}},
      {"loss=nan", {"'nan' is not a number"}},
      {"loss=inf", {"'inf' is not a number"}},
      {"loss=1.5", {"'loss=1.5'", "not a probability in [0, 1]"}},
      {"dup=-0.1", {"'dup=-0.1'", "not a probability"}},
      {"reorder=2", {"'reorder=2'", "not a probability"}},
      {"corrupt=1.0001", {"'corrupt=1.0001'", "not a probability"}},
      {"latency=10", {"'latency=10'", "no time unit"}},
      {"latency=10xs", {"'latency=10xs'", "unknown time unit 'xs'"}},
      {"jitter=0.5ns", {"'jitter=0.5ns'", "whole number of nanoseconds"}},
      {"reorder_delay=fast", {"'fast' is not a number"}},
      {"bw=100t", {"'bw=100t'", "unknown bandwidth unit 't'"}},
      {"bw=fast", {"'fast' is not a number"}},
      {"queue=64k", {"'queue=64k'", "whole number of bytes"}},
      {"partition=5ms+", {"'partition=5ms+'", "not a number"}},
      {"partition=5+2ms", {"no time unit"}},
      {"crash=8ms", {"'crash=8ms'", "NODE@TIME"}},
      {"crash=@8ms", {"node name ''"}},
      {"crash=a b@8ms", {"node name 'a b'"}},
      {"crash=b@8xs", {"unknown time unit 'xs'"}},
      {"cut=a@1ms", {"'cut=a@1ms'", "FROM>TO@TIME"}},
      {"cut=a>b", {"FROM>TO@TIME"}},
      {"cut=a>a@1ms", {"cut from itself"}},
      {"cut=a>b c@1ms", {"node name 'b c'"}},
      {"cut=>b@1ms", {"node name ''"}},
      {"cut=a>b@1ms+1", {"no time unit"}},
      {"loss=0.1,loss=0.2", {"'loss=0.2'", "'loss' given twice"}},
      {"loss", {"'loss'", "not key=value"}},
      {"loss=0.1,,dup=0.1", {"empty item"}},
      {"loss=0.1,", {"empty item"}},
  };
  for (const BadSpec& c : cases) {
    const FaultPlanResult r = ParseFaultSpec(c.spec);
    EXPECT_FALSE(r.ok()) << c.spec;
    for (const char* w : c.words) {
      EXPECT_NE(r.error.find(w), std::string::npos) << c.spec << " -> " << r.error;
    }
  }
}

TEST(FaultPlan, ToStringPrintsOnlyWhatDiffersInKeyOrder) {
  FaultPlan p;
  p.loss = 0.01;
  p.latency = 10 * kMicrosecond;
  p.bandwidth_bps = 100'000'000'000;
  p.partitions.push_back({5 * kMillisecond, 2 * kMillisecond, "", ""});
  p.crashes.push_back({"b", 8 * kMillisecond, kNever});
  EXPECT_EQ(ToString(p), "loss=0.01,latency=10us,bw=100g,partition=5ms+2ms,crash=b@8ms");
}

TEST(FaultPlan, ToStringRoundTripsThroughTheParser) {
  const char* specs[] = {
      "loss=0.01,reorder=0.05,dup=0.01,corrupt=0.001,latency=10us,bw=100g,"
      "partition=5ms+2ms,crash=b@8ms+1ms",
      "loss=1,dup=1,reorder=1,reorder_delay=1ns,corrupt=1,latency=1s,jitter=1500ns,bw=7,"
      "queue=1,partition=0ns,partition=1ms+0ns,cut=x>y@5us,crash=x@1us,crash=y@2us+3us",
      "cut=a>b@1ms+2ms,partition=3ms,cut=b>a@4ms",  // windows keep their order
      "reorder_delay=0ns",
      "loss=1e-300",
  };
  for (const char* spec : specs) {
    const FaultPlan p = Parse(spec);
    EXPECT_EQ(Parse(ToString(p)), p) << spec << " -> " << ToString(p);
  }
  // Printed in the parser's key order, whatever order the spec used.
  EXPECT_EQ(ToString(Parse(specs[0])),
            "loss=0.01,dup=0.01,reorder=0.05,corrupt=0.001,latency=10us,bw=100g,"
            "partition=5ms+2ms,crash=b@8ms+1ms");
}

TEST(FaultPlan, RandomizedPlansStayBelowTheMaximaAndRoundTrip) {
  const FaultPlan max = Parse(
      "loss=0.05,dup=0.02,reorder=0.1,corrupt=0.01,latency=10us,jitter=1us,bw=100g,"
      "partition=5ms+2ms,crash=b@8ms+1ms");
  Rng rng(2024);
  bool loss_varies = false;
  double first_loss = -1;
  for (int i = 0; i < 1000; ++i) {
    Rng seed_rng = rng.Fork(static_cast<uint64_t>(i));
    const FaultPlan p = RandomizeFaultPlan(seed_rng, max);
    ASSERT_GE(p.loss, 0.0);
    ASSERT_LE(p.loss, max.loss);
    ASSERT_LE(p.duplicate, max.duplicate);
    ASSERT_LE(p.reorder, max.reorder);
    ASSERT_LE(p.corrupt, max.corrupt);
    ASSERT_EQ(p.latency, max.latency);
    ASSERT_EQ(p.bandwidth_bps, max.bandwidth_bps);
    ASSERT_EQ(p.partitions, max.partitions);
    ASSERT_EQ(p.crashes, max.crashes);
    ASSERT_EQ(Parse(ToString(p)), p) << ToString(p);
    if (first_loss < 0) first_loss = p.loss;
    loss_varies |= p.loss != first_loss;
  }
  EXPECT_TRUE(loss_varies);
  // Deterministic: the same seed gives the same plan.
  Rng a(5), b(5);
  EXPECT_EQ(RandomizeFaultPlan(a, max), RandomizeFaultPlan(b, max));
}

TEST(FaultPlan, ToPathConfigCopiesThePerFrameFaults) {
  const PathConfig c = ToPathConfig(
      Parse("loss=0.1,dup=0.2,reorder=0.3,reorder_delay=4us,corrupt=0.5,latency=6us,jitter=7us,"
            "bw=8g,queue=9000,partition=1ms"));
  EXPECT_EQ(c.loss, 0.1);
  EXPECT_EQ(c.duplicate, 0.2);
  EXPECT_EQ(c.reorder, 0.3);
  EXPECT_EQ(c.reorder_delay, 4000U);
  EXPECT_EQ(c.corrupt, 0.5);
  EXPECT_EQ(c.latency, 6000U);
  EXPECT_EQ(c.jitter, 7000U);
  EXPECT_EQ(c.bandwidth_bps, 8'000'000'000U);
  EXPECT_EQ(c.queue_limit_bytes, 9000U);
  EXPECT_FALSE(c.partitioned);
}

}  // namespace
}  // namespace dxpu::sim
