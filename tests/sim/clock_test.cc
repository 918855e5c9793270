// Tests for the Scheduler: time order, ties in insertion order, cancel, RunUntil.
#include "sim/clock.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dxpu::sim {
namespace {

TEST(Scheduler, RunsInTimeOrderAndAdvancesTheClock) {
  Scheduler s;
  std::vector<std::pair<int, Nanos>> ran;
  s.ScheduleAt(30, [&] { ran.emplace_back(3, s.Now()); });
  s.ScheduleAt(10, [&] { ran.emplace_back(1, s.Now()); });
  s.ScheduleAt(20, [&] { ran.emplace_back(2, s.Now()); });
  EXPECT_EQ(s.Pending(), 3U);
  EXPECT_EQ(s.NextTime(), 10U);
  EXPECT_EQ(s.RunAll(), 3U);
  EXPECT_EQ(ran, (std::vector<std::pair<int, Nanos>>{{1, 10}, {2, 20}, {3, 30}}));
  EXPECT_EQ(s.Now(), 30U);
  EXPECT_TRUE(s.Empty());
  EXPECT_EQ(s.NextTime(), kNever);
  EXPECT_FALSE(s.RunNext());
}

TEST(Scheduler, TiesRunInInsertionOrder) {
  Scheduler s;
  std::string order;
  for (char c = 'a'; c <= 'j'; ++c) s.ScheduleAt(5, [&order, c] { order += c; });
  // Scheduled at the current time from inside an event: after everything already due.
  s.ScheduleAt(5, [&] { s.ScheduleAfter(0, [&] { order += '!'; }); });
  s.ScheduleAt(5, [&] { order += 'k'; });
  s.RunAll();
  EXPECT_EQ(order, "abcdefghijk!");
}

TEST(Scheduler, CancelRemovesOnlyThatEvent) {
  Scheduler s;
  std::string order;
  const EventId a = s.ScheduleAt(1, [&] { order += 'a'; });
  const EventId b = s.ScheduleAt(2, [&] { order += 'b'; });
  const EventId c = s.ScheduleAt(3, [&] { order += 'c'; });
  EXPECT_TRUE(s.Cancel(a));  // the earliest: NextTime moves on
  EXPECT_EQ(s.NextTime(), 2U);
  EXPECT_TRUE(s.Cancel(c));  // one in the middle of the heap
  EXPECT_FALSE(s.Cancel(c));
  EXPECT_FALSE(s.Cancel(12345));
  EXPECT_EQ(s.Pending(), 1U);
  EXPECT_EQ(s.RunAll(), 1U);
  EXPECT_EQ(order, "b");
  EXPECT_FALSE(s.Cancel(b));  // already ran
  EXPECT_TRUE(s.Empty());
}

TEST(Scheduler, AStaleIdDoesNotCancelTheEventThatReusedItsSlot) {
  Scheduler s;
  int ran = 0;
  const EventId old = s.ScheduleAt(1, [&] { ++ran; });
  s.RunAll();
  const EventId reused = s.ScheduleAt(2, [&] { ++ran; });
  EXPECT_NE(old, reused);
  EXPECT_FALSE(s.Cancel(old));
  EXPECT_EQ(s.Pending(), 1U);
  const EventId cancelled = s.ScheduleAt(3, [&] { ++ran; });
  EXPECT_TRUE(s.Cancel(cancelled));
  const EventId third = s.ScheduleAt(4, [&] { ++ran; });
  EXPECT_FALSE(s.Cancel(cancelled));
  s.RunAll();
  EXPECT_EQ(ran, 3);
  EXPECT_FALSE(s.Cancel(third));
}

TEST(Scheduler, ManyEventsInterleaved) {
  // Times drawn from a fixed pattern; the run must be sorted by (time, insertion order).
  Scheduler s;
  std::vector<std::pair<Nanos, int>> ran;
  std::vector<EventId> ids;
  for (int i = 0; i < 10'000; ++i) {
    const Nanos t = static_cast<Nanos>((i * 7919) % 1000);
    ids.push_back(s.ScheduleAt(t, [&ran, &s, i] { ran.emplace_back(s.Now(), i); }));
  }
  for (size_t i = 0; i < ids.size(); i += 3) EXPECT_TRUE(s.Cancel(ids[i]));
  EXPECT_EQ(s.RunAll(), 10'000U - 3'334U);
  for (size_t i = 1; i < ran.size(); ++i) ASSERT_LT(ran[i - 1], ran[i]);
  for (const auto& [t, i] : ran) ASSERT_NE(i % 3, 0);
}

TEST(Scheduler, AnEventMayCancelALaterOne) {
  Scheduler s;
  std::string order;
  EventId later = 0;
  s.ScheduleAt(1, [&] { EXPECT_TRUE(s.Cancel(later)); });
  later = s.ScheduleAt(2, [&] { order += 'x'; });
  s.ScheduleAt(3, [&] { order += 'y'; });
  s.RunAll();
  EXPECT_EQ(order, "y");
}

TEST(Scheduler, RunUntilRunsDueEventsAndSetsTheClock) {
  Scheduler s;
  std::string order;
  s.ScheduleAt(10, [&] { order += 'a'; });
  s.ScheduleAt(20, [&] { order += 'b'; });
  s.ScheduleAt(21, [&] { order += 'c'; });
  EXPECT_EQ(s.RunUntil(20), 2U);  // inclusive
  EXPECT_EQ(order, "ab");
  EXPECT_EQ(s.Now(), 20U);
  EXPECT_EQ(s.RunUntil(15), 0U);  // the clock never goes back
  EXPECT_EQ(s.Now(), 20U);
  EXPECT_EQ(s.RunUntil(100), 1U);
  EXPECT_EQ(s.Now(), 100U);
}

TEST(Scheduler, PastTimesMeanNowAndAfterIsRelative) {
  Scheduler s;
  s.RunUntil(50);
  Nanos at = 0;
  s.ScheduleAt(10, [&] { at = s.Now(); });
  s.RunNext();
  EXPECT_EQ(at, 50U);
  s.ScheduleAfter(7, [&] { at = s.Now(); });
  s.RunNext();
  EXPECT_EQ(at, 57U);
  s.ScheduleAfter(kNever, [] {});  // saturates below kNever
  EXPECT_EQ(s.NextTime(), kNever - 1);
}

TEST(Scheduler, RunAllStopsAtTheLimit) {
  Scheduler s;
  int n = 0;
  // A self-rescheduling event never empties the queue.
  std::function<void()> tick = [&] {
    ++n;
    s.ScheduleAfter(1, tick);
  };
  s.ScheduleAt(0, tick);
  EXPECT_EQ(s.RunAll(100), 100U);
  EXPECT_EQ(n, 100);
  EXPECT_EQ(s.Now(), 99U);
}

}  // namespace
}  // namespace dxpu::sim
