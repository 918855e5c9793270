// flow_network_test.cc - lib/perfmodel/flow_network.h: links shared max-min fairly, first-in
// first-out queues behind them, what a few bytes behind a queue wait, and a time run past.
#include "perfmodel/flow_network.h"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>

namespace dxpu::perfmodel {
namespace {

constexpr double kTol = 1e-6;

TEST(FlowNetwork, AFlowAloneTakesItsLinksRate) {
  FlowNetwork net({10.0}, {});
  const std::array<size_t, 1> link = {0};
  const size_t a = net.Add(100, 1000, link);
  EXPECT_NEAR(net.End(a), 200, kTol);
}

TEST(FlowNetwork, FlowsOnALinkShareItAndTheOneLeftSpeedsUp) {
  FlowNetwork net({10.0}, {});
  const std::array<size_t, 1> link = {0};
  const size_t a = net.Add(0, 1000, link);
  const size_t b = net.Add(0, 2000, link);
  // 5 bytes/ns each until a ends (200 ns); b's last 1000 bytes alone at 10.
  EXPECT_NEAR(net.End(a), 200, kTol);
  EXPECT_NEAR(net.End(b), 300, kTol);
}

TEST(FlowNetwork, AFlowHeldBackElsewhereLeavesTheRestToTheOthers) {
  // Link 0 (10) carries a and b; link 1 (2) carries b too: b gets 2, a the 8 left (max-min).
  FlowNetwork net({10.0, 2.0}, {});
  const std::array<size_t, 1> only0 = {0};
  const std::array<size_t, 2> both = {0, 1};
  const size_t a = net.Add(0, 800, only0);
  const size_t b = net.Add(0, 200, both);
  EXPECT_NEAR(net.End(a), 100, kTol);
  EXPECT_NEAR(net.End(b), 100, kTol);
}

TEST(FlowNetwork, AFlowThatStartsLaterSlowsTheOneRunning) {
  FlowNetwork net({10.0}, {});
  const std::array<size_t, 1> link = {0};
  const size_t a = net.Add(0, 1000, link);
  const size_t b = net.Add(50, 250, link);  // a has 500 left then; both at 5 until b ends
  EXPECT_NEAR(net.End(b), 100, kTol);
  EXPECT_NEAR(net.End(a), 125, kTol);
  EXPECT_EQ(net.clamped(), 0U);
}

TEST(FlowNetwork, TwoLinksIntoOneQueueWaitThere) {
  // Each flow crosses its own link at 10 in 100 ns; the queue sends at 10: 2000 bytes take
  // 200 ns, and both last bytes arrived together, so both leave at 200.
  FlowNetwork net({10.0, 10.0}, {10.0});
  const std::array<size_t, 1> l0 = {0};
  const std::array<size_t, 1> l1 = {1};
  const size_t a = net.Add(0, 1000, l0, 0);
  const size_t b = net.Add(0, 1000, l1, 0);
  EXPECT_NEAR(net.End(a), 200, kTol);
  EXPECT_NEAR(net.End(b), 200, kTol);
  // A few bytes reaching the queue at 100 wait behind the 1000 held then.
  EXPECT_NEAR(net.Through(0, 100), 200, kTol);
  // At 150 half of that is gone; at 250 nothing is held.
  EXPECT_NEAR(net.Through(0, 150), 200, kTol);
  EXPECT_NEAR(net.Through(0, 250), 250, kTol);
}

TEST(FlowNetwork, AQueueNoFasterThanItsArrivalsHoldsNothing) {
  FlowNetwork net({10.0}, {10.0});
  const std::array<size_t, 1> link = {0};
  const size_t a = net.Add(0, 1000, link, 0);
  EXPECT_NEAR(net.End(a), 100, kTol);
  EXPECT_NEAR(net.Through(0, 50), 50, kTol);
}

TEST(FlowNetwork, ATimeRunPastIsLookedUpInTheQueuesHistory) {
  FlowNetwork net({10.0, 10.0}, {5.0});
  const std::array<size_t, 1> l0 = {0};
  const std::array<size_t, 1> l1 = {1};
  const size_t a = net.Add(0, 1000, l0, 0);
  net.Add(0, 1000, l1, 0);
  // Held grows at 20 - 5 = 15 bytes/ns for 100 ns: 1500 at 100, then drains at 5.
  EXPECT_NEAR(net.End(a), 100 + (1500 / 5.0), kTol);
  net.Through(0, 1000);  // runs the network well past
  EXPECT_NEAR(net.Through(0, 40), 40 + (600 / 5.0), kTol);
  EXPECT_NEAR(net.Through(0, 300), 300 + (500 / 5.0), kTol);
}

TEST(FlowNetwork, AFlowAddedBeforeTheTimeRunToStartsThenAndIsCounted) {
  FlowNetwork net({10.0}, {});
  const std::array<size_t, 1> link = {0};
  const size_t a = net.Add(0, 1000, link);
  EXPECT_NEAR(net.End(a), 100, kTol);
  const size_t b = net.Add(20, 1000, link);
  EXPECT_EQ(net.clamped(), 1U);
  EXPECT_NEAR(net.End(b), 200, kTol);
}

TEST(FlowNetwork, NothingToCarryOrNothingInTheWayReachesTheQueueAtOnce) {
  FlowNetwork net({10.0}, {10.0});
  const size_t empty = net.Add(5, 0, std::array<size_t, 1>{0}, 0);
  EXPECT_NEAR(net.End(empty), 5, kTol);
  const size_t direct = net.Add(10, 100, {}, 0);  // 100 bytes into the queue at 10
  EXPECT_NEAR(net.End(direct), 20, kTol);
}

}  // namespace
}  // namespace dxpu::perfmodel
