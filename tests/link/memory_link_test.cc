// Tests for MemoryLink: round trips, drops when full, eventfd readiness, a spinning receiver,
// two threads.
#include "link/memory_link.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <array>
#include <cstdint>
#include <thread>
#include <vector>

namespace dxpu::link {
namespace {

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

TEST(MemoryLink, RoundTripBothWays) {
  auto pair = MemoryLink::Pair(4);
  ASSERT_TRUE(pair.ok()) << pair.error.message();
  const std::vector<uint8_t> ping = {1, 2, 3, 4, 5};
  const std::vector<uint8_t> pong = {9, 8, 7};
  ASSERT_FALSE(pair.a->Send(LinkAddress(), ping));
  ASSERT_FALSE(pair.b->Send(LinkAddress(), pong));

  std::array<uint8_t, 64> buf{};
  LinkAddress from = LinkAddress::Unix("/x");
  LinkResult r = pair.b->Receive(buf, &from);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<long>(r.size)), ping);
  EXPECT_TRUE(from.empty());
  r = pair.a->Receive(buf, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<long>(r.size)), pong);
  EXPECT_TRUE(pair.a->Receive(buf, nullptr).would_block);
  EXPECT_TRUE(pair.b->Receive(buf, nullptr).would_block);

  const LinkCounters ca = pair.a->counters();
  EXPECT_EQ(ca.frames_sent, 1u);
  EXPECT_EQ(ca.bytes_sent, 5u);
  EXPECT_EQ(ca.frames_received, 1u);
  EXPECT_EQ(ca.bytes_received, 3u);
  EXPECT_EQ(ca.dropped, 0u);
}

TEST(MemoryLink, FullQueueDropsAndCounts) {
  auto pair = MemoryLink::Pair(2);
  ASSERT_TRUE(pair.ok());
  const std::array<uint8_t, 40> frame{};
  EXPECT_FALSE(pair.a->Send(LinkAddress(), frame));
  EXPECT_FALSE(pair.a->Send(LinkAddress(), frame));
  EXPECT_EQ(pair.a->Send(LinkAddress(), frame), std::errc::no_buffer_space);
  EXPECT_EQ(pair.a->counters().dropped, 1u);
  EXPECT_EQ(pair.a->counters().frames_sent, 2u);
  std::array<uint8_t, 64> buf{};
  EXPECT_TRUE(pair.b->Receive(buf, nullptr).ok());
  EXPECT_FALSE(pair.a->Send(LinkAddress(), frame));  // room again
}

TEST(MemoryLink, OversizedFramesAreRefusedOrDropped) {
  auto pair = MemoryLink::Pair(4, 64);
  ASSERT_TRUE(pair.ok());
  EXPECT_EQ(pair.a->max_frame(), 64u);
  const std::array<uint8_t, 65> too_big{};
  EXPECT_EQ(pair.a->Send(LinkAddress(), too_big), std::errc::message_size);
  EXPECT_EQ(pair.a->counters().send_errors, 1u);

  // A frame larger than the receive buffer is dropped whole; the next one still arrives.
  const std::array<uint8_t, 48> big{};
  const std::array<uint8_t, 8> small{1};
  ASSERT_FALSE(pair.a->Send(LinkAddress(), big));
  ASSERT_FALSE(pair.a->Send(LinkAddress(), small));
  std::array<uint8_t, 16> buf{};
  const LinkResult r = pair.b->Receive(buf, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.size, 8u);
  EXPECT_EQ(pair.b->counters().dropped, 1u);
  EXPECT_EQ(pair.b->counters().frames_received, 1u);
}

TEST(MemoryLink, EventFdReadableWhileFramesWaitAndClearedByAnEmptyReceive) {
  auto pair = MemoryLink::Pair(4);
  ASSERT_TRUE(pair.ok());
  ASSERT_GE(pair.b->fd(), 0);
  EXPECT_FALSE(Readable(pair.b->fd()));
  const std::array<uint8_t, 36> frame{};
  ASSERT_FALSE(pair.a->Send(LinkAddress(), frame));
  ASSERT_FALSE(pair.a->Send(LinkAddress(), frame));
  EXPECT_TRUE(Readable(pair.b->fd()));
  EXPECT_FALSE(Readable(pair.a->fd()));
  std::array<uint8_t, 64> buf{};
  ASSERT_TRUE(pair.b->Receive(buf, nullptr).ok());
  EXPECT_TRUE(Readable(pair.b->fd()));
  ASSERT_TRUE(pair.b->Receive(buf, nullptr).ok());
  EXPECT_TRUE(pair.b->Receive(buf, nullptr).would_block);
  EXPECT_FALSE(Readable(pair.b->fd()));
  // Armed again: the next send signals, once.
  ASSERT_FALSE(pair.a->Send(LinkAddress(), frame));
  EXPECT_TRUE(Readable(pair.b->fd()));
  ASSERT_TRUE(pair.b->Receive(buf, nullptr).ok());
  EXPECT_TRUE(pair.b->Receive(buf, nullptr).would_block);
  EXPECT_FALSE(Readable(pair.b->fd()));
}

TEST(MemoryLink, ReceiveInPlaceHandsOverTheFrameAndCountsIt) {
  auto pair = MemoryLink::Pair(4);
  ASSERT_TRUE(pair.ok());
  const std::array<uint8_t, 12> frame = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  ASSERT_FALSE(pair.a->Send(LinkAddress(), frame));
  std::vector<uint8_t> got;
  const Link::FrameUse use = [&](std::span<const uint8_t> f, const LinkAddress& /*from*/) {
    got.assign(f.begin(), f.end());
  };
  std::array<uint8_t, 4> scratch{};  // too small to copy into: in place needs none
  const LinkResult r = pair.b->ReceiveInPlace(scratch, use);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.size, frame.size());
  EXPECT_EQ(got, std::vector<uint8_t>(frame.begin(), frame.end()));
  EXPECT_EQ(pair.b->counters().frames_received, 1u);
  EXPECT_EQ(pair.b->counters().bytes_received, frame.size());
  got.clear();
  EXPECT_TRUE(pair.b->ReceiveInPlace(scratch, use).would_block);
  EXPECT_TRUE(got.empty());
}

// A receiver that stops after some frames (a bounded batch) finds the rest by readiness.
TEST(MemoryLink, FramesLeftAfterABatchKeepTheFdReadable) {
  auto pair = MemoryLink::Pair(8);
  ASSERT_TRUE(pair.ok());
  std::array<uint8_t, 16> buf{};
  EXPECT_TRUE(pair.b->Receive(buf, nullptr).would_block);  // armed
  const std::array<uint8_t, 8> frame{};
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(pair.a->Send(LinkAddress(), frame));
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Readable(pair.b->fd())) << "before frame " << i;
    ASSERT_TRUE(pair.b->Receive(buf, nullptr).ok());
  }
  EXPECT_TRUE(pair.b->Receive(buf, nullptr).would_block);
  EXPECT_FALSE(Readable(pair.b->fd()));
}

TEST(MemoryLink, ASpinningReceiverIsNotSignalledUntilAnEmptyReceive) {
  auto pair = MemoryLink::Pair(4);
  ASSERT_TRUE(pair.ok());
  const std::array<uint8_t, 8> f{};
  std::array<uint8_t, 16> buf{};
  EXPECT_FALSE(pair.b->MayHaveFrame());
  pair.b->StartSpinning();
  ASSERT_FALSE(pair.a->Send(LinkAddress(), f));
  // Disarmed: the frame is there, the eventfd says nothing (the sender made no system call).
  EXPECT_FALSE(Readable(pair.b->fd()));
  EXPECT_TRUE(pair.b->MayHaveFrame());
  ASSERT_TRUE(pair.b->Receive(buf, nullptr).ok());
  EXPECT_FALSE(pair.b->MayHaveFrame());
  ASSERT_FALSE(pair.a->Send(LinkAddress(), f));
  EXPECT_FALSE(Readable(pair.b->fd()));
  ASSERT_TRUE(pair.b->Receive(buf, nullptr).ok());
  // A receiver about to sleep receives until the link is empty: that arms it again.
  EXPECT_TRUE(pair.b->Receive(buf, nullptr).would_block);
  ASSERT_FALSE(pair.a->Send(LinkAddress(), f));
  EXPECT_TRUE(Readable(pair.b->fd()));
  EXPECT_EQ(pair.b->counters().frames_received, 2u);
}

TEST(MemoryLink, ProducerAndConsumerThreadsDeliverInOrder) {
  auto pair = MemoryLink::Pair(16);
  ASSERT_TRUE(pair.ok());
  constexpr uint32_t kFrames = 20000;
  std::thread producer([&] {
    for (uint32_t i = 0; i < kFrames;) {
      const std::array<uint8_t, 4> f = {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8),
                                        static_cast<uint8_t>(i >> 16), 0};
      if (!pair.a->Send(LinkAddress(), f)) {
        ++i;
      } else {
        std::this_thread::yield();
      }
    }
  });
  uint32_t next = 0;
  std::array<uint8_t, 8> buf{};
  while (next < kFrames) {
    pollfd p{pair.b->fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1) << "no readiness at frame " << next;
    while (true) {
      const LinkResult r = pair.b->Receive(buf, nullptr);
      if (r.would_block) break;
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r.size, 4u);
      const uint32_t got = buf[0] | (buf[1] << 8) | (buf[2] << 16);
      ASSERT_EQ(got, next);
      ++next;
    }
  }
  producer.join();
  EXPECT_EQ(pair.b->counters().frames_received, kFrames);
}

// The wake-up race: a receiver that takes one frame per readiness and sleeps in between,
// against a sender that pauses at random. A frame whose send did not signal while the
// receiver was going to sleep would stall it here (the poll times out).
TEST(MemoryLink, OneFramePerWakeNeverStalls) {
  auto pair = MemoryLink::Pair(4);
  ASSERT_TRUE(pair.ok());
  constexpr uint32_t kFrames = 20000;
  std::thread producer([&] {
    uint32_t lcg = 12345;
    for (uint32_t i = 0; i < kFrames;) {
      const std::array<uint8_t, 4> f = {static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8),
                                        static_cast<uint8_t>(i >> 16), 0};
      if (!pair.a->Send(LinkAddress(), f)) ++i;
      lcg = lcg * 1103515245u + 12345u;
      if ((lcg >> 16) % 4 == 0) std::this_thread::yield();
    }
  });
  uint32_t next = 0;
  std::array<uint8_t, 8> buf{};
  while (next < kFrames) {
    pollfd p{pair.b->fd(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1) << "no readiness at frame " << next;
    const LinkResult r = pair.b->Receive(buf, nullptr);
    if (r.would_block) continue;  // a stale signal: that Receive cleared it
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(buf[0] | (buf[1] << 8) | (buf[2] << 16), next);
    ++next;
  }
  producer.join();
  EXPECT_EQ(pair.b->counters().frames_received, kFrames);
}

}  // namespace
}  // namespace dxpu::link
