// Tests for the raw-link baseline: the frame plan, and loads over an in-memory pair and
// UDP on 127.0.0.1 that deliver every frame they count.
#include "fabric/raw_link_load.h"

#include <gtest/gtest.h>

#include <chrono>

#include "dxpu/dxfp.h"
#include "fabric/raw_link_pair.h"

namespace dxpu::fabric {
namespace {

TEST(RawFramePlan, PacksWholeTlpRecords) {
  // Record: 4-byte record header, 16-byte TLP header, payload. Frame: 32 + records + 4.
  RawFramePlan p = PlanRawFrames(DXFP_MAX_FRAME, 64);
  EXPECT_EQ(p.tlps_per_frame, 109u);  // (9216 - 36) / 84
  EXPECT_EQ(p.frame_bytes, 36u + 109u * 84u);
  EXPECT_EQ(p.payload_bytes_per_frame(), 109u * 64u);
  p = PlanRawFrames(DXFP_MAX_FRAME, 256);
  EXPECT_EQ(p.tlps_per_frame, 33u);
  EXPECT_EQ(p.frame_bytes, 36u + 33u * 276u);
  p = PlanRawFrames(DXFP_MAX_FRAME, 4096);
  EXPECT_EQ(p.tlps_per_frame, 2u);
  EXPECT_EQ(p.frame_bytes, 36u + 2u * 4116u);
  p = PlanRawFrames(1472, 4096);
  EXPECT_EQ(p.tlps_per_frame, 0u);
  EXPECT_EQ(p.frame_bytes, 0u);
  p = PlanRawFrames(DXFP_MAX_FRAME, 6);  // payload padded to a DW
  EXPECT_EQ(p.frame_bytes % 4, 0u);
}

void LoadDeliversEveryFrame(RawLinkKind kind) {
  RawLinkPair pair = OpenRawLinkPair(kind, 16);
  ASSERT_TRUE(pair.ok()) << RawLinkKindName(kind) << ": " << pair.error.message();
  EXPECT_EQ(pair.tx->max_frame(), DXFP_MAX_FRAME);
  RawLinkLoadOptions options;
  options.tlp_payload_bytes = 256;
  options.burst_frames = 8;
  options.max_frames = 200;
  const RawLinkLoadResult r = RunRawLinkLoad(*pair.tx, pair.to, *pair.rx, options);
  ASSERT_FALSE(r.error) << r.error.message();
  EXPECT_EQ(r.sent, 200u);
  EXPECT_EQ(r.frames + r.lost, r.sent);
  EXPECT_EQ(r.lost, 0u) << RawLinkKindName(kind);
  const RawFramePlan plan = PlanRawFrames(DXFP_MAX_FRAME, 256);
  EXPECT_EQ(r.bytes, r.frames * plan.frame_bytes);
  EXPECT_EQ(r.payload_bytes, r.frames * plan.payload_bytes_per_frame());
  EXPECT_GT(r.seconds, 0.0);
  EXPECT_GT(r.bytes_per_second(), 0.0);
}

TEST(RawLinkLoad, MemoryPairDeliversEveryFrame) { LoadDeliversEveryFrame(RawLinkKind::kMemory); }

TEST(RawLinkLoad, UdpLoopbackDeliversEveryFrame) {
  LoadDeliversEveryFrame(RawLinkKind::kUdpLoopback);
}

TEST(RawLinkLoad, TimedRunStops) {
  RawLinkPair pair = OpenRawLinkPair(RawLinkKind::kMemory, 16);
  ASSERT_TRUE(pair.ok());
  RawLinkLoadOptions options;
  options.duration = std::chrono::milliseconds(20);
  const RawLinkLoadResult r = RunRawLinkLoad(*pair.tx, pair.to, *pair.rx, options);
  ASSERT_FALSE(r.error);
  EXPECT_GE(r.seconds, 0.02);
  EXPECT_GT(r.frames, 0u);
}

TEST(RawLinkLoad, RefusesAPayloadNoFrameHolds) {
  RawLinkPair pair = OpenRawLinkPair(RawLinkKind::kMemory, 4);
  ASSERT_TRUE(pair.ok());
  RawLinkLoadOptions options;
  options.tlp_payload_bytes = 16384;
  const RawLinkLoadResult r = RunRawLinkLoad(*pair.tx, pair.to, *pair.rx, options);
  EXPECT_EQ(r.error, std::errc::invalid_argument);
  EXPECT_EQ(r.sent, 0u);
}

}  // namespace
}  // namespace dxpu::fabric
