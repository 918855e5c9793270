// pool_simulate_test.cc - `dxpu pool simulate`'s parts: the openb trace readers on good and bad
// files, FGD's arrivals, the fixed-server policies on clusters small enough to check by hand,
// and whole runs on a generated sample (docs/pool-simulate.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "manager/simulate/arrivals.h"
#include "manager/simulate/curve_svg.h"
#include "manager/simulate/fixed_cluster.h"
#include "manager/simulate/fixed_world.h"
#include "manager/simulate/openb_trace.h"
#include "manager/simulate/pool_world.h"
#include "manager/simulate/sample_trace.h"

namespace dxpu::poolsim {
namespace {

constexpr const char* kPodHeader =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n";

// ---- the readers ----

TEST(OpenbTrace, NodeListRowsAndSkips) {
  const NodeList list = ParseNodeList(
      "sn,cpu_milli,memory_mib,gpu,model\r\n"
      "n0,64000,262144,2,P100\r\n"
      "n1,32000,262144,0,\n"
      "\n"
      "n2,96000,393216,8,G2\n"
      "n0,1,1,1,T4\n"            // duplicate-name
      "n3,abc,1,1,T4\n"          // bad-number
      "n4,1,1,2,\n"              // gpus-without-model
      "n5,1,1\n"                 // wrong-column-count
      ",1,1,1,T4\n"              // no-name
      "n6,1,1,99999999999,T4\n"  // bad-number (past the limit)
      "n7,-1,1,1,T4\n");         // bad-number
  ASSERT_TRUE(list.ok()) << list.error;
  ASSERT_EQ(list.rows.size(), 3u);
  EXPECT_EQ(list.rows[0].name, "n0");
  EXPECT_EQ(list.rows[0].cpu_milli, 64000u);
  EXPECT_EQ(list.rows[0].memory_mib, 262144u);
  EXPECT_EQ(list.rows[0].gpus, 2u);
  EXPECT_EQ(list.rows[0].model, "P100");
  EXPECT_EQ(list.rows[1].gpus, 0u);
  EXPECT_EQ(list.rows[2].model, "G2");
  EXPECT_EQ(list.skipped, (SkipCounts{{"bad-number", 3},
                                      {"duplicate-name", 1},
                                      {"gpus-without-model", 1},
                                      {"no-name", 1},
                                      {"wrong-column-count", 1}}));
  EXPECT_EQ(list.skipped_total(), 7u);
}

TEST(OpenbTrace, FilesThatAreNotNodeListsAreErrors) {
  for (const char* text : {"", "\n\n", "name,cpu\nx,1\n", "sn,cpu_milli,memory_mib,gpu\n",
                           "SN,CPU_MILLI,MEMORY_MIB,GPU,MODEL\n"}) {
    const NodeList list = ParseNodeList(text);
    EXPECT_FALSE(list.ok()) << text;
    EXPECT_TRUE(list.rows.empty());
  }
  EXPECT_NE(ParseNodeList("x\n").error.find("line 1: the header is not"), std::string::npos);
  const NodeList missing = ReadNodeList("/nonexistent/nodes.csv");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.error.find("/nonexistent/nodes.csv"), std::string::npos);
  // A header alone: no rows, no error (the command says there is no node with GPUs).
  const NodeList empty = ParseNodeList("sn,cpu_milli,memory_mib,gpu,model\n");
  EXPECT_TRUE(empty.ok());
  EXPECT_TRUE(empty.rows.empty());
}

TEST(OpenbTrace, PodListRowsAndSkips) {
  const PodList list =
      ParsePodList(std::string(kPodHeader) +
                   "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
                   "p1,6000,12288,1,460,,LS,Running,427061,12902960,427061\n"
                   "p2,20000,65536,0,0,,LS,Running,2759674,12902960,2759676\n"
                   "p3,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497\n"
                   "p4,8000,30517,1,440,G2|P100|T4|T4,LS,Running,9671707,,\n"
                   "p5,1,1,1,0,,LS,Running,0,1,0\n"         // gpu-milli-out-of-range
                   "p6,1,1,1,1001,,LS,Running,0,1,0\n"      // gpu-milli-out-of-range
                   "p7,1,1,0,500,,LS,Running,0,1,0\n"       // gpu-milli-without-gpus
                   "p8,1,1,1,500,,LS,Running,x,1,0\n"       // bad-time
                   "p9,1,1,1,500,,LS,Running,10,5,10\n"     // deleted-before-created
                   "p10,1,1,1,500,,LS,Running,0,1\n"        // wrong-column-count
                   "p11,1,1,1.5,500,,LS,Running,0,1,0\n");  // bad-number
  ASSERT_TRUE(list.ok()) << list.error;
  ASSERT_EQ(list.rows.size(), 5u);
  EXPECT_EQ(list.rows[0].total_gpu_milli(), 1000u);
  EXPECT_FALSE(list.rows[0].shares_a_gpu());
  EXPECT_TRUE(list.rows[1].shares_a_gpu());
  EXPECT_EQ(list.rows[1].creation_time, 427061u);
  EXPECT_EQ(list.rows[2].num_gpu, 0u);
  EXPECT_EQ(list.rows[3].total_gpu_milli(), 8000u);
  EXPECT_EQ(list.rows[4].gpu_spec, (std::vector<std::string>{"G2", "P100", "T4"}));
  EXPECT_FALSE(list.rows[4].deletion_time.has_value());
  EXPECT_EQ(list.skipped, (SkipCounts{{"bad-number", 1},
                                      {"bad-time", 1},
                                      {"deleted-before-created", 1},
                                      {"gpu-milli-out-of-range", 2},
                                      {"gpu-milli-without-gpus", 1},
                                      {"wrong-column-count", 1}}));
  // The multigpu lists' five columns.
  const PodList shorter = ParsePodList(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,2,1000\np1,1,1,1,1,1\n");
  ASSERT_TRUE(shorter.ok()) << shorter.error;
  ASSERT_EQ(shorter.rows.size(), 1u);
  EXPECT_EQ(shorter.skipped.at("wrong-column-count"), 1u);
}

// ---- arrivals ----

std::vector<TracePod> Pods(const std::vector<std::pair<uint32_t, uint32_t>>& gpus_milli) {
  std::vector<TracePod> pods;
  for (const auto& [n, m] : gpus_milli) {
    TracePod p;
    p.name = "p" + std::to_string(pods.size());
    p.cpu_milli = 1000;
    p.memory_mib = 1024;
    p.num_gpu = n;
    p.gpu_milli = m;
    pods.push_back(p);
  }
  return pods;
}

uint64_t MilliOf(const std::vector<TracePod>& pods, const std::vector<size_t>& order) {
  uint64_t sum = 0;
  for (size_t i : order) sum += pods[i].total_gpu_milli();
  return sum;
}

TEST(Arrivals, EveryTracePodOnceThenDrawsUpToTheRatio) {
  const std::vector<TracePod> pods =
      Pods({{1, 1000}, {1, 500}, {0, 0}, {2, 1000}, {1, 250}, {1, 1000}});
  const uint64_t capacity = 8000;  // the pods ask for 5,750
  const std::vector<size_t> order = FgdArrivals(pods, capacity, {.ratio = 1.3, .seed = 7});
  ASSERT_GT(order.size(), pods.size());
  // The first arrivals are the trace's pods, each once, in an order of their own.
  std::vector<size_t> head(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(pods.size()));
  std::vector<size_t> sorted = head;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> all(pods.size());
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
  // Up to, never past, 130% of the capacity; within one more pod of it.
  const uint64_t asked = MilliOf(pods, order);
  EXPECT_LE(asked, 10400u);
  EXPECT_GT(asked + 2000, 10400u);
  // The same seed, the same arrivals; another seed, another order.
  EXPECT_EQ(FgdArrivals(pods, capacity, {.ratio = 1.3, .seed = 7}), order);
  bool differs = false;
  for (uint64_t seed = 8; seed < 16 && !differs; ++seed)
    differs = FgdArrivals(pods, capacity, {.ratio = 1.3, .seed = seed}) != order;
  EXPECT_TRUE(differs);
}

TEST(Arrivals, ATraceThatAsksForMoreLosesPodsAtRandom) {
  const std::vector<TracePod> pods = Pods({{8, 1000}, {8, 1000}, {4, 1000}, {1, 1000}, {0, 0}});
  const std::vector<size_t> order = FgdArrivals(pods, 10000, {.ratio = 1.0, .seed = 3});
  EXPECT_LE(MilliOf(pods, order), 10000u);
  EXPECT_LT(order.size(), pods.size());
  EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), order.size());
  // No GPU pod at all: the trace once, nothing drawn.
  EXPECT_EQ(FgdArrivals(Pods({{0, 0}, {0, 0}}), 1000, {}).size(), 2u);
  EXPECT_TRUE(FgdArrivals({}, 1000, {}).empty());
}

// ---- fixed servers ----

TraceNode Node(std::string name, uint64_t cpu, uint32_t gpus, std::string model) {
  return {std::move(name), cpu, uint64_t{1} << 20, gpus, std::move(model)};
}

TracePod Pod(uint64_t cpu, uint32_t gpus, uint32_t milli, std::vector<std::string> spec = {}) {
  TracePod p;
  p.name = "p";
  p.cpu_milli = cpu;
  p.memory_mib = 1024;
  p.num_gpu = gpus;
  p.gpu_milli = milli;
  p.gpu_spec = std::move(spec);
  return p;
}

TEST(FixedCluster, BestFitTakesTheNodeLeftWithTheLeast) {
  Rng rng(1);
  // Node 0 has 6 GPUs free after a 2-GPU pod; node 1, with 2 GPUs, is the tighter fit.
  FixedCluster c(
      {Node("big", 96000, 8, "G2"), Node("small", 96000, 2, "G2"), Node("cpu", 32000, 0, "")}, rng);
  EXPECT_EQ(c.node_count(), 2u);  // the node without GPUs takes no part
  EXPECT_EQ(c.gpu_capacity_milli(), 10000u);
  EXPECT_EQ(c.Place(Pod(8000, 1, 1000), FixedPolicy::kBestFit), 1u);
  // A shared GPU goes to the fullest GPU that holds it.
  EXPECT_EQ(c.Place(Pod(1000, 1, 300), FixedPolicy::kBestFit), 1u);
  EXPECT_EQ(c.gpu_free(1), (std::vector<uint32_t>{0, 700}));
  EXPECT_EQ(c.Place(Pod(1000, 1, 600), FixedPolicy::kBestFit), 1u);
  EXPECT_EQ(c.gpu_free(1), (std::vector<uint32_t>{0, 100}));
  // A whole GPU no longer fits the small node: the big one, its lowest-numbered GPUs.
  EXPECT_EQ(c.Place(Pod(1000, 2, 1000), FixedPolicy::kBestFit), 0u);
  EXPECT_EQ(c.gpu_free(0), (std::vector<uint32_t>{0, 0, 1000, 1000, 1000, 1000, 1000, 1000}));
  EXPECT_EQ(c.gpu_allocated_milli(), 3900u);
  // Too much CPU anywhere: refused, nothing taken.
  EXPECT_FALSE(c.Place(Pod(200000, 1, 1000), FixedPolicy::kBestFit).has_value());
  EXPECT_FALSE(c.Place(Pod(1000, 7, 1000), FixedPolicy::kBestFit).has_value());
  EXPECT_EQ(c.gpu_allocated_milli(), 3900u);
}

TEST(FixedCluster, GpuModelConstraintsAreHonouredByEveryPolicy) {
  for (FixedPolicy policy :
       {FixedPolicy::kBestFit, FixedPolicy::kRandomFit, FixedPolicy::kFirstFit}) {
    Rng rng(5);
    FixedCluster c(
        {Node("a", 96000, 8, "G2"), Node("b", 96000, 2, "T4"), Node("c", 96000, 4, "V100M32")},
        rng);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(c.Place(Pod(1000, 1, 1000, {"V100M16", "V100M32"}), policy), 2u)
          << FixedPolicyName(policy);
    EXPECT_FALSE(c.Place(Pod(1000, 1, 1000, {"V100M32"}), policy).has_value());
    EXPECT_EQ(c.Place(Pod(1000, 1, 1000, {"T4"}), policy), 1u);
  }
}

TEST(FixedCluster, RandomFitSpreadsOverTheNodesThatFit) {
  Rng rng(9);
  std::vector<TraceNode> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(Node("n" + std::to_string(i), 1'000'000, 8, "G2"));
  nodes.push_back(Node("t4", 1'000'000, 8, "T4"));
  FixedCluster c(nodes, rng);
  std::vector<int> chosen(nodes.size(), 0);
  for (int i = 0; i < 24; ++i)
    ++chosen[*c.Place(Pod(1000, 1, 1000, {"G2"}), FixedPolicy::kRandomFit)];
  EXPECT_EQ(chosen[4], 0);  // never the T4 node
  for (int i = 0; i < 4; ++i) EXPECT_GT(chosen[i], 0) << i;
  EXPECT_EQ(std::accumulate(chosen.begin(), chosen.end(), 0), 24);
}

// The Kubernetes scheduler's default scoring spreads: the emptiest node (CPU and memory), with
// CPU and memory kept in balance; it does not see GPUs.
TEST(FixedCluster, KubernetesDefaultSpreads) {
  Rng rng(3);
  FixedCluster c({Node("a", 96000, 8, "G2"), Node("b", 96000, 8, "G2")}, rng);
  const std::optional<size_t> first = c.Place(Pod(48000, 1, 1000), FixedPolicy::kKubernetes);
  ASSERT_TRUE(first.has_value());
  // The second pod goes to the other node (best-fit would stack it on the first).
  EXPECT_EQ(c.Place(Pod(8000, 1, 1000), FixedPolicy::kKubernetes), 1 - *first);
  EXPECT_EQ(c.Place(Pod(8000, 1, 1000), FixedPolicy::kBestFit), *first);
  EXPECT_EQ(ParseFixedPolicy("k8s-default"), FixedPolicy::kKubernetes);
}

TEST(FixedCluster, PolicyNames) {
  for (FixedPolicy p : {FixedPolicy::kBestFit, FixedPolicy::kRandomFit, FixedPolicy::kFirstFit,
                        FixedPolicy::kKubernetes})
    EXPECT_EQ(ParseFixedPolicy(FixedPolicyName(p)), p);
  EXPECT_FALSE(ParseFixedPolicy("worst-fit").has_value());
}

// ---- the DxPU world ----

// GPUs stranded in a server whose CPUs are too few: fixed servers refuse the pod, the pool
// gives it a host with the CPUs and the GPUs from the other box.
TEST(PoolWorld, APodTakesCpusFromOneHostAndGpusFromAnotherBox) {
  const std::vector<TraceNode> nodes = {Node("gpus", 8000, 8, "G2"), Node("cpus", 96000, 2, "T4")};
  const TracePod pod = Pod(16000, 4, 1000, {"G2"});
  Rng rng(1);
  FixedCluster fixed(nodes, rng);
  EXPECT_FALSE(fixed.Place(pod, FixedPolicy::kBestFit).has_value());
  for (PoolPolicy policy : {PoolPolicy::kNaive, PoolPolicy::kScarcity}) {
    PoolCluster pool(nodes, {.policy = policy});
    EXPECT_EQ(pool.gpu_capacity_milli(), 10000u);
    ASSERT_TRUE(pool.Place(pod)) << PoolPolicyName(policy);
    EXPECT_EQ(pool.gpus_lent(), 4u);
    EXPECT_EQ(pool.gpu_allocated_milli(), 4000u);
    // Only 4 G2 are left, and the T4s are not G2.
    EXPECT_FALSE(pool.Place(Pod(1000, 5, 1000, {"G2"})));
    EXPECT_TRUE(pool.Place(Pod(1000, 2, 1000, {"T4"})));
    EXPECT_FALSE(pool.Place(Pod(1000, 1, 1000, {"V100M32"})));
    EXPECT_EQ(pool.gpus_lent(), 6u);
  }
}

// Idle GPUs on a node whose CPUs are gone are stranded in fixed servers, not in the pool while
// any host in scope can still take the typical pod.
TEST(PoolWorld, StrandedGpus) {
  const std::vector<TraceNode> nodes = {Node("gpus", 8000, 8, "G2"), Node("cpus", 96000, 2, "T4")};
  const TracePod cpu_hog = Pod(8000, 1, 1000, {"G2"});  // all of the G2 node's CPUs
  const Ask typical{4000, 1024};
  EXPECT_EQ(TypicalAsk({Pod(1000, 1, 500), Pod(4000, 1, 1000), Pod(9000, 2, 1000), Pod(99, 0, 0)})
                .cpu_milli,
            4000u);
  Rng rng(2);
  FixedCluster fixed(nodes, rng);
  EXPECT_EQ(fixed.IdleAndStranded(typical), (std::pair<size_t, size_t>{10, 0}));
  ASSERT_EQ(fixed.Place(cpu_hog, FixedPolicy::kBestFit), 0u);
  EXPECT_EQ(fixed.IdleAndStranded(typical), (std::pair<size_t, size_t>{9, 7}));
  PoolCluster pool(nodes, {});
  ASSERT_TRUE(pool.Place(cpu_hog));  // the tightest host: the G2 node's
  EXPECT_EQ(pool.IdleAndStranded(typical), (std::pair<size_t, size_t>{9, 0}));
  PoolCluster rows(nodes, {.row_nodes = 1});
  ASSERT_TRUE(rows.Place(cpu_hog));
  EXPECT_EQ(rows.IdleAndStranded(typical), (std::pair<size_t, size_t>{9, 7}));
}

// A placement's reach: GPUs in a box of the host's rack (one switch) or beyond (the spine).
TEST(PoolWorld, PlacementsInTheHostsRackOrAcrossTheSpine) {
  const std::vector<TraceNode> nodes = {Node("gpus", 8000, 8, "G2"), Node("cpus", 96000, 2, "T4")};
  for (size_t rack_nodes : {size_t{1}, size_t{2}}) {
    PoolCluster pool(nodes, {.rack_nodes = rack_nodes});
    ASSERT_TRUE(pool.Place(Pod(16000, 4, 1000, {"G2"})));  // host "cpus", GPUs from "gpus"
    EXPECT_EQ(pool.gpu_pods_in_rack(), rack_nodes == 2 ? 1u : 0u);
    EXPECT_EQ(pool.gpu_pods_across_racks(), rack_nodes == 2 ? 0u : 1u);
  }
  // The scarcity policy asks the manager for the host's own box first; the naive one packs
  // (the box with the fewest free GPUs that holds the request: the other one).
  const std::vector<TraceNode> two = {Node("small", 8000, 2, "G2"), Node("big", 96000, 8, "G2")};
  PoolCluster naive(two, {.policy = PoolPolicy::kNaive, .rack_nodes = 1});
  ASSERT_TRUE(naive.Place(Pod(90000, 1, 1000)));  // only "big" has the CPUs
  EXPECT_EQ(naive.gpu_pods_across_racks(), 1u);
  PoolCluster own(two, {.policy = PoolPolicy::kScarcity, .rack_nodes = 1});
  ASSERT_TRUE(own.Place(Pod(90000, 1, 1000)));
  EXPECT_EQ(own.gpu_pods_in_rack(), 1u);
}

// The scarcity policy keeps a wholly free box whole for a pod that wants most of it: the small
// pod goes beside the GPUs already lent, the 8-GPU pod then finds its host's box whole.
TEST(PoolWorld, ScarcityKeepsWholeBoxesForBigPods) {
  PoolCluster pool({Node("a", 20000, 8, "G2"), Node("b", 200000, 8, "G2")},
                   {.policy = PoolPolicy::kScarcity, .rack_nodes = 1});
  ASSERT_TRUE(pool.Place(Pod(150000, 1, 1000)));  // only b has the CPUs: b's box
  ASSERT_TRUE(pool.Place(Pod(10000, 1, 1000)));   // a is tighter, but its box is whole: b
  ASSERT_TRUE(pool.Place(Pod(10000, 8, 1000)));   // a's whole box, on host a
  EXPECT_EQ(pool.gpu_pods_in_rack(), 3u);
  EXPECT_EQ(pool.gpu_pods_across_racks(), 0u);
}

// The scarcity policy's other two rules, each against the naive policy on the same pods.
TEST(PoolWorld, ScarcityLeavesTheModelsConstrainedPodsWant) {
  const std::vector<TraceNode> nodes = {Node("a", 96000, 8, "T4"), Node("b", 96000, 2, "G2")};
  for (PoolPolicy policy : {PoolPolicy::kNaive, PoolPolicy::kScarcity}) {
    PoolCluster pool(nodes, {.policy = policy});
    ASSERT_TRUE(pool.Place(Pod(1000, 1, 1000, {"T4"})));  // T4s are wanted by name
    ASSERT_TRUE(pool.Place(Pod(1000, 1, 1000)));          // any model: naive takes the most free
    // Seven T4s for the next T4-only pod only if the unconstrained one took a G2.
    EXPECT_EQ(pool.Place(Pod(1000, 7, 1000, {"T4"})), policy == PoolPolicy::kScarcity)
        << PoolPolicyName(policy);
  }
}

TEST(PoolWorld, ScarcityStartsASharedGpuWhereItsRestCanBeUsed) {
  const std::vector<TraceNode> nodes = {Node("a", 3000, 8, "G2"), Node("b", 96000, 8, "G2")};
  for (PoolPolicy policy : {PoolPolicy::kNaive, PoolPolicy::kScarcity}) {
    PoolCluster pool(nodes, {.policy = policy});
    ASSERT_TRUE(pool.Place(Pod(1000, 1, 500)));  // naive: the tightest host, a
    ASSERT_TRUE(pool.Place(Pod(2500, 1, 500)));  // shares the first GPU only if a is not its host
    EXPECT_EQ(pool.gpus_lent(), policy == PoolPolicy::kScarcity ? 1u : 2u)
        << PoolPolicyName(policy);
  }
}

TEST(PoolWorld, SharedPodsShareAGpuTheirHostBorrowed) {
  PoolCluster pool({Node("a", 96000, 8, "G2")}, {});
  EXPECT_TRUE(pool.Place(Pod(1000, 1, 300)));
  EXPECT_TRUE(pool.Place(Pod(1000, 1, 600)));
  EXPECT_EQ(pool.gpus_lent(), 1u);  // both on one GPU
  EXPECT_TRUE(pool.Place(Pod(1000, 1, 200)));
  EXPECT_EQ(pool.gpus_lent(), 2u);  // 100 left on the first: a second GPU
  EXPECT_EQ(pool.gpu_allocated_milli(), 1100u);
  // CPU-only pods take CPUs only.
  EXPECT_TRUE(pool.Place(Pod(90000, 0, 0)));
  EXPECT_FALSE(pool.Place(Pod(10000, 0, 0)));
  EXPECT_EQ(pool.gpu_allocated_milli(), 1100u);
}

TEST(PoolWorld, ARowOfRacksIsTheFabricsScope) {
  const std::vector<TraceNode> nodes = {Node("gpus", 8000, 8, "G2"), Node("cpus", 96000, 2, "T4")};
  PoolCluster rows(nodes, {.row_nodes = 1});
  EXPECT_EQ(rows.rows(), 2u);
  EXPECT_FALSE(rows.Place(Pod(16000, 4, 1000, {"G2"})));  // the CPUs' row has no G2
  PoolCluster hall(nodes, {});
  EXPECT_EQ(hall.rows(), 1u);
  EXPECT_TRUE(hall.Place(Pod(16000, 4, 1000, {"G2"})));
  EXPECT_EQ(ParsePoolPolicy("scarcity"), PoolPolicy::kScarcity);
  EXPECT_FALSE(ParsePoolPolicy("best-fit").has_value());
}

// ---- whole runs on a generated sample ----

TEST(FixedWorld, RunsOnTheSampleAddUp) {
  const SampleTrace sample = MakeSampleTrace({.seed = 3, .nodes = 48, .pods = 400});
  const NodeList nodes = ParseNodeList(sample.node_csv);
  const PodList pods = ParsePodList(sample.pod_csv);
  ASSERT_TRUE(nodes.ok() && pods.ok());
  EXPECT_EQ(nodes.rows.size(), 48u);
  EXPECT_EQ(pods.rows.size(), 400u);
  EXPECT_EQ(nodes.skipped_total() + pods.skipped_total(), 0u);
  double best_sum = 0;
  double random_sum = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    for (FixedPolicy policy : {FixedPolicy::kBestFit, FixedPolicy::kRandomFit}) {
      const SimRun r = RunFixed(nodes.rows, pods.rows, policy, {.ratio = 1.3, .seed = seed});
      EXPECT_EQ(r.world, "fixed");
      EXPECT_EQ(r.placed + r.refused, r.arrivals);
      EXPECT_LE(r.arrived_milli, r.capacity_milli * 13 / 10);
      EXPECT_LE(r.allocated_milli, r.capacity_milli);
      EXPECT_LE(r.allocated_milli, r.arrived_milli);
      EXPECT_LE(r.constrained_placed, r.constrained_arrivals);
      // The cluster is over-asked: pods are refused, and the first refusal is recorded.
      ASSERT_TRUE(r.first_failure.has_value());
      EXPECT_GT(r.refused, 0u);
      EXPECT_LE(r.first_failure->allocated_percent, r.AllocatedAt(130) + 1e-9);
      // Nothing leaves: the allocation never falls as more arrives.
      for (size_t i = 1; i < r.curve.size(); ++i) {
        EXPECT_GT(r.curve[i].arrived_percent, r.curve[i - 1].arrived_percent);
        EXPECT_GE(r.curve[i].allocated_percent + 1e-9, r.curve[i - 1].allocated_percent);
      }
      (policy == FixedPolicy::kBestFit ? best_sum : random_sum) += r.AllocatedAt(130);
    }
  }
  // As on the real trace: best-fit packs fuller than random-fit.
  EXPECT_GT(best_sum, random_sum);
  // The same seed, the same run.
  const SimRun a = RunFixed(nodes.rows, pods.rows, FixedPolicy::kRandomFit, {.seed = 11});
  const SimRun b = RunFixed(nodes.rows, pods.rows, FixedPolicy::kRandomFit, {.seed = 11});
  EXPECT_EQ(a.allocated_milli, b.allocated_milli);
  EXPECT_EQ(a.placed, b.placed);
}

TEST(PoolWorld, RunsOnTheSampleAddUpWithTheFixedWorldsArrivals) {
  const SampleTrace sample = MakeSampleTrace({.seed = 3, .nodes = 48, .pods = 400});
  const NodeList nodes = ParseNodeList(sample.node_csv);
  const PodList pods = ParsePodList(sample.pod_csv);
  ASSERT_TRUE(nodes.ok() && pods.ok());
  for (PoolPolicy policy : {PoolPolicy::kNaive, PoolPolicy::kScarcity}) {
    for (size_t row_nodes : {size_t{0}, size_t{8}}) {
      const SimRun r =
          RunPool(nodes.rows, pods.rows, {.policy = policy, .row_nodes = row_nodes}, {.seed = 2});
      const SimRun fixed = RunFixed(nodes.rows, pods.rows, FixedPolicy::kBestFit, {.seed = 2});
      EXPECT_EQ(r.world, "dxpu");
      EXPECT_EQ(r.policy, PoolPolicyName(policy));
      // The same pods arrive in both worlds, at the same capacity.
      EXPECT_EQ(r.arrivals, fixed.arrivals);
      EXPECT_EQ(r.arrived_milli, fixed.arrived_milli);
      EXPECT_EQ(r.capacity_milli, fixed.capacity_milli);
      EXPECT_EQ(r.placed + r.refused, r.arrivals);
      EXPECT_LE(r.allocated_milli, r.capacity_milli);
      EXPECT_LE(r.constrained_placed, r.constrained_arrivals);
      for (size_t i = 1; i < r.curve.size(); ++i)
        EXPECT_GE(r.curve[i].allocated_percent + 1e-9, r.curve[i - 1].allocated_percent);
    }
  }
}

TEST(FixedWorld, SampleIsDeterministicAndShapedLikeTheTrace) {
  const SampleTrace a = MakeSampleTrace({.seed = 4});
  EXPECT_EQ(MakeSampleTrace({.seed = 4}).pod_csv, a.pod_csv);
  EXPECT_NE(MakeSampleTrace({.seed = 5}).pod_csv, a.pod_csv);
  const PodList pods = ParsePodList(a.pod_csv);
  ASSERT_TRUE(pods.ok());
  size_t cpu_only = 0, shared = 0, constrained = 0;
  for (const TracePod& p : pods.rows) {
    cpu_only += p.num_gpu == 0 ? 1 : 0;
    shared += p.shares_a_gpu() ? 1 : 0;
    constrained += p.gpu_spec.empty() ? 0 : 1;
  }
  EXPECT_GT(cpu_only, 0u);
  EXPECT_GT(shared, pods.rows.size() / 5);
  EXPECT_GT(constrained, 0u);
}

TEST(CurveSvg, ALinePerCurveItsPointsAndEscapedNames) {
  const std::string svg =
      CurveSvg({{"best-fit", {{0, 0}, {50, 50}, {130, 93}}, std::pair{92.9, 92.8}},
                {"a<b & \"c\"", {{0, 0}, {130, 90}}, std::nullopt}},
               130, "t<1>");
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1))
    ++lines;
  EXPECT_EQ(lines, 2u);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '<') - std::count(svg.begin(), svg.end(), '>'), 0);
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_NE(svg.find("t&lt;1&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  // The first curve's last point at x 130% (the right edge), y 93% (40 + 7% of 350); one dot (one
  // first refusal).
  EXPECT_NE(svg.find("540.0,64.5"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<circle"), std::string::npos);
  EXPECT_EQ(svg.find("<circle"), svg.rfind("<circle"));
}

}  // namespace
}  // namespace dxpu::poolsim
