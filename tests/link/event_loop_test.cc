// Tests for EventLoop: readiness callbacks, timer order, cancellation, Stop from a thread, busy
// polling; and for LinkWaiter, the epoll set a thread sleeps on until frames arrive.
#include "link/event_loop.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "link/link_waiter.h"
#include "link/memory_link.h"
#include "link/unique_fd.h"

namespace dxpu::link {
namespace {

using std::chrono::milliseconds;

std::unique_ptr<EventLoop> MakeLoop() {
  auto r = EventLoop::Create();
  EXPECT_TRUE(r.ok()) << r.error.message();
  return std::move(r.link);
}

TEST(EventLoop, FdCallbackFiresWhenReadable) {
  auto loop = MakeLoop();
  ASSERT_NE(loop, nullptr);
  UniqueFd efd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  ASSERT_TRUE(efd.valid());
  int calls = 0;
  ASSERT_FALSE(loop->AddFd(efd.get(), [&] {
    uint64_t v = 0;
    EXPECT_EQ(::read(efd.get(), &v, sizeof(v)), static_cast<ssize_t>(sizeof(v)));
    ++calls;
  }));
  EXPECT_EQ(loop->AddFd(efd.get(), [] {}), std::errc::invalid_argument);
  ASSERT_FALSE(loop->RunOnce(milliseconds(0)));
  EXPECT_EQ(calls, 0);
  const uint64_t one = 1;
  ASSERT_EQ(::write(efd.get(), &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  ASSERT_FALSE(loop->RunOnce(milliseconds(1000)));
  EXPECT_EQ(calls, 1);
  ASSERT_FALSE(loop->RemoveFd(efd.get()));
  ASSERT_EQ(::write(efd.get(), &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  ASSERT_FALSE(loop->RunOnce(milliseconds(0)));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(loop->RemoveFd(efd.get()), std::errc::invalid_argument);
}

TEST(EventLoop, DrivesAMemoryLink) {
  auto loop = MakeLoop();
  ASSERT_NE(loop, nullptr);
  auto pair = MemoryLink::Pair(8);
  ASSERT_TRUE(pair.ok());
  std::vector<size_t> sizes;
  ASSERT_FALSE(loop->AddFd(pair.b->fd(), [&] {
    std::array<uint8_t, 128> buf{};
    for (LinkResult r = pair.b->Receive(buf, nullptr); r.ok(); r = pair.b->Receive(buf, nullptr)) {
      sizes.push_back(r.size);
    }
  }));
  const std::array<uint8_t, 40> f{};
  ASSERT_FALSE(pair.a->Send(LinkAddress(), f));
  ASSERT_FALSE(pair.a->Send(LinkAddress(), std::span(f).first(36)));
  ASSERT_FALSE(loop->RunOnce(milliseconds(1000)));
  EXPECT_EQ(sizes, (std::vector<size_t>{40, 36}));
}

TEST(EventLoop, TimersFireInDeadlineOrder) {
  auto loop = MakeLoop();
  ASSERT_NE(loop, nullptr);
  const auto t0 = EventLoop::Clock::now();
  std::vector<int> order;
  loop->AddTimer(t0 + milliseconds(30), [&] { order.push_back(3); });
  loop->AddTimer(t0 + milliseconds(10), [&] { order.push_back(1); });
  const auto cancelled = loop->AddTimer(t0 + milliseconds(15), [&] { order.push_back(99); });
  loop->AddTimer(t0 + milliseconds(20), [&] { order.push_back(2); });
  loop->AddTimer(t0 + milliseconds(20), [&] { order.push_back(22); });  // tie: added later
  EXPECT_TRUE(loop->CancelTimer(cancelled));
  EXPECT_FALSE(loop->CancelTimer(cancelled));
  loop->AddTimer(t0 + milliseconds(40), [&] { loop->Stop(); });
  ASSERT_FALSE(loop->Run());
  EXPECT_EQ(order, (std::vector<int>{1, 2, 22, 3}));
  EXPECT_GE(EventLoop::Clock::now() - t0, milliseconds(40));
}

TEST(EventLoop, RunOnceSleepsUntilTheNextTimerNotLonger) {
  auto loop = MakeLoop();
  ASSERT_NE(loop, nullptr);
  bool fired = false;
  const auto t0 = EventLoop::Clock::now();
  loop->AddTimer(t0 + milliseconds(20), [&] { fired = true; });
  ASSERT_FALSE(loop->RunOnce(milliseconds(5000)));
  const auto waited = EventLoop::Clock::now() - t0;
  EXPECT_TRUE(fired);
  EXPECT_GE(waited, milliseconds(20));
  EXPECT_LT(waited, milliseconds(2000));
}

TEST(EventLoop, StopFromAnotherThread) {
  auto loop = MakeLoop();
  ASSERT_NE(loop, nullptr);
  const auto t0 = EventLoop::Clock::now();
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(50));
    loop->Stop();
  });
  const std::error_code ec = loop->Run();  // nothing registered: only Stop can end it
  stopper.join();
  EXPECT_FALSE(ec);
  const auto took = EventLoop::Clock::now() - t0;
  EXPECT_GE(took, milliseconds(50));
  EXPECT_LT(took, milliseconds(3000));
}

TEST(EventLoop, StopBeforeRunReturnsAtOnce) {
  auto loop = MakeLoop();
  ASSERT_NE(loop, nullptr);
  loop->Stop();
  ASSERT_FALSE(loop->Run());
  // The request was consumed: a timer now ends the next Run.
  bool fired = false;
  loop->AddTimer(EventLoop::Clock::now() + milliseconds(5), [&] {
    fired = true;
    loop->Stop();
  });
  ASSERT_FALSE(loop->Run());
  EXPECT_TRUE(fired);
}

TEST(EventLoop, BusyPollSpinsWhileFramesComeThenArmsTheLinksAndSleeps) {
  auto loop = MakeLoop();
  ASSERT_NE(loop, nullptr);
  auto pair = MemoryLink::Pair(64);
  ASSERT_TRUE(pair.ok());
  std::atomic<uint32_t> frames{0};
  std::atomic<uint32_t> spins{0};
  std::atomic<uint32_t> sleeps{0};
  bool spinning = false;  // the loop's thread's
  const auto receive = [&](bool while_spinning) {
    std::array<uint8_t, 64> buf{};
    bool any = false;
    while ((!while_spinning || pair.b->MayHaveFrame()) && pair.b->Receive(buf, nullptr).ok()) {
      frames.fetch_add(1);
      any = true;
    }
    return any;
  };
  ASSERT_FALSE(loop->AddFd(pair.b->fd(), [&] { receive(false); }));
  loop->SetBusyPoll(
      [&](bool before_sleep) {
        if (!before_sleep && !spinning) pair.b->StartSpinning();
        spinning = !before_sleep;
        (before_sleep ? sleeps : spins).fetch_add(1);
        return receive(!before_sleep);
      },
      std::chrono::microseconds(200));
  std::thread t([&] { EXPECT_FALSE(loop->Run()); });
  const std::array<uint8_t, 16> f{};
  constexpr uint32_t kFrames = 200;
  for (uint32_t i = 0; i < kFrames; ++i) {
    while (pair.a->Send(LinkAddress(), f)) std::this_thread::yield();  // full: let it drain
    // Every tenth frame after a pause longer than the window: the loop sleeps in between, and
    // the frame must wake it.
    if (i % 10 == 9) std::this_thread::sleep_for(milliseconds(2));
  }
  for (int i = 0; i < 5000 && frames.load() < kFrames; ++i)
    std::this_thread::sleep_for(milliseconds(1));
  loop->Stop();
  t.join();
  EXPECT_EQ(frames.load(), kFrames);
  EXPECT_GT(spins.load(), 0u);
  EXPECT_GT(sleeps.load(), 0u);  // it went to sleep (and woke for the next frame)
}

TEST(LinkWaiter, WakesForAFrameOrItsEventFd) {
  auto w = LinkWaiter::Create();
  ASSERT_TRUE(w.ok()) << w.error.message();
  auto pair = MemoryLink::Pair(4);
  ASSERT_TRUE(pair.ok());
  UniqueFd efd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  ASSERT_FALSE(w.link->AddLink(*pair.b));
  ASSERT_FALSE(w.link->AddFd(efd.get()));
  EXPECT_FALSE(w.link->Wait(0));
  EXPECT_FALSE(w.link->Wait(1'000'000));  // 1 ms: nothing comes
  const std::array<uint8_t, 8> f{};
  ASSERT_FALSE(pair.a->Send(LinkAddress(), f));
  EXPECT_TRUE(w.link->Wait(1'000'000'000));
  std::array<uint8_t, 16> buf{};
  ASSERT_TRUE(pair.b->Receive(buf, nullptr).ok());
  EXPECT_TRUE(pair.b->Receive(buf, nullptr).would_block);
  EXPECT_FALSE(w.link->Wait(0));
  const uint64_t one = 1;
  ASSERT_EQ(::write(efd.get(), &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  EXPECT_TRUE(w.link->Wait(1'000'000'000));
  uint64_t count = 0;
  ASSERT_EQ(::read(efd.get(), &count, sizeof(count)), static_cast<ssize_t>(sizeof(count)));

  // Removed, the link's frames do not end a Wait; added again with a frame waiting, they do.
  ASSERT_FALSE(w.link->RemoveLink(*pair.b));
  ASSERT_FALSE(pair.a->Send(LinkAddress(), f));
  EXPECT_FALSE(w.link->Wait(0));
  ASSERT_FALSE(w.link->AddLink(*pair.b));
  EXPECT_TRUE(w.link->Wait(0));
}

// The thread's state letter in /proc ('S': asleep).
char ThreadState(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = all.rfind(')');
  return paren == std::string::npos || paren + 2 >= all.size() ? '?' : all[paren + 2];
}

TEST(LinkWaiter, AFrameWakesOnlyTheFirstWaiterAsleep) {
  auto first = LinkWaiter::Create();
  auto second = LinkWaiter::Create();
  ASSERT_TRUE(first.ok() && second.ok());
  auto pair = MemoryLink::Pair(4);
  ASSERT_TRUE(pair.ok());
  ASSERT_FALSE(first.link->AddLink(*pair.b));
  ASSERT_FALSE(second.link->AddLink(*pair.b));
  const std::array<uint8_t, 8> f{};
  std::array<uint8_t, 16> buf{};

  // Nobody asleep: both hear of the frame.
  ASSERT_FALSE(pair.a->Send(LinkAddress(), f));
  EXPECT_TRUE(first.link->Wait(0));
  EXPECT_TRUE(second.link->Wait(0));
  ASSERT_TRUE(pair.b->Receive(buf, nullptr).ok());
  EXPECT_TRUE(pair.b->Receive(buf, nullptr).would_block);  // armed again
  EXPECT_FALSE(first.link->Wait(0));
  EXPECT_FALSE(second.link->Wait(0));

  // A thread asleep in the first: the frame wakes it, and the second hears nothing.
  std::atomic<pid_t> tid{0};
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
    woke.store(first.link->Wait(10'000'000'000));
  });
  while (tid.load() == 0) std::this_thread::yield();
  for (int i = 0; i < 10000 && ThreadState(tid.load()) != 'S'; ++i)
    std::this_thread::sleep_for(milliseconds(1));
  ASSERT_FALSE(pair.a->Send(LinkAddress(), f));
  sleeper.join();
  EXPECT_TRUE(woke.load());
  EXPECT_FALSE(second.link->Wait(0));
}

}  // namespace
}  // namespace dxpu::link
