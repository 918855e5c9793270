// Tests for EventLoop: readiness callbacks, timer order, cancellation, Stop from a thread.
#include "link/event_loop.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

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

}  // namespace
}  // namespace dxpu::link
