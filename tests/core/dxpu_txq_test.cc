// Tests for lib/core's ordering queue storage: payload copies in each class's byte ring, kept
// contiguous by skipping the ring's end, refused when full, never overlapping. (The passing
// rules are tested through lib/fabric's TxQueue in tests/fabric.)
#include "core/dxpu_txq.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

namespace {

class Queue {
 public:
  Queue(uint32_t tlps, uint32_t bytes) : mem_((dxpu_txq_mem_size(tlps, bytes) + 7) / 8) {
    EXPECT_TRUE(dxpu_txq_init(&q_, tlps, bytes, mem_.data(), mem_.size() * 8));
  }
  dxpu_txq* get() { return &q_; }

 private:
  std::vector<uint64_t> mem_;
  dxpu_txq q_{};
};

// A posted write of `dws` DWs, every payload byte `fill`.
bool PushWrite(dxpu_txq* q, uint16_t dws, uint8_t fill) {
  std::vector<uint8_t> payload(size_t{dws} * 4, fill);
  dxpu_tlp t{};
  t.kind = DXPU_TLP_MWR;
  t.addr = 0x1000;
  t.length_dw = dws;
  t.first_be = 0xf;
  t.last_be = dws > 1 ? 0xf : 0;
  t.payload = payload.data();
  return dxpu_txq_push(q, &t);
}

constexpr int kP = DXPU_TLP_CLASS_POSTED;

TEST(Txq, PayloadsAreContiguousAndSkipTheRingsEnd) {
  Queue queue(8, 100);
  dxpu_txq* q = queue.get();
  ASSERT_TRUE(PushWrite(q, 10, 1));  // bytes [0, 40)
  ASSERT_TRUE(PushWrite(q, 10, 2));  // [40, 80)
  const uint8_t* first = dxpu_txq_front(q, kP)->payload;
  EXPECT_EQ(dxpu_txq_bytes_used(q, kP), 80u);
  EXPECT_FALSE(PushWrite(q, 8, 3));  // 20 free at the end, none at the start
  EXPECT_EQ(q->stats.push_refused, 1u);
  dxpu_txq_pop(q, kP);
  ASSERT_TRUE(PushWrite(q, 8, 3));  // at 0: the 20 at the end are skipped, and held
  EXPECT_EQ(dxpu_txq_bytes_used(q, kP), 40u + 52u);
  EXPECT_FALSE(PushWrite(q, 3, 4));  // 8 free: [32, 40)
  ASSERT_TRUE(PushWrite(q, 2, 4));
  dxpu_txq_pop(q, kP);
  const dxpu_tlp* t = dxpu_txq_front(q, kP);
  EXPECT_EQ(t->payload, first);
  EXPECT_EQ(t->payload[31], 3);
  dxpu_txq_pop(q, kP);
  EXPECT_EQ(dxpu_txq_front(q, kP)->payload, first + 32);
  dxpu_txq_pop(q, kP);
  EXPECT_EQ(dxpu_txq_size(q), 0u);
  EXPECT_EQ(dxpu_txq_bytes_used(q, kP), 0u);
  ASSERT_TRUE(PushWrite(q, 25, 5));  // empty: the whole ring, from the start
  EXPECT_EQ(dxpu_txq_front(q, kP)->payload, first);
}

TEST(Txq, RequestsWithoutPayloadTakeNoBytesAndSlotsBound) {
  Queue queue(2, 8);
  dxpu_txq* q = queue.get();
  dxpu_tlp r{};
  r.kind = DXPU_TLP_MRD;
  r.length_dw = 1024;
  r.first_be = r.last_be = 0xf;
  ASSERT_TRUE(dxpu_txq_push(q, &r));
  ASSERT_TRUE(dxpu_txq_push(q, &r));
  EXPECT_FALSE(dxpu_txq_push(q, &r));  // two slots per class
  EXPECT_EQ(dxpu_txq_bytes_used(q, DXPU_TLP_CLASS_NON_POSTED), 0u);
  EXPECT_EQ(dxpu_txq_front(q, DXPU_TLP_CLASS_NON_POSTED)->payload, nullptr);
  ASSERT_TRUE(PushWrite(q, 2, 9));  // other classes have their own slots
  EXPECT_FALSE(PushWrite(q, 1, 9));
  EXPECT_EQ(dxpu_txq_oldest(q), DXPU_TLP_CLASS_NON_POSTED);
}

TEST(Txq, InitRefusesTooLittleMemory) {
  std::vector<uint64_t> mem(4);
  dxpu_txq q{};
  EXPECT_FALSE(dxpu_txq_init(&q, 4, 64, mem.data(), mem.size() * 8));
  EXPECT_FALSE(dxpu_txq_init(&q, 0, 64, mem.data(), mem.size() * 8));
  EXPECT_EQ(dxpu_txq_mem_size(0, 64), 0u);
}

// Random pushes and pops: payloads never overlap and keep their bytes.
TEST(Txq, RandomUseKeepsPayloadsApart) {
  std::mt19937 rng(7);  // NOLINT(cert-msc32-c,cert-msc51-cpp): the same sequence each run
  Queue queue(64, 1000);
  dxpu_txq* q = queue.get();
  std::deque<uint8_t> fills;
  for (int i = 0; i < 20000; ++i) {
    if (fills.empty() || rng() % 2 == 0) {
      const auto dws = static_cast<uint16_t>(1 + rng() % 75);
      const auto fill = static_cast<uint8_t>(i);
      if (PushWrite(q, dws, fill)) fills.push_back(fill);
    } else {
      const dxpu_tlp* t = dxpu_txq_front(q, kP);
      for (uint32_t k = 0; k < uint32_t{t->length_dw} * 4; ++k)
        ASSERT_EQ(t->payload[k], fills.front()) << "i=" << i;
      dxpu_txq_pop(q, kP);
      fills.pop_front();
    }
    ASSERT_EQ(dxpu_txq_count(q, kP), fills.size());
    ASSERT_LE(dxpu_txq_bytes_used(q, kP), 1000u);
  }
}

}  // namespace
