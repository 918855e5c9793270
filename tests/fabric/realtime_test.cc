// Two DxFP sessions in real time, driven by the epoll loop over real sockets: UDP on
// 127.0.0.1 and AF_UNIX datagrams in QEMU's framing. Every TLP must arrive once and in
// order; reads are answered; link down reports the reads left unanswered.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dxfp_session.h"
#include "core/tlp_build.h"
#include "fabric/endpoint.h"
#include "fabric/link_driver.h"
#include "link/event_loop.h"
#include "link/udp_link.h"
#include "link/unix_dgram_link.h"

namespace dxpu::fabric {
namespace {

using link::EventLoop;
using link::LinkAddress;

struct LinkPair {
  std::unique_ptr<link::Link> host;
  std::unique_ptr<link::Link> bridge;
  LinkAddress bridge_address;  // where the host sends
  std::string dir;             // AF_UNIX socket directory, removed at the end

  ~LinkPair() {
    host.reset();
    bridge.reset();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

std::unique_ptr<LinkPair> UdpPair() {
  auto p = std::make_unique<LinkPair>();
  auto b = link::UdpLink::Open("127.0.0.1", 0, {.mtu = 9000});
  auto h = link::UdpLink::Open("127.0.0.1", 0, {.mtu = 9000});
  if (!b.ok() || !h.ok()) return nullptr;
  p->bridge_address = b.link->local_address();
  p->bridge = std::move(b.link);
  p->host = std::move(h.link);
  return p;
}

std::unique_ptr<LinkPair> UnixPair() {
  auto p = std::make_unique<LinkPair>();
  std::string tmpl = (std::filesystem::temp_directory_path() / "dxpu-rt-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return nullptr;
  p->dir = tmpl;
  const link::MacAddress host_mac{0x02, 0, 0, 0, 0, 0x0a};
  const link::MacAddress bridge_mac{0x02, 0, 0, 0, 0, 0x0b};
  auto h = link::UnixDgramLink::Open({.local_path = tmpl + "/host.sock",
                                      .remote_path = tmpl + "/bridge.sock",
                                      .mac = host_mac,
                                      .mtu = 9000});
  auto b = link::UnixDgramLink::Open({.local_path = tmpl + "/bridge.sock",
                                      .remote_path = tmpl + "/host.sock",
                                      .mac = bridge_mac,
                                      .mtu = 9000});
  if (!h.ok() || !b.ok()) return nullptr;
  p->bridge_address = LinkAddress::Mac(bridge_mac);
  p->host = std::move(h.link);
  p->bridge = std::move(b.link);
  return p;
}

dxfp_session_config Config(dxfp_session_role role, size_t max_frame) {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  c.role = role;
  c.node_id = role == DXFP_ROLE_INITIATOR ? 1 : 2;
  c.session_id = role == DXFP_ROLE_INITIATOR ? 7 : 9;
  c.epoch = role == DXFP_ROLE_INITIATOR ? 0x1234 : 0x5678;
  c.initial_seq = role == DXFP_ROLE_INITIATOR ? 0xffffff00u : 5;
  c.max_frame = static_cast<uint32_t>(max_frame);
  // Real time on a loaded 2-core machine: generous timers.
  c.link_down_ns = 2000 * DXFP_NS_PER_MS;
  c.keepalive_ns = 100 * DXFP_NS_PER_MS;
  c.max_rto_ns = 500 * DXFP_NS_PER_MS;
  c.initial_rto_ns = 20 * DXFP_NS_PER_MS;
  c.min_rto_ns = 5 * DXFP_NS_PER_MS;
  c.timer_granularity_ns = DXFP_NS_PER_MS;
  return c;
}

std::vector<uint8_t> Payload(uint64_t id, size_t len) {
  std::vector<uint8_t> p(len);
  for (size_t i = 0; i < len; i++) p[i] = static_cast<uint8_t>(id * 13 + i);
  return p;
}

class RealtimeTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    links_ = GetParam() == "udp" ? UdpPair() : UnixPair();
    ASSERT_NE(links_, nullptr) << "could not open the " << GetParam() << " links";
    auto loop = EventLoop::Create();
    ASSERT_TRUE(loop.ok());
    loop_ = std::move(loop.link);
  }

  std::unique_ptr<LinkPair> links_;
  std::unique_ptr<EventLoop> loop_;
};

TEST_P(RealtimeTest, WritesAndReadsArriveOnceInOrder) {
  constexpr uint32_t kWrites = 3000;
  constexpr uint32_t kReads = 300;
  const size_t frame = std::min(links_->host->max_frame(), links_->bridge->max_frame());

  std::vector<uint32_t> bridge_got;  // write ids, in arrival order
  std::vector<dxpu_tlp> pending_reads;
  uint32_t completions = 0;
  bool data_ok = true;
  std::unique_ptr<LinkDriver> host_driver;
  std::unique_ptr<LinkDriver> bridge_driver;
  std::unique_ptr<Endpoint> bridge;

  EndpointCallbacks bcb;
  bcb.deliver = [&](const dxpu_tlp& t) {
    if (t.kind == DXPU_TLP_MWR) {
      const uint32_t id = static_cast<uint32_t>(t.addr >> 12) - 0x10000;
      data_ok = data_ok && std::equal(t.payload, t.payload + dxpu_tlp_payload_len(&t),
                                      Payload(id, dxpu_tlp_payload_len(&t)).begin());
      bridge_got.push_back(id);
    } else if (t.kind == DXPU_TLP_MRD) {
      // Answer with one completion of the whole read carrying the tag's pattern.
      const std::vector<uint8_t> data = Payload(t.tag, size_t{t.length_dw} * 4);
      dxpu_tlp cpl{};
      dxpu_tlp_completion_for(&t, 0x0100, DXPU_TLP_CPL_SC, &cpl);
      cpl.payload = data.data();
      EXPECT_TRUE(bridge->Submit(cpl, MonotonicNanos()));
    }
  };
  bcb.link_down = [](dxfp_down_reason, std::span<const dxpu_tlp>) {};
  bridge = Endpoint::Create(Config(DXFP_ROLE_RESPONDER, frame), bcb);
  ASSERT_NE(bridge, nullptr);

  EndpointCallbacks hcb;
  hcb.deliver = [&](const dxpu_tlp& t) {
    ASSERT_EQ(t.kind, DXPU_TLP_CPLD);
    const std::vector<uint8_t> want = Payload(t.tag, size_t{t.length_dw} * 4);
    data_ok = data_ok && std::equal(want.begin(), want.end(), t.payload);
    completions++;
  };
  bool host_down = false;
  hcb.link_down = [&](dxfp_down_reason, std::span<const dxpu_tlp>) { host_down = true; };
  auto host = Endpoint::Create(Config(DXFP_ROLE_INITIATOR, frame), hcb);
  ASSERT_NE(host, nullptr);

  std::error_code ec;
  bridge_driver = LinkDriver::Create(*loop_, *links_->bridge, *bridge, std::nullopt, &ec);
  ASSERT_NE(bridge_driver, nullptr) << ec.message();
  host_driver = LinkDriver::Create(*loop_, *links_->host, *host, links_->bridge_address, &ec);
  ASSERT_NE(host_driver, nullptr) << ec.message();
  host_driver->Connect();

  // Feed the host's queue as it empties: writes of 4..1024 bytes, a read every tenth TLP.
  uint32_t next_write = 0;
  uint32_t next_read = 0;
  const auto start = std::chrono::steady_clock::now();
  std::function<void()> feed = [&] {
    while (host->state() == DXFP_STATE_ESTABLISHED && host->queue().size() < 256 &&
           (next_write < kWrites || next_read < kReads)) {
      dxpu_tlp t{};
      std::vector<uint8_t> data;
      t.first_be = 0xf;
      if (next_read < kReads && (next_write % 10 == 9 || next_write >= kWrites)) {
        t.kind = DXPU_TLP_MRD;
        t.tag = static_cast<uint16_t>(next_read % 1024);
        t.length_dw = 16;
        t.last_be = 0xf;
        t.addr = 0x2000'0000;
        next_read++;
      } else {
        t.kind = DXPU_TLP_MWR;
        t.length_dw = static_cast<uint16_t>(1 + next_write % 256);
        t.last_be = t.length_dw > 1 ? 0xf : 0;
        t.addr = static_cast<uint64_t>(0x10000 + next_write) << 12;
        data = Payload(next_write, size_t{t.length_dw} * 4);
        t.payload = data.data();
        next_write++;
      }
      ASSERT_TRUE(host->Submit(t, MonotonicNanos()));
    }
    host_driver->Kick();
    bridge_driver->Kick();  // completions queued by the bridge's deliver callback
    if ((bridge_got.size() == kWrites && completions == kReads) || host_down ||
        std::chrono::steady_clock::now() - start > std::chrono::seconds(30)) {
      loop_->Stop();
      return;
    }
    loop_->AddTimer(EventLoop::Clock::now() + std::chrono::microseconds(200), feed);
  };
  loop_->AddTimer(EventLoop::Clock::now(), feed);
  ASSERT_FALSE(loop_->Run());

  EXPECT_FALSE(host_down);
  ASSERT_EQ(bridge_got.size(), kWrites);
  for (uint32_t i = 0; i < kWrites; i++) ASSERT_EQ(bridge_got[i], i) << "write " << i;
  EXPECT_EQ(completions, kReads);
  EXPECT_TRUE(data_ok);
  EXPECT_EQ(host->counters().bad_crc + bridge->counters().bad_crc, 0u);
  EXPECT_EQ(bridge->counters().tlps_delivered, kWrites + kReads);
  EXPECT_GT(host_driver->counters().frames_out, 0u);
}

TEST_P(RealtimeTest, SilentPeerTakesTheLinkDownWithUnansweredReads) {
  const size_t frame = std::min(links_->host->max_frame(), links_->bridge->max_frame());
  uint32_t reads_seen = 0;
  EndpointCallbacks bcb;
  bcb.deliver = [&](const dxpu_tlp& t) { reads_seen += t.kind == DXPU_TLP_MRD; };
  bcb.link_down = [](dxfp_down_reason, std::span<const dxpu_tlp>) {};
  auto bridge = Endpoint::Create(Config(DXFP_ROLE_RESPONDER, frame), bcb);
  std::optional<dxfp_down_reason> reason;
  std::vector<uint16_t> unanswered;
  EndpointCallbacks hcb;
  hcb.deliver = [](const dxpu_tlp&) {};
  hcb.link_down = [&](dxfp_down_reason r, std::span<const dxpu_tlp> un) {
    reason = r;
    for (const dxpu_tlp& t : un) unanswered.push_back(t.tag);
    loop_->Stop();
  };
  dxfp_session_config hc = Config(DXFP_ROLE_INITIATOR, frame);
  hc.link_down_ns = 300 * DXFP_NS_PER_MS;
  hc.max_rto_ns = 100 * DXFP_NS_PER_MS;
  auto host = Endpoint::Create(hc, hcb);
  ASSERT_TRUE(host && bridge);
  std::error_code ec;
  auto bridge_driver = LinkDriver::Create(*loop_, *links_->bridge, *bridge, std::nullopt, &ec);
  auto host_driver = LinkDriver::Create(*loop_, *links_->host, *host, links_->bridge_address, &ec);
  ASSERT_TRUE(bridge_driver && host_driver);
  host_driver->Connect();
  bool sent = false;
  std::chrono::steady_clock::time_point silenced;
  std::function<void()> step = [&] {
    if (!sent && host->state() == DXFP_STATE_ESTABLISHED) {
      for (uint16_t tag = 0; tag < 5; tag++) {
        dxpu_tlp t{};
        t.kind = DXPU_TLP_MRD;
        t.tag = tag;
        t.length_dw = 1;
        t.first_be = 0xf;
        t.addr = 0x3000;
        ASSERT_TRUE(host->Submit(t, MonotonicNanos()));
      }
      host_driver->Kick();
      sent = true;
    }
    if (sent && reads_seen == 5 && bridge_driver) {
      bridge_driver.reset();  // the bridge goes silent: its frames stop, reads unanswered
      silenced = std::chrono::steady_clock::now();
    }
    loop_->AddTimer(EventLoop::Clock::now() + std::chrono::milliseconds(1), step);
  };
  loop_->AddTimer(EventLoop::Clock::now(), step);
  const auto start = std::chrono::steady_clock::now();
  loop_->AddTimer(start + std::chrono::seconds(20), [&] { loop_->Stop(); });
  ASSERT_FALSE(loop_->Run());
  ASSERT_TRUE(reason.has_value());
  EXPECT_EQ(*reason, DXFP_DOWN_NO_PROGRESS);
  EXPECT_EQ(unanswered, (std::vector<uint16_t>{0, 1, 2, 3, 4}));
  // Not before the link-down time since the last progress.
  EXPECT_GE(std::chrono::steady_clock::now() - silenced, std::chrono::milliseconds(250));
}

INSTANTIATE_TEST_SUITE_P(Links, RealtimeTest, ::testing::Values("udp", "unix"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace dxpu::fabric
