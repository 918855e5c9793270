// Tests for SpscRing: bounds, order, values moved whole across two threads.
#include "link/spsc_ring.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <thread>

namespace dxpu::link {
namespace {

TEST(SpscRing, HoldsCapacityValuesInOrder) {
  SpscRing<int> ring(3);
  int v = 0;
  EXPECT_TRUE(ring.Empty());
  EXPECT_FALSE(ring.Pop(&v));
  for (int i = 1; i <= 3; ++i) {
    int x = i;
    ASSERT_TRUE(ring.Push(x));
  }
  EXPECT_TRUE(ring.Full());
  int x = 4;
  EXPECT_FALSE(ring.Push(x));
  EXPECT_EQ(x, 4);  // a refused value is left as it was
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(ring.Pop(&v));
    EXPECT_EQ(v, i);
  }
  EXPECT_TRUE(ring.Empty());
  EXPECT_FALSE(ring.Full());
}

TEST(SpscRing, MovesOwnedValuesAcrossTheWrap) {
  SpscRing<std::unique_ptr<int>> ring(2);
  for (int i = 0; i < 7; ++i) {
    auto p = std::make_unique<int>(i);
    ASSERT_TRUE(ring.Push(p));
    EXPECT_EQ(p, nullptr);
    std::unique_ptr<int> out;
    ASSERT_TRUE(ring.Pop(&out));
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(*out, i);
  }
}

TEST(SpscRing, TwoThreadsSeeEveryValueOnceInOrder) {
  SpscRing<uint64_t> ring(8);
  constexpr uint64_t kValues = 200000;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kValues;) {
      uint64_t v = i * 2654435761u;
      if (ring.Push(v)) ++i;
    }
  });
  uint64_t sum_ok = 0;
  for (uint64_t i = 0; i < kValues;) {
    uint64_t v = 0;
    if (!ring.Pop(&v)) continue;
    if (v == i * 2654435761u) ++sum_ok;
    ++i;
  }
  producer.join();
  EXPECT_EQ(sum_ok, kValues);
}

}  // namespace
}  // namespace dxpu::link
