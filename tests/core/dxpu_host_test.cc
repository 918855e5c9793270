// The host proxy's transaction layer (lib/core/dxpu_host.c): configuration and memory requests
// issued and completed (one CplD or many split at the RCB), tags, timeouts, fail_all, completions
// that do not fit, re-entrant callbacks; device reads and writes served inside DMA windows and
// refused outside them, MSI writes, the window table; and random TLPs (seed printed; DXPU_SEED
// replays). Every TLP the layer sends is encoded and decoded again to prove it valid.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/dxpu_host.h"
#include "tlp_testutil.h"

namespace dxpu::test {
namespace {

constexpr uint16_t kRoot = DXPU_BDF(0, 1, 0);  // the host's root port
constexpr uint16_t kGpu = DXPU_BDF(3, 0, 0);   // a device, by its host BDF
constexpr uint16_t kNic = DXPU_BDF(4, 0, 0);
constexpr uint64_t kNoDeadline = UINT64_MAX;

struct Done {
  uint64_t cookie;
  uint8_t status;
  uint32_t received;
};

struct Irq {
  uint16_t device;
  uint64_t addr;
  uint32_t data;
};

// A TLP the layer sent, as decoded from its encoding (payload points into wire).
struct Sent {
  dxpu_tlp tlp{};
  std::vector<uint8_t> wire;
};

dxpu_host_config Config() {
  dxpu_host_config cfg{};
  dxpu_host_config_defaults(&cfg);
  cfg.requester_id = kRoot;
  return cfg;
}

// A dxpu_host with recording callbacks.
class Host {
 public:
  explicit Host(const dxpu_host_config& cfg = Config(), bool with_interrupt = true)
      : h_(std::make_unique<dxpu_host>()) {
    const dxpu_host_ops ops{&Host::OnSend, &Host::OnComplete,
                            with_interrupt ? &Host::OnInterrupt : nullptr};
    init_ = dxpu_host_init(h_.get(), &cfg, &ops, this);
  }

  dxpu_host* get() { return h_.get(); }
  const dxpu_host_counters& counters() const { return *dxpu_host_get_counters(h_.get()); }
  dxpu_host_err init() const { return init_; }

  dxpu_host_err Issue(dxpu_tlp* t, uint8_t* buf, uint32_t len, uint64_t cookie, uint64_t now = 0,
                      uint16_t* tag = nullptr) {
    return dxpu_host_issue(h_.get(), t, buf, len, cookie, now, tag);
  }
  void Receive(const dxpu_tlp& t, uint64_t now = 0) { dxpu_host_receive(h_.get(), &t, now); }

  std::vector<Sent> sent;
  std::vector<Done> done;
  std::vector<Irq> irqs;
  bool send_ok = true;
  uint64_t send_attempts = 0;
  std::function<void(const Done&)> on_complete;
  std::function<void(const dxpu_tlp&)> on_send;  // after a send is accepted

 private:
  static bool OnSend(void* ctx, const dxpu_tlp* t) {
    auto* self = static_cast<Host*>(ctx);
    self->send_attempts++;
    Sent s;
    s.wire.resize(DXPU_TLP_MAX_SIZE);
    size_t len = 0;
    const dxpu_tlp_err enc = dxpu_tlp_encode(t, s.wire.data(), s.wire.size(), &len);
    EXPECT_EQ(enc, DXPU_TLP_OK) << dxpu_tlp_err_name(enc);
    if (enc != DXPU_TLP_OK) return false;
    s.wire.resize(len);
    const dxpu_tlp_err dec = dxpu_tlp_decode(s.wire.data(), s.wire.size(), &s.tlp);
    EXPECT_EQ(dec, DXPU_TLP_OK) << dxpu_tlp_err_name(dec);
    std::string why;
    EXPECT_TRUE(same_tlp(*t, s.tlp, &why)) << why;
    if (!self->send_ok) return false;
    const dxpu_tlp copy = s.tlp;
    self->sent.push_back(std::move(s));  // the wire buffer moves, the payload stays valid
    if (self->on_send) self->on_send(copy);
    return true;
  }
  static void OnComplete(void* ctx, uint64_t cookie, uint8_t status, uint32_t received) {
    auto* self = static_cast<Host*>(ctx);
    const Done d{cookie, status, received};
    self->done.push_back(d);
    if (self->on_complete) self->on_complete(d);
  }
  static void OnInterrupt(void* ctx, uint16_t device, uint64_t addr, uint32_t data) {
    static_cast<Host*>(ctx)->irqs.push_back(Irq{device, addr, data});
  }

  std::unique_ptr<dxpu_host> h_;
  dxpu_host_err init_;
};

// ---- TLP builders ----

dxpu_tlp CfgRead(uint16_t bdf, uint16_t reg) {
  dxpu_tlp t{};
  t.kind = DXPU_TLP_CFGRD0;
  t.length_dw = 1;
  t.first_be = 0xf;
  t.cfg_target = bdf;
  t.cfg_reg = reg;
  return t;
}

dxpu_tlp CfgWrite(uint16_t bdf, uint16_t reg, const uint8_t* data) {
  dxpu_tlp t = CfgRead(bdf, reg);
  t.kind = DXPU_TLP_CFGWR0;
  t.payload = data;
  return t;
}

dxpu_tlp MemRequest(uint8_t kind, uint64_t addr, uint32_t n) {
  dxpu_tlp t{};
  EXPECT_TRUE(dxpu_tlp_mem_request(kind, addr, n, &t)) << addr << " " << n;
  return t;
}

// A completion without data for the host's request tag.
dxpu_tlp Cpl(uint16_t tag, uint8_t status, uint16_t byte_count = 4, uint16_t requester = kRoot) {
  dxpu_tlp c{};
  c.kind = DXPU_TLP_CPL;
  c.requester_id = requester;
  c.tag = tag;
  c.completer_id = kGpu;
  c.cpl_status = status;
  c.byte_count = byte_count;
  return c;
}

// The CplD answering a configuration read.
dxpu_tlp CfgCplD(uint16_t tag, const uint8_t* data) {
  dxpu_tlp c = Cpl(tag, DXPU_TLP_CPL_SC, 4);
  c.kind = DXPU_TLP_CPLD;
  c.length_dw = 1;
  c.payload = data;
  return c;
}

// The CplDs a completer sends for memory read req; mem holds the DWs from req.addr on.
std::vector<dxpu_tlp> ReadCplDs(const dxpu_tlp& req, const uint8_t* mem, uint32_t rcb,
                                uint32_t mps) {
  dxpu_tlp_cpl_split split{};
  EXPECT_EQ(
      dxpu_tlp_cpl_split_init(&split, req.addr, req.length_dw, req.first_be, req.last_be, rcb, mps),
      DXPU_TLP_OK);
  std::vector<dxpu_tlp> out;
  dxpu_tlp_cpl_piece piece{};
  while (dxpu_tlp_cpl_split_next(&split, &piece)) {
    dxpu_tlp c = Cpl(req.tag, DXPU_TLP_CPL_SC, piece.byte_count, req.requester_id);
    c.kind = DXPU_TLP_CPLD;
    c.length_dw = piece.length_dw;
    c.lower_addr = piece.lower_addr;
    c.payload = mem + size_t{piece.offset_dw} * 4;
    EXPECT_EQ(dxpu_tlp_validate(&c), DXPU_TLP_OK);
    out.push_back(c);
  }
  return out;
}

// Test data, the same each run.
std::mt19937_64 DataRng(uint64_t seed) { return std::mt19937_64(seed); }

template <typename It>
bool AllAre(It first, It last, uint8_t v) {
  return std::all_of(first, last, [v](uint8_t b) { return b == v; });
}

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Reassembles the CplDs a host sent for a device read of [start, start + n), checking every
// field a requester relies on: the data, in address order.
std::vector<uint8_t> Reassemble(const std::vector<Sent>& cpls, const dxpu_tlp& req, uint64_t start,
                                uint32_t n, uint32_t rcb, uint32_t mps) {
  std::vector<uint8_t> out(n, 0);
  uint32_t done = 0;
  for (size_t i = 0; i < cpls.size(); ++i) {
    const dxpu_tlp& c = cpls[i].tlp;
    SCOPED_TRACE(testing::Message() << "completion " << i);
    EXPECT_EQ(c.kind, DXPU_TLP_CPLD);
    EXPECT_EQ(c.cpl_status, DXPU_TLP_CPL_SC);
    EXPECT_EQ(c.requester_id, req.requester_id);
    EXPECT_EQ(c.tag, req.tag);
    EXPECT_EQ(c.completer_id, kRoot);
    EXPECT_EQ(c.tc, req.tc);
    EXPECT_EQ(c.byte_count, n - done);
    EXPECT_EQ(c.lower_addr, (start + done) & 0x7f);
    EXPECT_LE(c.length_dw * 4U, mps);
    const uint32_t first = c.lower_addr & 3U;
    const uint32_t carried = std::min<uint32_t>(c.byte_count, c.length_dw * 4U - first);
    if (done + carried > n) {
      ADD_FAILURE() << "too much data";
      break;
    }
    std::copy_n(c.payload + first, carried, out.begin() + done);
    done += carried;
    if (done < n) {
      EXPECT_EQ((start + done) % rcb, 0U) << "partial completion off the RCB";
    }
    EXPECT_EQ(dxpu_tlp_cpl_is_final(&c), i + 1 == cpls.size());
  }
  EXPECT_EQ(done, n);
  return out;
}

// ------------------------------------------------------------------ configuration

TEST(HostCore, DefaultsAndInitChecks) {
  dxpu_host_config cfg{};
  dxpu_host_config_defaults(&cfg);
  EXPECT_EQ(cfg.requester_id, 0);
  EXPECT_EQ(cfg.max_tags, 256);
  EXPECT_EQ(cfg.rcb, 64U);
  EXPECT_EQ(cfg.max_payload, 256U);
  EXPECT_EQ(cfg.request_timeout, 50000000U);
  EXPECT_EQ(cfg.msi_base, 0xfee00000U);
  EXPECT_EQ(cfg.msi_size, 0x100000U);
  EXPECT_EQ(Host(cfg).init(), DXPU_HOST_OK);
  EXPECT_EQ(Host(cfg, false).init(), DXPU_HOST_OK);  // no interrupt callback: fine

  const std::vector<std::function<void(dxpu_host_config&)>> bad = {
      [](dxpu_host_config& c) { c.max_tags = 0; },
      [](dxpu_host_config& c) { c.max_tags = 257; },
      [](dxpu_host_config& c) { c.rcb = 32; },
      [](dxpu_host_config& c) { c.rcb = 256; },
      [](dxpu_host_config& c) { c.max_payload = 64; },
      [](dxpu_host_config& c) { c.max_payload = 384; },
      [](dxpu_host_config& c) { c.max_payload = 8192; },
      [](dxpu_host_config& c) {
        c.rcb = 128;
        c.max_payload = 64;
      },
      [](dxpu_host_config& c) {
        c.msi_base = UINT64_MAX - 10;
        c.msi_size = 100;
      },
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    dxpu_host_config c = Config();
    bad[i](c);
    EXPECT_EQ(Host(c).init(), DXPU_HOST_BAD_ARGUMENT) << i;
  }
  dxpu_host_config top = Config();
  top.msi_base = UINT64_MAX - 0xfff;  // ends exactly at the top of memory
  top.msi_size = 0x1000;
  EXPECT_EQ(Host(top).init(), DXPU_HOST_OK);

  auto h = std::make_unique<dxpu_host>();
  const dxpu_host_ops no_send{nullptr, [](void*, uint64_t, uint8_t, uint32_t) {}, nullptr};
  const dxpu_host_ops no_complete{[](void*, const dxpu_tlp*) { return true; }, nullptr, nullptr};
  cfg = Config();
  EXPECT_EQ(dxpu_host_init(h.get(), &cfg, &no_send, nullptr), DXPU_HOST_BAD_ARGUMENT);
  EXPECT_EQ(dxpu_host_init(h.get(), &cfg, &no_complete, nullptr), DXPU_HOST_BAD_ARGUMENT);
  EXPECT_EQ(dxpu_host_init(h.get(), nullptr, &no_complete, nullptr), DXPU_HOST_BAD_ARGUMENT);
}

TEST(HostCore, ErrorNames) {
  std::set<std::string> names;
  for (int e = 0; e < DXPU_HOST_ERR_COUNT; ++e) {
    const char* n = dxpu_host_err_name(static_cast<dxpu_host_err>(e));
    ASSERT_NE(n, nullptr);
    EXPECT_NE(std::string(n), "unknown");
    names.insert(n);
  }
  EXPECT_EQ(names.size(), size_t{DXPU_HOST_ERR_COUNT});
  EXPECT_STREQ(dxpu_host_err_name(DXPU_HOST_OK), "ok");
  EXPECT_STREQ(dxpu_host_err_name(DXPU_HOST_NO_TAG), "no-tag");
  EXPECT_STREQ(dxpu_host_err_name(DXPU_HOST_ERR_COUNT), "unknown");
}

// ------------------------------------------------------------------ host requests

TEST(HostCore, ConfigReadCompletes) {
  Host host;
  uint8_t buf[4] = {};
  dxpu_tlp t = CfgRead(kGpu, 0x10);
  uint16_t tag = 0xffff;
  ASSERT_EQ(host.Issue(&t, buf, sizeof buf, 77, 1000, &tag), DXPU_HOST_OK);
  EXPECT_EQ(tag, 0);
  EXPECT_EQ(t.tag, 0);
  EXPECT_EQ(t.requester_id, kRoot);
  ASSERT_EQ(host.sent.size(), 1U);
  const dxpu_tlp& s = host.sent[0].tlp;
  EXPECT_EQ(s.kind, DXPU_TLP_CFGRD0);
  EXPECT_EQ(s.requester_id, kRoot);
  EXPECT_EQ(s.tag, 0);
  EXPECT_EQ(s.cfg_target, kGpu);
  EXPECT_EQ(s.cfg_reg, 0x10);
  EXPECT_EQ(host.get()->outstanding, 1);
  EXPECT_EQ(dxpu_host_next_deadline(host.get()), 1000U + 50000000U);
  EXPECT_TRUE(host.done.empty());

  const uint8_t data[4] = {0x78, 0x56, 0x34, 0x12};
  host.Receive(CfgCplD(tag, data));
  ASSERT_EQ(host.done.size(), 1U);
  EXPECT_EQ(host.done[0].cookie, 77U);
  EXPECT_EQ(host.done[0].status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(host.done[0].received, 4U);
  EXPECT_EQ(std::vector<uint8_t>(buf, buf + 4), std::vector<uint8_t>(data, data + 4));
  EXPECT_EQ(host.get()->outstanding, 0);
  EXPECT_EQ(dxpu_host_next_deadline(host.get()), kNoDeadline);
  const dxpu_host_counters& c = host.counters();
  EXPECT_EQ(c.requests, 1U);
  EXPECT_EQ(c.completions, 1U);
  EXPECT_EQ(c.completed_ok, 1U);
  EXPECT_EQ(c.completed_error + c.bad_cpl + c.unexpected_cpl + c.timeouts, 0U);

  // Tags go round: the next request gets tag 1 although tag 0 is free again.
  dxpu_tlp t1 = CfgRead(kGpu, 0);
  ASSERT_EQ(host.Issue(&t1, buf, sizeof buf, 78, 0, &tag), DXPU_HOST_OK);
  EXPECT_EQ(tag, 1);
  dxpu_tlp r1 = CfgRead(kGpu, 0);
  r1.kind = DXPU_TLP_CFGRD1;  // type 1 as well
  ASSERT_EQ(host.Issue(&r1, buf, sizeof buf, 79, 0, &tag), DXPU_HOST_OK);
  EXPECT_EQ(host.sent.back().tlp.kind, DXPU_TLP_CFGRD1);
}

TEST(HostCore, ConfigWriteAndErrorStatuses) {
  Host host;
  const uint8_t value[4] = {1, 2, 3, 4};
  dxpu_tlp w = CfgWrite(kGpu, 0x04, value);
  uint16_t tag = 0;
  ASSERT_EQ(host.Issue(&w, nullptr, 0, 1, 0, &tag), DXPU_HOST_OK);
  ASSERT_EQ(host.sent.size(), 1U);
  EXPECT_EQ(host.sent[0].tlp.kind, DXPU_TLP_CFGWR0);
  EXPECT_EQ(std::vector<uint8_t>(host.sent[0].tlp.payload, host.sent[0].tlp.payload + 4),
            std::vector<uint8_t>(value, value + 4));
  host.Receive(Cpl(tag, DXPU_TLP_CPL_SC));
  ASSERT_EQ(host.done.size(), 1U);
  EXPECT_EQ(host.done[0].status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(host.done[0].received, 0U);

  // A read answered UR, CRS or CA ends with that status and an all-ones buffer.
  const uint8_t statuses[] = {DXPU_TLP_CPL_UR, DXPU_TLP_CPL_CRS, DXPU_TLP_CPL_CA};
  for (uint8_t st : statuses) {
    uint8_t buf[4] = {0, 0, 0, 0};
    dxpu_tlp r = CfgRead(kGpu, 0);
    ASSERT_EQ(host.Issue(&r, buf, sizeof buf, 10 + st, 0, &tag), DXPU_HOST_OK);
    host.Receive(Cpl(tag, st));
    EXPECT_EQ(host.done.back().cookie, 10U + st);
    EXPECT_EQ(host.done.back().status, st);
    EXPECT_EQ(host.done.back().received, 0U);
    EXPECT_TRUE(AllAre(buf, buf + 4, 0xff));
  }
  // A poisoned CplD ends the read with CA: its data is not used.
  uint8_t buf[4] = {};
  const uint8_t data[4] = {9, 9, 9, 9};
  dxpu_tlp r = CfgRead(kGpu, 0);
  ASSERT_EQ(host.Issue(&r, buf, sizeof buf, 99, 0, &tag), DXPU_HOST_OK);
  dxpu_tlp poisoned = CfgCplD(tag, data);
  poisoned.flags = DXPU_TLP_F_EP;
  host.Receive(poisoned);
  EXPECT_EQ(host.done.back().cookie, 99U);
  EXPECT_EQ(host.done.back().status, DXPU_TLP_CPL_CA);
  EXPECT_TRUE(AllAre(buf, buf + 4, 0xff));
  EXPECT_EQ(host.counters().completed_ok, 1U);
  EXPECT_EQ(host.counters().completed_error, 4U);
  EXPECT_EQ(host.get()->outstanding, 0);
}

// A read answered by many CplDs, split at the RCB and MPS: the data lands in order, the request
// ends with the last one only, and nothing is written past the buffer.
void ReadInPieces(uint64_t addr, uint32_t n, uint32_t rcb, uint32_t mps, size_t want_pieces) {
  SCOPED_TRACE(testing::Message() << "addr " << addr << " n " << n << " rcb " << rcb);
  Host host;
  std::mt19937_64 rng(addr + n);
  const std::vector<uint8_t> device = RandomBytes(rng, 4096 + 8);  // DWs from the request's addr
  std::vector<uint8_t> buf(n + 64, 0x5a);
  dxpu_tlp t = MemRequest(DXPU_TLP_MRD, addr, n);
  ASSERT_EQ(host.Issue(&t, buf.data(), n, 5, 0), DXPU_HOST_OK);
  ASSERT_EQ(host.sent.size(), 1U);
  const dxpu_tlp req = host.sent[0].tlp;
  EXPECT_EQ(req.addr, addr & ~uint64_t{3});
  EXPECT_EQ(req.requester_id, kRoot);
  const std::vector<dxpu_tlp> cpls = ReadCplDs(req, device.data(), rcb, mps);
  EXPECT_EQ(cpls.size(), want_pieces);
  for (size_t i = 0; i < cpls.size(); ++i) {
    EXPECT_TRUE(host.done.empty()) << i;
    host.Receive(cpls[i]);
    EXPECT_EQ(host.counters().completions, i + 1);
  }
  ASSERT_EQ(host.done.size(), 1U);
  EXPECT_EQ(host.done[0].status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(host.done[0].received, n);
  const size_t lead = addr & 3;
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + n, device.begin() + lead));
  EXPECT_TRUE(AllAre(buf.begin() + n, buf.end(), 0x5a));
  EXPECT_EQ(host.counters().bad_cpl, 0U);
  EXPECT_EQ(host.get()->outstanding, 0);
}

TEST(HostCore, MemoryReadInManyCompletions) {
  ReadInPieces(0x123456000, 4096, 64, 128, 32);  // 64-bit address, 1024 DW, 32 CplDs
  ReadInPieces(0x80001000, 4096, 64, 256, 16);
  ReadInPieces(0x80001003, 1000, 128, 256, 4);  // unaligned both ends: 253, 256, 256, 235
  ReadInPieces(0x80001fff, 1, 64, 128, 1);
  ReadInPieces(0x8000103e, 3, 64, 128, 1);  // across an RCB boundary, but within one MPS
  ReadInPieces(0x80001004, 8, 64, 4096, 1);
  ReadInPieces(0x80001010, 4000, 128, 4096, 1);
}

TEST(HostCore, CompletionsThatDoNotFitAreDropped) {
  Host host;
  std::mt19937_64 rng = DataRng(1);
  const std::vector<uint8_t> device = RandomBytes(rng, 256);
  std::vector<uint8_t> buf(256, 0);
  dxpu_tlp t = MemRequest(DXPU_TLP_MRD, 0x1000, 256);
  ASSERT_EQ(host.Issue(&t, buf.data(), 256, 1), DXPU_HOST_OK);
  const std::vector<dxpu_tlp> cpls = ReadCplDs(host.sent[0].tlp, device.data(), 64, 128);
  ASSERT_EQ(cpls.size(), 2U);

  host.Receive(cpls[1]);  // out of order: Byte Count 128 while 256 are missing
  EXPECT_EQ(host.counters().bad_cpl, 1U);
  dxpu_tlp wrong_addr = cpls[0];
  wrong_addr.lower_addr = 0x40;  // valid on its own, not where this read continues
  ASSERT_EQ(dxpu_tlp_validate(&wrong_addr), DXPU_TLP_OK);
  host.Receive(wrong_addr);
  EXPECT_EQ(host.counters().bad_cpl, 2U);
  host.Receive(Cpl(t.tag, DXPU_TLP_CPL_SC, 256));  // SC without data for a read
  EXPECT_EQ(host.counters().bad_cpl, 3U);
  dxpu_tlp no_payload = cpls[0];
  no_payload.payload = nullptr;  // not a TLP the decoder makes
  host.Receive(no_payload);
  EXPECT_EQ(host.counters().bad_cpl, 4U);
  EXPECT_TRUE(host.done.empty());
  EXPECT_TRUE(AllAre(buf.begin(), buf.end(), 0));

  host.Receive(cpls[0]);
  host.Receive(cpls[0]);  // a duplicate: 128 bytes missing, it says 256
  EXPECT_EQ(host.counters().bad_cpl, 5U);
  host.Receive(cpls[1]);
  ASSERT_EQ(host.done.size(), 1U);
  EXPECT_EQ(host.done[0].status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(buf, device);
  EXPECT_EQ(host.counters().completions, 2U);

  // A CplD for a configuration write does not fit either.
  const uint8_t value[4] = {1, 2, 3, 4};
  dxpu_tlp w = CfgWrite(kGpu, 0, value);
  uint16_t tag = 0;
  ASSERT_EQ(host.Issue(&w, nullptr, 0, 2, 0, &tag), DXPU_HOST_OK);
  host.Receive(CfgCplD(tag, value));
  EXPECT_EQ(host.counters().bad_cpl, 6U);
  host.Receive(Cpl(tag, DXPU_TLP_CPL_SC));
  EXPECT_EQ(host.done.back().cookie, 2U);
  EXPECT_EQ(host.counters().unexpected_cpl, 0U);
}

TEST(HostCore, UnexpectedCompletions) {
  dxpu_host_config cfg = Config();
  cfg.max_tags = 32;
  Host host(cfg);
  host.Receive(Cpl(0, DXPU_TLP_CPL_SC));  // nothing outstanding
  EXPECT_EQ(host.counters().unexpected_cpl, 1U);
  uint8_t buf[4] = {};
  dxpu_tlp t = CfgRead(kGpu, 0);
  uint16_t tag = 0;
  ASSERT_EQ(host.Issue(&t, buf, 4, 1, 0, &tag), DXPU_HOST_OK);
  host.Receive(Cpl(tag, DXPU_TLP_CPL_SC, 4, kGpu));  // another requester's
  host.Receive(Cpl(tag + 5, DXPU_TLP_CPL_SC));
  host.Receive(Cpl(300, DXPU_TLP_CPL_SC));  // a 10-bit tag beyond the table
  EXPECT_EQ(host.counters().unexpected_cpl, 4U);
  EXPECT_TRUE(host.done.empty());
  const uint8_t data[4] = {1, 2, 3, 4};
  host.Receive(CfgCplD(tag, data));
  EXPECT_EQ(host.done.size(), 1U);
  EXPECT_EQ(host.counters().completions, 1U);
}

TEST(HostCore, TagsRunOutAndComeBackRoundRobin) {
  dxpu_host_config cfg = Config();
  cfg.max_tags = 4;
  Host host(cfg);
  uint8_t buf[8][4] = {};
  uint16_t tag = 0;
  for (uint16_t i = 0; i < 4; ++i) {
    dxpu_tlp t = CfgRead(kGpu, 0);
    ASSERT_EQ(host.Issue(&t, buf[i], 4, i, 0, &tag), DXPU_HOST_OK);
    EXPECT_EQ(tag, i);
  }
  dxpu_tlp t = CfgRead(kGpu, 0);
  t.tag = 0x155;
  EXPECT_EQ(host.Issue(&t, buf[4], 4, 4, 0, &tag), DXPU_HOST_NO_TAG);
  EXPECT_EQ(t.tag, 0x155);  // untouched on error
  EXPECT_EQ(host.counters().no_tag, 1U);
  EXPECT_EQ(host.sent.size(), 4U);
  EXPECT_EQ(host.counters().requests, 4U);

  host.Receive(Cpl(1, DXPU_TLP_CPL_UR));
  ASSERT_EQ(host.Issue(&t, buf[4], 4, 5, 0, &tag), DXPU_HOST_OK);
  EXPECT_EQ(tag, 1);
  host.Receive(Cpl(0, DXPU_TLP_CPL_UR));
  host.Receive(Cpl(3, DXPU_TLP_CPL_UR));
  ASSERT_EQ(host.Issue(&t, buf[5], 4, 6, 0, &tag), DXPU_HOST_OK);
  EXPECT_EQ(tag, 3);  // after 1 comes 2 (busy), then 3
  ASSERT_EQ(host.Issue(&t, buf[6], 4, 7, 0, &tag), DXPU_HOST_OK);
  EXPECT_EQ(tag, 0);
  EXPECT_EQ(host.Issue(&t, buf[7], 4, 8, 0, &tag), DXPU_HOST_NO_TAG);
  EXPECT_EQ(host.get()->outstanding, 4);
}

TEST(HostCore, RequestsItDoesNotIssue) {
  Host host;
  uint8_t buf[16] = {};
  const uint8_t value[8] = {};
  dxpu_tlp mwr = MemRequest(DXPU_TLP_MWR, 0x1000, 4);
  mwr.payload = value;
  EXPECT_EQ(host.Issue(&mwr, buf, 16, 1), DXPU_HOST_BAD_REQUEST);
  dxpu_tlp cpl = Cpl(0, DXPU_TLP_CPL_SC);
  EXPECT_EQ(host.Issue(&cpl, buf, 16, 1), DXPU_HOST_BAD_REQUEST);
  dxpu_tlp msg{};
  msg.kind = DXPU_TLP_MSG;
  msg.msg_code = DXPU_TLP_MSG_ASSERT_INTA;
  msg.msg_routing = DXPU_TLP_ROUTE_LOCAL;
  EXPECT_EQ(host.Issue(&msg, buf, 16, 1), DXPU_HOST_BAD_REQUEST);
  dxpu_tlp two_dw = CfgRead(kGpu, 0);
  two_dw.length_dw = 2;
  EXPECT_EQ(host.Issue(&two_dw, buf, 16, 1), DXPU_HOST_BAD_REQUEST);
  dxpu_tlp crossing = MemRequest(DXPU_TLP_MRD, 0x1ff8, 8);
  crossing.length_dw = 4;  // now runs past the 4 KiB page
  crossing.last_be = 0xf;
  EXPECT_EQ(host.Issue(&crossing, buf, 16, 1), DXPU_HOST_BAD_REQUEST);
  EXPECT_EQ(host.Issue(nullptr, buf, 16, 1), DXPU_HOST_BAD_REQUEST);

  dxpu_tlp rd = MemRequest(DXPU_TLP_MRD, 0x1001, 8);
  EXPECT_EQ(host.Issue(&rd, buf, 7, 1), DXPU_HOST_BAD_ARGUMENT);
  EXPECT_EQ(host.Issue(&rd, nullptr, 16, 1), DXPU_HOST_BAD_ARGUMENT);
  dxpu_tlp cfg = CfgRead(kGpu, 0);
  EXPECT_EQ(host.Issue(&cfg, buf, 3, 1), DXPU_HOST_BAD_ARGUMENT);
  EXPECT_TRUE(host.sent.empty());
  EXPECT_EQ(host.get()->outstanding, 0);
  EXPECT_EQ(host.counters().requests, 0U);

  // A zero-length read asks for one byte; a configuration write for none.
  dxpu_tlp zero = MemRequest(DXPU_TLP_MRD, 0x1000, 4);
  zero.first_be = 0;
  EXPECT_EQ(host.Issue(&zero, nullptr, 0, 1), DXPU_HOST_BAD_ARGUMENT);
  EXPECT_EQ(host.Issue(&zero, buf, 1, 1), DXPU_HOST_OK);
  dxpu_tlp w = CfgWrite(kGpu, 0, value);
  EXPECT_EQ(host.Issue(&w, nullptr, 0, 2), DXPU_HOST_OK);
  EXPECT_EQ(host.get()->outstanding, 2);
}

TEST(HostCore, SendRefused) {
  Host host;
  host.send_ok = false;
  uint8_t buf[4] = {};
  dxpu_tlp t = CfgRead(kGpu, 0);
  EXPECT_EQ(host.Issue(&t, buf, 4, 1, 10), DXPU_HOST_SEND_FAILED);
  EXPECT_EQ(host.send_attempts, 1U);
  EXPECT_EQ(host.get()->outstanding, 0);
  EXPECT_EQ(host.counters().requests, 0U);
  EXPECT_EQ(dxpu_host_next_deadline(host.get()), kNoDeadline);
  dxpu_host_expire(host.get(), kNoDeadline - 1);
  dxpu_host_fail_all(host.get(), DXPU_TLP_CPL_UR);
  EXPECT_TRUE(host.done.empty());  // no tag was held: nothing to end

  const uint8_t data[4] = {};
  dxpu_tlp mwr = MemRequest(DXPU_TLP_MWR, 0x2000, 4);
  mwr.payload = data;
  EXPECT_EQ(dxpu_host_post(host.get(), &mwr), DXPU_HOST_SEND_FAILED);
  EXPECT_EQ(host.counters().posted, 0U);

  host.send_ok = true;
  EXPECT_EQ(host.Issue(&t, buf, 4, 2, 10), DXPU_HOST_OK);
  EXPECT_EQ(dxpu_host_post(host.get(), &mwr), DXPU_HOST_OK);
  EXPECT_EQ(host.counters().posted, 1U);
  EXPECT_EQ(host.counters().requests, 1U);
  ASSERT_EQ(host.sent.size(), 2U);
  EXPECT_EQ(host.sent[1].tlp.kind, DXPU_TLP_MWR);
  EXPECT_EQ(host.sent[1].tlp.requester_id, kRoot);
  EXPECT_EQ(mwr.requester_id, kRoot);
  dxpu_tlp rd = MemRequest(DXPU_TLP_MRD, 0x2000, 4);
  EXPECT_EQ(dxpu_host_post(host.get(), &rd), DXPU_HOST_BAD_REQUEST);
  dxpu_tlp bad = mwr;
  bad.payload = nullptr;
  EXPECT_EQ(dxpu_host_post(host.get(), &bad), DXPU_HOST_BAD_REQUEST);
}

TEST(HostCore, TimeoutEndsWithUrAndAllOnes) {
  dxpu_host_config cfg = Config();
  cfg.request_timeout = 1000;
  Host host(cfg);
  std::mt19937_64 rng = DataRng(2);
  const std::vector<uint8_t> device = RandomBytes(rng, 256);
  std::vector<uint8_t> buf(256, 0);
  dxpu_tlp t = MemRequest(DXPU_TLP_MRD, 0x4000, 256);
  ASSERT_EQ(host.Issue(&t, buf.data(), 256, 1, 100), DXPU_HOST_OK);
  uint8_t buf2[4] = {};
  dxpu_tlp t2 = CfgRead(kGpu, 0);
  ASSERT_EQ(host.Issue(&t2, buf2, 4, 2, 500), DXPU_HOST_OK);
  const std::vector<dxpu_tlp> cpls = ReadCplDs(host.sent[0].tlp, device.data(), 64, 128);
  ASSERT_EQ(cpls.size(), 2U);
  host.Receive(cpls[0]);  // half arrives
  EXPECT_EQ(dxpu_host_next_deadline(host.get()), 1100U);
  dxpu_host_expire(host.get(), 1099);
  EXPECT_TRUE(host.done.empty());
  dxpu_host_expire(host.get(), 1100);
  ASSERT_EQ(host.done.size(), 1U);
  EXPECT_EQ(host.done[0].cookie, 1U);
  EXPECT_EQ(host.done[0].status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(host.done[0].received, 128U);
  EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 128, device.begin()));
  EXPECT_TRUE(AllAre(buf.begin() + 128, buf.end(), 0xff));
  EXPECT_EQ(host.counters().timeouts, 1U);
  EXPECT_EQ(dxpu_host_next_deadline(host.get()), 1500U);

  host.Receive(cpls[1]);  // late: its tag is no longer outstanding
  EXPECT_EQ(host.counters().unexpected_cpl, 1U);
  EXPECT_EQ(host.done.size(), 1U);

  dxpu_host_expire(host.get(), 1 << 20);
  ASSERT_EQ(host.done.size(), 2U);
  EXPECT_EQ(host.done[1].cookie, 2U);
  EXPECT_TRUE(AllAre(buf2, buf2 + 4, 0xff));
  EXPECT_EQ(host.counters().timeouts, 2U);
  EXPECT_EQ(host.get()->outstanding, 0);
  EXPECT_EQ(dxpu_host_next_deadline(host.get()), kNoDeadline);
}

TEST(HostCore, DeadlinesSaturateAndZeroMeansNever) {
  dxpu_host_config cfg = Config();
  cfg.request_timeout = 1000;
  Host host(cfg);
  uint8_t buf[4] = {};
  dxpu_tlp t = CfgRead(kGpu, 0);
  ASSERT_EQ(host.Issue(&t, buf, 4, 1, UINT64_MAX - 10), DXPU_HOST_OK);
  EXPECT_EQ(dxpu_host_next_deadline(host.get()), kNoDeadline);
  dxpu_host_expire(host.get(), UINT64_MAX);
  EXPECT_TRUE(host.done.empty());

  cfg.request_timeout = 0;
  Host never(cfg);
  ASSERT_EQ(never.Issue(&t, buf, 4, 1, 5), DXPU_HOST_OK);
  EXPECT_EQ(dxpu_host_next_deadline(never.get()), kNoDeadline);
  dxpu_host_expire(never.get(), UINT64_MAX);
  EXPECT_TRUE(never.done.empty());
  EXPECT_EQ(never.counters().timeouts, 0U);
}

TEST(HostCore, FailAllEndsEveryRequest) {
  Host host;
  uint8_t cfg_buf[4] = {};
  std::vector<uint8_t> mem_buf(64, 0);
  const uint8_t value[4] = {};
  dxpu_tlp a = CfgRead(kGpu, 0);
  dxpu_tlp b = MemRequest(DXPU_TLP_MRD, 0x9000, 64);
  dxpu_tlp c = CfgWrite(kGpu, 0, value);
  ASSERT_EQ(host.Issue(&a, cfg_buf, 4, 1), DXPU_HOST_OK);
  ASSERT_EQ(host.Issue(&b, mem_buf.data(), 64, 2), DXPU_HOST_OK);
  ASSERT_EQ(host.Issue(&c, nullptr, 0, 3), DXPU_HOST_OK);
  dxpu_host_fail_all(host.get(), DXPU_TLP_CPL_CA);
  ASSERT_EQ(host.done.size(), 3U);
  std::set<uint64_t> cookies;
  for (const Done& d : host.done) {
    cookies.insert(d.cookie);
    EXPECT_EQ(d.status, DXPU_TLP_CPL_CA);
    EXPECT_EQ(d.received, 0U);
  }
  EXPECT_EQ(cookies, (std::set<uint64_t>{1, 2, 3}));
  EXPECT_TRUE(AllAre(cfg_buf, cfg_buf + 4, 0xff));
  EXPECT_TRUE(AllAre(mem_buf.begin(), mem_buf.end(), 0xff));
  EXPECT_EQ(host.counters().failed, 3U);
  EXPECT_EQ(host.get()->outstanding, 0);
  dxpu_host_fail_all(host.get(), DXPU_TLP_CPL_UR);
  EXPECT_EQ(host.done.size(), 3U);
}

TEST(HostCore, CallbacksMayIssueAgain) {
  dxpu_host_config cfg = Config();
  cfg.max_tags = 1;  // a new request can only take the tag just freed
  cfg.request_timeout = 100;
  Host host(cfg);
  uint8_t bufs[8][4] = {};
  uint64_t next_cookie = 1;
  std::vector<dxpu_host_err> errs;
  uint64_t now = 0;
  host.on_complete = [&](const Done&) {
    if (next_cookie >= 8) return;
    dxpu_tlp t = CfgRead(kGpu, 0);
    errs.push_back(host.Issue(&t, bufs[next_cookie], 4, next_cookie, now));
    next_cookie++;
  };
  dxpu_tlp t = CfgRead(kGpu, 0);
  ASSERT_EQ(host.Issue(&t, bufs[0], 4, 0, now), DXPU_HOST_OK);
  const uint8_t data[4] = {1, 2, 3, 4};
  host.Receive(CfgCplD(0, data));  // ends 0, whose callback issues 1 on tag 0
  EXPECT_EQ(host.done.size(), 1U);
  EXPECT_EQ(host.sent.size(), 2U);
  EXPECT_EQ(host.get()->outstanding, 1);

  now = 50;
  dxpu_host_fail_all(host.get(), DXPU_TLP_CPL_UR);  // ends 1 only, not 2 issued meanwhile
  EXPECT_EQ(host.done.size(), 2U);
  EXPECT_EQ(host.done[1].cookie, 1U);
  EXPECT_EQ(host.get()->outstanding, 1);
  EXPECT_EQ(dxpu_host_next_deadline(host.get()), 150U);

  now = 200;
  dxpu_host_expire(host.get(), now);  // ends 2; 3 is issued with deadline 300
  EXPECT_EQ(host.done.size(), 3U);
  EXPECT_EQ(host.get()->outstanding, 1);
  EXPECT_EQ(dxpu_host_next_deadline(host.get()), 300U);
  EXPECT_EQ(errs, std::vector<dxpu_host_err>(3, DXPU_HOST_OK));
  EXPECT_EQ(host.counters().requests, 4U);
}

// Requests issued from a callback of fail_all or expire take a later tag: the same pass must not
// end them as well.
TEST(HostCore, OnlyRequestsOutstandingBeforeAPassAreEnded) {
  dxpu_host_config cfg = Config();
  cfg.max_tags = 4;
  cfg.request_timeout = 100;
  Host host(cfg);
  uint8_t bufs[4][4] = {};
  uint64_t cookie = 0;
  host.on_complete = [&](const Done&) {
    if (++cookie >= 4) return;
    dxpu_tlp t = CfgRead(kGpu, 0);
    EXPECT_EQ(host.Issue(&t, bufs[cookie], 4, cookie, 0), DXPU_HOST_OK);  // deadline 100
  };
  dxpu_tlp t = CfgRead(kGpu, 0);
  uint16_t tag = 0;
  ASSERT_EQ(host.Issue(&t, bufs[0], 4, 0, 0, &tag), DXPU_HOST_OK);
  EXPECT_EQ(tag, 0);
  dxpu_host_fail_all(host.get(), DXPU_TLP_CPL_UR);  // ends tag 0; cookie 1 takes tag 1
  ASSERT_EQ(host.done.size(), 1U);
  EXPECT_EQ(host.get()->outstanding, 1);
  EXPECT_TRUE(host.get()->req[1].in_use);
  dxpu_host_expire(host.get(), 200);  // ends tag 1; cookie 2 takes tag 2, already past due
  ASSERT_EQ(host.done.size(), 2U);
  EXPECT_EQ(host.done[1].cookie, 1U);
  EXPECT_EQ(host.get()->outstanding, 1);
  EXPECT_TRUE(host.get()->req[2].in_use);
  EXPECT_EQ(host.counters().failed, 1U);
  EXPECT_EQ(host.counters().timeouts, 1U);
}

TEST(HostCore, AnswerInsideSend) {
  Host host;  // an ideal link: the completion arrives before issue returns
  const uint8_t data[4] = {0xa, 0xb, 0xc, 0xd};
  host.on_send = [&](const dxpu_tlp& t) {
    if (t.kind == DXPU_TLP_CFGRD0) host.Receive(CfgCplD(t.tag, data));
  };
  uint8_t buf[4] = {};
  dxpu_tlp t = CfgRead(kGpu, 0);
  ASSERT_EQ(host.Issue(&t, buf, 4, 42), DXPU_HOST_OK);
  ASSERT_EQ(host.done.size(), 1U);
  EXPECT_EQ(host.done[0].cookie, 42U);
  EXPECT_EQ(host.done[0].status, DXPU_TLP_CPL_SC);
  EXPECT_EQ(buf[3], 0xd);
  EXPECT_EQ(host.get()->outstanding, 0);
  EXPECT_EQ(host.counters().requests, 1U);
}

// ------------------------------------------------------------------ device requests

dxpu_tlp DeviceRead(uint16_t device, uint16_t tag, uint64_t addr, uint32_t n) {
  dxpu_tlp t = MemRequest(DXPU_TLP_MRD, addr, n);
  t.requester_id = device;
  t.tag = tag;
  return t;
}

// One device read of [start, start + n) against a host whose window of kGpu holds mem at iova.
void CheckDeviceRead(Host& host, uint64_t iova, const std::vector<uint8_t>& mem, uint64_t start,
                     uint32_t n, uint32_t rcb, uint32_t mps) {
  SCOPED_TRACE(testing::Message() << "read " << start - iova << " + " << n);
  const size_t before = host.sent.size();
  dxpu_tlp t = DeviceRead(kGpu, static_cast<uint16_t>(n & 0x3ff), start, n);
  t.tc = static_cast<uint8_t>(n & 7);
  host.Receive(t);
  const std::vector<Sent> cpls(host.sent.begin() + static_cast<ptrdiff_t>(before), host.sent.end());
  const std::vector<uint8_t> got = Reassemble(cpls, t, start, n, rcb, mps);
  const auto from = mem.begin() + static_cast<ptrdiff_t>(start - iova);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), from));
}

TEST(HostCore, DeviceReadsInsideAWindow) {
  const uint32_t configs[][2] = {{64, 128}, {64, 256}, {128, 512}, {128, 4096}};
  const uint32_t offsets[] = {0, 1, 2, 3, 4, 61, 64, 127, 0x7fd, 0xf00, 0x1000, 0x1ffc, 0x2f01};
  const uint32_t lengths[] = {1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 127, 128, 129, 255, 256, 1000, 4096};
  constexpr uint64_t kIova = 0x2'8000'0000;
  std::mt19937_64 rng = DataRng(3);
  std::vector<uint8_t> mem = RandomBytes(rng, 0x3000);
  const std::vector<uint8_t> copy = mem;
  for (const auto& rc : configs) {
    dxpu_host_config cfg = Config();
    cfg.rcb = rc[0];
    cfg.max_payload = rc[1];
    Host host(cfg);
    ASSERT_EQ(
        dxpu_host_add_window(host.get(), kGpu, kIova, mem.size(), mem.data(), DXPU_HOST_WIN_READ),
        DXPU_HOST_OK);
    uint64_t reads = 0, bytes = 0;
    for (uint32_t off : offsets) {
      for (uint32_t n : lengths) {
        if ((off % 4096) + n > 4096 || off + n > mem.size()) continue;
        CheckDeviceRead(host, kIova, mem, kIova + off, n, rc[0], rc[1]);
        reads++;
        bytes += n;
      }
    }
    EXPECT_EQ(host.counters().dma_reads, reads);
    EXPECT_EQ(host.counters().dma_read_bytes, bytes);
    EXPECT_EQ(host.counters().dma_refused_reads, 0U);
  }
  EXPECT_EQ(mem, copy);
}

// A path learns its frame size once its session is up: the completion size changes then, and
// only to a valid one.
TEST(HostCore, MaxPayloadChangesOnlyToAValidSize) {
  constexpr uint64_t kIova = 0x2'8000'0000;
  std::mt19937_64 rng = DataRng(4);
  std::vector<uint8_t> mem = RandomBytes(rng, 0x2000);
  dxpu_host_config cfg = Config();
  cfg.rcb = 64;
  cfg.max_payload = 256;
  Host host(cfg);
  ASSERT_EQ(
      dxpu_host_add_window(host.get(), kGpu, kIova, mem.size(), mem.data(), DXPU_HOST_WIN_READ),
      DXPU_HOST_OK);
  for (const uint32_t bad : {0U, 32U, 100U, 384U, 8192U}) {
    EXPECT_EQ(dxpu_host_set_max_payload(host.get(), bad), DXPU_HOST_BAD_ARGUMENT) << bad;
  }
  CheckDeviceRead(host, kIova, mem, kIova + 0x1003, 4000, 64, 256);
  ASSERT_EQ(dxpu_host_set_max_payload(host.get(), 4096), DXPU_HOST_OK);
  CheckDeviceRead(host, kIova, mem, kIova + 0x1003, 4000, 64, 4096);
  CheckDeviceRead(host, kIova, mem, kIova + 0x1000, 4096, 64, 4096);
  ASSERT_EQ(dxpu_host_set_max_payload(host.get(), 1024), DXPU_HOST_OK);
  CheckDeviceRead(host, kIova, mem, kIova + 0x0101, 3000, 64, 1024);
}

TEST(HostCore, DeviceReadsWithSparseOrNoByteEnables) {
  constexpr uint64_t kIova = 0x10000;
  std::mt19937_64 rng = DataRng(4);
  std::vector<uint8_t> mem = RandomBytes(rng, 0x1000);
  Host host;
  ASSERT_EQ(dxpu_host_add_window(host.get(), kGpu, kIova, mem.size(), mem.data(),
                                 DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE),
            DXPU_HOST_OK);
  // A QW-aligned 2-DW read may enable any bytes; the completion spans first to last enabled.
  dxpu_tlp t = DeviceRead(kGpu, 7, kIova + 0x40, 8);
  t.first_be = 0x4;
  t.last_be = 0x2;
  host.Receive(t);
  ASSERT_EQ(host.sent.size(), 1U);
  const dxpu_tlp& c = host.sent[0].tlp;
  EXPECT_EQ(c.byte_count, 4U);  // bytes 2..5
  EXPECT_EQ(c.lower_addr, 0x42);
  EXPECT_EQ(c.length_dw, 2);
  EXPECT_TRUE(std::equal(c.payload, c.payload + 8, mem.begin() + 0x40));
  EXPECT_EQ(host.counters().dma_read_bytes, 2U);  // two bytes enabled
  // A zero-length read: one DW back, Byte Count 1, no byte counted.
  dxpu_tlp z = DeviceRead(kGpu, 8, kIova + 0x84, 4);
  z.first_be = 0;
  host.Receive(z);
  ASSERT_EQ(host.sent.size(), 2U);
  EXPECT_EQ(host.sent[1].tlp.byte_count, 1U);
  EXPECT_EQ(host.sent[1].tlp.lower_addr, 0x04);
  EXPECT_EQ(host.sent[1].tlp.length_dw, 1);
  EXPECT_EQ(host.counters().dma_reads, 2U);
  EXPECT_EQ(host.counters().dma_read_bytes, 2U);
}

// A device read the host refuses: one Cpl UR with the read's Byte Count and Lower Address.
void ExpectRefusedRead(Host& host, const dxpu_tlp& t) {
  const size_t before = host.sent.size();
  const uint64_t refused = host.counters().dma_refused_reads;
  host.Receive(t);
  ASSERT_EQ(host.sent.size(), before + 1);
  const dxpu_tlp& c = host.sent.back().tlp;
  EXPECT_EQ(c.kind, DXPU_TLP_CPL);
  EXPECT_EQ(c.cpl_status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(c.requester_id, t.requester_id);
  EXPECT_EQ(c.tag, t.tag);
  EXPECT_EQ(c.completer_id, kRoot);
  EXPECT_EQ(c.byte_count, dxpu_tlp_read_byte_count(t.length_dw, t.first_be, t.last_be));
  EXPECT_EQ(c.lower_addr, dxpu_tlp_read_lower_addr(t.addr, t.first_be));
  EXPECT_EQ(host.counters().dma_refused_reads, refused + 1);
}

TEST(HostCore, DeviceReadsOutsideTheirWindowsGetUr) {
  constexpr uint64_t kIova = 0x100000;
  std::vector<uint8_t> mem(0x1800, 1), wo(0x1000, 2);
  Host host;
  ASSERT_EQ(
      dxpu_host_add_window(host.get(), kGpu, kIova, mem.size(), mem.data(), DXPU_HOST_WIN_READ),
      DXPU_HOST_OK);
  ASSERT_EQ(
      dxpu_host_add_window(host.get(), kNic, kIova, wo.size(), wo.data(), DXPU_HOST_WIN_WRITE),
      DXPU_HOST_OK);
  ExpectRefusedRead(host, DeviceRead(kGpu, 1, kIova + 0x17fc, 8));  // runs past the end
  ExpectRefusedRead(host, DeviceRead(kGpu, 2, kIova - 4, 4));       // before it
  ExpectRefusedRead(host, DeviceRead(kGpu, 3, kIova + 0x2000, 4096));
  ExpectRefusedRead(host, DeviceRead(kNic, 4, kIova, 64));               // a write-only window
  ExpectRefusedRead(host, DeviceRead(DXPU_BDF(9, 0, 0), 5, kIova, 64));  // no window
  dxpu_tlp translated = DeviceRead(kGpu, 6, kIova, 64);
  translated.at = DXPU_TLP_AT_TRANSLATED;  // no ATS here
  ExpectRefusedRead(host, translated);
  EXPECT_EQ(host.counters().dma_reads, 0U);
  CheckDeviceRead(host, kIova, mem, kIova + 0x17f8, 8, 64, 256);  // the last bytes are fine
  EXPECT_EQ(host.counters().dma_reads, 1U);

  dxpu_host_remove_window(host.get(), kGpu, kIova);
  ExpectRefusedRead(host, DeviceRead(kGpu, 7, kIova, 64));
  EXPECT_EQ(host.counters().dma_refused_reads, 7U);

  host.send_ok = false;  // the UR cannot go out: counted
  host.Receive(DeviceRead(kGpu, 8, kIova, 64));
  EXPECT_EQ(host.counters().send_failed, 1U);
}

// A write of whole DWs (addr DW-aligned, payload a multiple of 4 bytes).
dxpu_tlp DeviceWrite(uint16_t device, uint64_t addr, const std::vector<uint8_t>& payload) {
  dxpu_tlp t = MemRequest(DXPU_TLP_MWR, addr, static_cast<uint32_t>(payload.size()));
  t.requester_id = device;
  t.payload = payload.data();
  return t;
}

TEST(HostCore, DeviceWritesHonourByteEnables) {
  constexpr uint64_t kIova = 0x7000'0000;
  std::mt19937_64 rng = DataRng(5);
  std::vector<uint8_t> mem(0x2000, 0);
  std::vector<uint8_t> model = mem;
  Host host;
  ASSERT_EQ(
      dxpu_host_add_window(host.get(), kGpu, kIova, mem.size(), mem.data(), DXPU_HOST_WIN_WRITE),
      DXPU_HOST_OK);
  const uint32_t offsets[] = {0, 1, 2, 3, 5, 0x3f, 0x7fe, 0xffd, 0x1000, 0x1f00};
  const uint32_t lengths[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 64, 65, 256, 1000, 4096};
  uint64_t writes = 0, bytes = 0;
  for (uint32_t off : offsets) {
    for (uint32_t n : lengths) {
      if ((off % 4096) + n > 4096 || off + n > mem.size()) continue;
      dxpu_tlp t = MemRequest(DXPU_TLP_MWR, kIova + off, n);
      std::vector<uint8_t> payload = RandomBytes(rng, size_t{t.length_dw} * 4);
      t.requester_id = kGpu;
      t.payload = payload.data();
      host.Receive(t);
      const uint32_t lead = off & 3;
      std::copy_n(payload.begin() + lead, n, model.begin() + off);
      ASSERT_EQ(mem, model) << off << " + " << n;
      writes++;
      bytes += n;
    }
  }
  // A QW-aligned 2-DW write may enable any bytes: only those change.
  const std::vector<uint8_t> sparse = {1, 2, 3, 4, 5, 6, 7, 8};
  dxpu_tlp t = DeviceWrite(kGpu, kIova + 0x100, sparse);
  t.length_dw = 2;
  t.first_be = 0x5;
  t.last_be = 0x9;
  host.Receive(t);
  model[0x100] = 1;
  model[0x102] = 3;
  model[0x104] = 5;
  model[0x107] = 8;
  EXPECT_EQ(mem, model);
  EXPECT_EQ(host.counters().dma_writes, writes + 1);
  EXPECT_EQ(host.counters().dma_write_bytes, bytes + 4);
  EXPECT_EQ(host.counters().dma_refused_writes, 0U);
  EXPECT_TRUE(host.sent.empty());  // writes are posted: nothing answers them
}

TEST(HostCore, DeviceWritesOutsideTheirWindowsAreDropped) {
  constexpr uint64_t kIova = 0x7000'0000;
  std::vector<uint8_t> rw(0x800, 0), ro(0x800, 0);
  Host host;
  ASSERT_EQ(dxpu_host_add_window(host.get(), kGpu, kIova, rw.size(), rw.data(),
                                 DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE),
            DXPU_HOST_OK);
  ASSERT_EQ(dxpu_host_add_window(host.get(), kNic, kIova, ro.size(), ro.data(), DXPU_HOST_WIN_READ),
            DXPU_HOST_OK);
  const std::vector<uint8_t> payload(64, 0xee);
  host.Receive(DeviceWrite(kNic, kIova, payload));               // read-only for it
  host.Receive(DeviceWrite(DXPU_BDF(9, 0, 0), kIova, payload));  // no window
  host.Receive(DeviceWrite(kGpu, kIova + 0x800 - 32, payload));  // runs past the end
  host.Receive(DeviceWrite(kGpu, kIova - 64, payload));
  dxpu_tlp poisoned = DeviceWrite(kGpu, kIova, payload);
  poisoned.flags = DXPU_TLP_F_EP;
  host.Receive(poisoned);
  dxpu_tlp translated = DeviceWrite(kGpu, kIova, payload);
  translated.at = DXPU_TLP_AT_TRANSLATED;
  host.Receive(translated);
  EXPECT_EQ(host.counters().dma_refused_writes, 6U);
  EXPECT_EQ(host.counters().dma_writes, 0U);
  EXPECT_TRUE(AllAre(rw.begin(), rw.end(), 0));
  EXPECT_TRUE(AllAre(ro.begin(), ro.end(), 0));
  EXPECT_TRUE(host.sent.empty());
  host.Receive(DeviceWrite(kGpu, kIova + 0x800 - 64, payload));  // fits exactly
  EXPECT_TRUE(AllAre(rw.begin(), rw.end() - 64, 0));
  EXPECT_TRUE(AllAre(rw.end() - 64, rw.end(), 0xee));
}

// A window need not start or end on a DW: virtio_blk maps a request's 1-byte status, and the
// device writes it with one DW whose First BE selects that byte. The bytes the enables select
// are checked against the windows, and only they are written (or read).
TEST(HostCore, WindowsExactToTheByteMeetTheByteEnables) {
  constexpr uint64_t kIova = 0x7000'0123;  // the status byte: offset 3 of its DW
  std::vector<uint8_t> guard(16, 0x55);    // what lies around the mapped byte
  uint8_t* status = &guard[8];
  Host host;
  ASSERT_EQ(dxpu_host_add_window(host.get(), kGpu, kIova, 1, status,
                                 DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE),
            DXPU_HOST_OK);
  const std::vector<uint8_t> payload = {0xa0, 0xa1, 0xa2, 0x00};
  dxpu_tlp t = DeviceWrite(kGpu, kIova - 3, payload);
  t.first_be = 0x8;  // byte 3: the status
  host.Receive(t);
  EXPECT_EQ(host.counters().dma_refused_writes, 0U);
  EXPECT_EQ(*status, 0x00);
  for (size_t i = 0; i < guard.size(); ++i) {
    if (i != 8) {
      EXPECT_EQ(guard[i], 0x55) << i;
    }
  }
  // Enabling a byte outside the window is refused, and writes nothing.
  *status = 0x77;
  t.first_be = 0xc;
  host.Receive(t);
  EXPECT_EQ(host.counters().dma_refused_writes, 1U);
  EXPECT_EQ(*status, 0x77);
  EXPECT_EQ(guard[7], 0x55);
  // A read of that DW selecting the status byte: the byte, the rest zero, not the neighbours.
  dxpu_tlp r = MemRequest(DXPU_TLP_MRD, kIova - 3, 4);
  r.requester_id = kGpu;
  r.first_be = 0x8;
  host.Receive(r);
  ASSERT_EQ(host.sent.size(), 1u);
  const dxpu_tlp& cpld = host.sent[0].tlp;
  ASSERT_EQ(cpld.kind, DXPU_TLP_CPLD);
  EXPECT_EQ(cpld.payload[3], 0x77);
  EXPECT_EQ(cpld.payload[0], 0);
  EXPECT_EQ(cpld.payload[2], 0);
  // Selecting a neighbour: UR.
  r.first_be = 0x4;
  host.Receive(r);
  ASSERT_EQ(host.sent.size(), 2u);
  EXPECT_EQ(host.sent[1].tlp.cpl_status, DXPU_TLP_CPL_UR);
}

TEST(HostCore, MsiWritesAreInterrupts) {
  std::vector<uint8_t> mem(0x1000, 0);
  Host host;
  // A window over the MSI range does not take the write: the interrupt does.
  ASSERT_EQ(dxpu_host_add_window(host.get(), kGpu, 0xfee00000, mem.size(), mem.data(),
                                 DXPU_HOST_WIN_WRITE),
            DXPU_HOST_OK);
  const std::vector<uint8_t> msi = {0x21, 0x43, 0x65, 0x87};
  host.Receive(DeviceWrite(kGpu, 0xfee00010, msi));
  host.Receive(DeviceWrite(kNic, 0xfeefff00, msi));
  ASSERT_EQ(host.irqs.size(), 2U);
  EXPECT_EQ(host.irqs[0].device, kGpu);
  EXPECT_EQ(host.irqs[0].addr, 0xfee00010U);
  EXPECT_EQ(host.irqs[0].data, 0x87654321U);
  EXPECT_EQ(host.irqs[1].device, kNic);
  EXPECT_EQ(host.counters().interrupts, 2U);
  EXPECT_EQ(host.counters().dma_writes, 0U);
  EXPECT_TRUE(AllAre(mem.begin(), mem.end(), 0));
  host.Receive(DeviceWrite(kNic, 0xfef00000, msi));  // just past the range: a plain write
  EXPECT_EQ(host.counters().interrupts, 2U);
  EXPECT_EQ(host.counters().dma_refused_writes, 1U);

  Host quiet(Config(), false);  // no interrupt callback: still counted, still not stored
  ASSERT_EQ(dxpu_host_add_window(quiet.get(), kGpu, 0xfee00000, mem.size(), mem.data(),
                                 DXPU_HOST_WIN_WRITE),
            DXPU_HOST_OK);
  quiet.Receive(DeviceWrite(kGpu, 0xfee00010, msi));
  EXPECT_EQ(quiet.counters().interrupts, 1U);
  EXPECT_TRUE(AllAre(mem.begin(), mem.end(), 0));

  dxpu_host_config cfg = Config();
  cfg.msi_size = 0;  // no MSI range: the same write is memory
  Host plain(cfg);
  ASSERT_EQ(dxpu_host_add_window(plain.get(), kGpu, 0xfee00000, mem.size(), mem.data(),
                                 DXPU_HOST_WIN_WRITE),
            DXPU_HOST_OK);
  plain.Receive(DeviceWrite(kGpu, 0xfee00010, msi));
  EXPECT_TRUE(plain.irqs.empty());
  EXPECT_TRUE(std::equal(msi.begin(), msi.end(), mem.begin() + 0x10));
}

TEST(HostCore, OtherTlpsAreCounted) {
  Host host;
  dxpu_tlp intx{};
  intx.kind = DXPU_TLP_MSG;
  intx.requester_id = kGpu;
  intx.msg_code = DXPU_TLP_MSG_ASSERT_INTA;
  intx.msg_routing = DXPU_TLP_ROUTE_LOCAL;
  host.Receive(intx);
  EXPECT_EQ(host.counters().unexpected, 1U);
  EXPECT_TRUE(host.sent.empty());

  dxpu_tlp cfg = CfgRead(kRoot, 0);  // a configuration read sent to the host
  cfg.requester_id = kGpu;
  cfg.tag = 0x2a5;
  host.Receive(cfg);
  ASSERT_EQ(host.sent.size(), 1U);
  const dxpu_tlp& c = host.sent[0].tlp;
  EXPECT_EQ(c.kind, DXPU_TLP_CPL);
  EXPECT_EQ(c.cpl_status, DXPU_TLP_CPL_UR);
  EXPECT_EQ(c.requester_id, kGpu);
  EXPECT_EQ(c.tag, 0x2a5);
  EXPECT_EQ(c.completer_id, kRoot);
  EXPECT_EQ(c.byte_count, 4U);
  const uint8_t value[4] = {};
  dxpu_tlp wr = CfgWrite(kRoot, 0, value);
  wr.kind = DXPU_TLP_CFGWR1;
  host.Receive(wr);
  EXPECT_EQ(host.sent.size(), 2U);
  dxpu_tlp bad{};  // not a valid TLP at all
  bad.kind = DXPU_TLP_KIND_COUNT;
  host.Receive(bad);
  EXPECT_EQ(host.counters().unexpected, 4U);
  EXPECT_EQ(host.sent.size(), 2U);
}

// ------------------------------------------------------------------ windows

TEST(HostCore, WindowTable) {
  Host host;
  dxpu_host* h = host.get();
  std::vector<uint8_t> mem(0x10000, 0);
  uint8_t* p = mem.data();
  constexpr uint16_t kRw = DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE;
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x10000, 0x1000, p, kRw), DXPU_HOST_OK);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x10000, 0x1000, p, kRw), DXPU_HOST_OVERLAP);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0xf000, 0x1001, p, kRw), DXPU_HOST_OVERLAP);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x10fff, 1, p, kRw), DXPU_HOST_OVERLAP);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x10800, 16, p, kRw), DXPU_HOST_OVERLAP);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x0, 0x100000, p, kRw), DXPU_HOST_OVERLAP);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0xf000, 0x1000, p, kRw), DXPU_HOST_OK);  // adjacent
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x11000, 0x1000, p, kRw), DXPU_HOST_OK);
  EXPECT_EQ(dxpu_host_add_window(h, kNic, 0x10000, 0x1000, p, kRw), DXPU_HOST_OK);  // other device

  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x20000, 0, p, kRw), DXPU_HOST_BAD_ARGUMENT);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x20000, 16, nullptr, kRw), DXPU_HOST_BAD_ARGUMENT);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x20000, 16, p, 0), DXPU_HOST_BAD_ARGUMENT);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x20000, 16, p, 0x4), DXPU_HOST_BAD_ARGUMENT);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, UINT64_MAX - 10, 100, p, kRw), DXPU_HOST_BAD_ARGUMENT);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, UINT64_MAX - 0xfff, 0x1000, p, kRw), DXPU_HOST_OK);

  EXPECT_EQ(dxpu_host_remove_window(h, kGpu, 0x10001), DXPU_HOST_NOT_FOUND);
  EXPECT_EQ(dxpu_host_remove_window(h, kNic, 0x11000), DXPU_HOST_NOT_FOUND);
  EXPECT_EQ(dxpu_host_remove_window(h, kGpu, 0x10000), DXPU_HOST_OK);
  EXPECT_EQ(dxpu_host_remove_window(h, kGpu, 0x10000), DXPU_HOST_NOT_FOUND);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x10000, 0x1000, p, kRw), DXPU_HOST_OK);
  EXPECT_EQ(dxpu_host_remove_device(h, kGpu), 4U);
  EXPECT_EQ(dxpu_host_remove_device(h, kGpu), 0U);
  EXPECT_EQ(dxpu_host_remove_device(h, kNic), 1U);

  // The table holds DXPU_HOST_MAX_WINDOWS, then refuses.
  for (uint32_t i = 0; i < DXPU_HOST_MAX_WINDOWS; ++i)
    ASSERT_EQ(dxpu_host_add_window(h, kGpu, 0x100000 + i * 0x100, 0x100, p, kRw), DXPU_HOST_OK);
  EXPECT_EQ(dxpu_host_add_window(h, kNic, 0, 0x100, p, kRw), DXPU_HOST_TABLE_FULL);
  EXPECT_EQ(dxpu_host_add_window(h, kGpu, 0x100000, 0x100, p, kRw), DXPU_HOST_OVERLAP);
  EXPECT_EQ(dxpu_host_remove_window(h, kGpu, 0x100000 + 5 * 0x100), DXPU_HOST_OK);
  EXPECT_EQ(dxpu_host_add_window(h, kNic, 0, 0x100, p, kRw), DXPU_HOST_OK);
  EXPECT_EQ(dxpu_host_add_window(h, kNic, 0x1000, 0x100, p, kRw), DXPU_HOST_TABLE_FULL);
}

// The sorted table against a plain list: random adds and removals of windows of three devices
// (overlapping across devices, never within one), every window and every gap looked up after
// each step, and the table filled to DXPU_HOST_MAX_WINDOWS in a random order.
TEST(HostCore, WindowTableMatchesAList) {
  struct Ref {
    uint16_t device;
    uint64_t iova, size;
    uint16_t flags;
  };
  const uint16_t devices[] = {kGpu, kNic, DXPU_BDF(9, 0, 0)};
  Host host;
  dxpu_host* h = host.get();
  std::vector<uint8_t> mem(0x100, 0);
  std::vector<Ref> ref;
  std::mt19937_64 rng(7);
  auto overlaps = [&](uint16_t dev, uint64_t iova, uint64_t size) {
    return std::any_of(ref.begin(), ref.end(), [&](const Ref& r) {
      return r.device == dev && iova < r.iova + r.size && r.iova < iova + size;
    });
  };
  auto check_all = [&]() {
    for (const Ref& r : ref) {
      const dxpu_host_window* w = dxpu_host_find_window(h, r.device, r.iova + r.size - 1, 1,
                                                        DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE);
      ASSERT_NE(w, nullptr);
      EXPECT_EQ(w->iova, r.iova);
      EXPECT_EQ(w->device, r.device);
      EXPECT_EQ(dxpu_host_find_window(h, r.device, r.iova, r.size + 1, r.flags), nullptr);
      if (!overlaps(r.device, r.iova + r.size, 1)) {  // the byte after it, a gap
        EXPECT_EQ(dxpu_host_find_window(h, r.device, r.iova + r.size, 1, 3), nullptr);
      }
    }
  };
  for (int step = 0; step < 3000; ++step) {
    const uint16_t dev = devices[rng() % 3];
    const uint64_t iova = (rng() % 4096) * 0x40, size = 0x40 * (1 + rng() % 3);
    const uint16_t flags = static_cast<uint16_t>(1 + rng() % 3);
    if (rng() % 3 != 0 || ref.empty()) {
      const dxpu_host_err want = overlaps(dev, iova, size)             ? DXPU_HOST_OVERLAP
                                 : ref.size() == DXPU_HOST_MAX_WINDOWS ? DXPU_HOST_TABLE_FULL
                                                                       : DXPU_HOST_OK;
      ASSERT_EQ(dxpu_host_add_window(h, dev, iova, size, mem.data(), flags), want);
      if (want == DXPU_HOST_OK) ref.push_back({dev, iova, size, flags});
    } else {
      const size_t i = rng() % ref.size();
      ASSERT_EQ(dxpu_host_remove_window(h, ref[i].device, ref[i].iova), DXPU_HOST_OK);
      ref.erase(ref.begin() + static_cast<long>(i));
    }
    if (step % 100 == 0) check_all();
  }
  check_all();
  // Full: every device's windows removed at once, in any order.
  const auto nic = static_cast<unsigned>(
      std::count_if(ref.begin(), ref.end(), [](const Ref& r) { return r.device == kNic; }));
  EXPECT_EQ(dxpu_host_remove_device(h, kNic), nic);
  std::erase_if(ref, [](const Ref& r) { return r.device == kNic; });
  check_all();
  for (const uint16_t dev : devices) dxpu_host_remove_device(h, dev);
  ref.clear();
  std::vector<uint32_t> order(DXPU_HOST_MAX_WINDOWS);
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (const uint32_t i : order) {
    ASSERT_EQ(dxpu_host_add_window(h, kGpu, 0x1000 * i, 0x800, mem.data(), 3), DXPU_HOST_OK);
    ref.push_back({kGpu, 0x1000 * i, 0x800, 3});
  }
  EXPECT_EQ(dxpu_host_add_window(h, kNic, 0, 0x10, mem.data(), 3), DXPU_HOST_TABLE_FULL);
  check_all();
  EXPECT_EQ(dxpu_host_remove_device(h, kGpu), DXPU_HOST_MAX_WINDOWS);
}

// ------------------------------------------------------------------ random TLPs

class Fuzz {
 public:
  static constexpr uint64_t kIova = 0x40'0000'0000;
  static constexpr size_t kGuard = 256;
  static constexpr size_t kWin = 0x2000;
  static constexpr uint8_t kGuardByte = 0xa5;
  static constexpr uint16_t kTags = 8;

  explicit Fuzz(uint64_t seed) : rng_(seed), gen_(seed ^ 0x9e3779b97f4a7c15ULL), host_(Cfg()) {
    rw_.assign(kWin + 2 * kGuard, kGuardByte);
    ro_ = RandomBytes(rng_, kWin + 2 * kGuard);
    std::fill_n(ro_.begin(), kGuard, kGuardByte);
    std::fill_n(ro_.end() - kGuard, kGuard, kGuardByte);
    ro_copy_ = ro_;
    EXPECT_EQ(dxpu_host_add_window(host_.get(), kGpu, kIova, kWin, rw_.data() + kGuard,
                                   DXPU_HOST_WIN_READ | DXPU_HOST_WIN_WRITE),
              DXPU_HOST_OK);
    EXPECT_EQ(dxpu_host_add_window(host_.get(), kNic, kIova + kWin / 2, kWin, ro_.data() + kGuard,
                                   DXPU_HOST_WIN_READ),
              DXPU_HOST_OK);
    host_.on_complete = [this](const Done& d) { OnDone(d); };
  }

  void Step() {
    now_ += Uniform(0, 300);
    const uint32_t what = Uniform(0, 99);
    if (what < 10) {
      Issue();
    } else if (what < 25) {
      Answer();
    } else if (what < 30) {
      dxpu_host_expire(host_.get(), now_);
    } else if (what == 30) {
      dxpu_host_fail_all(host_.get(), DXPU_TLP_CPL_UR);
    } else {
      Random();
    }
    if (host_.sent.size() > 256) host_.sent.clear();
  }

  void Finish() {
    dxpu_host_fail_all(host_.get(), DXPU_TLP_CPL_UR);
    EXPECT_TRUE(live_.empty());
    EXPECT_EQ(host_.get()->outstanding, 0);
    EXPECT_TRUE(AllAre(rw_.begin(), rw_.begin() + kGuard, kGuardByte));
    EXPECT_TRUE(AllAre(rw_.end() - kGuard, rw_.end(), kGuardByte));
    EXPECT_EQ(ro_, ro_copy_);
    const dxpu_host_counters& c = host_.counters();
    EXPECT_EQ(c.requests, c.completed_ok + c.completed_error + c.timeouts + c.failed);
    EXPECT_EQ(c.requests, issued_);
    EXPECT_GT(c.completed_ok, 0U);
    EXPECT_GT(c.dma_reads + c.dma_writes, 0U);
    EXPECT_EQ(c.interrupts, host_.irqs.size());
  }

 private:
  struct Live {
    dxpu_tlp req;  // as sent (no payload)
    std::vector<uint8_t> buf;
    uint32_t expect;
  };

  static dxpu_host_config Cfg() {
    dxpu_host_config cfg = Config();
    cfg.max_tags = kTags;
    cfg.request_timeout = 5000;
    return cfg;
  }
  uint32_t Uniform(uint32_t lo, uint32_t hi) {
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng_);
  }

  void Issue() {
    dxpu_tlp t{};
    uint32_t expect = 4;
    if (Uniform(0, 2) == 0) {
      t = CfgRead(kGpu, static_cast<uint16_t>(Uniform(0, 0x3ff) * 4));
    } else {
      const uint32_t off = Uniform(0, 4095);
      expect = Uniform(1, std::min<uint32_t>(Uniform(0, 3) == 0 ? 4096 : 300, 4096 - off));
      t = MemRequest(DXPU_TLP_MRD, 0x1'0000'0000 + Uniform(0, 1000) * 4096ULL + off, expect);
    }
    const uint64_t cookie = next_cookie_++;
    Live l{t, std::vector<uint8_t>(expect + kGuard, kGuardByte), expect};
    uint8_t* buf = l.buf.data();
    live_.emplace(cookie, std::move(l));  // before: the vector's buffer does not move
    const dxpu_host_err err = host_.Issue(&t, buf, expect, cookie, now_);
    if (err != DXPU_HOST_OK) {
      EXPECT_EQ(err, DXPU_HOST_NO_TAG);
      live_.erase(cookie);
      return;
    }
    live_.at(cookie).req = host_.sent.back().tlp;
    live_.at(cookie).req.payload = nullptr;
    issued_++;
  }

  // Correct completions for an outstanding request: all of them, or the first few.
  void Answer() {
    if (live_.empty()) return;
    auto it = live_.begin();
    std::advance(it, Uniform(0, static_cast<uint32_t>(live_.size() - 1)));
    const uint64_t cookie = it->first;
    const dxpu_tlp req = it->second.req;
    const std::vector<uint8_t> data = RandomBytes(rng_, 4096 + 8);
    std::vector<dxpu_tlp> cpls;
    if (req.kind == DXPU_TLP_MRD) {
      cpls = ReadCplDs(req, data.data(), Uniform(0, 1) != 0 ? 64 : 128, 128U << Uniform(0, 5));
    } else {
      cpls.push_back(CfgCplD(req.tag, data.data()));
    }
    // Continue where the request stands: the piece whose Byte Count is what is missing.
    const dxpu_host_request& r = host_.get()->req[req.tag];
    const uint32_t missing = r.expect - r.received;
    size_t first = 0;
    while (first < cpls.size() && cpls[first].byte_count != missing) ++first;
    if (first == cpls.size()) return;  // random data left it off the piece boundaries
    const size_t n = Uniform(0, 3) == 0 ? Uniform(0, static_cast<uint32_t>(cpls.size())) : SIZE_MAX;
    for (size_t i = first; i < cpls.size() && i - first < n; ++i) host_.Receive(cpls[i], now_);
    if (n >= cpls.size() - first && live_.contains(cookie)) ADD_FAILURE() << "not completed";
  }

  // A random valid TLP, often aimed at the windows or at an outstanding tag.
  void Random() {
    dxpu_tlp t = gen_.next();
    std::vector<uint8_t> payload;
    if (dxpu_tlp_kind_is_mem(t.kind) && Uniform(0, 2) != 0) {
      // Somewhere around the windows or the MSI range, by one of the two devices or a stranger.
      const uint64_t lo = Uniform(0, 7) == 0 ? 0xfee00000 - 512 : kIova - 512;
      const uint64_t start = lo + Uniform(0, static_cast<uint32_t>(kWin + kWin / 2 + 1024));
      const uint32_t room = 4096 - static_cast<uint32_t>(start % 4096);
      const uint32_t n = Uniform(1, std::min<uint32_t>(room, Uniform(0, 3) == 0 ? 4096 : 200));
      dxpu_tlp m = MemRequest(t.kind, start, n);
      static constexpr uint16_t kDevices[] = {kGpu, kNic, kRoot, DXPU_BDF(7, 0, 0)};
      m.requester_id = kDevices[Uniform(0, 3)];
      m.tag = static_cast<uint16_t>(Uniform(0, 255));
      m.tc = static_cast<uint8_t>(Uniform(0, 7));
      m.at = Uniform(0, 7) == 0 ? DXPU_TLP_AT_TRANSLATED : DXPU_TLP_AT_UNTRANSLATED;
      if (Uniform(0, 15) == 0) m.flags = DXPU_TLP_F_EP;
      if (t.kind == DXPU_TLP_MWR) {
        payload = RandomBytes(rng_, size_t{m.length_dw} * 4);
        m.payload = payload.data();
      }
      t = m;
    } else if (dxpu_tlp_kind_is_cpl(t.kind) && Uniform(0, 1) != 0) {
      t.requester_id = kRoot;
      t.tag = static_cast<uint16_t>(Uniform(0, kTags));
    }
    host_.Receive(t, now_);
  }

  void OnDone(const Done& d) {
    auto it = live_.find(d.cookie);
    if (it == live_.end()) {
      ADD_FAILURE() << "completed twice or never issued: " << d.cookie;
      return;
    }
    const Live& l = it->second;
    EXPECT_LE(d.received, l.expect);
    if (d.status == DXPU_TLP_CPL_SC) {
      EXPECT_EQ(d.received, l.expect);
    }
    const auto tail = l.buf.begin() + d.received;
    EXPECT_TRUE(AllAre(tail, l.buf.begin() + l.expect, 0xff));
    EXPECT_TRUE(AllAre(l.buf.begin() + l.expect, l.buf.end(), kGuardByte));
    live_.erase(it);
  }

  std::mt19937_64 rng_;
  RandomTlpGenerator gen_;
  Host host_;
  std::vector<uint8_t> rw_, ro_, ro_copy_;
  std::map<uint64_t, Live> live_;
  uint64_t next_cookie_ = 1;
  uint64_t issued_ = 0;
  uint64_t now_ = 0;
};

TEST(HostCore, RandomTlps) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE(testing::Message() << "DXPU_SEED=" << seed);
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  Fuzz fuzz(seed);
  for (int i = 0; i < 5000 && !testing::Test::HasFailure(); ++i) fuzz.Step();
  fuzz.Finish();
}

}  // namespace
}  // namespace dxpu::test
