// datapath_conformance.cc - see datapath_conformance.h.
#include "datapath_conformance.h"

#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "core/tlp_testutil.h"

namespace dxpu::bridge {
namespace {

TEST_P(DatapathConformance, ConfigReadIsTranslatedAndItsCompletionRoutedBack) {
  const Decision d = dp_->FromHost(0, CfgRd(0x0008, 0x10, 5), 0);
  ASSERT_EQ(d.route, Route::kDevice);
  EXPECT_EQ(d.port, 0);
  EXPECT_EQ(d.tlp.cfg_target, 0x0300);  // box BDF
  EXPECT_EQ(d.tlp.cfg_reg, 0x10);
  EXPECT_EQ(d.tlp.requester_id, kBridgeRid);
  const uint16_t box_tag = d.tlp.tag;
  EXPECT_EQ(dp_->counters().pending, 1u);

  const uint32_t value = 0xdeadbeef;
  const Decision c = dp_->FromDevice(
      0, CplD(0x0300, box_tag, 1, 4, 0, reinterpret_cast<const uint8_t*>(&value)), 1);
  ASSERT_EQ(c.route, Route::kHost);
  EXPECT_EQ(c.port, 0);
  EXPECT_EQ(c.tlp.requester_id, 0x0000);
  EXPECT_EQ(c.tlp.tag, 5);
  EXPECT_EQ(c.tlp.completer_id, 0x0008);  // the BDF the host knows
  EXPECT_EQ(c.tlp.payload, reinterpret_cast<const uint8_t*>(&value));
  EXPECT_EQ(dp_->counters().pending, 0u);
  EXPECT_EQ(dp_->counters().tags_free, 16u);
}

TEST_P(DatapathConformance, HostsSeeOnlyTheirOwnDevices) {
  // Host 2 holds nothing: its config read and MMIO read get UR, its write is dropped.
  const Decision cfg = dp_->FromHost(2, CfgRd(0x0008, 0, 1), 0);
  ASSERT_EQ(cfg.route, Route::kHost);
  EXPECT_EQ(cfg.port, 2);
  EXPECT_EQ(cfg.refusal, Refusal::kNotOwner);
  EXPECT_EQ(cfg.tlp.kind, DXPU_TLP_CPL);
  EXPECT_EQ(cfg.tlp.cpl_status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(cfg.tlp.tag, 1);
  EXPECT_EQ(cfg.tlp.completer_id, 0x0008);
  EXPECT_EQ(cfg.tlp.byte_count, 4);
  EXPECT_EQ(dxpu_tlp_validate(&cfg.tlp), DXPU_TLP_OK);

  const Decision rd = dp_->FromHost(2, MemRd(0, 2, 0xf000'0010, 1), 0);
  ASSERT_EQ(rd.route, Route::kHost);
  EXPECT_EQ(rd.refusal, Refusal::kNoBarWindow);
  EXPECT_EQ(rd.tlp.lower_addr, 0x10);
  EXPECT_EQ(dxpu_tlp_validate(&rd.tlp), DXPU_TLP_OK);

  const std::vector<uint8_t> four(4, 1);
  EXPECT_EQ(dp_->FromHost(2, MemWr(0, 0xf000'0010, four), 0).route, Route::kDrop);
  // The same address from host 1 reaches its own device, with its own translation.
  const Decision ok = dp_->FromHost(1, MemWr(0, 0xf000'0010, four), 0);
  ASSERT_EQ(ok.route, Route::kDevice);
  EXPECT_EQ(ok.port, 1);
  EXPECT_EQ(ok.tlp.addr, 0xa000'0010u);
  EXPECT_EQ(Refused(Refusal::kNotOwner), 1u);
  EXPECT_EQ(Refused(Refusal::kNoBarWindow), 2u);
  EXPECT_EQ(dp_->counters().ur_sent, 2u);
  EXPECT_EQ(dp_->counters().dropped, 1u);
}

TEST_P(DatapathConformance, BarWindowsTranslateAndBoundsAreExact) {
  const std::vector<uint8_t> four(4, 1);
  // Last DW of BAR1 (64-bit, above 4 GiB on both sides).
  const Decision last = dp_->FromHost(0, MemWr(0, 0x40'0000'0000 + (1ull << 30) - 4, four), 0);
  ASSERT_EQ(last.route, Route::kDevice);
  EXPECT_EQ(last.tlp.addr, 0x80'0000'0000 + (1ull << 30) - 4);
  EXPECT_EQ(last.tlp.requester_id, kBridgeRid);
  // One DW past it, and a request that starts inside and runs out (of a 2 KiB window: a valid
  // TLP never crosses a 4 KiB page, so only a window that ends inside one can be run out of).
  EXPECT_EQ(dp_->FromHost(0, MemWr(0, 0x40'0000'0000 + (1ull << 30), four), 0).route, Route::kDrop);
  ASSERT_TRUE(dp_->SetBarWindow(
      0, 2, {.host_base = 0xe100'0000, .device_base = 0xb000'0000, .size = 2048}));
  const std::vector<uint8_t> eight(8, 1);
  EXPECT_EQ(dp_->FromHost(0, MemWr(0, 0xe100'0000 + 2048 - 8, eight), 0).route, Route::kDevice);
  EXPECT_EQ(dp_->FromHost(0, MemWr(0, 0xe100'0000 + 2048 - 4, eight), 0).route, Route::kDrop);
  // Just below BAR0.
  EXPECT_EQ(dp_->FromHost(0, MemWr(0, 0xf000'0000 - 4, four), 0).route, Route::kDrop);
  EXPECT_EQ(Refused(Refusal::kNoBarWindow), 3u);
  // A BAR overlapping another of the same host's is refused.
  EXPECT_FALSE(dp_->SetBarWindow(
      0, 2, {.host_base = 0xf080'0000, .device_base = 0xb000'0000, .size = 1u << 20}));
  // Moving a BAR (the host reprogrammed it) takes effect.
  ASSERT_TRUE(dp_->SetBarWindow(
      0, 0, {.host_base = 0xe000'0000, .device_base = 0x9000'0000, .size = 16u << 20}));
  EXPECT_EQ(dp_->FromHost(0, MemWr(0, 0xf000'0010, four), 0).route, Route::kDrop);
  EXPECT_EQ(dp_->FromHost(0, MemWr(0, 0xe000'0010, four), 0).tlp.addr, 0x9000'0010u);
}

TEST_P(DatapathConformance, MultiCompletionReadFreesItsTagOnTheLastCompletion) {
  // 512-byte read at an address 0x20 past an RCB boundary: completions of 96 + 256 + 160.
  const Decision d = dp_->FromHost(0, MemRd(0, 9, 0xf000'0020, 128), 0);
  ASSERT_EQ(d.route, Route::kDevice);
  EXPECT_EQ(d.tlp.addr, 0x9000'0020u);
  const uint16_t tag = d.tlp.tag;
  const Decision c1 = dp_->FromDevice(0, CplD(0x0300, tag, 24, 512, 0x20, data_.data()), 1);
  ASSERT_EQ(c1.route, Route::kHost);
  EXPECT_EQ(c1.tlp.tag, 9);
  EXPECT_EQ(dp_->counters().pending, 1u);
  const Decision c2 = dp_->FromDevice(0, CplD(0x0300, tag, 64, 416, 0x00, data_.data()), 2);
  ASSERT_EQ(c2.route, Route::kHost);
  EXPECT_EQ(dp_->counters().pending, 1u);
  const Decision c3 = dp_->FromDevice(0, CplD(0x0300, tag, 40, 160, 0x00, data_.data()), 3);
  ASSERT_EQ(c3.route, Route::kHost);
  EXPECT_EQ(c3.tlp.byte_count, 160);
  EXPECT_EQ(dp_->counters().pending, 0u);
  // A fourth is unexpected.
  EXPECT_EQ(dp_->FromDevice(0, CplD(0x0300, tag, 1, 4, 0, data_.data()), 4).route, Route::kDrop);
  EXPECT_EQ(Refused(Refusal::kUnexpectedCpl), 1u);
}

TEST_P(DatapathConformance, CompletionsFromTheWrongDeviceOrForNoRequestAreDropped) {
  const uint16_t tag = dp_->FromHost(0, CfgRd(0x0008, 0, 1), 0).tlp.tag;
  const uint32_t v = 1;
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  // Device 1 answering device 0's request, a wrong completer ID, a wrong requester ID.
  EXPECT_EQ(dp_->FromDevice(1, CplD(0x0400, tag, 1, 4, 0, p), 1).route, Route::kDrop);
  EXPECT_EQ(dp_->FromDevice(0, CplD(0x0400, tag, 1, 4, 0, p), 1).route, Route::kDrop);
  dxpu_tlp other = CplD(0x0300, tag, 1, 4, 0, p);
  other.requester_id = 0x0500;
  EXPECT_EQ(dp_->FromDevice(0, other, 1).route, Route::kDrop);
  EXPECT_EQ(dp_->FromDevice(0, CplD(0x0300, 1023, 1, 4, 0, p), 1).route, Route::kDrop);
  EXPECT_EQ(Refused(Refusal::kUnexpectedCpl), 4u);
  // The right one still completes.
  EXPECT_EQ(dp_->FromDevice(0, CplD(0x0300, tag, 1, 4, 0, p), 1).route, Route::kHost);
}

TEST_P(DatapathConformance, DeviceDmaGoesToItsOwnerInsideGrantedWindowsOnly) {
  const std::vector<uint8_t> data(64, 7);
  dxpu_tlp wr = MemWr(0x0300, 0x1'0000'0040, data);
  const Decision d = dp_->FromDevice(0, wr, 0);
  ASSERT_EQ(d.route, Route::kHost);
  EXPECT_EQ(d.port, 0);
  EXPECT_EQ(d.tlp.addr, 0x7'0000'0040u);
  EXPECT_EQ(d.tlp.requester_id, 0x0008);
  // Outside the window: the write is dropped, the read answered UR to the device.
  wr.addr = 0x1'0010'0000;
  EXPECT_EQ(dp_->FromDevice(0, wr, 0).route, Route::kDrop);
  const Decision rd = dp_->FromDevice(0, MemRd(0x0300, 3, 0x2'0000'0000, 16), 0);
  ASSERT_EQ(rd.route, Route::kDevice);
  EXPECT_EQ(rd.tlp.kind, DXPU_TLP_CPL);
  EXPECT_EQ(rd.tlp.cpl_status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(rd.tlp.requester_id, 0x0300);
  EXPECT_EQ(rd.tlp.tag, 3);
  EXPECT_EQ(rd.tlp.completer_id, kBridgeRid);
  EXPECT_EQ(rd.tlp.byte_count, 64);
  EXPECT_EQ(Refused(Refusal::kNoDmaWindow), 2u);
  // A device claiming another's requester ID is refused.
  EXPECT_EQ(dp_->FromDevice(0, MemRd(0x0400, 3, 0x1'0000'0000, 1), 0).refusal, Refusal::kMalformed);
  // The host's completion for a DMA read goes back to the device, IDs restored.
  dxpu_tlp cpl = CplD(0x0000, 3, 16, 64, 0, data_.data());
  cpl.requester_id = 0x0008;
  const Decision back = dp_->FromHost(0, cpl, 1);
  ASSERT_EQ(back.route, Route::kDevice);
  EXPECT_EQ(back.tlp.requester_id, 0x0300);
  EXPECT_EQ(back.tlp.completer_id, kBridgeRid);
  EXPECT_EQ(back.tlp.tag, 3);
  // Host 2 cannot complete for a device it does not hold.
  EXPECT_EQ(dp_->FromHost(2, cpl, 1).route, Route::kDrop);
}

// Peer to peer: device 2 (box 05:00.0) joins host 0 beside device 0. A write into device 0's
// BAR1 at the address host 0 gave it stays in the box, translated, IDs and tag the box's; a
// read too, and its completion goes back to the reader by Requester ID. Another host's
// device cannot reach in, and a completion for a device of another owner is dropped.
TEST_P(DatapathConformance, PeerToPeerBetweenOneHostsDevicesStaysInTheBox) {
  ASSERT_TRUE(dp_->SetDevice(2, {.box_rid = 0x0500, .host_rid = 0x0010, .owner = 0}));
  const std::vector<uint8_t> data(256, 9);
  const Decision wr = dp_->FromDevice(2, MemWr(0x0500, 0x40'0000'1000, data), 0);
  ASSERT_EQ(wr.route, Route::kDevice);
  EXPECT_EQ(wr.port, 0);
  EXPECT_EQ(wr.refusal, Refusal::kNone);
  EXPECT_EQ(wr.tlp.addr, 0x80'0000'1000u);
  EXPECT_EQ(wr.tlp.requester_id, 0x0500);
  EXPECT_EQ(wr.tlp.payload, data.data());
  const Decision rd = dp_->FromDevice(2, MemRd(0x0500, 17, 0x40'0000'1ffc, 1), 0);
  ASSERT_EQ(rd.route, Route::kDevice);
  EXPECT_EQ(rd.port, 0);
  EXPECT_EQ(rd.tlp.tag, 17);
  EXPECT_EQ(rd.tlp.requester_id, 0x0500);
  dxpu_tlp cpl = CplD(0x0300, 17, 1, 4, 0x7c, data_.data());
  cpl.requester_id = 0x0500;
  const Decision back = dp_->FromDevice(0, cpl, 1);
  ASSERT_EQ(back.route, Route::kDevice);
  EXPECT_EQ(back.port, 2);
  EXPECT_EQ(back.tlp.requester_id, 0x0500);
  EXPECT_EQ(back.tlp.completer_id, 0x0300);
  EXPECT_EQ(dp_->counters().peer, 3u);
  // Host 1's device writing to that address is outside its own windows: dropped.
  EXPECT_EQ(dp_->FromDevice(1, MemWr(0x0400, 0x40'0000'1000, data), 0).route, Route::kDrop);
  // A completion device 1 (host 1's) sends to device 2 (host 0's): dropped.
  cpl.completer_id = 0x0400;
  EXPECT_EQ(dp_->FromDevice(1, cpl, 1).refusal, Refusal::kUnexpectedCpl);
  EXPECT_EQ(dp_->counters().peer, 3u);
}

TEST_P(DatapathConformance, UnownedDeviceCannotDma) {
  std::array<Decision, 8> out{};
  EXPECT_EQ(dp_->ReleaseDevice(0, 0, out), 0u);
  const std::vector<uint8_t> data(4, 1);
  const Decision d = dp_->FromDevice(0, MemWr(0x0300, 0x1'0000'0000, data), 0);
  EXPECT_EQ(d.route, Route::kDrop);
  EXPECT_EQ(d.refusal, Refusal::kUnowned);
  // Its windows went with its owner: a new owner must grant its own.
  ASSERT_TRUE(dp_->SetDevice(0, {.box_rid = 0x0300, .host_rid = 0x0010, .owner = 2}));
  EXPECT_EQ(dp_->FromDevice(0, MemWr(0x0300, 0x1'0000'0000, data), 0).refusal,
            Refusal::kNoDmaWindow);
  EXPECT_EQ(dp_->FromHost(0, MemWr(0, 0xf000'0000, data), 0).route, Route::kDrop);
}

TEST_P(DatapathConformance, CompletionTimeoutAnswersUrAndTheLateCompletionIsDropped) {
  const Decision d = dp_->FromHost(0, MemRd(0, 4, 0xf000'0104, 2), 0);
  ASSERT_EQ(d.route, Route::kDevice);
  const uint16_t tag = d.tlp.tag;
  EXPECT_EQ(dp_->NextDeadline(), 10 * kMs);
  std::array<Decision, 4> out{};
  EXPECT_EQ(dp_->Expire(10 * kMs - 1, out), 0u);
  ASSERT_EQ(dp_->Expire(10 * kMs, out), 1u);
  EXPECT_EQ(out[0].route, Route::kHost);
  EXPECT_EQ(out[0].port, 0);
  EXPECT_EQ(out[0].refusal, Refusal::kCompletionTimeout);
  EXPECT_EQ(out[0].tlp.cpl_status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(out[0].tlp.tag, 4);
  EXPECT_EQ(out[0].tlp.byte_count, 8);
  EXPECT_EQ(out[0].tlp.lower_addr, 0x04);
  EXPECT_EQ(dxpu_tlp_validate(&out[0].tlp), DXPU_TLP_OK);
  EXPECT_EQ(dp_->counters().pending, 0u);
  // Quarantined: not free, and a late completion is dropped, not delivered.
  EXPECT_EQ(dp_->counters().tags_free, 15u);
  EXPECT_EQ(dp_->FromDevice(0, CplD(0x0300, tag, 2, 8, 4, data_.data()), 11 * kMs).route,
            Route::kDrop);
  EXPECT_EQ(Refused(Refusal::kUnexpectedCpl), 1u);
  EXPECT_EQ(dp_->NextDeadline(), 30 * kMs);
  EXPECT_EQ(dp_->Expire(30 * kMs, out), 0u);
  EXPECT_EQ(dp_->counters().tags_free, 16u);
  EXPECT_EQ(dp_->NextDeadline(), UINT64_MAX);
}

TEST_P(DatapathConformance, PartlyCompletedReadTimesOutWithTheRemainingByteCount) {
  // 256 bytes from 0x...20: the device sends the first 32 (up to a 64-byte RCB boundary).
  const uint16_t tag = dp_->FromHost(0, MemRd(0, 4, 0xf000'0020, 64), 0).tlp.tag;
  ASSERT_EQ(dp_->FromDevice(0, CplD(0x0300, tag, 8, 256, 0x20, data_.data()), 1).route,
            Route::kHost);
  std::array<Decision, 4> out{};
  ASSERT_EQ(dp_->Expire(10 * kMs, out), 1u);
  EXPECT_EQ(out[0].tlp.byte_count, 224);
  EXPECT_EQ(out[0].tlp.lower_addr, 0x40);  // where the rest starts: 0x...40
  EXPECT_EQ(dxpu_tlp_validate(&out[0].tlp), DXPU_TLP_OK);
}

TEST_P(DatapathConformance, OneHostCannotTakeEveryTag) {
  // Host 0 may hold 8 of the 16 tags; the ninth request waits (kRetry), host 1 is unharmed.
  std::vector<uint16_t> tags;
  for (int i = 0; i < 8; ++i) {
    const Decision d = dp_->FromHost(0, CfgRd(0x0008, 0, static_cast<uint16_t>(i)), 0);
    ASSERT_EQ(d.route, Route::kDevice);
    tags.push_back(d.tlp.tag);
  }
  EXPECT_EQ(dp_->FromHost(0, CfgRd(0x0008, 0, 8), 0).route, Route::kRetry);
  EXPECT_EQ(dp_->FromHost(1, CfgRd(0x0008, 0, 0), 0).route, Route::kDevice);
  EXPECT_EQ(dp_->counters().retries, 1u);
  EXPECT_EQ(std::set<uint16_t>(tags.begin(), tags.end()).size(), 8u);
  // A completion frees one: the retried request goes.
  const uint32_t v = 0;
  ASSERT_EQ(
      dp_->FromDevice(0, CplD(0x0300, tags[0], 1, 4, 0, reinterpret_cast<const uint8_t*>(&v)), 1)
          .route,
      Route::kHost);
  EXPECT_EQ(dp_->FromHost(0, CfgRd(0x0008, 0, 8), 1).route, Route::kDevice);
}

TEST_P(DatapathConformance, ReleasingADeviceAnswersItsPendingReadsAndForgetsItsWindows) {
  const uint16_t tag = dp_->FromHost(0, MemRd(0, 6, 0xf000'0000, 1), 0).tlp.tag;
  std::array<Decision, 4> out{};
  ASSERT_EQ(dp_->ReleaseDevice(0, 5, out), 1u);
  EXPECT_EQ(out[0].route, Route::kHost);
  EXPECT_EQ(out[0].tlp.tag, 6);
  EXPECT_EQ(out[0].tlp.cpl_status, DXPU_TLP_CPL_UR);
  // The device's late answer is dropped; the host's MMIO no longer reaches it.
  EXPECT_EQ(dp_->FromDevice(0, CplD(0x0300, tag, 1, 4, 0, data_.data()), 6).route, Route::kDrop);
  const std::vector<uint8_t> four(4, 1);
  EXPECT_EQ(dp_->FromHost(0, MemWr(0, 0xf000'0000, four), 6).refusal, Refusal::kNoBarWindow);
  EXPECT_EQ(dp_->FromHost(0, CfgRd(0x0008, 0, 1), 6).refusal, Refusal::kNotOwner);
  // Device 1 and its host carry on.
  EXPECT_EQ(dp_->FromHost(1, MemWr(0, 0xf000'0000, four), 6).route, Route::kDevice);
}

TEST_P(DatapathConformance, AVanishedHostsDevicesReturnToThePool) {
  const uint16_t tag = dp_->FromHost(0, CfgRd(0x0008, 0, 1), 0).tlp.tag;
  dp_->ReleaseHost(0);
  EXPECT_EQ(dp_->counters().pending, 0u);
  const uint32_t v = 0;
  EXPECT_EQ(
      dp_->FromDevice(0, CplD(0x0300, tag, 1, 4, 0, reinterpret_cast<const uint8_t*>(&v)), 1).route,
      Route::kDrop);
  const std::vector<uint8_t> data(4, 1);
  EXPECT_EQ(dp_->FromDevice(0, MemWr(0x0300, 0x1'0000'0000, data), 1).refusal, Refusal::kUnowned);
  EXPECT_EQ(dp_->FromDevice(1, MemWr(0x0400, 0x1'0000'0000, data), 1).route, Route::kHost);
}

TEST_P(DatapathConformance, MessagesAndType1ConfigurationAreNotCarried) {
  dxpu_tlp cfg1 = CfgRd(0x0100, 0, 2);
  cfg1.kind = DXPU_TLP_CFGRD1;
  const Decision d = dp_->FromHost(0, cfg1, 0);
  EXPECT_EQ(d.route, Route::kHost);
  EXPECT_EQ(d.refusal, Refusal::kUnsupported);
  dxpu_tlp msg{};
  msg.kind = DXPU_TLP_MSG;
  msg.msg_routing = DXPU_TLP_ROUTE_LOCAL;
  EXPECT_EQ(dp_->FromHost(0, msg, 0).route, Route::kDrop);
  EXPECT_EQ(dp_->FromDevice(0, msg, 0).route, Route::kDrop);
  EXPECT_EQ(Refused(Refusal::kUnsupported), 3u);
}

TEST_P(DatapathConformance, BadControlCallsAreRefused) {
  EXPECT_FALSE(dp_->SetDevice(4, {}));
  EXPECT_FALSE(dp_->SetDevice(0, {.box_rid = 1, .host_rid = 1, .owner = 4}));
  EXPECT_FALSE(dp_->SetBarWindow(0, kMaxBars, {}));
  EXPECT_FALSE(dp_->SetBarWindow(0, 3, {.host_base = ~0ull - 10, .device_base = 0, .size = 4096}));
  EXPECT_FALSE(dp_->AddDmaWindow(0, {.device_base = 0x1'0008'0000, .host_base = 0, .size = 4096}));
  EXPECT_FALSE(dp_->AddDmaWindow(0, {.device_base = 0, .host_base = 0, .size = 0}));
  EXPECT_EQ(dp_->FromHost(9, CfgRd(0, 0, 0), 0).refusal, Refusal::kMalformed);
  EXPECT_EQ(dp_->FromDevice(9, CfgRd(0, 0, 0), 0).refusal, Refusal::kMalformed);
  std::string error;
  GoldenDatapathConfig bad;
  bad.box_tags = 2000;
  EXPECT_EQ(GetParam()(bad, &error), nullptr);
  EXPECT_NE(error.find("box_tags"), std::string::npos);
}

// Random traffic from 3 hosts and the devices, with random completions, timeouts and
// releases: a completion reaches a host only for a request that host made and is still
// waiting for; tags are never handed out twice; counters add up.
TEST_P(DatapathConformance, RandomTrafficReachesOnlyTheHostThatAsked) {
  const uint64_t seed = test::test_seed();
  std::printf("DXPU_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  GoldenDatapathConfig c;
  c.devices = 3;
  c.host_slots = 3;
  c.box_tags = 32;
  c.max_pending_per_host = 12;
  c.completion_timeout_ns = 1000;
  c.tag_quarantine_ns = 3000;
  auto dp = GetParam()(c, nullptr);
  ASSERT_NE(dp, nullptr);
  for (DeviceIndex d = 0; d < 3; ++d) {
    ASSERT_TRUE(dp->SetDevice(
        d, {.box_rid = static_cast<uint16_t>(0x0300 + (d << 8)), .host_rid = 0x0008, .owner = d}));
    ASSERT_TRUE(dp->SetBarWindow(d, 0,
                                 {.host_base = 0xf000'0000,
                                  .device_base = 0x9000'0000 + (uint64_t{d} << 24),
                                  .size = 1u << 20}));
  }
  struct Outstanding {
    HostSlot host;
    uint16_t host_tag;
  };
  std::map<uint16_t, Outstanding> box;  // box tag -> who asked
  std::array<uint8_t, 4> word{};
  uint64_t now = 0;
  uint64_t delivered = 0;
  std::array<Decision, 64> out{};
  std::array<uint16_t, 3> next_host_tag{};  // unique among a host's outstanding requests
  for (int step = 0; step < 20000; ++step) {
    now += rng() % 50;
    const int what = static_cast<int>(rng() % 10);
    if (what < 5) {  // a host read
      const auto host = static_cast<HostSlot>(rng() % 3);
      const auto host_tag = static_cast<uint16_t>(next_host_tag[host]++ % 1024);
      dxpu_tlp rd{};
      rd.kind = DXPU_TLP_CFGRD0;
      rd.tag = host_tag;
      rd.length_dw = 1;
      rd.first_be = 0xf;
      rd.cfg_target = (rng() % 4 == 0) ? 0x0010 : 0x0008;
      const Decision d = dp->FromHost(host, rd, now);
      if (d.route == Route::kDevice) {
        ASSERT_EQ(d.port, host);
        ASSERT_FALSE(box.contains(d.tlp.tag)) << "tag " << d.tlp.tag << " handed out twice";
        box[d.tlp.tag] = {host, host_tag};
      } else if (d.route == Route::kHost) {
        ASSERT_EQ(d.refusal, Refusal::kNotOwner);
      }
    } else if (what < 8) {  // a device completion, right or stray
      const auto dev = static_cast<DeviceIndex>(rng() % 3);
      dxpu_tlp cpl{};
      cpl.kind = DXPU_TLP_CPLD;
      cpl.requester_id = c.bridge_rid;
      cpl.completer_id = static_cast<uint16_t>(0x0300 + (dev << 8));
      cpl.tag = static_cast<uint16_t>(rng() % 40);
      cpl.length_dw = 1;
      cpl.byte_count = 4;
      cpl.payload = word.data();
      const Decision d = dp->FromDevice(dev, cpl, now);
      if (d.route == Route::kHost) {
        auto it = box.find(cpl.tag);
        ASSERT_NE(it, box.end()) << "a completion for no request reached a host";
        ASSERT_EQ(d.port, it->second.host);
        ASSERT_EQ(d.port, dev);  // host h holds device h
        ASSERT_EQ(d.tlp.tag, it->second.host_tag);
        box.erase(it);
        delivered++;
      } else {
        ASSERT_EQ(d.route, Route::kDrop);
      }
    } else {  // time passes
      const size_t n = dp->Expire(now, out);
      for (size_t i = 0; i < n; ++i) {
        bool found = false;
        for (auto it = box.begin(); it != box.end(); ++it) {
          if (it->second.host == out[i].port && it->second.host_tag == out[i].tlp.tag) {
            box.erase(it);
            found = true;
            break;
          }
        }
        ASSERT_TRUE(found) << "a timeout for no request";
      }
    }
    ASSERT_EQ(dp->counters().pending, box.size());
  }
  EXPECT_GT(delivered, 100u);
  EXPECT_LE(dp->counters().tags_free + box.size(), 32u);
}

}  // namespace
}  // namespace dxpu::bridge
