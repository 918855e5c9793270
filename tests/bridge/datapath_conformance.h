// datapath_conformance.h - the data plane's behaviour (bridge-fw/datapath.h) as tests that
// any implementation must pass: the C++ golden model (golden_datapath_test.cc) and the
// Verilated RTL (rtl-sim/tb/datapath_tb.cc) instantiate the same suite with their factory.
// ID, tag and address translation both ways, access control, completion routing
// (multi-completion reads), the completion timeout and late completions, per-host tag quotas,
// release of a device and of a host, and random traffic that never breaks the tables'
// invariants.
#ifndef DXPU_TESTS_BRIDGE_DATAPATH_CONFORMANCE_H_
#define DXPU_TESTS_BRIDGE_DATAPATH_CONFORMANCE_H_

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "bridge-fw/datapath.h"
#include "bridge-fw/golden_datapath.h"

namespace dxpu::bridge {

inline constexpr uint16_t kBridgeRid = 0x0008;
inline constexpr uint64_t kMs = 1'000'000;

// Host 0 holds device 0 (box 03:00.0, seen as 00:01.0) with BAR0 16 MiB and BAR1 1 GiB;
// host 1 holds device 1 (box 04:00.0, seen as 00:01.0 too: each host has its own domain).
class DatapathConformance : public ::testing::TestWithParam<DatapathFactory> {
 protected:
  void SetUp() override {
    GoldenDatapathConfig c;
    c.bridge_rid = kBridgeRid;
    c.devices = 4;
    c.host_slots = 4;
    c.box_tags = 16;
    c.max_pending_per_host = 8;
    c.completion_timeout_ns = 10 * kMs;
    c.tag_quarantine_ns = 20 * kMs;
    std::string error;
    dp_ = GetParam()(c, &error);
    ASSERT_NE(dp_, nullptr) << error;
    ASSERT_TRUE(dp_->SetDevice(0, {.box_rid = 0x0300, .host_rid = 0x0008, .owner = 0}));
    ASSERT_TRUE(dp_->SetDevice(1, {.box_rid = 0x0400, .host_rid = 0x0008, .owner = 1}));
    ASSERT_TRUE(dp_->SetBarWindow(
        0, 0, {.host_base = 0xf000'0000, .device_base = 0x9000'0000, .size = 16u << 20}));
    ASSERT_TRUE(dp_->SetBarWindow(
        0, 1, {.host_base = 0x40'0000'0000, .device_base = 0x80'0000'0000, .size = 1ull << 30}));
    ASSERT_TRUE(dp_->SetBarWindow(
        1, 0, {.host_base = 0xf000'0000, .device_base = 0xa000'0000, .size = 16u << 20}));
    ASSERT_TRUE(dp_->AddDmaWindow(
        0, {.device_base = 0x1'0000'0000, .host_base = 0x7'0000'0000, .size = 1u << 20}));
    ASSERT_TRUE(dp_->AddDmaWindow(
        1, {.device_base = 0x1'0000'0000, .host_base = 0x1'0000'0000, .size = 1u << 20}));
  }

  static dxpu_tlp CfgRd(uint16_t target, uint16_t reg, uint16_t tag) {
    dxpu_tlp t{};
    t.kind = DXPU_TLP_CFGRD0;
    t.requester_id = 0x0000;  // the host proxy's root port
    t.tag = tag;
    t.length_dw = 1;
    t.first_be = 0xf;
    t.cfg_target = target;
    t.cfg_reg = reg;
    return t;
  }
  static dxpu_tlp MemRd(uint16_t requester, uint16_t tag, uint64_t addr, uint16_t dws) {
    dxpu_tlp t{};
    t.kind = DXPU_TLP_MRD;
    t.requester_id = requester;
    t.tag = tag;
    t.addr = addr;
    t.length_dw = dws;
    t.first_be = 0xf;
    t.last_be = dws > 1 ? 0xf : 0;
    return t;
  }
  static dxpu_tlp MemWr(uint16_t requester, uint64_t addr, const std::vector<uint8_t>& data) {
    dxpu_tlp t = MemRd(requester, 0, addr, static_cast<uint16_t>(data.size() / 4));
    t.kind = DXPU_TLP_MWR;
    t.payload = data.data();
    return t;
  }
  // The device's CplD for a box-side read: `dws` DWs, Byte Count `byte_count`.
  static dxpu_tlp CplD(uint16_t completer, uint16_t tag, uint16_t dws, uint16_t byte_count,
                       uint8_t lower_addr, const uint8_t* data) {
    dxpu_tlp t{};
    t.kind = DXPU_TLP_CPLD;
    t.requester_id = kBridgeRid;
    t.completer_id = completer;
    t.tag = tag;
    t.length_dw = dws;
    t.byte_count = byte_count;
    t.lower_addr = lower_addr;
    t.cpl_status = DXPU_TLP_CPL_SC;
    t.payload = data;
    return t;
  }

  uint64_t Refused(Refusal r) const { return dp_->counters().refused[static_cast<size_t>(r)]; }

  std::unique_ptr<Datapath> dp_;
  std::array<uint8_t, 4096> data_{};
};

}  // namespace dxpu::bridge

#endif  // DXPU_TESTS_BRIDGE_DATAPATH_CONFORMANCE_H_
