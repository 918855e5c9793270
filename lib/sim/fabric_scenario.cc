// fabric_scenario.cc - see fabric_scenario.h.
#include "sim/fabric_scenario.h"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <utility>

#include "core/dxfp_frame.h"
#include "core/dxfp_session.h"
#include "core/tlp_build.h"
#include "core/tlp_codec.h"
#include "fabric/endpoint.h"
#include "sim/fault_schedule.h"
#include "sim/rng.h"

namespace dxpu::sim {
namespace {

using fabric::Endpoint;
using fabric::EndpointCallbacks;

constexpr PortId kHostPort = 1;
constexpr PortId kBridgePort = 2;
constexpr uint64_t kHostNode = 0x4805;
constexpr uint64_t kBridgeNode = 0xb41d;
constexpr uint16_t kHostRid = 0x0000;    // the host's requester ID
constexpr uint16_t kBridgeRid = 0x0100;  // the GPU's
constexpr uint64_t kReadBase = 0x10'0000'0000ull;
constexpr uint64_t kCplKeyBit = 1ull << 63;
constexpr Nanos kReconnectDelay = 500 * kMicrosecond;
constexpr Nanos kBoundMargin = 2 * kMillisecond;  // RTTs and timer steps in the bound
constexpr uint32_t kMaxQueued = 64;               // the workload waits above this
constexpr uint16_t kTags = 1024;

uint8_t DataByte(uint64_t id, uint64_t offset) {
  return static_cast<uint8_t>(id * 31 + offset * 7);
}

// A write's payload: its id in the first 8 bytes, then bytes derived from the id.
std::vector<uint8_t> WritePayload(uint64_t id, size_t len) {
  std::vector<uint8_t> p(len);
  for (size_t i = 0; i < len; i++)
    p[i] = i < 8 ? static_cast<uint8_t>(id >> (8 * i)) : DataByte(id, i);
  return p;
}

std::optional<uint64_t> WriteId(const dxpu_tlp& t) {
  const uint32_t len = dxpu_tlp_payload_len(&t);
  if (len < 8) return std::nullopt;
  uint64_t id = 0;
  for (int i = 0; i < 8; i++) id |= static_cast<uint64_t>(t.payload[i]) << (8 * i);
  for (uint32_t i = 8; i < len; i++)
    if (t.payload[i] != DataByte(id, i)) return std::nullopt;
  return id;
}

// What one session (a host incarnation's session ID) saw, for the ordering checks.
struct SessionLog {
  std::vector<uint64_t> host_sent;  // keys in the order the host's session accepted them
  std::vector<uint64_t> bridge_got;
  std::vector<uint64_t> bridge_sent;
  std::vector<uint64_t> host_got;
  Nanos established_at = kNever;
  std::optional<Nanos> host_down;
  std::optional<Nanos> bridge_down;
};

struct Read {
  uint64_t id = 0;
  uint32_t bytes = 0;
  uint32_t received = 0;
  uint32_t session = 0;
};

struct DownEvent {
  bool host = false;
  Nanos at = 0;
  dxfp_down_reason reason = DXFP_DOWN_NONE;
  uint32_t session = 0;
};

class Scenario {
 public:
  explicit Scenario(const FabricScenarioOptions& o)
      : opt_(o), net_(sched_, Rng(o.seed).Fork(1).Next()), rng_(Rng(o.seed).Fork(2)) {
    result_.seed = o.seed;
    result_.max_frame = o.max_frame != 0 ? o.max_frame : (rng_.Bernoulli(0.5) ? 1500 : 9000);
    DrawConfig();
  }

  FabricScenarioResult Run();

 private:
  // ---- set-up ----
  void DrawConfig();
  dxfp_session_config Config(dxfp_session_role role, uint32_t session_id, uint32_t epoch) const;
  // A gap uniform in [mean/2, 3 mean/2].
  Nanos NextGap(Nanos mean) { return rng_.Range(mean / 2, mean + mean / 2); }
  // An endpoint leaves the run (link down, crash, replaced): keep its counters.
  void Retire(std::unique_ptr<Endpoint>& ep);
  uint32_t NewEpoch() { return static_cast<uint32_t>(rng_.Range(1, 0xffffffffu)); }
  void Fail(std::string what) {
    if (result_.failures.size() < 8)
      result_.failures.push_back(fmt::format("t={}us: {}", sched_.Now() / kMicrosecond, what));
  }

  // ---- host ----
  void HostStart();
  void HostConnect();
  void HostReceive(std::span<const uint8_t> frame);
  void HostDeliver(uint32_t sid, const dxpu_tlp& t);
  void HostLinkDown(uint32_t sid, dxfp_down_reason r, std::span<const dxpu_tlp> unanswered);
  void HostGenerate();
  void HostFlush();

  // ---- bridge ----
  void BridgeStart();
  void BridgeReceive(std::span<const uint8_t> frame);
  void BridgeNewSession(const dxfp_frame& hello);
  void BridgeDeliver(uint32_t sid, const dxpu_tlp& t);
  void BridgeAnswerRead(const dxpu_tlp& rd);
  void BridgeGenerate();
  void BridgeFlush();

  // ---- both ----
  void Flush(Endpoint* ep, PortId from, PortId to, EventId* wake, void (Scenario::*again)());
  void CheckBounds(const Endpoint& ep);
  void Expect(std::vector<uint64_t>& got, const std::vector<uint64_t>& sent, uint64_t key,
              const char* where);
  bool Done() const;
  void CheckAtEnd();
  Nanos LastFaultEnd() const;
  bool FaultNear(Nanos t) const;

  FabricScenarioOptions opt_;
  Scheduler sched_;
  Network net_;
  Rng rng_;
  FabricScenarioResult result_;

  // drawn per seed
  uint32_t replay_window_ = 0;
  uint32_t replay_bytes_ = 0;
  std::array<uint32_t, 3> hdr_cap_{};
  std::array<uint32_t, 3> data_cap_{};
  uint32_t max_np_ = 0;
  Nanos host_gap_ = 0;
  Nanos bridge_gap_ = 0;
  uint64_t link_down_ns_ = 0;

  std::map<uint32_t, SessionLog> logs_;
  std::vector<DownEvent> downs_;

  // host
  bool host_alive_ = true;
  uint32_t host_epoch_ = 0;
  uint32_t next_session_ = 1;
  std::unique_ptr<Endpoint> host_;
  uint32_t host_sid_ = 0;
  EventId host_wake_ = 0;
  uint32_t host_left_ = 0;
  uint64_t host_next_id_ = 1;
  std::map<uint16_t, Read> reads_;  // by tag
  std::vector<uint16_t> free_tags_;
  std::vector<std::unique_ptr<Endpoint>> graveyard_;  // endpoints that went down in a callback

  // bridge
  bool bridge_alive_ = true;
  uint32_t bridge_epoch_ = 0;
  uint32_t bridge_next_sid_ = 0x1000;
  std::unique_ptr<Endpoint> bridge_;
  uint32_t bridge_peer_sid_ = 0;  // the host session it serves
  uint32_t bridge_peer_epoch_ = 0;
  EventId bridge_wake_ = 0;
  uint32_t bridge_left_ = 0;
  uint64_t bridge_next_id_ = 1;
  Nanos last_close_reply_ = 0;
  std::map<uint16_t, std::pair<uint64_t, uint32_t>> bridge_reads_;  // tag -> (read id, bytes)
};

void Scenario::DrawConfig() {
  replay_window_ = 1u << rng_.Range(4, 10);  // 16 .. 1024 TLPs
  replay_bytes_ = static_cast<uint32_t>(rng_.Range(16, 1024)) * 1024;
  max_np_ = static_cast<uint32_t>(rng_.Range(4, 128));
  for (size_t c = 0; c < 3; c++) {
    hdr_cap_[c] = static_cast<uint32_t>(rng_.Range(4, 256));
    data_cap_[c] = static_cast<uint32_t>(rng_.Range(256, 4096));
  }
  if (rng_.Bernoulli(0.5)) {
    // Back to back: bursts every few microseconds, the windows and credits under pressure.
    host_gap_ = rng_.Range(1, 20) * kMicrosecond;
    bridge_gap_ = rng_.Range(2, 40) * kMicrosecond;
  } else {
    // Paced across opt_.spread, so that traffic is flowing when the faults strike (bursts
    // average two TLPs).
    host_gap_ = std::max<Nanos>(kMicrosecond, 2 * opt_.spread / std::max(1u, opt_.host_tlps));
    bridge_gap_ = std::max<Nanos>(kMicrosecond, 2 * opt_.spread / std::max(1u, opt_.bridge_tlps));
  }
  host_left_ = opt_.host_tlps;
  bridge_left_ = opt_.bridge_tlps;
  for (uint16_t t = 0; t < kTags; t++) free_tags_.push_back(static_cast<uint16_t>(kTags - 1 - t));
}

dxfp_session_config Scenario::Config(dxfp_session_role role, uint32_t session_id,
                                     uint32_t epoch) const {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  c.role = role;
  c.node_id = role == DXFP_ROLE_INITIATOR ? kHostNode : kBridgeNode;
  c.session_id = session_id;
  c.epoch = epoch;
  c.initial_seq = static_cast<uint32_t>(Mix64(opt_.seed ^ session_id ^ epoch));
  c.max_frame = result_.max_frame;
  c.replay_window = replay_window_;
  c.replay_bytes = replay_bytes_;
  c.max_np = max_np_;
  for (size_t i = 0; i < 3; i++) {
    c.rx_hdr_cap[i] = hdr_cap_[i];
    c.rx_data_cap[i] = data_cap_[i];
  }
  return c;
}

// ---------------------------------------------------------------- host

void Scenario::HostStart() {
  host_alive_ = true;
  host_epoch_ = NewEpoch();
  net_.Attach(kHostPort, [this](std::span<const uint8_t> f) { HostReceive(f); });
  HostConnect();
  sched_.ScheduleAfter(host_gap_, [this] { HostGenerate(); });
}

void Scenario::HostConnect() {
  if (!host_alive_) return;
  if (host_) Retire(host_);
  const uint32_t sid = next_session_++;
  host_sid_ = sid;
  logs_[sid];
  result_.sessions++;
  EndpointCallbacks cb;
  cb.deliver = [this, sid](const dxpu_tlp& t) { HostDeliver(sid, t); };
  cb.link_down = [this, sid](dxfp_down_reason r, std::span<const dxpu_tlp> un) {
    HostLinkDown(sid, r, un);
  };
  cb.established = [this, sid] { logs_[sid].established_at = sched_.Now(); };
  cb.sent = [this, sid](const dxpu_tlp& t) {
    uint64_t key = 0;
    if (t.kind == DXPU_TLP_MRD)
      key = (t.addr - kReadBase) >> 12;
    else if (auto id = WriteId(t))
      key = *id;
    logs_[sid].host_sent.push_back(key);
  };
  std::string error;
  host_ =
      Endpoint::Create(Config(DXFP_ROLE_INITIATOR, sid, host_epoch_), std::move(cb), {}, &error);
  if (!host_) {
    Fail("host endpoint: " + error);
    return;
  }
  host_->Connect(sched_.Now());
  HostFlush();
}

void Scenario::HostReceive(std::span<const uint8_t> frame) {
  if (!host_alive_ || !host_) return;
  host_->Receive(sched_.Now(), frame);
  HostFlush();
}

void Scenario::HostDeliver(uint32_t sid, const dxpu_tlp& t) {
  SessionLog& log = logs_[sid];
  if (t.kind == DXPU_TLP_MWR) {
    const auto id = WriteId(t);
    if (!id) return Fail("host: a DMA write arrived with corrupted bytes");
    return Expect(log.host_got, log.bridge_sent, *id, "host");
  }
  if (t.kind != DXPU_TLP_CPLD) return Fail("host: unexpected TLP kind");
  auto it = reads_.find(t.tag);
  if (it == reads_.end() || it->second.session != sid)
    return Fail(fmt::format("host: completion for tag {} that no read of this session has", t.tag));
  Read& rd = it->second;
  const uint32_t offset = rd.bytes - t.byte_count;
  const uint32_t len = t.length_dw * 4u;
  if (offset != rd.received) return Fail("host: completion out of order within its read");
  for (uint32_t i = 0; i < len && offset + i < rd.bytes; i++)
    if (t.payload[i] != DataByte(rd.id, offset + i)) return Fail("host: read data corrupted");
  Expect(log.host_got, log.bridge_sent, kCplKeyBit | (rd.id << 20) | offset, "host");
  rd.received += std::min<uint32_t>(len, t.byte_count);
  if (rd.received >= rd.bytes) {
    result_.reads_completed++;
    free_tags_.push_back(t.tag);
    reads_.erase(it);
  }
}

void Scenario::HostLinkDown(uint32_t sid, dxfp_down_reason r,
                            std::span<const dxpu_tlp> unanswered) {
  result_.link_downs++;
  downs_.push_back({true, sched_.Now(), r, sid});
  logs_[sid].host_down = sched_.Now();
  // The report must name exactly the reads of this session still open.
  std::set<uint16_t> open;
  for (const auto& [tag, rd] : reads_)
    if (rd.session == sid) open.insert(tag);
  std::set<uint16_t> reported;
  for (const dxpu_tlp& t : unanswered) {
    if (t.kind != DXPU_TLP_MRD) Fail("host: link down reported a non-read as unanswered");
    reported.insert(t.tag);
  }
  if (reported != open)
    Fail(fmt::format("host: link down reported {} unanswered reads, {} were open", reported.size(),
                     open.size()));
  for (uint16_t tag : open) {
    reads_.erase(tag);
    free_tags_.push_back(tag);
    result_.reads_unanswered++;
  }
  // Reconnect a little later (not from inside the session's callback).
  sched_.ScheduleAfter(kReconnectDelay, [this, sid] {
    if (host_sid_ == sid) HostConnect();
  });
}

void Scenario::HostGenerate() {
  if (!host_alive_) return;
  if (host_ && host_->state() == DXFP_STATE_ESTABLISHED) {
    while (host_left_ > 0 && host_->queue().size() < kMaxQueued) {
      const bool read = rng_.Bernoulli(0.3) && reads_.size() < max_np_ && !free_tags_.empty();
      const uint32_t dws = static_cast<uint32_t>(rng_.Range(read ? 1 : 2, 128));
      dxpu_tlp t{};
      t.requester_id = kHostRid;
      t.first_be = 0xf;
      t.last_be = dws > 1 ? 0xf : 0;
      t.length_dw = static_cast<uint16_t>(dws);
      const uint64_t id = host_next_id_++;
      std::vector<uint8_t> payload;
      if (read) {
        t.kind = DXPU_TLP_MRD;
        t.tag = free_tags_.back();
        t.addr = kReadBase + (id << 12);
        free_tags_.pop_back();
        reads_[t.tag] = {id, dws * 4u, 0, host_sid_};
      } else {
        t.kind = DXPU_TLP_MWR;
        t.addr = 0x8000'0000ull + ((id & 0xffff) << 12);
        payload = WritePayload(id, static_cast<size_t>(dws) * 4);
        t.payload = payload.data();
      }
      if (!host_->Submit(t, sched_.Now())) {
        if (read) {
          free_tags_.push_back(t.tag);
          reads_.erase(t.tag);
        }
        break;
      }
      host_left_--;
      if (rng_.Bernoulli(0.5)) break;  // bursts of varying length
    }
    HostFlush();
  }
  if (host_left_ > 0) sched_.ScheduleAfter(NextGap(host_gap_), [this] { HostGenerate(); });
}

void Scenario::HostFlush() {
  if (host_alive_ && host_)
    Flush(host_.get(), kHostPort, kBridgePort, &host_wake_, &Scenario::HostFlush);
}

// ---------------------------------------------------------------- bridge

void Scenario::BridgeStart() {
  bridge_alive_ = true;
  bridge_epoch_ = NewEpoch();
  net_.Attach(kBridgePort, [this](std::span<const uint8_t> f) { BridgeReceive(f); });
  sched_.ScheduleAfter(bridge_gap_, [this] { BridgeGenerate(); });
}

void Scenario::BridgeReceive(std::span<const uint8_t> frame) {
  if (!bridge_alive_) return;
  const Nanos now = sched_.Now();
  dxfp_frame f{};
  const dxfp_err err = dxfp_frame_parse(frame.data(), frame.size(), DXFP_MAX_FRAME, &f);
  if (err != DXFP_OK) {
    // Damaged on the way: the session (if any) counts it.
    if (bridge_) bridge_->Receive(now, frame);
    return;
  }
  if (f.hdr.type == DXFP_HELLO) {
    if (bridge_ && bridge_->state() != DXFP_STATE_DOWN && f.hdr.src_session == bridge_peer_sid_ &&
        f.hdr.src_epoch == bridge_peer_epoch_) {
      bridge_->ReceiveFrame(now, f);  // a repeated HELLO: WELCOME again
    } else {
      BridgeNewSession(f);
    }
  } else if (bridge_ && bridge_->state() != DXFP_STATE_DOWN &&
             f.hdr.dst_session == bridge_->session_id()) {
    bridge_->ReceiveFrame(now, f);
  } else if (f.hdr.type == DXFP_DATA && now >= last_close_reply_ + 100 * kMicrosecond) {
    // No session: tell the sender at once (rate-limited) rather than let it time out.
    std::array<uint8_t, 64> buf{};
    const size_t n =
        dxfp_write_close(buf.data(), buf.size(), &f.hdr, bridge_epoch_, DXFP_CLOSE_UNKNOWN_SESSION);
    if (n != 0) net_.Send(kBridgePort, kHostPort, std::span<const uint8_t>(buf.data(), n));
    last_close_reply_ = now;
  }
  BridgeFlush();
}

void Scenario::BridgeNewSession(const dxfp_frame& hello) {
  const Nanos now = sched_.Now();
  if (bridge_) {
    // The host restarted or reconnected: its old session ends as if its link went down.
    if (bridge_->state() != DXFP_STATE_DOWN) bridge_->Close(now, DXFP_CLOSE_SHUTDOWN);
    BridgeFlush();
    Retire(bridge_);
  }
  const uint32_t host_sid = hello.hdr.src_session;
  const uint32_t my_sid = bridge_next_sid_++;
  EndpointCallbacks cb;
  cb.deliver = [this, host_sid](const dxpu_tlp& t) { BridgeDeliver(host_sid, t); };
  cb.link_down = [this, host_sid](dxfp_down_reason r, std::span<const dxpu_tlp>) {
    result_.link_downs++;
    downs_.push_back({false, sched_.Now(), r, host_sid});
    logs_[host_sid].bridge_down = sched_.Now();
  };
  cb.sent = [this, host_sid](const dxpu_tlp& t) {
    uint64_t key = 0;
    if (t.kind == DXPU_TLP_CPLD) {
      // (read id, byte offset): the host derives the same key from its read table.
      auto it = bridge_reads_.find(t.tag);
      if (it == bridge_reads_.end()) return Fail("bridge: completion for a read it never got");
      key = kCplKeyBit | (it->second.first << 20) | (it->second.second - t.byte_count);
      if (t.byte_count <= t.length_dw * 4u) bridge_reads_.erase(it);
    } else if (auto id = WriteId(t)) {
      key = *id;
    }
    logs_[host_sid].bridge_sent.push_back(key);
  };
  std::string error;
  bridge_ = Endpoint::Create(Config(DXFP_ROLE_RESPONDER, my_sid, bridge_epoch_), std::move(cb), {},
                             &error);
  if (!bridge_) return Fail("bridge endpoint: " + error);
  bridge_peer_sid_ = host_sid;
  bridge_peer_epoch_ = hello.hdr.src_epoch;
  bridge_reads_.clear();
  if (bridge_->Accept(now, hello) != DXFP_RX_OK) Fail("bridge: a valid HELLO was refused");
}

void Scenario::BridgeDeliver(uint32_t sid, const dxpu_tlp& t) {
  SessionLog& log = logs_[sid];
  if (t.kind == DXPU_TLP_MWR) {
    const auto id = WriteId(t);
    if (!id) return Fail("bridge: a write arrived with corrupted bytes");
    return Expect(log.bridge_got, log.host_sent, *id, "bridge");
  }
  if (t.kind != DXPU_TLP_MRD) return Fail("bridge: unexpected TLP kind");
  Expect(log.bridge_got, log.host_sent, (t.addr - kReadBase) >> 12, "bridge");
  BridgeAnswerRead(t);
}

void Scenario::BridgeAnswerRead(const dxpu_tlp& rd) {
  const uint64_t id = (rd.addr - kReadBase) >> 12;
  bridge_reads_[rd.tag] = {id, rd.length_dw * 4u};
  dxpu_tlp_cpl_split split{};
  if (dxpu_tlp_cpl_split_init(&split, rd.addr, rd.length_dw, rd.first_be, rd.last_be, 64, 256) !=
      DXPU_TLP_OK)
    return Fail("bridge: cannot split a valid read");
  dxpu_tlp_cpl_piece piece{};
  dxpu_tlp cpl{};
  dxpu_tlp_completion_for(&rd, kBridgeRid, DXPU_TLP_CPL_SC, &cpl);
  const uint32_t total = rd.length_dw * 4u;
  while (dxpu_tlp_cpl_split_next(&split, &piece)) {
    std::vector<uint8_t> data(static_cast<size_t>(piece.length_dw) * 4);
    const uint32_t offset = total - piece.byte_count;
    for (size_t i = 0; i < data.size(); i++) data[i] = DataByte(id, offset + i);
    dxpu_tlp_completion_piece(&cpl, &piece);
    cpl.payload = data.data();
    if (!bridge_->Submit(cpl, sched_.Now())) return Fail("bridge: completion queue overflow");
  }
}

void Scenario::BridgeGenerate() {
  if (!bridge_alive_) return;
  if (bridge_ && bridge_->state() == DXFP_STATE_ESTABLISHED) {
    while (bridge_left_ > 0 && bridge_->queue().size() < kMaxQueued) {
      const uint32_t dws = static_cast<uint32_t>(rng_.Range(2, 64));
      const uint64_t id = bridge_next_id_++;
      std::vector<uint8_t> payload = WritePayload(id, static_cast<size_t>(dws) * 4);
      dxpu_tlp t{};
      t.kind = DXPU_TLP_MWR;
      t.requester_id = kBridgeRid;
      t.first_be = 0xf;
      t.last_be = 0xf;
      t.length_dw = static_cast<uint16_t>(dws);
      t.addr = 0x4000'0000ull + ((id & 0xffff) << 12);
      t.payload = payload.data();
      if (!bridge_->Submit(t, sched_.Now())) break;
      bridge_left_--;
      if (rng_.Bernoulli(0.5)) break;
    }
    BridgeFlush();
  }
  if (bridge_left_ > 0) sched_.ScheduleAfter(NextGap(bridge_gap_), [this] { BridgeGenerate(); });
}

void Scenario::BridgeFlush() {
  if (bridge_alive_ && bridge_)
    Flush(bridge_.get(), kBridgePort, kHostPort, &bridge_wake_, &Scenario::BridgeFlush);
}

// ---------------------------------------------------------------- both

void Scenario::Flush(Endpoint* ep, PortId from, PortId to, EventId* wake,
                     void (Scenario::*again)()) {
  const Nanos now = sched_.Now();
  std::array<uint8_t, DXFP_MAX_FRAME> frame;  // the network copies each frame it carries
  ep->Flush(now, [&](link::FramePieces pieces) {
    net_.Send(from, to, std::span<const uint8_t>(frame.data(), link::GatherFrame(pieces, frame)));
  });
  if (ep->queue().last_drain().posted_stranded) Fail("a posted TLP waited on another class");
  CheckBounds(*ep);
  if (*wake != 0) sched_.Cancel(*wake);
  *wake = 0;
  const uint64_t d = ep->NextDeadline();
  if (d != DXFP_NO_DEADLINE)
    *wake = sched_.ScheduleAt(std::max<Nanos>(d, now), [this, wake, again] {
      *wake = 0;
      (this->*again)();
    });
}

void Scenario::Retire(std::unique_ptr<Endpoint>& ep) {
  if (ep->queue().stats().posted_stranded != 0) Fail("a posted TLP waited on another class");
  const dxfp_session_counters& c = ep->counters();
  result_.tlps_retransmitted += c.tlps_retx;
  result_.credit_refusals += c.credit_refusals;
  result_.frames_dropped += c.bad_crc + c.truncated + c.bad_length + c.malformed +
                            c.unknown_session + c.stale_epoch + c.unexpected + c.bad_ack +
                            c.window_violation + c.credit_violation + c.rx_down;
  if (c.credit_violation != 0 || c.window_violation != 0 || c.bad_ack != 0)
    Fail("a correct peer was seen to break the protocol (credit, window or ack)");
  graveyard_.push_back(std::move(ep));
}

void Scenario::CheckBounds(const Endpoint& ep) {
  const dxfp_session& s = ep.session();
  const uint64_t in_flight = dxfp_session_in_flight(&s) + dxfp_session_queued(&s);
  result_.max_in_flight = std::max(result_.max_in_flight, in_flight);
  result_.max_queued = std::max<uint64_t>(result_.max_queued, ep.queue().size());
  if (in_flight > s.cfg.replay_window) Fail("replay buffer holds more TLPs than its window");
  if (s.ring_count != in_flight && s.state != DXFP_STATE_DOWN)
    Fail("replay ring count disagrees with the sequence numbers");
}

void Scenario::Expect(std::vector<uint64_t>& got, const std::vector<uint64_t>& sent, uint64_t key,
                      const char* where) {
  if (got.size() >= sent.size() || sent[got.size()] != key) {
    Fail(fmt::format("{}: TLP {} of the session arrived out of order, twice or unsent", where,
                     got.size()));
  }
  got.push_back(key);
  result_.tlps_delivered++;
}

bool Scenario::Done() const {
  if (host_left_ != 0 || bridge_left_ != 0 || !reads_.empty()) return false;
  if (!host_ || !bridge_ || host_->state() != DXFP_STATE_ESTABLISHED) return false;
  if (!host_->queue().empty() || !bridge_->queue().empty()) return false;
  const auto it = logs_.find(host_sid_);
  if (it == logs_.end()) return false;
  const SessionLog& l = it->second;
  return l.bridge_got.size() == l.host_sent.size() && l.host_got.size() == l.bridge_sent.size();
}

Nanos Scenario::LastFaultEnd() const {
  Nanos end = 0;
  for (const auto& p : opt_.faults.partitions)
    end = std::max(end, p.duration == kNever ? kNever : p.at + p.duration);
  for (const auto& c : opt_.faults.crashes)
    end = std::max(end, c.duration == kNever ? kNever : c.at + c.duration);
  return end;
}

// Whether a partition or crash was under way within the link-down bound before t.
bool Scenario::FaultNear(Nanos t) const {
  const Nanos reach = 2 * link_down_ns_ + kBoundMargin;
  auto near = [&](Nanos at, Nanos duration) {
    const Nanos end = duration == kNever ? kNever : at + duration;
    return at <= t && (end == kNever || end + reach >= t);
  };
  return std::ranges::any_of(opt_.faults.partitions,
                             [&](const auto& p) { return near(p.at, p.duration); }) ||
         std::ranges::any_of(opt_.faults.crashes,
                             [&](const auto& c) { return near(c.at, c.duration); });
}

FabricScenarioResult Scenario::Run() {
  dxfp_session_config probe = Config(DXFP_ROLE_INITIATOR, 1, 1);
  link_down_ns_ = probe.link_down_ns;
  net_.SetPath(kHostPort, kBridgePort, ToPathConfig(opt_.faults));
  net_.SetPath(kBridgePort, kHostPort, ToPathConfig(opt_.faults));
  const std::array<FaultNode, 2> nodes = {FaultNode{"host", kHostPort},
                                          FaultNode{"bridge", kBridgePort}};
  FaultHooks hooks;
  hooks.on_crash = [this](const FaultNode& n) {
    // The process dies: its state is gone, no link-down report.
    if (n.port == kHostPort) {
      host_alive_ = false;
      if (host_) Retire(host_);
      for (auto& [tag, rd] : reads_) free_tags_.push_back(tag);
      reads_.clear();
    } else {
      bridge_alive_ = false;
      if (bridge_) Retire(bridge_);
      bridge_reads_.clear();
    }
  };
  hooks.on_restart = [this](const FaultNode& n) {
    if (n.port == kHostPort)
      HostStart();
    else
      BridgeStart();
  };
  if (std::string err = ScheduleFaults(opt_.faults, net_, nodes, hooks); !err.empty()) {
    Fail(err);
    return result_;
  }
  bridge_epoch_ = 0;
  BridgeStart();
  HostStart();
  const Nanos faults_end = LastFaultEnd();
  Nanos last_time = 0;
  uint64_t same_time = 0;
  while (sched_.RunNext()) {
    if (sched_.Now() > opt_.time_limit) break;
    // A session that keeps asking to be called at the same instant is livelocked.
    same_time = sched_.Now() == last_time ? same_time + 1 : 0;
    last_time = sched_.Now();
    if (same_time > 100'000) {
      Fail("livelock: 100000 events without virtual time advancing");
      break;
    }
    if ((faults_end == kNever || sched_.Now() >= faults_end) && Done()) {
      result_.completed = true;
      break;
    }
    if (graveyard_.size() > 4) graveyard_.erase(graveyard_.begin(), graveyard_.end() - 4);
  }
  result_.finished_at = sched_.Now();
  CheckAtEnd();
  return result_;
}

void Scenario::CheckAtEnd() {
  if (!result_.completed && LastFaultEnd() != kNever)
    Fail(fmt::format("the workload did not complete by the time limit ({} of {} host TLPs left)",
                     host_left_, opt_.host_tlps));
  // Link down only where a fault explains it.
  for (const DownEvent& d : downs_) {
    if (d.reason == DXFP_DOWN_NO_PROGRESS || d.reason == DXFP_DOWN_HANDSHAKE_TIMEOUT) {
      if (!FaultNear(d.at))
        Fail(fmt::format("{} session {} went down ({}) at {}us with no partition or crash near",
                         d.host ? "host" : "bridge", d.session, dxfp_down_reason_name(d.reason),
                         d.at / kMicrosecond));
    }
  }
  // A partition longer than the link-down time takes every session established across it
  // down, within the bound.
  for (const auto& p : opt_.faults.partitions) {
    if (p.duration != kNever && p.duration < link_down_ns_ + kBoundMargin) continue;
    const Nanos deadline = p.at + 2 * link_down_ns_ + kBoundMargin;
    for (const auto& [sid, log] : logs_) {
      if (log.established_at > p.at) continue;
      if (log.host_down && *log.host_down < p.at) continue;
      if (!log.host_down || *log.host_down > deadline)
        Fail(
            fmt::format("host session {} did not report link down within the bound after the "
                        "partition at {}us",
                        sid, p.at / kMicrosecond));
    }
  }
  // Every session: delivered a prefix of what was sent (checked as it happened); all of it
  // when the session ended the run established on both sides.
  for (const auto& [sid, log] : logs_) {
    if (log.host_down || log.bridge_down) continue;
    if (sid != host_sid_ || !result_.completed) continue;
    if (log.bridge_got.size() != log.host_sent.size() ||
        log.host_got.size() != log.bridge_sent.size())
      Fail(fmt::format("session {} stayed up but lost TLPs", sid));
  }
  if (host_) Retire(host_);
  if (bridge_) Retire(bridge_);
  result_.network = net_.TotalCounters();
}

}  // namespace

FabricScenarioResult RunFabricScenario(const FabricScenarioOptions& options) {
  return Scenario(options).Run();
}

}  // namespace dxpu::sim
