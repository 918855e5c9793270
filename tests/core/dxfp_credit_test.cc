// DxFP credits: a sender spends exactly what a receiver grants, per class,
// across counter wrap, with lost and reordered advertisements.
#include <gtest/gtest.h>

#include "core/dxfp_credit.h"

namespace {

constexpr int kP = DXPU_TLP_CLASS_POSTED;
constexpr int kNp = DXPU_TLP_CLASS_NON_POSTED;
constexpr int kCpl = DXPU_TLP_CLASS_COMPLETION;

struct Pair {
  dxfp_tx_credits tx{};
  dxfp_rx_credits rx{};
  Pair() {
    // Posted: 4 TLPs, 64 units (1 KiB); non-posted: 2 TLPs, no data; completions: 8, 256 units.
    const uint32_t hdr[3] = {4, 2, 8};
    const uint32_t data[3] = {64, 0, 256};
    dxfp_tx_credits_init(&tx);
    dxfp_rx_credits_init(&rx, hdr, data);
  }
  void advertise() {
    dxfp_credits adv{};
    dxfp_rx_credits_advert(&rx, &adv);
    dxfp_tx_credits_update(&tx, &adv);
  }
  // Sends if allowed; the receiver must then accept.
  bool send(int cls, uint32_t bytes) {
    if (!dxfp_tx_credits_allow(&tx, cls, bytes)) return false;
    dxfp_tx_credits_consume(&tx, cls, bytes);
    EXPECT_TRUE(dxfp_rx_credits_accept(&rx, cls, bytes)) << "receiver refused granted credit";
    return true;
  }
};

TEST(DxfpCredit, DataCreditsAreSixteenByteUnits) {
  EXPECT_EQ(dxfp_data_credits(0), 0u);
  EXPECT_EQ(dxfp_data_credits(1), 1u);
  EXPECT_EQ(dxfp_data_credits(16), 1u);
  EXPECT_EQ(dxfp_data_credits(17), 2u);
  EXPECT_EQ(dxfp_data_credits(4096), 256u);
}

TEST(DxfpCredit, NothingBeforeTheFirstAdvertisement) {
  Pair p;
  EXPECT_FALSE(dxfp_tx_credits_allow(&p.tx, kP, 4));
  EXPECT_FALSE(dxfp_tx_credits_allow(&p.tx, kNp, 0));
}

TEST(DxfpCredit, HeaderAndDataLimitsPerClass) {
  Pair p;
  p.advertise();
  // Posted: 1 KiB of data lets three 256-byte writes and one 4-byte write through (49 units),
  // then the fourth header is the last one.
  EXPECT_TRUE(p.send(kP, 256));
  EXPECT_TRUE(p.send(kP, 256));
  EXPECT_TRUE(p.send(kP, 256));
  EXPECT_FALSE(p.send(kP, 512));  // 48 + 32 units > 64
  EXPECT_TRUE(p.send(kP, 4));
  EXPECT_FALSE(p.send(kP, 4));  // 4 headers used
  // Non-posted and completion credit are untouched by posted traffic.
  EXPECT_TRUE(p.send(kNp, 0));
  EXPECT_TRUE(p.send(kNp, 0));
  EXPECT_FALSE(p.send(kNp, 0));
  EXPECT_TRUE(p.send(kCpl, 4096));
  EXPECT_FALSE(p.send(kCpl, 16));  // 256 units used
}

TEST(DxfpCredit, ReleasedBuffersComeBackThroughTheAdvertisement) {
  Pair p;
  p.advertise();
  EXPECT_TRUE(p.send(kNp, 0));
  EXPECT_TRUE(p.send(kNp, 0));
  EXPECT_FALSE(p.send(kNp, 0));
  dxfp_rx_credits_release(&p.rx, kNp, 0);
  EXPECT_FALSE(p.send(kNp, 0));  // not advertised yet
  p.advertise();
  EXPECT_TRUE(p.send(kNp, 0));
  EXPECT_FALSE(p.send(kNp, 0));
}

TEST(DxfpCredit, ReceiverDetectsAViolation) {
  Pair p;
  p.advertise();
  EXPECT_TRUE(dxfp_rx_credits_accept(&p.rx, kNp, 0));
  EXPECT_TRUE(dxfp_rx_credits_accept(&p.rx, kNp, 0));
  EXPECT_FALSE(dxfp_rx_credits_accept(&p.rx, kNp, 0));    // a third read was never granted
  EXPECT_FALSE(dxfp_rx_credits_accept(&p.rx, kP, 2048));  // more data than the posted buffer
  EXPECT_FALSE(dxfp_rx_credits_accept(&p.rx, 3, 0));      // no such class
  EXPECT_TRUE(dxfp_rx_credits_accept(&p.rx, kP, 1024));   // the refusals counted nothing
}

// An older advertisement arriving after a newer one (reordering) takes nothing back.
TEST(DxfpCredit, StaleAdvertisementIsIgnored) {
  Pair p;
  p.advertise();
  dxfp_credits old{};
  dxfp_rx_credits_advert(&p.rx, &old);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(p.send(kNp, 0));
    dxfp_rx_credits_release(&p.rx, kNp, 0);
  }
  p.advertise();                        // limit 4
  dxfp_tx_credits_update(&p.tx, &old);  // the older limit (2) is ignored
  EXPECT_TRUE(p.send(kNp, 0));
  EXPECT_TRUE(p.send(kNp, 0));
  EXPECT_FALSE(p.send(kNp, 0));
}

// Cumulative counters wrap at 2^32 without losing or inventing credit.
TEST(DxfpCredit, CountersWrap) {
  Pair p;
  for (int cls = 0; cls < 3; ++cls) {
    p.rx.hdr_rcvd[cls] = p.rx.hdr_freed[cls] = 0xfffffffeu;
    p.tx.hdr_used[cls] = 0xfffffffeu;
    p.tx.limit.hdr[cls] = 0xfffffffeu;
  }
  p.advertise();  // posted limit 0xfffffffe + 4 = 2 (wrapped)
  EXPECT_EQ(p.tx.limit.hdr[kP], 2u);
  int sent = 0;
  while (p.send(kP, 0)) ++sent;
  EXPECT_EQ(sent, 4);
  EXPECT_EQ(p.tx.hdr_used[kP], 2u);
}

}  // namespace
