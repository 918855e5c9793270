// Serial-number arithmetic (RFC 1982) and the RFC 6298 timer, with each
// expected value worked out by hand from the RFC's equations (in ns).
#include <gtest/gtest.h>

#include "core/dxfp_rtt.h"
#include "core/dxfp_seq.h"

namespace {

TEST(DxfpSeq, SerialNumberOrder) {
  EXPECT_TRUE(dxfp_seq_before(1, 2));
  EXPECT_FALSE(dxfp_seq_before(2, 1));
  EXPECT_FALSE(dxfp_seq_before(5, 5));
  EXPECT_TRUE(dxfp_seq_before_eq(5, 5));
  EXPECT_TRUE(dxfp_seq_before(0xffffffffu, 0));  // across the wrap
  EXPECT_FALSE(dxfp_seq_before(0, 0xffffffffu));
  EXPECT_TRUE(dxfp_seq_before(0, 0x7fffffffu));   // 2^31 - 1 apart: still ordered
  EXPECT_FALSE(dxfp_seq_before(0, 0x80000000u));  // 2^31 apart: unordered both ways
  EXPECT_FALSE(dxfp_seq_before(0x80000000u, 0));
  EXPECT_EQ(dxfp_seq_distance(0xfffffff0u, 0x10), 0x20u);
}

constexpr uint64_t kUs = 1000;

dxfp_rtt make(uint64_t granularity = 1 * kUs) {
  dxfp_rtt r{};
  dxfp_rtt_init(&r, 1000 * kUs, 200 * kUs, 1000000 * kUs, granularity);
  return r;
}

TEST(DxfpRtt, InitialTimeoutUntilTheFirstSample) {
  dxfp_rtt r = make();
  EXPECT_FALSE(r.has_sample);
  EXPECT_EQ(r.rto, 1000 * kUs);
}

// First sample R = 100 us: SRTT = 100 us, RTTVAR = 50 us, RTO = 100 + 4 * 50 = 300 us.
// R = 200 us: RTTVAR = 3/4 * 50 + 1/4 * |100 - 200| = 62.5 us; SRTT = 7/8 * 100 + 1/8 * 200
//   = 112.5 us; RTO = 112.5 + 250 = 362.5 us.
// R = 100 us: RTTVAR = 3/4 * 62.5 + 1/4 * 12.5 = 50 us; SRTT = 112.5 - 14.0625 (truncated
//   to 14.062) + 12.5 = 110.938 us; RTO = 110.938 + 200 = 310.938 us.
TEST(DxfpRtt, Rfc6298Updates) {
  dxfp_rtt r = make();
  dxfp_rtt_sample(&r, 100 * kUs);
  EXPECT_EQ(r.srtt, 100000u);
  EXPECT_EQ(r.rttvar, 50000u);
  EXPECT_EQ(r.rto, 300000u);
  dxfp_rtt_sample(&r, 200 * kUs);
  EXPECT_EQ(r.rttvar, 62500u);
  EXPECT_EQ(r.srtt, 112500u);
  EXPECT_EQ(r.rto, 362500u);
  dxfp_rtt_sample(&r, 100 * kUs);
  EXPECT_EQ(r.rttvar, 50000u);
  EXPECT_EQ(r.srtt, 110938u);
  EXPECT_EQ(r.rto, 310938u);
}

// RTT 1 us: 1 + max(G 1, 4 * 0.5 = 2) = 3 us, raised to the 200 us minimum.
TEST(DxfpRtt, TimeoutNeverBelowTheMinimum) {
  dxfp_rtt r = make();
  dxfp_rtt_sample(&r, 1 * kUs);
  EXPECT_EQ(r.rto, 200 * kUs);
}

// With a coarse timer (G = 1 ms) the variation term is G: 100 us + 1 ms.
TEST(DxfpRtt, GranularityBoundsTheVariationTerm) {
  dxfp_rtt r = make(1000 * kUs);
  dxfp_rtt_sample(&r, 100 * kUs);
  EXPECT_EQ(r.rto, 1100 * kUs);
}

TEST(DxfpRtt, BackoffDoublesUpToTheMaximumAndASampleEndsIt) {
  dxfp_rtt r = make();
  dxfp_rtt_sample(&r, 100 * kUs);  // RTO 300 us
  dxfp_rtt_backoff(&r);
  EXPECT_EQ(r.rto, 600 * kUs);
  dxfp_rtt_backoff(&r);
  EXPECT_EQ(r.rto, 1200 * kUs);
  EXPECT_EQ(r.backoffs, 2u);
  for (int i = 0; i < 40; ++i) dxfp_rtt_backoff(&r);
  EXPECT_EQ(r.rto, 1000000 * kUs);  // the 1 s maximum, no overflow
  dxfp_rtt_sample(&r, 100 * kUs);
  EXPECT_EQ(r.backoffs, 0u);
  EXPECT_LT(r.rto, 1000 * kUs);
}

// A steady RTT: the variation decays and the timeout settles at SRTT + G,
// here below the minimum, so the minimum.
TEST(DxfpRtt, SteadyRttConverges) {
  dxfp_rtt r = make();
  for (int i = 0; i < 200; ++i) dxfp_rtt_sample(&r, 150 * kUs);
  EXPECT_EQ(r.srtt, 150 * kUs);
  EXPECT_LT(r.rttvar, 1 * kUs);
  EXPECT_EQ(r.rto, 200 * kUs);
}

}  // namespace
