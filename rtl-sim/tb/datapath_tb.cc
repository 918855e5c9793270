// datapath_tb.cc - testbench of rtl/dxpu_datapath.sv (classify, ID translation, address
// windows, tag remapping) at 64 and 256 bits:
//   - the data plane's conformance suite (tests/bridge/datapath_conformance.h), the one the
//     C++ golden model passes, run on the RTL through its firmware side (RtlDatapath);
//   - co-simulation: seeded random control calls and TLP streams from hosts and devices
//     (valid ones, strays, late and split completions, table misses, exhaustion, timeouts,
//     releases) through the RTL and through the golden model, every decision compared bit for
//     bit (route, port, refusal, the encoded TLP), and the counters and the next deadline after
//     every step; the payload beats that come out checked against those that went in;
//   - one header per cycle unstalled, measured on the bare model.
// $DXPU_SEED replays a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "Vrtl_datapath_w256.h"
#include "Vrtl_datapath_w64.h"
#include "bridge/datapath_conformance.h"
#include "core/tlp_testutil.h"
#include "rtl-sim/datapath/datapath_regs.h"
#include "rtl-sim/datapath/rtl_datapath.h"
#include "rtl_tb.h"

namespace dxpu::bridge {
namespace {

template <unsigned kWidth>
std::unique_ptr<Datapath> MakeRtl(const GoldenDatapathConfig& config, std::string* error) {
  return RtlDatapath::Create(config, kWidth, error);
}

INSTANTIATE_TEST_SUITE_P(Rtl64, DatapathConformance, ::testing::Values(&MakeRtl<64>));
INSTANTIATE_TEST_SUITE_P(Rtl256, DatapathConformance, ::testing::Values(&MakeRtl<256>));

// ---- co-simulation against the golden model ----

// The TLP as lib/core would put it on the wire (empty when it does not encode).
std::vector<uint8_t> Wire(const dxpu_tlp& t) {
  std::vector<uint8_t> out(DXPU_TLP_MAX_SIZE);
  size_t len = 0;
  if (dxpu_tlp_encode(&t, out.data(), out.size(), &len) != DXPU_TLP_OK) return {};
  out.resize(len);
  return out;
}

std::string Describe(const Decision& d) {
  std::string s = "route " + std::to_string(static_cast<int>(d.route)) + " port " +
                  std::to_string(d.port) + " refusal " + std::string(RefusalName(d.refusal));
  if (d.route == Route::kDevice || d.route == Route::kHost) {
    std::array<char, 256> text{};
    dxpu_tlp_format(&d.tlp, text.data(), text.size());
    s += ": ";
    s += text.data();
  }
  return s;
}

// Equal decisions: the same route, port and refusal and, where a TLP goes somewhere, the same
// bytes on the wire.
::testing::AssertionResult SameDecision(const Decision& golden, const Decision& rtl) {
  const bool carries = golden.route == Route::kDevice || golden.route == Route::kHost;
  if (golden.route != rtl.route || golden.port != rtl.port || golden.refusal != rtl.refusal ||
      (carries && Wire(golden.tlp) != Wire(rtl.tlp)))
    return ::testing::AssertionFailure()
           << "golden: " << Describe(golden) << "\n   rtl: " << Describe(rtl);
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult SameCounters(const DatapathCounters& g, const DatapathCounters& r) {
  const auto fields = [](const DatapathCounters& c) {
    std::vector<uint64_t> v = {c.to_device, c.to_host, c.peer,    c.retries,
                               c.ur_sent,   c.dropped, c.pending, c.tags_free};
    v.insert(v.end(), c.refused.begin(), c.refused.end());
    return v;
  };
  const std::vector<uint64_t> a = fields(g), b = fields(r);
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i])
      return ::testing::AssertionFailure()
             << "counter word " << i << ": golden " << a[i] << ", rtl " << b[i];
  }
  return ::testing::AssertionSuccess();
}

// What the random traffic aims at: the tables as the control calls set them (hints only: a
// release may have emptied them since), the requests in flight toward devices.
struct Hints {
  struct Window {
    DeviceIndex device;
    uint64_t base, size;
  };
  struct InFlight {
    DeviceIndex device;
    dxpu_tlp request;
    dxpu_tlp_cpl_split split{};
    bool split_ok = false;
  };
  std::vector<uint16_t> box_rids, host_rids;
  std::vector<Window> bars, dmas;
  std::map<uint16_t, InFlight> box_tags;  // box tag -> the request the device got
};

class CoSim {
 public:
  CoSim(const GoldenDatapathConfig& config, unsigned width, uint64_t seed)
      : config_(config), rng_(seed), tlps_(seed ^ 0x5bd1e995u) {
    golden_ = GoldenDatapath::Create(config);
    rtl_ = RtlDatapath::Create(config, width);
    hints_.box_rids = {0x0100, 0x0200, 0x0300, 0x0400, 0x0500, 0x0600, config.bridge_rid, 0};
    hints_.host_rids = {0x0008, 0x0010, 0x0018, 0x0100};
  }
  bool ok() const { return golden_ != nullptr && rtl_ != nullptr; }
  RtlDatapath& rtl() { return *rtl_; }

  // One random step; false once golden and RTL disagree (the failure says where).
  bool Step() {
    AdvanceTime();
    const unsigned what = Pick(100);
    if (what < 12) return Control();
    if (what < 55) {
      const HostSlot h = host();
      const dxpu_tlp t = HostTlp();
      const Decision g = golden_->FromHost(h, t, now_);
      return Compare(g, rtl_->FromHost(h, t, now_), true);
    }
    const DeviceIndex d = device();
    const dxpu_tlp t = DeviceTlp();
    const Decision g = golden_->FromDevice(d, t, now_);
    return Compare(g, rtl_->FromDevice(d, t, now_), false);
  }

  // Decisions seen, by route and by refusal; completions that were partial.
  std::array<uint64_t, 4> routes{};
  std::array<uint64_t, static_cast<size_t>(Refusal::kCount)> refusals{};
  uint64_t partial_completions = 0, steps = 0;

 private:
  unsigned Pick(unsigned n) { return static_cast<unsigned>(rng_() % n); }
  template <typename T>
  const T& OneOf(const std::vector<T>& v) {
    return v[Pick(static_cast<unsigned>(v.size()))];
  }

  void AdvanceTime() {
    const unsigned r = Pick(1000);
    const uint64_t next = golden_->NextDeadline();
    if (r < 30 && next != UINT64_MAX && next > now_) {
      now_ = next - (r % 2);  // a timer firing on time, and one nanosecond early
    } else if (r < 35) {
      now_ += config_.tag_quarantine_ns + Pick(1000);  // quarantines end
    } else if (r < 50) {
      now_ += config_.completion_timeout_ns + Pick(100);  // requests time out
    } else {
      now_ += Pick(200);
    }
  }

  HostSlot host() {
    host_last_ =
        static_cast<HostSlot>(Pick(50) == 0 ? config_.host_slots : Pick(config_.host_slots));
    return host_last_;
  }
  DeviceIndex device() {
    device_last_ =
        static_cast<DeviceIndex>(Pick(50) == 0 ? config_.devices : Pick(config_.devices));
    return device_last_;
  }

  // A random valid TLP of any kind, then most of the time aimed at something that exists.
  dxpu_tlp HostTlp() {
    dxpu_tlp t = tlps_.next();
    dxpu_tlp aimed = t;
    if (Pick(10) < 8) {
      if (dxpu_tlp_kind_is_cfg(t.kind)) {
        if (Pick(4) != 0 && t.kind == DXPU_TLP_CFGRD1) aimed.kind = DXPU_TLP_CFGRD0;
        if (Pick(4) != 0 && t.kind == DXPU_TLP_CFGWR1) aimed.kind = DXPU_TLP_CFGWR0;
        aimed.cfg_target = OneOf(hints_.host_rids);
      } else if (dxpu_tlp_kind_is_mem(t.kind) && !hints_.bars.empty()) {
        aimed.addr = Inside(OneOf(hints_.bars), aimed);
      } else if (dxpu_tlp_kind_is_cpl(t.kind)) {
        aimed.requester_id = OneOf(hints_.host_rids);
      }
    }
    last_ = dxpu_tlp_validate(&aimed) == DXPU_TLP_OK ? aimed : t;
    return last_;
  }

  dxpu_tlp DeviceTlp() {
    const unsigned r = Pick(10);
    if (r < 5 && !hints_.box_tags.empty()) return last_ = Completion();
    dxpu_tlp t = tlps_.next();
    dxpu_tlp aimed = t;
    const uint16_t self = device_last_ < config_.devices && Pick(8) != 0
                              ? hints_.box_rids[device_last_ % hints_.box_rids.size()]
                              : OneOf(hints_.box_rids);
    if (dxpu_tlp_kind_is_mem(t.kind)) {
      aimed.requester_id = self;
      if (Pick(3) == 0 && !hints_.bars.empty())
        aimed.addr = Inside(OneOf(hints_.bars), aimed);
      else if (!hints_.dmas.empty())
        aimed.addr = Inside(OneOf(hints_.dmas), aimed);
    } else if (dxpu_tlp_kind_is_cpl(t.kind)) {
      // A peer's completion (routed by requester), or a stray one for the bridge.
      aimed.requester_id = Pick(2) == 0 ? config_.bridge_rid : OneOf(hints_.box_rids);
      aimed.completer_id = self;
    }
    last_ = dxpu_tlp_validate(&aimed) == DXPU_TLP_OK ? aimed : t;
    return last_;
  }

  // An address inside (mostly) window w for request t's length, keeping it inside a 4 KiB page.
  uint64_t Inside(const Hints::Window& w, const dxpu_tlp& t) {
    const uint64_t len = uint64_t{t.length_dw} * 4;
    uint64_t off = w.size > len ? (rng_() % (w.size - len + 1)) & ~uint64_t{3} : 0;
    if (Pick(10) == 0) off = w.size - 4;  // runs off the end
    const uint64_t addr = w.base + off;
    const uint64_t page_room = 4096 - (addr & 4095);
    return page_room >= len ? addr : addr - (len - page_room);
  }

  // The next completion of a request a device has (or a stray or misdirected one).
  dxpu_tlp Completion() {
    auto it = hints_.box_tags.begin();
    std::advance(it, Pick(static_cast<unsigned>(hints_.box_tags.size())));
    const uint16_t tag = it->first;
    Hints::InFlight& f = it->second;
    if (Pick(20) != 0) device_last_ = f.device;
    dxpu_tlp c{};
    c.requester_id = config_.bridge_rid;
    c.completer_id = Pick(20) == 0 ? OneOf(hints_.box_rids) : f.request.cfg_target;
    c.tag = tag;
    c.tc = f.request.tc;
    c.attr = f.request.attr;
    static const std::array<uint8_t, 4096> data{};
    if (f.request.kind == DXPU_TLP_MRD && f.split_ok && Pick(8) != 0) {
      dxpu_tlp_cpl_piece p{};
      if (!dxpu_tlp_cpl_split_next(&f.split, &p)) {
        hints_.box_tags.erase(it);
        return Completion();
      }
      c.kind = DXPU_TLP_CPLD;
      c.length_dw = p.length_dw;
      c.byte_count = p.byte_count;
      c.lower_addr = p.lower_addr;
      c.payload = data.data();
      if (p.byte_count <= p.length_dw * 4u - (p.lower_addr & 3u))
        hints_.box_tags.erase(it);
      else
        ++partial_completions;
    } else {
      c.kind = f.request.kind == DXPU_TLP_CFGRD0 ? DXPU_TLP_CPLD : DXPU_TLP_CPL;
      c.length_dw = c.kind == DXPU_TLP_CPLD ? 1 : 0;
      c.byte_count = 4;
      c.payload = c.kind == DXPU_TLP_CPLD ? data.data() : nullptr;
      if (f.request.kind == DXPU_TLP_MRD) {  // a UR or CA for the read
        c.kind = DXPU_TLP_CPL;
        c.length_dw = 0;
        c.payload = nullptr;
        c.cpl_status = Pick(2) == 0 ? DXPU_TLP_CPL_UR : DXPU_TLP_CPL_CA;
        c.byte_count = 4;
      }
      hints_.box_tags.erase(it);
    }
    if (dxpu_tlp_validate(&c) != DXPU_TLP_OK) {
      c = {};
      c.kind = DXPU_TLP_CPL;
      c.requester_id = config_.bridge_rid;
      c.tag = tag;
      c.cpl_status = DXPU_TLP_CPL_UR;
      c.byte_count = 4;
    }
    return c;
  }

  bool Compare(const Decision& g, const Decision& r, bool from_host) {
    ++steps;
    EXPECT_TRUE(SameDecision(g, r))
        << "step " << steps << (from_host ? ": from host " : ": from device ")
        << (from_host ? host_last_ : device_last_) << ", " << test::to_hex(Wire(last_));
    if (::testing::Test::HasFailure()) return false;
    routes.at(static_cast<size_t>(g.route))++;
    refusals.at(static_cast<size_t>(g.refusal))++;
    if (from_host && g.route == Route::kDevice && g.refusal == Refusal::kNone &&
        (g.tlp.kind == DXPU_TLP_MRD || g.tlp.kind == DXPU_TLP_CFGRD0 ||
         g.tlp.kind == DXPU_TLP_CFGWR0)) {
      Hints::InFlight f{g.port, g.tlp};
      if (dxpu_tlp_kind_is_cfg(g.tlp.kind))
        f.request.cfg_target = g.tlp.cfg_target;
      else
        f.request.cfg_target = hints_.box_rids[g.port % hints_.box_rids.size()];
      if (g.tlp.kind == DXPU_TLP_MRD)
        f.split_ok =
            dxpu_tlp_cpl_split_init(&f.split, g.tlp.addr, g.tlp.length_dw, g.tlp.first_be,
                                    g.tlp.last_be, 64, Pick(2) == 0 ? 128 : 256) == DXPU_TLP_OK;
      hints_.box_tags[g.tlp.tag] = f;
    }
    return CompareState();
  }

  bool CompareState() {
    EXPECT_TRUE(SameCounters(golden_->counters(), rtl_->counters())) << "after step " << steps;
    EXPECT_EQ(golden_->NextDeadline(), rtl_->NextDeadline()) << "after step " << steps;
    return !::testing::Test::HasFailure();
  }

  bool CompareList(size_t ng, std::span<const Decision> g, size_t nr, std::span<const Decision> r,
                   const char* what) {
    ++steps;
    EXPECT_EQ(ng, nr) << what << " at step " << steps;
    for (size_t i = 0; i < std::min(ng, nr); ++i) {
      EXPECT_TRUE(SameDecision(g[i], r[i])) << what << " at step " << steps << ", entry " << i;
      routes.at(static_cast<size_t>(g[i].route))++;
      refusals.at(static_cast<size_t>(g[i].refusal))++;
    }
    if (::testing::Test::HasFailure()) return false;
    return CompareState();
  }

  uint64_t RandomBase(bool dma) {
    const uint64_t region = Pick(3) == 0 ? 0x1'0000'0000ull : (dma ? 0x4000'0000 : 0xf000'0000);
    return region + uint64_t{Pick(16)} * 0x1'0000;
  }

  bool Control() {
    const auto d = static_cast<DeviceIndex>(Pick(config_.devices + 1));  // sometimes out of range
    std::array<Decision, 8> gout{}, rout{};
    switch (Pick(8)) {
      case 0: {
        DeviceEntry e;
        e.box_rid = hints_.box_rids[d % 6];
        e.host_rid = OneOf(hints_.host_rids);
        const unsigned o = Pick(config_.host_slots + 2);
        e.owner = o == config_.host_slots ? kNoHost : static_cast<HostSlot>(o);
        ++steps;
        EXPECT_EQ(golden_->SetDevice(d, e), rtl_->SetDevice(d, e)) << "SetDevice at " << steps;
        return CompareState();
      }
      case 1:
      case 2: {
        const BarWindow w{RandomBase(false),
                          Pick(2) == 0 ? 0x9000'0000ull + uint64_t{Pick(64)} * 0x1000
                                       : 0x80'0000'0000 + uint64_t{Pick(64)} * 0x1000,
                          Pick(8) == 0 ? 0 : 0x1000ull << Pick(6)};
        const size_t bar = Pick(7);
        ++steps;
        const bool g = golden_->SetBarWindow(d, bar, w);
        EXPECT_EQ(g, rtl_->SetBarWindow(d, bar, w)) << "SetBarWindow at " << steps;
        if (g && w.size != 0) hints_.bars.push_back({d, w.host_base, w.size});
        return CompareState();
      }
      case 3: {
        const DmaWindow w{RandomBase(true), Pick(2) == 0 ? 0x7'0000'0000ull : 0x1000'0000ull,
                          Pick(10) == 0 ? 0 : 0x1000ull << Pick(6)};
        ++steps;
        const bool g = golden_->AddDmaWindow(d, w);
        EXPECT_EQ(g, rtl_->AddDmaWindow(d, w)) << "AddDmaWindow at " << steps;
        if (g) hints_.dmas.push_back({d, w.device_base, w.size});
        return CompareState();
      }
      case 4:
        if (Pick(4) != 0) return true;
        ++steps;
        golden_->ClearDmaWindows(d);
        rtl_->ClearDmaWindows(d);
        return CompareState();
      case 5: {
        if (Pick(3) != 0) return true;
        const size_t limit = Pick(5);
        const size_t ng = golden_->ReleaseDevice(d, now_, std::span(gout).first(limit));
        const size_t nr = rtl_->ReleaseDevice(d, now_, std::span(rout).first(limit));
        return CompareList(ng, gout, nr, rout, "ReleaseDevice");
      }
      case 6: {
        if (Pick(4) != 0) return true;
        const auto h = static_cast<HostSlot>(Pick(config_.host_slots + 1));
        ++steps;
        golden_->ReleaseHost(h);
        rtl_->ReleaseHost(h);
        return CompareState();
      }
      default: {
        const size_t limit = Pick(9);
        const size_t ng = golden_->Expire(now_, std::span(gout).first(limit));
        const size_t nr = rtl_->Expire(now_, std::span(rout).first(limit));
        return CompareList(ng, gout, nr, rout, "Expire");
      }
    }
  }

  GoldenDatapathConfig config_;
  std::mt19937_64 rng_;
  test::RandomTlpGenerator tlps_;
  std::unique_ptr<GoldenDatapath> golden_;
  std::unique_ptr<RtlDatapath> rtl_;
  Hints hints_;
  uint64_t now_ = 0;
  HostSlot host_last_ = 0;
  DeviceIndex device_last_ = 0;
  dxpu_tlp last_{};
};

template <unsigned kWidth>
void RunCoSim(int steps) {
  const dxpu::rtl::TestSeed seed_trace;
  const uint64_t seed = seed_trace.value();
  GoldenDatapathConfig c;
  c.devices = 6;
  c.host_slots = 5;
  c.box_tags = 8;  // few tags and a low quota: retries and quarantine pressure happen
  c.max_pending_per_host = 2;
  c.dma_windows_per_device = 4;
  c.completion_timeout_ns = 5000;
  c.tag_quarantine_ns = 12000;
  CoSim sim(c, kWidth, seed);
  ASSERT_TRUE(sim.ok());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    if (!sim.Step()) return;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("co-simulation at %u bits: %llu steps, %llu cycles, %.0f simulated cycles/s\n",
              kWidth, static_cast<unsigned long long>(sim.steps),
              static_cast<unsigned long long>(sim.rtl().cycles()),
              static_cast<double>(sim.rtl().cycles()) / secs);
  EXPECT_EQ(sim.rtl().payload_mismatches(), 0u);
  EXPECT_EQ(sim.rtl().bad_headers(), 0u);
  // The traffic reached every route and every refusal, split reads among them.
  for (size_t r = 0; r < sim.routes.size(); ++r) EXPECT_GT(sim.routes[r], 0u) << "route " << r;
  for (size_t r = 1; r < sim.refusals.size(); ++r)
    EXPECT_GT(sim.refusals[r], 0u) << RefusalName(static_cast<Refusal>(r)) << " never happened";
  EXPECT_GT(sim.partial_completions, 0u);
}

TEST(DatapathCoSim, RandomTrafficAgreesWithTheGoldenModel64) { RunCoSim<64>(60000); }
TEST(DatapathCoSim, RandomTrafficAgreesWithTheGoldenModel256) { RunCoSim<256>(60000); }

// ---- one header per cycle, on the bare model ----

template <typename Model>
class BareDatapath : public rtl::Dut<Model> {
  using Base = rtl::Dut<Model>;

 public:
  using Base::m;
  BareDatapath() {
    Model& d = m();
    d.now = 0;
    d.s_tlp_valid = 0;
    d.s_tlp_sop = 0;
    d.s_tlp_eop = 0;
    d.s_tlp_len = 0;
    d.s_tlp_keep = 0;
    d.s_tlp_from_device = 0;
    d.s_tlp_port = 0;
    rtl::SetBits(d.s_tlp_hdr, std::span<const uint32_t>{});
    rtl::SetBits(d.s_tlp_data, std::span<const uint32_t>{});
    d.m_tlp_ready = 1;
    d.reg_wr_en = 0;
    d.reg_wr_addr = 0;
    d.reg_wr_data = 0;
    d.reg_rd_addr = 0;
    Base::Reset();
  }
  void Write(uint16_t addr, uint64_t value) {
    m().reg_wr_en = 1;
    m().reg_wr_addr = addr;
    m().reg_wr_data = value;
    Base::Tick();
    m().reg_wr_en = 0;
  }
  void Settle() {
    for (int i = 0; i < 4096 && m().busy; ++i) Base::Tick();
  }
};

template <typename T>
class DatapathThroughput : public ::testing::Test {};
using Models = ::testing::Types<Vrtl_datapath_w64, Vrtl_datapath_w256>;
TYPED_TEST_SUITE(DatapathThroughput, Models);

// Host 0 holds device 0 with a BAR window; on every cycle a host MRd (a tag taken) or the
// device's completion for the oldest one (a tag freed) is offered, the output always ready:
// every TLP is taken on its cycle and one decision comes out per cycle.
TYPED_TEST(DatapathThroughput, OneHeaderPerCycleUnstalled) {
  namespace regs = rtl::regs;
  BareDatapath<TypeParam> dp;
  dp.Write(regs::kBoxTags, 64);
  dp.Write(regs::kMaxPerHost, 64);
  dp.Write(regs::kCommand, regs::Command(regs::Op::kInit, 0, 0));
  dp.Settle();
  dp.Write(regs::Entry(0), 0x0300 | uint64_t{0x0008} << 16 | uint64_t{0} << 32);
  dp.Settle();
  dp.Write(regs::Bar(0, 0, regs::kBase), 0xf000'0000);
  dp.Write(regs::Bar(0, 0, regs::kLand), 0x9000'0000);
  dp.Write(regs::Bar(0, 0, regs::kSize), 1u << 20);

  constexpr int kCycles = 20000;
  std::vector<uint16_t> tags;  // box tags given out, oldest first
  size_t oldest = 0;
  int accepted = 0, delivered = 0, to_device = 0, to_host = 0;
  TypeParam& m = dp.m();
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < kCycles; ++c) {
    // Even cycles a read, odd ones the completion of the read two cycles back (its tag is out
    // of the data path by then).
    dxpu_tlp t{};
    bool device = false;
    if (c % 2 == 0 || oldest >= tags.size()) {
      t.kind = DXPU_TLP_MRD;
      t.tag = static_cast<uint16_t>(c % 256);
      t.addr = 0xf000'0000 + (c % 64) * 64;
      t.length_dw = 1;
      t.first_be = 0xf;
    } else {
      device = true;
      t.kind = DXPU_TLP_CPL;
      t.requester_id = 0x0008;
      t.completer_id = 0x0300;
      t.tag = tags[oldest++];
      t.byte_count = 4;
    }
    const std::vector<uint8_t> bytes = test::encode_ok(t);
    rtl::SetBits(m.s_tlp_hdr, rtl::HeaderWords(bytes));
    m.s_tlp_len = static_cast<uint32_t>(bytes.size());
    m.s_tlp_from_device = device;
    m.s_tlp_port = 0;
    m.s_tlp_sop = 1;
    m.s_tlp_eop = 1;
    m.s_tlp_valid = 1;
    dp.Eval();
    accepted += m.s_tlp_ready;
    if (m.m_tlp_valid) {
      ++delivered;
      const auto route = static_cast<Route>(m.m_tlp_route);
      if (route == Route::kDevice) {
        ++to_device;
        const std::array<uint8_t, 16> h = rtl::HeaderBytes(rtl::GetBits(m.m_tlp_hdr, 4));
        tags.push_back(static_cast<uint16_t>(((h[1] & 0x80) << 2) | ((h[1] & 0x08) << 5) | h[6]));
      } else if (route == Route::kHost) {
        ++to_host;
      }
    }
    dp.Tick();
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(accepted, kCycles);
  EXPECT_EQ(delivered, kCycles - 2);  // two register stages
  EXPECT_GT(to_device, kCycles / 3);
  EXPECT_GT(to_host, kCycles / 3);
  EXPECT_EQ(to_device + to_host, delivered) << "some TLP was refused or told to retry";
  std::printf(
      "dxpu_datapath: %d decisions in %d cycles (%d reads, %d completions); %.0f "
      "simulated cycles/s\n",
      delivered, kCycles, to_device, to_host, kCycles / secs);
}

}  // namespace
}  // namespace dxpu::bridge
