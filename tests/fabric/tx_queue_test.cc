// Tests for TxQueue: submission order, the passing rules of docs/protocol.md 4.6 against a
// fake session whose credit the test controls, refusals, payload copies and capacity.
#include "fabric/tx_queue.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "fake_session.h"

namespace dxpu::fabric {
namespace {

using test::FakeSession;
using test::MakeTlp;
using test::Offer;

using test::kCpl;
using test::kNp;
using test::kP;

// Pushes one TLP per class in `classes`, with ids 0, 1, 2, ... and a 1-DW payload where the
// class takes one.
void PushAll(TxQueue* q, const std::vector<int>& classes) {
  std::vector<uint8_t> storage;
  for (size_t i = 0; i < classes.size(); ++i) {
    ASSERT_TRUE(q->Push(MakeTlp(classes[i], i, classes[i] == kNp ? 0 : 1, &storage)));
  }
}

size_t DrainInto(TxQueue* q, FakeSession* s) {
  return q->Drain([s](const dxpu_tlp& t) { return (*s)(t); });
}

using Ids = std::vector<uint64_t>;

TEST(TxQueue, AllCreditKeepsSubmissionOrder) {
  TxQueue q;
  PushAll(&q, {kP, kNp, kCpl, kP, kNp, kCpl, kCpl, kNp, kP, kP});
  EXPECT_EQ(q.size(), 10u);
  EXPECT_EQ(q.size(DXPU_TLP_CLASS_POSTED), 4u);
  EXPECT_EQ(q.size(DXPU_TLP_CLASS_NON_POSTED), 3u);
  EXPECT_EQ(q.size(DXPU_TLP_CLASS_COMPLETION), 3u);
  FakeSession s;
  EXPECT_EQ(DrainInto(&q, &s), 10u);
  EXPECT_EQ(s.accepted(), (Ids{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(s.offers.size(), 10u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.last_drain().stop, DXFP_SEND_OK);
  EXPECT_EQ(q.stats().sent, 10u);
  EXPECT_EQ(q.stats().posted_passed_np + q.stats().posted_passed_cpl + q.stats().cpl_passed_np, 0u);
}

TEST(TxQueue, PostedPassesNonPostedWaitingForCredit) {
  TxQueue q;
  PushAll(&q, {kNp, kP, kNp, kP});
  FakeSession s;
  s.credits[kNp] = 0;
  EXPECT_EQ(DrainInto(&q, &s), 2u);
  EXPECT_EQ(s.accepted(), (Ids{1, 3}));
  // The refused class is not offered again in the same drain.
  EXPECT_EQ(s.offers,
            (std::vector<Offer>{
                {0, kNp, DXFP_SEND_NO_CREDIT}, {1, kP, DXFP_SEND_OK}, {3, kP, DXFP_SEND_OK}}));
  EXPECT_TRUE(q.last_drain().blocked[kNp]);
  EXPECT_FALSE(q.last_drain().posted_stranded);
  EXPECT_EQ(q.stats().posted_passed_np, 2u);
  EXPECT_EQ(q.stats().no_credit[kNp], 1u);
  EXPECT_EQ(q.size(DXPU_TLP_CLASS_NON_POSTED), 2u);

  s.credits[kNp] = FakeSession::kPlenty;
  EXPECT_EQ(DrainInto(&q, &s), 2u);
  EXPECT_EQ(s.accepted(), (Ids{1, 3, 0, 2}));
  EXPECT_TRUE(q.empty());
}

TEST(TxQueue, PostedPassesCompletionWaitingForCredit) {
  TxQueue q;
  PushAll(&q, {kCpl, kP, kCpl, kP});
  FakeSession s;
  s.credits[kCpl] = 0;
  EXPECT_EQ(DrainInto(&q, &s), 2u);
  EXPECT_EQ(s.accepted(), (Ids{1, 3}));
  EXPECT_EQ(q.stats().posted_passed_cpl, 2u);
  EXPECT_EQ(q.stats().posted_passed_np, 0u);
}

TEST(TxQueue, PostedPassesNonPostedStuckBehindABlockedCompletion) {
  // The request waits (behind the completion, which waits for credit); the write must not.
  TxQueue q;
  PushAll(&q, {kCpl, kNp, kP});
  FakeSession s;
  s.credits[kCpl] = 0;
  EXPECT_EQ(DrainInto(&q, &s), 1u);
  EXPECT_EQ(s.offers, (std::vector<Offer>{{0, kCpl, DXFP_SEND_NO_CREDIT}, {2, kP, DXFP_SEND_OK}}));
  EXPECT_EQ(q.stats().posted_passed_np, 1u);
  EXPECT_EQ(q.stats().posted_passed_cpl, 1u);
}

TEST(TxQueue, CompletionPassesNonPostedWaitingForCredit) {
  TxQueue q;
  PushAll(&q, {kNp, kCpl, kNp, kCpl});
  FakeSession s;
  s.credits[kNp] = 0;
  EXPECT_EQ(DrainInto(&q, &s), 2u);
  EXPECT_EQ(s.accepted(), (Ids{1, 3}));
  EXPECT_EQ(q.stats().cpl_passed_np, 2u);
}

TEST(TxQueue, CompletionDoesNotPassAnOlderPosted) {
  TxQueue q;
  PushAll(&q, {kCpl, kP, kCpl, kNp});
  FakeSession s;
  s.credits[kP] = 0;
  EXPECT_EQ(DrainInto(&q, &s), 1u);
  // Completion 0 is older than the posted write and goes; completion 2 and request 3 are
  // younger and wait behind it. Only the posted class was refused: nothing stranded.
  EXPECT_EQ(s.offers, (std::vector<Offer>{{0, kCpl, DXFP_SEND_OK}, {1, kP, DXFP_SEND_NO_CREDIT}}));
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.last_drain().stop, DXFP_SEND_OK);
  EXPECT_FALSE(q.last_drain().posted_stranded);

  s.credits[kP] = FakeSession::kPlenty;
  EXPECT_EQ(DrainInto(&q, &s), 3u);
  EXPECT_EQ(s.accepted(), (Ids{0, 1, 2, 3}));
}

TEST(TxQueue, NonPostedPassesNothing) {
  for (const int blocked : {kP, kCpl}) {
    TxQueue q;
    PushAll(&q, {blocked, kNp});
    FakeSession s;
    s.credits[blocked] = 0;
    EXPECT_EQ(DrainInto(&q, &s), 0u) << "blocked class " << blocked;
    EXPECT_EQ(s.offers.size(), 1u);
    EXPECT_EQ(q.size(DXPU_TLP_CLASS_NON_POSTED), 1u);
  }
  // Nor another request of its own class: within a class the order is the FIFO's.
  TxQueue q;
  PushAll(&q, {kNp, kNp});
  FakeSession s;
  s.credits[kNp] = 0;
  EXPECT_EQ(DrainInto(&q, &s), 0u);
  EXPECT_EQ(s.offers.size(), 1u);
}

TEST(TxQueue, NpFullBlocksOnlyNonPosted) {
  TxQueue q;
  PushAll(&q, {kNp, kP, kCpl, kNp, kP});
  FakeSession s;
  s.np_slots = 0;
  EXPECT_EQ(DrainInto(&q, &s), 3u);
  EXPECT_EQ(s.accepted(), (Ids{1, 2, 4}));
  EXPECT_EQ(q.last_drain().stop, DXFP_SEND_OK);
  EXPECT_TRUE(q.last_drain().blocked[kNp]);
  EXPECT_FALSE(q.last_drain().blocked[kP]);
  EXPECT_EQ(q.stats().np_full, 1u);
  EXPECT_EQ(q.size(DXPU_TLP_CLASS_NON_POSTED), 2u);
}

TEST(TxQueue, ReplayFullStopsEveryClass) {
  TxQueue q;
  PushAll(&q, {kP, kNp, kCpl, kP});
  FakeSession s;
  s.replay_slots = 2;
  EXPECT_EQ(DrainInto(&q, &s), 2u);
  EXPECT_EQ(s.offers,
            (std::vector<Offer>{
                {0, kP, DXFP_SEND_OK}, {1, kNp, DXFP_SEND_OK}, {2, kCpl, DXFP_SEND_REPLAY_FULL}}));
  EXPECT_EQ(q.last_drain().stop, DXFP_SEND_REPLAY_FULL);
  EXPECT_FALSE(q.last_drain().posted_stranded);  // stopped, not stranded
  EXPECT_EQ(q.stats().replay_full, 1u);
  EXPECT_EQ(q.size(), 2u);
}

TEST(TxQueue, NotReadyAndDownStopAtOnce) {
  for (const dxfp_send_result r : {DXFP_SEND_NOT_READY, DXFP_SEND_DOWN}) {
    TxQueue q;
    PushAll(&q, {kNp, kP, kCpl});
    FakeSession s;
    s.forced = r;
    EXPECT_EQ(DrainInto(&q, &s), 0u);
    EXPECT_EQ(s.offers.size(), 1u);
    EXPECT_EQ(q.last_drain().stop, r);
    EXPECT_EQ(q.size(), 3u);
  }
}

TEST(TxQueue, UnknownResultStopsTheDrain) {
  TxQueue q;
  PushAll(&q, {kP, kP});
  EXPECT_EQ(q.Drain([](const dxpu_tlp&) { return DXFP_SEND_COUNT; }), 0u);
  EXPECT_EQ(q.stats().unknown_result, 1u);
  EXPECT_EQ(q.size(), 2u);
}

TEST(TxQueue, TooBigAndInvalidAreDroppedAndCounted) {
  TxQueue q;
  std::vector<uint8_t> storage;
  dxpu_tlp big = MakeTlp(kP, 0, 1, &storage);
  big.tc = test::kTcTooBig;
  ASSERT_TRUE(q.Push(big));
  ASSERT_TRUE(q.Push(MakeTlp(kP, 1, 1, &storage)));
  dxpu_tlp bad = MakeTlp(kNp, 2, 0, &storage);
  bad.tc = test::kTcInvalid;
  ASSERT_TRUE(q.Push(bad));
  ASSERT_TRUE(q.Push(MakeTlp(kNp, 3, 0, &storage)));
  FakeSession s;
  EXPECT_EQ(DrainInto(&q, &s), 2u);
  EXPECT_EQ(s.accepted(), (Ids{1, 3}));
  EXPECT_EQ(q.last_drain().dropped, 2u);
  EXPECT_EQ(q.stats().dropped_too_big, 1u);
  EXPECT_EQ(q.stats().dropped_invalid, 1u);
  EXPECT_TRUE(q.empty());
}

// Valid TLPs go through the queue and still encode to the same bytes, although the
// caller's payload buffers were overwritten after Push.
TEST(TxQueue, PayloadBytesArePreserved) {
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<dxpu_tlp> tlps;
  for (const uint16_t dw : {1, 2, 16, 64, 1024}) {
    std::vector<uint8_t> p(size_t{dw} * 4);
    for (size_t i = 0; i < p.size(); ++i) p[i] = test::PayloadByte(dw, i);
    payloads.push_back(std::move(p));
    dxpu_tlp t{};
    t.kind = DXPU_TLP_MWR;
    t.addr = 0x100000000ULL;
    t.length_dw = dw;
    t.first_be = 0xf;
    t.last_be = dw > 1 ? 0xf : 0;
    tlps.push_back(t);
  }
  dxpu_tlp rd{};
  rd.kind = DXPU_TLP_MRD;
  rd.addr = 0x2000;
  rd.length_dw = 1;
  rd.first_be = 0xf;
  tlps.push_back(rd);

  std::vector<std::vector<uint8_t>> wire;
  TxQueue q(TxQueueOptions{.max_tlps_per_class = 8, .max_payload_bytes_per_class = 8192});
  for (size_t i = 0; i < tlps.size(); ++i) {
    if (i < payloads.size()) tlps[i].payload = payloads[i].data();
    std::vector<uint8_t> buf(DXPU_TLP_MAX_SIZE);
    size_t len = 0;
    ASSERT_EQ(dxpu_tlp_encode(&tlps[i], buf.data(), buf.size(), &len), DXPU_TLP_OK);
    buf.resize(len);
    wire.push_back(buf);
    ASSERT_TRUE(q.Push(tlps[i]));
  }
  for (auto& p : payloads) std::memset(p.data(), 0xee, p.size());

  size_t n = 0;
  q.Drain([&](const dxpu_tlp& t) {
    std::vector<uint8_t> buf(DXPU_TLP_MAX_SIZE);
    size_t len = 0;
    EXPECT_EQ(dxpu_tlp_encode(&t, buf.data(), buf.size(), &len), DXPU_TLP_OK);
    buf.resize(len);
    EXPECT_EQ(buf, wire.at(n)) << "TLP " << n;
    ++n;
    return DXFP_SEND_OK;
  });
  EXPECT_EQ(n, tlps.size());
}

TEST(TxQueue, CapacityIsPerClass) {
  TxQueue q(TxQueueOptions{.max_tlps_per_class = 2, .max_payload_bytes_per_class = 64});
  std::vector<uint8_t> storage;
  EXPECT_TRUE(q.Push(MakeTlp(kP, 0, 1, &storage)));
  EXPECT_TRUE(q.Push(MakeTlp(kP, 1, 1, &storage)));
  EXPECT_FALSE(q.Push(MakeTlp(kP, 2, 1, &storage)));  // no slot
  EXPECT_TRUE(q.Push(MakeTlp(kNp, 3, 0, &storage)));  // other classes still take TLPs
  EXPECT_TRUE(q.Push(MakeTlp(kCpl, 4, 12, &storage)));
  EXPECT_FALSE(q.Push(MakeTlp(kCpl, 5, 8, &storage)));  // 48 + 32 bytes > 64
  EXPECT_EQ(q.payload_bytes_used(DXPU_TLP_CLASS_COMPLETION), 48u);
  EXPECT_EQ(q.stats().push_refused, 2u);
  EXPECT_EQ(q.stats().pushed, 4u);

  FakeSession s;
  EXPECT_EQ(DrainInto(&q, &s), 4u);
  EXPECT_EQ(q.payload_bytes_used(DXPU_TLP_CLASS_COMPLETION), 0u);
  EXPECT_TRUE(q.Push(MakeTlp(kCpl, 5, 16, &storage)));  // 64 bytes: room again
  EXPECT_TRUE(q.Push(MakeTlp(kP, 6, 1, &storage)));
}

TEST(TxQueue, DiscardVisitsOldestFirstAndEmpties) {
  TxQueue q;
  PushAll(&q, {kNp, kP, kCpl, kP, kNp});
  Ids seen;
  q.Discard([&](const dxpu_tlp& t) { seen.push_back(t.addr); });
  EXPECT_EQ(seen, (Ids{0, 1, 2, 3, 4}));
  EXPECT_TRUE(q.empty());
  FakeSession s;
  EXPECT_EQ(DrainInto(&q, &s), 0u);
  EXPECT_TRUE(s.offers.empty());
}

}  // namespace
}  // namespace dxpu::fabric
