// Tests for the host path (lib/core/dxpu_hostpath.h): one path driven only through its pull API
// against a bridge-side DxFP session the test plays, and direct paths on an ideal link.
#include "core/dxpu_hostpath.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "core/tlp_build.h"
#include "session_pair.h"

namespace dxpu::test {
namespace {

constexpr uint16_t kHostRid = 0x0000;
constexpr uint16_t kDevice = 0x0100;  // the device's Requester ID on the host

class Path {
 public:
  explicit Path(const dxpu_hostpath_config& cfg) : mem_((dxpu_hostpath_mem_size(&cfg) + 7) / 8) {
    EXPECT_NE(mem_.size(), 0u) << dxpu_hostpath_config_check(&cfg);
    ok_ = dxpu_hostpath_init(&hp_, &cfg, mem_.data(), mem_.size() * 8);
    EXPECT_TRUE(ok_);
  }
  Path(const Path&) = delete;
  Path& operator=(const Path&) = delete;
  Path(Path&&) = delete;
  Path& operator=(Path&&) = delete;
  ~Path() = default;

  dxpu_hostpath* get() { return &hp_; }
  // Every event so far, in order.
  std::vector<dxpu_hostpath_event>& Events() {
    dxpu_hostpath_event ev{};
    while (dxpu_hostpath_poll_event(&hp_, &ev)) events_.push_back(ev);
    return events_;
  }

 private:
  std::vector<uint64_t> mem_;
  dxpu_hostpath hp_{};
  bool ok_ = false;
  std::vector<dxpu_hostpath_event> events_;
};

dxpu_hostpath_config SessionConfig() {
  dxpu_hostpath_config c;
  dxpu_hostpath_config_defaults(&c);
  c.session = TestConfig(DXFP_ROLE_INITIATOR);
  c.host.requester_id = kHostRid;
  c.queue_tlps = 64;
  c.queue_bytes = 64 * 1024;
  c.peer_tlps = 16;
  c.peer_bytes = 16 * 1024;
  return c;
}

dxpu_tlp ReadRequest(uint64_t addr, uint32_t len) {
  dxpu_tlp t{};
  EXPECT_TRUE(dxpu_tlp_mem_request(DXPU_TLP_MRD, addr, len, &t));
  return t;
}

// A host path and the bridge's end of its session, joined by a synchronous wire.
struct World {
  explicit World(const dxpu_hostpath_config& host_cfg = SessionConfig(),
                 const dxfp_session_config& bridge_cfg = TestConfig(DXFP_ROLE_RESPONDER))
      : host(host_cfg), bridge(bridge_cfg) {}

  void Pump() {
    std::array<uint8_t, DXFP_MAX_FRAME> buf{};
    for (int i = 0; i < 10000; ++i) {
      size_t len = 0;
      bool moved = false;
      while (dxpu_hostpath_poll(host.get(), now, buf.data(), buf.size(), &len)) {
        moved = true;
        if (bridge.state() == DXFP_STATE_IDLE) {
          dxfp_frame f{};
          ASSERT_EQ(dxfp_frame_parse(buf.data(), len, DXFP_MAX_FRAME, &f), DXFP_OK);
          ASSERT_EQ(dxfp_session_accept(bridge.s(), now, &f), DXFP_RX_OK);
        } else {
          (void)dxfp_session_receive(bridge.s(), now, buf.data(), len);
        }
      }
      while (dxfp_session_poll(bridge.s(), now, buf.data(), buf.size(), &len)) {
        moved = true;
        (void)dxpu_hostpath_receive(host.get(), now, buf.data(), len);
      }
      if (!moved) return;
    }
    ADD_FAILURE() << "never went quiet";
  }

  void Establish() {
    dxpu_hostpath_connect(host.get(), now);
    Pump();
    ASSERT_TRUE(dxpu_hostpath_is_up(host.get()));
    ASSERT_EQ(host.Events().size(), 1u);
    EXPECT_EQ(host.Events()[0].kind, DXPU_HP_EV_ESTABLISHED);
    host.Events().clear();
  }

  // The bridge answers a delivered request as a device would.
  // A 4-byte memory read at addr into buf, ending with the event that carries cookie.
  dxpu_host_err Read(uint64_t addr, std::array<uint8_t, 4>& buf, uint64_t cookie) {
    dxpu_tlp t = ReadRequest(addr, 4);
    return dxpu_hostpath_issue(host.get(), &t, buf.data(), 4, cookie, now, nullptr);
  }

  void Answer(const DeliveredTlp& req, uint8_t status, const std::vector<uint8_t>& data = {}) {
    dxpu_tlp c{};
    dxpu_tlp_completion_for(&req.hdr, kDevice, status, &c);
    if (!data.empty()) c.payload = data.data();
    ASSERT_EQ(dxfp_session_send(bridge.s(), now, &c), DXFP_SEND_OK);
  }

  Path host;
  SessionNode bridge;
  uint64_t now = 1000;
};

TEST(HostPath, ReadCompletesThroughThePullApi) {
  World w;
  w.Establish();
  std::array<uint8_t, 8> buf{};
  dxpu_tlp t = ReadRequest(0xf000'0010, 8);
  ASSERT_EQ(dxpu_hostpath_issue(w.host.get(), &t, buf.data(), buf.size(), 77, w.now, nullptr),
            DXPU_HOST_OK);
  w.Pump();
  ASSERT_EQ(w.bridge.delivered.size(), 1u);
  EXPECT_EQ(w.bridge.delivered[0].hdr.kind, DXPU_TLP_MRD);
  EXPECT_EQ(w.bridge.delivered[0].hdr.requester_id, kHostRid);
  w.Answer(w.bridge.delivered[0], DXPU_TLP_CPL_SC, {1, 2, 3, 4, 5, 6, 7, 8});
  w.Pump();
  ASSERT_EQ(w.host.Events().size(), 1u);
  const dxpu_hostpath_event& ev = w.host.Events()[0];
  EXPECT_EQ(ev.kind, DXPU_HP_EV_COMPLETE);
  EXPECT_EQ(ev.cookie, 77u);
  EXPECT_EQ(ev.status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(ev.value, 8u);
  EXPECT_EQ(buf, (std::array<uint8_t, 8>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(HostPath, NothingIsIssuedBeforeTheSessionIsUp) {
  World w;
  std::array<uint8_t, 4> buf{};
  EXPECT_EQ(w.Read(0x1000, buf, 1), DXPU_HOST_SEND_FAILED);
  EXPECT_FALSE(dxpu_hostpath_retryable(w.host.get(), DXPU_HOST_SEND_FAILED));
  w.Establish();
  EXPECT_TRUE(dxpu_hostpath_retryable(w.host.get(), DXPU_HOST_SEND_FAILED));
}

// PCIe's deadlock rule: a posted write passes a request that waits for non-posted credit.
TEST(HostPath, PostedWritePassesARequestWaitingForCredit) {
  dxfp_session_config bridge = TestConfig(DXFP_ROLE_RESPONDER);
  bridge.rx_hdr_cap[DXPU_TLP_CLASS_NON_POSTED] = 1;  // one request at a time
  World w(SessionConfig(), bridge);
  w.bridge.auto_release = false;  // the bridge holds its request buffer: no credit comes back
  w.Establish();
  std::array<uint8_t, 4> a{};
  std::array<uint8_t, 4> b{};
  ASSERT_EQ(w.Read(0x1000, a, 1), DXPU_HOST_OK);
  ASSERT_EQ(w.Read(0x2000, b, 2), DXPU_HOST_OK);
  const std::array<uint8_t, 4> value{0xde, 0xad, 0xbe, 0xef};
  ASSERT_EQ(dxpu_hostpath_write(w.host.get(), 0x3000, value.data(), 4, w.now, nullptr),
            DXPU_HOST_OK);
  w.Pump();
  // The first read went; the second waits for credit; the write did not wait behind it.
  ASSERT_EQ(w.bridge.delivered.size(), 2u);
  EXPECT_EQ(w.bridge.delivered[0].hdr.addr, 0x1000u);
  EXPECT_EQ(w.bridge.delivered[1].hdr.kind, DXPU_TLP_MWR);
  EXPECT_EQ(w.bridge.delivered[1].payload, std::vector<uint8_t>(value.begin(), value.end()));
  EXPECT_EQ(w.host.get()->txq.stats.posted_passed_np, 1u);
  EXPECT_EQ(w.host.get()->txq.stats.posted_stranded, 0u);
  // Credit comes back: the second read goes.
  dxfp_session_release(w.bridge.s(), DXPU_TLP_CLASS_NON_POSTED, 0);
  w.now += 1'000'000;
  w.Pump();
  ASSERT_EQ(w.bridge.delivered.size(), 3u);
  EXPECT_EQ(w.bridge.delivered[2].hdr.addr, 0x2000u);
}

TEST(HostPath, WritesAreCutAtMaxPayload) {
  World w;
  w.Establish();
  std::vector<uint8_t> bytes(1000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  uint32_t done = 0;
  ASSERT_EQ(dxpu_hostpath_write(w.host.get(), 0x10'0002, bytes.data(), 1000, w.now, &done),
            DXPU_HOST_OK);
  EXPECT_EQ(done, 1000u);
  w.Pump();
  std::vector<uint8_t> seen;
  for (const DeliveredTlp& d : w.bridge.delivered) {
    ASSERT_EQ(d.hdr.kind, DXPU_TLP_MWR);
    EXPECT_LE(d.payload.size(), w.host.get()->cfg.host.max_payload);
    const size_t skip = d.hdr.addr == 0x10'0000 ? 2 : 0;  // the range starts at byte 2
    const size_t end = d.payload.size() - (d.hdr.last_be == 0x3 ? 2 : 0);
    seen.insert(seen.end(), d.payload.begin() + static_cast<ptrdiff_t>(skip),
                d.payload.begin() + static_cast<ptrdiff_t>(end));
  }
  EXPECT_GT(w.bridge.delivered.size(), 1u);
  EXPECT_EQ(seen, bytes);
}

TEST(HostPath, AWriteTheQueueCannotTakeReportsWhatWasQueued) {
  dxpu_hostpath_config cfg = SessionConfig();
  cfg.queue_tlps = 2;  // two writes may wait
  dxfp_session_config bridge = TestConfig(DXFP_ROLE_RESPONDER);
  bridge.rx_hdr_cap[DXPU_TLP_CLASS_POSTED] = 1;  // one goes out, then no credit
  World w(cfg, bridge);
  w.bridge.auto_release = false;
  w.Establish();
  const uint32_t mps = w.host.get()->cfg.host.max_payload;
  std::vector<uint8_t> bytes(size_t{mps} * 5, 0x5a);
  uint32_t done = 0;
  EXPECT_EQ(dxpu_hostpath_write(w.host.get(), 0x20'0000, bytes.data(),
                                static_cast<uint32_t>(bytes.size()), w.now, &done),
            DXPU_HOST_SEND_FAILED);
  EXPECT_EQ(done, 3 * mps);  // one sent, two queued
  EXPECT_TRUE(dxpu_hostpath_retryable(w.host.get(), DXPU_HOST_SEND_FAILED));
  EXPECT_EQ(w.host.get()->counters.queue_refused, 1u);
}

TEST(HostPath, LinkDownEndsEveryRequestThenReportsDown) {
  World w;
  w.Establish();
  std::array<uint8_t, 4> a{};
  std::array<uint8_t, 4> b{};
  ASSERT_EQ(w.Read(0x1000, a, 1), DXPU_HOST_OK);
  ASSERT_EQ(w.Read(0x2000, b, 2), DXPU_HOST_OK);
  dxpu_hostpath_close(w.host.get(), w.now, DXFP_CLOSE_SHUTDOWN);
  const std::vector<dxpu_hostpath_event>& ev = w.host.Events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].kind, DXPU_HP_EV_COMPLETE);
  EXPECT_EQ(ev[0].status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(ev[1].kind, DXPU_HP_EV_COMPLETE);
  EXPECT_EQ(ev[2].kind, DXPU_HP_EV_DOWN);
  EXPECT_EQ(ev[2].status, DXFP_DOWN_LOCAL_CLOSE);
  EXPECT_EQ(ev[2].value, 2u);  // the requests it ended
  EXPECT_EQ(a, (std::array<uint8_t, 4>{0xff, 0xff, 0xff, 0xff}));
  EXPECT_TRUE(dxpu_hostpath_is_down(w.host.get()));
  EXPECT_EQ(w.Read(0x3000, a, 3), DXPU_HOST_SEND_FAILED);
  w.Pump();  // the CLOSE reaches the bridge
  EXPECT_TRUE(w.bridge.down);
  EXPECT_EQ(w.bridge.down_reason, DXFP_DOWN_PEER_CLOSED);
}

TEST(HostPath, TimeoutsEndRequestsAtTheirDeadline) {
  dxpu_hostpath_config cfg = SessionConfig();
  cfg.host.request_timeout = 5'000'000;
  World w(cfg);
  w.Establish();
  std::array<uint8_t, 4> a{};
  ASSERT_EQ(w.Read(0x1000, a, 9), DXPU_HOST_OK);
  w.Pump();
  EXPECT_LE(dxpu_hostpath_next_deadline(w.host.get()), w.now + 5'000'000);
  dxpu_hostpath_on_timeout(w.host.get(), w.now + 5'000'000);
  ASSERT_EQ(w.host.Events().size(), 1u);
  EXPECT_EQ(w.host.Events()[0].status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(w.host.Events()[0].cookie, 9u);
}

// A tag is used again only once the event that ended its request was polled.
TEST(HostPath, CompletionEventsHoldTheirTagsUntilPolled) {
  dxpu_hostpath_config cfg = SessionConfig();
  cfg.host.max_tags = 2;
  World w(cfg);
  w.Establish();
  std::array<uint8_t, 4> a{};
  for (uint64_t i = 0; i < 2; ++i) {
    ASSERT_EQ(w.Read(0x1000, a, i), DXPU_HOST_OK);
  }
  w.Pump();
  for (const DeliveredTlp& d : w.bridge.delivered) w.Answer(d, DXPU_TLP_CPL_UR);
  w.Pump();
  EXPECT_EQ(w.Read(0x1000, a, 5), DXPU_HOST_NO_TAG);  // both ended, neither event polled yet
  ASSERT_EQ(w.host.Events().size(), 2u);
  EXPECT_EQ(w.Read(0x1000, a, 5), DXPU_HOST_OK);
}

// ---- direct paths ----

dxpu_hostpath_config DirectConfig() {
  dxpu_hostpath_config c = SessionConfig();
  c.direct = true;
  return c;
}

TEST(HostPath, DirectPathHandsTlpsToTheCallerInOrder) {
  Path p(DirectConfig());
  dxpu_hostpath* hp = p.get();
  EXPECT_TRUE(dxpu_hostpath_is_up(hp));
  std::array<uint8_t, 4> a{};
  dxpu_tlp r = ReadRequest(0x1000, 4);
  ASSERT_EQ(dxpu_hostpath_issue(hp, &r, a.data(), 4, 3, 0, nullptr), DXPU_HOST_OK);
  const std::array<uint8_t, 4> v{1, 2, 3, 4};
  ASSERT_EQ(dxpu_hostpath_write(hp, 0x2000, v.data(), 4, 0, nullptr), DXPU_HOST_OK);
  const dxpu_tlp* t = dxpu_hostpath_tlp_front(hp);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind, DXPU_TLP_MRD);
  const dxpu_tlp req = *t;
  dxpu_hostpath_tlp_pop(hp);
  t = dxpu_hostpath_tlp_front(hp);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->kind, DXPU_TLP_MWR);
  dxpu_hostpath_tlp_pop(hp);
  EXPECT_EQ(dxpu_hostpath_tlp_front(hp), nullptr);
  // The device answers; then it writes the MSI range.
  dxpu_tlp c{};
  dxpu_tlp_completion_for(&req, kDevice, DXPU_TLP_CPL_SC, &c);
  const std::array<uint8_t, 4> data{9, 8, 7, 6};
  c.payload = data.data();
  dxpu_hostpath_receive_tlp(hp, 0, &c);
  dxpu_tlp msi{};
  ASSERT_TRUE(dxpu_tlp_mem_request(DXPU_TLP_MWR, 0xfee0'0000, 4, &msi));
  msi.requester_id = kDevice;
  const std::array<uint8_t, 4> vector{5, 0, 0, 0};
  msi.payload = vector.data();
  dxpu_hostpath_receive_tlp(hp, 0, &msi);
  const std::vector<dxpu_hostpath_event>& ev = p.Events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, DXPU_HP_EV_COMPLETE);
  EXPECT_EQ(a, data);
  EXPECT_EQ(ev[1].kind, DXPU_HP_EV_INTERRUPT);
  EXPECT_EQ(ev[1].device, kDevice);
  EXPECT_EQ(ev[1].value, 5u);
}

TEST(HostPath, DeviceWritesAreServedInsideWindowsAndRefusedOutside) {
  Path p(DirectConfig());
  dxpu_hostpath* hp = p.get();
  std::vector<uint8_t> memory(4096);
  ASSERT_EQ(dxpu_hostpath_add_window(hp, kDevice, 0x8000'0000, memory.size(), memory.data(),
                                     DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE),
            DXPU_HOST_OK);
  const std::array<uint8_t, 8> v{1, 2, 3, 4, 5, 6, 7, 8};
  for (uint64_t addr : {uint64_t{0x8000'0000}, uint64_t{0x8000'0008}, uint64_t{0x9000'0000}}) {
    dxpu_tlp w{};
    ASSERT_TRUE(dxpu_tlp_mem_request(DXPU_TLP_MWR, addr, 8, &w));
    w.requester_id = kDevice;
    w.payload = v.data();
    dxpu_hostpath_receive_tlp(hp, 0, &w);
  }
  EXPECT_EQ(memory[0], 1);
  EXPECT_EQ(memory[15], 8);
  const std::vector<dxpu_hostpath_event>& ev = p.Events();
  ASSERT_EQ(ev.size(), 2u);  // two writes: one DMA_WRITTEN; then the refusal
  EXPECT_EQ(ev[0].kind, DXPU_HP_EV_DMA_WRITTEN);
  EXPECT_EQ(ev[0].device, kDevice);
  EXPECT_EQ(ev[1].kind, DXPU_HP_EV_DMA_REFUSED);
  EXPECT_EQ(ev[1].cookie, 0x9000'0000u);
}

// Two direct paths: a device's write into the other's memory window is held for the caller,
// who forwards it; the target path hands it to its device.
TEST(HostPath, PeerTlpsAreHeldForTheCallerAndForwarded) {
  Path a(DirectConfig());
  Path b(DirectConfig());
  const std::array<dxpu_peer, 2> peers{
      dxpu_peer{.window = 0, .window_size = 0, .bdf = 0x0100, .in_use = 1},
      dxpu_peer{.window = 0xe000'0000, .window_size = 0x10'0000, .bdf = 0x0200, .in_use = 1}};
  dxpu_hostpath_set_peers(a.get(), peers.data(), peers.size());
  dxpu_hostpath_set_peers(b.get(), peers.data(), peers.size());
  dxpu_tlp w{};
  ASSERT_TRUE(dxpu_tlp_mem_request(DXPU_TLP_MWR, 0xe000'0040, 4, &w));
  w.requester_id = 0x0100;
  const std::array<uint8_t, 4> v{4, 3, 2, 1};
  w.payload = v.data();
  dxpu_hostpath_receive_tlp(a.get(), 0, &w);
  int target = -1;
  const dxpu_tlp* t = dxpu_hostpath_peer_front(a.get(), &target);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(target, 1);
  ASSERT_TRUE(dxpu_hostpath_forward(b.get(), t, 0));
  dxpu_hostpath_peer_pop(a.get());
  EXPECT_EQ(dxpu_hostpath_peer_front(a.get(), nullptr), nullptr);
  const dxpu_tlp* at_b = dxpu_hostpath_tlp_front(b.get());
  ASSERT_NE(at_b, nullptr);
  EXPECT_EQ(at_b->addr, 0xe000'0040u);
  EXPECT_EQ(at_b->payload[0], 4);
  EXPECT_EQ(a.get()->counters.peer_tlps, 1u);
  EXPECT_EQ(b.get()->counters.peer_forwarded, 1u);
  EXPECT_TRUE(a.Events().empty());  // not the host's: no DMA, no refusal
}

TEST(HostPath, ConfigurationChecks) {
  dxpu_hostpath_config c = SessionConfig();
  EXPECT_EQ(dxpu_hostpath_config_check(&c), nullptr);
  c.session.role = DXFP_ROLE_RESPONDER;
  EXPECT_NE(dxpu_hostpath_config_check(&c), nullptr);
  EXPECT_EQ(dxpu_hostpath_mem_size(&c), 0u);
  c = SessionConfig();
  c.queue_bytes = 100;
  EXPECT_NE(dxpu_hostpath_config_check(&c), nullptr);
  c = SessionConfig();
  c.fabric_max_payload = 3000;
  EXPECT_NE(dxpu_hostpath_config_check(&c), nullptr);
  c = SessionConfig();
  std::vector<uint64_t> small(16);
  dxpu_hostpath hp{};
  EXPECT_FALSE(dxpu_hostpath_init(&hp, &c, small.data(), small.size() * 8));
}

}  // namespace
}  // namespace dxpu::test
