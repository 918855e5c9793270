// Tests for ByteRing: contiguous blocks, wrap-around by skipping the end, full and empty.
#include "fabric/byte_ring.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>

namespace dxpu::fabric {
namespace {

TEST(ByteRing, TakesContiguousBlocksInOrder) {
  ByteRing r(100);
  auto a = r.Take(40);
  auto b = r.Take(40);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->data, a->data + 40);
  EXPECT_EQ(r.used(), 80u);
  EXPECT_FALSE(r.Take(30));  // 20 free at the end, none at the start
  r.GiveBackOldest(a->span);
  // 20 at the end are skipped: the block starts at 0 and its span counts them.
  auto c = r.Take(30);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->data, a->data);
  EXPECT_EQ(c->span, 50u);
  EXPECT_EQ(r.used(), 90u);
  EXPECT_FALSE(r.Take(11));
  auto d = r.Take(10);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->data, a->data + 30);
  r.GiveBackOldest(b->span);
  r.GiveBackOldest(c->span);
  r.GiveBackOldest(d->span);
  EXPECT_EQ(r.used(), 0u);
  auto e = r.Take(100);  // empty: the whole ring, from the start
  ASSERT_TRUE(e);
  EXPECT_EQ(e->data, a->data);
}

TEST(ByteRing, ZeroBytesAlwaysFit) {
  ByteRing r(8);
  ASSERT_TRUE(r.Take(8));
  auto z = r.Take(0);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->span, 0u);
  EXPECT_FALSE(r.Take(1));
  ByteRing none(0);
  EXPECT_TRUE(none.Take(0));
  EXPECT_FALSE(none.Take(1));
  none.GiveBackOldest(0);
}

// Random takes and gives back: blocks never overlap and keep their bytes.
TEST(ByteRing, RandomUseKeepsBlocksApart) {
  std::mt19937 rng(7);  // NOLINT(cert-msc32-c,cert-msc51-cpp): the same sequence each run
  ByteRing r(1000);
  struct Held {
    ByteRing::Block block;
    size_t size;
    uint8_t fill;
  };
  std::deque<Held> held;
  for (int i = 0; i < 20000; ++i) {
    if (held.empty() || rng() % 2 == 0) {
      const size_t n = rng() % 300;
      const auto b = r.Take(n);
      if (!b) continue;
      const auto fill = static_cast<uint8_t>(i);
      for (size_t k = 0; k < n; ++k) b->data[k] = fill;
      held.push_back({*b, n, fill});
    } else {
      const Held& h = held.front();
      for (size_t k = 0; k < h.size; ++k) ASSERT_EQ(h.block.data[k], h.fill) << "i=" << i;
      r.GiveBackOldest(h.block.span);
      held.pop_front();
    }
    size_t spans = 0;
    for (const Held& h : held) spans += h.block.span;
    ASSERT_EQ(r.used(), spans);
    ASSERT_LE(r.used(), r.capacity());
  }
}

}  // namespace
}  // namespace dxpu::fabric
