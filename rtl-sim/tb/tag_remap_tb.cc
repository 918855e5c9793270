// tag_remap_tb.cc - testbench of rtl/dxpu_tag_remap.sv on its own, at TAGS 32 with HOSTS 4 and
// DEVICES 8, and TAGS 24 (not a power of two: the quarantine ring wraps at 23) with HOSTS 8 and
// DEVICES 6. Directed tests of every operation and edge (reset and init, lowest tag first, a
// freed tag taken next, the per-host quota, exhaustion, partial completions advancing Byte Count
// and Lower Address, abandon -> quarantine -> qrel in order, the earliest deadline over pending
// requests and quarantine), one operation per cycle (measured), and seeded random operations
// with random idle cycles (the module has no ready/valid port, one operation per cycle: idle
// cycles are its back-pressure), including the ones it must ignore (an allocation past the quota
// or with no tag free, a qrel with nothing quarantined), every output compared after every cycle
// with a reference model written from the golden model's rules (bridge-fw/golden_datapath.cc).
// $DXPU_SEED replays a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <ostream>
#include <random>
#include <vector>

#include "Vrtl_tag_remap_t24.h"
#include "Vrtl_tag_remap_t32.h"
#include "core/tlp_codec.h"
#include "core/tlp_testutil.h"
#include "rtl_tb.h"

namespace {

constexpr uint64_t kNever = ~uint64_t{0};  // next_deadline with nothing pending or quarantined

// One entry of the pending table (GoldenDatapath::Pending, with the module's field widths).
struct Pending {
  bool in_use = false;
  uint16_t host = 0;
  uint16_t dev = 0;
  uint16_t requester = 0;
  uint16_t host_tag = 0;
  uint16_t remaining = 0;
  uint8_t lower_addr = 0;
  uint64_t deadline = 0;
  bool operator==(const Pending&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Pending& p) {
  return os << (p.in_use ? "in use" : "idle") << " host " << p.host << " dev " << p.dev
            << " requester " << p.requester << " host tag " << p.host_tag << " remaining "
            << p.remaining << " lower " << int{p.lower_addr} << " deadline " << p.deadline;
}

// What a request's completions owe at first: GoldenDatapath::AllocTag, from
// UnsupportedRequest(): a memory read's Byte Count and Lower Address, 4 and 0 for a
// configuration request.
void Owed(const dxpu_tlp& request, Pending* p) {
  if (request.kind == DXPU_TLP_MRD) {
    p->remaining = static_cast<uint16_t>(
        dxpu_tlp_read_byte_count(request.length_dw, request.first_be, request.last_be));
    p->lower_addr = dxpu_tlp_read_lower_addr(request.addr, request.first_be);
  } else {
    p->remaining = 4;
    p->lower_addr = 0;
  }
}

// GoldenDatapath::DeviceCompletion for a completion that is not the last: the next one carries
// the rest, from the next RCB-aligned address.
void Advance(const dxpu_tlp& cpl, uint16_t* remaining, uint8_t* lower_addr) {
  const uint32_t carried = uint32_t{cpl.length_dw} * 4u - (cpl.lower_addr & 3u);
  *remaining = static_cast<uint16_t>(cpl.byte_count - carried);
  *lower_addr = static_cast<uint8_t>((cpl.lower_addr + carried) & 0x7fu);
}

// The box tags as the golden model keeps them: free stack, pending table, per-host counts,
// quarantine FIFO.
class TagsRef {
 public:
  explicit TagsRef(unsigned tags, unsigned hosts) : pending_(tags), held_(hosts, 0) {}

  // After reset and before any init the module has no tag free.
  // GoldenDatapath's constructor: lowest tags on top of the free stack, nothing pending.
  void Init(unsigned box_tags) {
    std::fill(pending_.begin(), pending_.end(), Pending{});
    std::fill(held_.begin(), held_.end(), 0);
    free_.clear();
    for (unsigned t = box_tags; t > 0; --t) free_.push_back(static_cast<uint16_t>(t - 1));
    quarantine_.clear();
  }
  // AllocTag's test.
  bool AllocOk(unsigned host, uint16_t max_per_host) const {
    return !free_.empty() && held_[host] < max_per_host;
  }
  uint16_t Top() const { return free_.empty() ? 0 : free_.back(); }
  // AllocTag: the top of the free stack.
  uint16_t Alloc(const Pending& p) {
    const uint16_t tag = free_.back();
    free_.pop_back();
    pending_[tag] = p;
    pending_[tag].in_use = true;
    held_[p.host]++;
    return tag;
  }
  // FreeTag.
  void Free(uint16_t tag) {
    held_[pending_[tag].host]--;
    pending_[tag].in_use = false;
    free_.push_back(tag);
  }
  // DeviceCompletion, a completion with more to come.
  void Partial(uint16_t tag, uint16_t remaining, uint8_t lower_addr) {
    pending_[tag].remaining = remaining;
    pending_[tag].lower_addr = lower_addr;
  }
  // Abandon.
  void Abandon(uint16_t tag, uint64_t until) {
    held_[pending_[tag].host]--;
    pending_[tag].in_use = false;
    quarantine_.push_back({tag, until});
  }
  // Expire's first loop, one step: the oldest quarantined tag back to the free stack.
  void Qrel() {
    if (quarantine_.empty()) return;
    free_.push_back(quarantine_.front().tag);
    quarantine_.pop_front();
  }
  // NextDeadline.
  uint64_t NextDeadline() const {
    uint64_t next = quarantine_.empty() ? kNever : quarantine_.front().until;
    for (const Pending& p : pending_) {
      if (p.in_use) next = std::min(next, p.deadline);
    }
    return next;
  }
  // counters(): tags_free and pending.
  unsigned TagsFree() const { return static_cast<unsigned>(free_.size()); }
  unsigned PendingCount() const {
    unsigned n = 0;
    for (const uint16_t h : held_) n += h;
    return n;
  }
  bool QNonEmpty() const { return !quarantine_.empty(); }
  uint64_t QFrontUntil() const { return quarantine_.front().until; }
  const Pending& at(unsigned tag) const { return pending_[tag]; }
  std::vector<uint16_t> InUse() const {
    std::vector<uint16_t> tags;
    for (unsigned t = 0; t < pending_.size(); ++t) {
      if (pending_[t].in_use) tags.push_back(static_cast<uint16_t>(t));
    }
    return tags;
  }

 private:
  struct Quarantined {
    uint16_t tag;
    uint64_t until;
  };
  std::vector<Pending> pending_;
  std::vector<uint16_t> held_;
  std::vector<uint16_t> free_;
  std::deque<Quarantined> quarantine_;
};

template <typename Model, unsigned Tags, unsigned Hosts, unsigned Devices>
class Dut : public dxpu::rtl::Dut<Model> {
  using Base = dxpu::rtl::Dut<Model>;

 public:
  using Base::Eval;
  using Base::m;
  static constexpr unsigned kTags = Tags;
  static constexpr unsigned kHosts = Hosts;
  static constexpr unsigned kDevices = Devices;

  Dut() {
    IdleOps();
    m().box_tags = Tags;
    m().max_per_host = 64;
    m().alloc_host = 0;
    m().lk_tag = 0;
    Base::Reset();
  }
  void IdleOps() {
    m().init = 0;
    m().alloc_en = 0;
    m().alloc_dev = 0;
    m().alloc_requester = 0;
    m().alloc_host_tag = 0;
    m().alloc_remaining = 0;
    m().alloc_lower_addr = 0;
    m().alloc_deadline = 0;
    m().free_en = 0;
    m().free_tag = 0;
    m().partial_en = 0;
    m().partial_tag = 0;
    m().partial_remaining = 0;
    m().partial_lower_addr = 0;
    m().abandon_en = 0;
    m().abandon_tag = 0;
    m().abandon_until = 0;
    m().qrel_en = 0;
  }
  void Tick() {
    Base::Tick();
    IdleOps();
  }

  // Operations: Drive* sets the inputs for the next edge, the others take it too.
  void DriveInit(unsigned box_tags) {
    m().init = 1;
    m().box_tags = box_tags;
  }
  void DriveAlloc(const Pending& p) {
    m().alloc_en = 1;
    m().alloc_host = p.host;
    m().alloc_dev = p.dev;
    m().alloc_requester = p.requester;
    m().alloc_host_tag = p.host_tag;
    m().alloc_remaining = p.remaining;
    m().alloc_lower_addr = p.lower_addr;
    m().alloc_deadline = p.deadline;
  }
  void DriveFree(unsigned tag) {
    m().free_en = 1;
    m().free_tag = tag;
  }
  void DrivePartial(unsigned tag, uint16_t remaining, uint8_t lower_addr) {
    m().partial_en = 1;
    m().partial_tag = tag;
    m().partial_remaining = remaining;
    m().partial_lower_addr = lower_addr;
  }
  void DriveAbandon(unsigned tag, uint64_t until) {
    m().abandon_en = 1;
    m().abandon_tag = tag;
    m().abandon_until = until;
  }
  void Init(unsigned box_tags) {
    DriveInit(box_tags);
    Tick();
  }
  // Takes a tag if the module grants one (returns it), as the data path does.
  int Alloc(const Pending& p) {
    const bool ok = AllocOk(p.host);
    const int tag = m().alloc_tag;
    DriveAlloc(p);
    Tick();
    return ok ? tag : -1;
  }
  int Alloc(unsigned host, uint64_t deadline = 1000) {
    Pending p;
    p.host = static_cast<uint16_t>(host);
    p.remaining = 4;
    p.deadline = deadline;
    return Alloc(p);
  }
  void Free(unsigned tag) {
    DriveFree(tag);
    Tick();
  }
  void Partial(unsigned tag, uint16_t remaining, uint8_t lower_addr) {
    DrivePartial(tag, remaining, lower_addr);
    Tick();
  }
  void Abandon(unsigned tag, uint64_t until) {
    DriveAbandon(tag, until);
    Tick();
  }
  void Qrel() {
    m().qrel_en = 1;
    Tick();
  }

  // Outputs (combinational reads).
  bool AllocOk(unsigned host) {
    m().alloc_host = host;
    Eval();
    return m().alloc_ok != 0;
  }
  unsigned AllocTag() {
    Eval();
    return m().alloc_tag;
  }
  Pending Lk(unsigned tag) {
    m().lk_tag = tag;
    Eval();
    return {m().lk_in_use != 0, m().lk_host,      m().lk_dev,        m().lk_requester,
            m().lk_host_tag,    m().lk_remaining, m().lk_lower_addr, m().lk_deadline};
  }
  unsigned TagsFree() {
    Eval();
    return m().tags_free;
  }
  unsigned PendingCount() {
    Eval();
    return m().pending;
  }
  uint64_t NextDeadline() {
    Eval();
    return m().next_deadline;
  }
  bool QNonEmpty() {
    Eval();
    return m().q_nonempty != 0;
  }
  uint64_t QFrontUntil() {
    Eval();
    return m().q_front_until;
  }
};

template <typename T>
class TagRemapTest : public ::testing::Test {};

using Configs =
    ::testing::Types<Dut<Vrtl_tag_remap_t32, 32, 4, 8>, Dut<Vrtl_tag_remap_t24, 24, 8, 6>>;
TYPED_TEST_SUITE(TagRemapTest, Configs);

TYPED_TEST(TagRemapTest, ResetThenInit) {
  TypeParam dut;
  // After reset, before INIT: no tag free, nothing pending or quarantined.
  EXPECT_EQ(dut.TagsFree(), 0u);
  EXPECT_EQ(dut.PendingCount(), 0u);
  EXPECT_FALSE(dut.QNonEmpty());
  EXPECT_EQ(dut.NextDeadline(), kNever);
  for (unsigned h = 0; h < TypeParam::kHosts; ++h) EXPECT_FALSE(dut.AllocOk(h)) << h;
  for (unsigned t = 0; t < TypeParam::kTags; ++t) EXPECT_FALSE(dut.Lk(t).in_use) << t;
  EXPECT_EQ(dut.Alloc(0), -1);  // ignored
  EXPECT_EQ(dut.PendingCount(), 0u);
  dut.Init(TypeParam::kTags);
  EXPECT_EQ(dut.TagsFree(), TypeParam::kTags);
  for (unsigned h = 0; h < TypeParam::kHosts; ++h) EXPECT_TRUE(dut.AllocOk(h)) << h;
  EXPECT_EQ(dut.AllocTag(), 0u);
  // INIT with fewer tags: only those, lowest first; INIT again starts over.
  dut.Init(5);
  EXPECT_EQ(dut.TagsFree(), 5u);
  for (unsigned i = 0; i < 5; ++i) EXPECT_EQ(dut.Alloc(i % TypeParam::kHosts), int(i));
  EXPECT_EQ(dut.TagsFree(), 0u);
  EXPECT_EQ(dut.PendingCount(), 5u);
  EXPECT_FALSE(dut.AllocOk(0));
  dut.Init(1);
  EXPECT_EQ(dut.PendingCount(), 0u);
  EXPECT_EQ(dut.TagsFree(), 1u);
  for (unsigned t = 0; t < TypeParam::kTags; ++t) EXPECT_EQ(dut.Lk(t), Pending{}) << t;
  EXPECT_EQ(dut.Alloc(1), 0);
  EXPECT_FALSE(dut.AllocOk(2));
}

TYPED_TEST(TagRemapTest, LowestFirstAndAFreedTagIsTakenNext) {
  TypeParam dut;
  dut.Init(TypeParam::kTags);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(dut.Alloc(0), i);
  dut.Free(1);
  EXPECT_EQ(dut.AllocTag(), 1u);
  EXPECT_EQ(dut.Alloc(2), 1);
  dut.Free(3);
  dut.Free(0);
  EXPECT_EQ(dut.Alloc(1), 0);  // the last freed on top
  EXPECT_EQ(dut.Alloc(1), 3);
  EXPECT_EQ(dut.Alloc(1), 4);  // then the untouched ones, lowest first
  // Every tag, then the pool empties in order and refills in the order freed.
  dut.Init(TypeParam::kTags);
  for (unsigned t = 0; t < TypeParam::kTags; ++t)
    EXPECT_EQ(dut.Alloc(t % TypeParam::kHosts), int(t));
  for (unsigned t = 0; t < TypeParam::kTags; ++t) dut.Free((t * 7) % TypeParam::kTags);
  for (unsigned t = TypeParam::kTags; t > 0; --t)
    EXPECT_EQ(dut.Alloc(t % TypeParam::kHosts), int(((t - 1) * 7) % TypeParam::kTags));
}

TYPED_TEST(TagRemapTest, PerHostQuota) {
  TypeParam dut;
  dut.Init(TypeParam::kTags);
  dut.m().max_per_host = 2;
  EXPECT_EQ(dut.Alloc(0), 0);
  EXPECT_TRUE(dut.AllocOk(0));
  EXPECT_EQ(dut.Alloc(0), 1);
  EXPECT_FALSE(dut.AllocOk(0));  // at its quota
  EXPECT_TRUE(dut.AllocOk(1));   // the others are not
  const unsigned free_before = dut.TagsFree();
  EXPECT_EQ(dut.Alloc(0), -1);  // offered anyway: ignored
  EXPECT_EQ(dut.TagsFree(), free_before);
  EXPECT_EQ(dut.PendingCount(), 2u);
  EXPECT_FALSE(dut.Lk(2).in_use);
  EXPECT_EQ(dut.Alloc(1), 2);
  dut.Free(0);  // a completion gives the quota back
  EXPECT_TRUE(dut.AllocOk(0));
  EXPECT_EQ(dut.Alloc(0), 0);
  EXPECT_FALSE(dut.AllocOk(0));
  dut.Abandon(1, 50);  // and so does an abandon (the tag stays out)
  EXPECT_TRUE(dut.AllocOk(0));
  EXPECT_EQ(dut.Alloc(0), 3);
  // The quota is a level: raised, lowered, zero.
  dut.m().max_per_host = 3;
  EXPECT_TRUE(dut.AllocOk(0));
  dut.m().max_per_host = 1;
  EXPECT_FALSE(dut.AllocOk(0));
  EXPECT_FALSE(dut.AllocOk(1));  // holds one
  EXPECT_TRUE(dut.AllocOk(2));
  dut.m().max_per_host = 0;
  for (unsigned h = 0; h < TypeParam::kHosts; ++h) EXPECT_FALSE(dut.AllocOk(h));
  // Exactly max_per_host, on a fresh host.
  dut.m().max_per_host = 5;
  const unsigned last = TypeParam::kHosts - 1;
  for (int i = 0; i < 5; ++i) EXPECT_NE(dut.Alloc(last), -1) << i;
  EXPECT_FALSE(dut.AllocOk(last));
}

TYPED_TEST(TagRemapTest, ExhaustionStopsEveryHostUntilATagIsFree) {
  TypeParam dut;
  dut.Init(4);
  dut.m().max_per_host = 100;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(dut.Alloc(i % 2), i);
  for (unsigned h = 0; h < TypeParam::kHosts; ++h) EXPECT_FALSE(dut.AllocOk(h));
  EXPECT_EQ(dut.Alloc(3), -1);
  EXPECT_EQ(dut.PendingCount(), 4u);
  EXPECT_EQ(dut.TagsFree(), 0u);
  dut.Qrel();  // nothing quarantined: ignored
  EXPECT_EQ(dut.TagsFree(), 0u);
  dut.Abandon(2, 10);  // quarantined is not free
  EXPECT_FALSE(dut.AllocOk(3));
  dut.Free(3);
  EXPECT_TRUE(dut.AllocOk(3));
  EXPECT_EQ(dut.Alloc(3), 3);
  dut.Qrel();
  EXPECT_EQ(dut.Alloc(3), 2);
  EXPECT_EQ(dut.TagsFree(), 0u);
}

TYPED_TEST(TagRemapTest, PartialCompletionsAdvanceByteCountAndLowerAddress) {
  TypeParam dut;
  dut.Init(TypeParam::kTags);
  // MRd of 64 DW at 0x1010, First BE 1110b, Last BE 0011b: 253 bytes from 0x1011.
  dxpu_tlp req{};
  req.kind = DXPU_TLP_MRD;
  req.addr = 0x1010;
  req.length_dw = 64;
  req.first_be = 0xe;
  req.last_be = 0x3;
  Pending p;
  p.host = 1;
  p.dev = 2;
  p.requester = 0x0100;
  p.host_tag = 0x3a5;
  p.deadline = 777;
  Owed(req, &p);
  ASSERT_EQ(p.remaining, 253);
  ASSERT_EQ(p.lower_addr, 0x11);
  EXPECT_EQ(dut.Alloc(0), 0);  // another request beside it
  const int tag = dut.Alloc(p);
  ASSERT_EQ(tag, 1);
  p.in_use = true;
  EXPECT_EQ(dut.Lk(1), p);
  // Completions split at the RCB (64): 47 bytes to 0x1040, 128 bytes, the last 78.
  dxpu_tlp cpl{};
  cpl.kind = DXPU_TLP_CPLD;
  cpl.cpl_status = DXPU_TLP_CPL_SC;
  for (const auto& [dws, want_remaining, want_lower] :
       {std::tuple{12, 206, 0x40}, std::tuple{32, 78, 0x40}}) {
    cpl.length_dw = static_cast<uint16_t>(dws);
    cpl.byte_count = p.remaining;
    cpl.lower_addr = p.lower_addr;
    ASSERT_FALSE(dxpu_tlp_cpl_is_final(&cpl));
    Advance(cpl, &p.remaining, &p.lower_addr);
    ASSERT_EQ(p.remaining, want_remaining);
    ASSERT_EQ(p.lower_addr, want_lower);
    dut.DrivePartial(1, p.remaining, p.lower_addr);
    EXPECT_EQ(dut.Lk(1).remaining, cpl.byte_count);  // until the edge
    dut.Tick();
    EXPECT_EQ(dut.Lk(1), p);  // only what the completions owe moved
    EXPECT_EQ(dut.PendingCount(), 2u);
  }
  cpl.length_dw = 20;
  cpl.byte_count = p.remaining;
  cpl.lower_addr = p.lower_addr;
  ASSERT_TRUE(dxpu_tlp_cpl_is_final(&cpl));
  dut.Free(1);
  EXPECT_FALSE(dut.Lk(1).in_use);
  EXPECT_TRUE(dut.Lk(0).in_use);
  EXPECT_EQ(dut.Lk(0).remaining, 4);  // the neighbour untouched
  EXPECT_EQ(dut.PendingCount(), 1u);
  EXPECT_EQ(dut.AllocTag(), 1u);
}

TYPED_TEST(TagRemapTest, AbandonQuarantineAndReleaseInOrder) {
  TypeParam dut;
  dut.Init(TypeParam::kTags);
  dut.m().max_per_host = 100;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(dut.Alloc(0), i);
  dut.Abandon(2, 100);
  dut.Abandon(0, 200);
  EXPECT_FALSE(dut.Lk(2).in_use);
  EXPECT_FALSE(dut.Lk(0).in_use);
  EXPECT_EQ(dut.PendingCount(), 2u);
  EXPECT_EQ(dut.TagsFree(), TypeParam::kTags - 4);  // quarantined, not free
  EXPECT_TRUE(dut.QNonEmpty());
  EXPECT_EQ(dut.QFrontUntil(), 100u);
  EXPECT_EQ(dut.Alloc(0), 4);  // a quarantined tag is not taken
  dut.Qrel();                  // the oldest first: 2
  EXPECT_EQ(dut.QFrontUntil(), 200u);
  EXPECT_EQ(dut.TagsFree(), TypeParam::kTags - 4);
  EXPECT_EQ(dut.AllocTag(), 2u);
  dut.Qrel();
  EXPECT_FALSE(dut.QNonEmpty());
  EXPECT_EQ(dut.AllocTag(), 0u);
  EXPECT_EQ(dut.Alloc(0), 0);
  EXPECT_EQ(dut.Alloc(0), 2);
  dut.Qrel();  // empty: ignored
  EXPECT_EQ(dut.AllocTag(), 5u);
  // FIFO order over many rounds: the ring index wraps (TAGS entries) three times.
  dut.Init(TypeParam::kTags);
  std::deque<unsigned> fifo;
  uint64_t until = 1000;
  for (unsigned round = 0; round < 3 * TypeParam::kTags; ++round) {
    const int t = dut.Alloc(round % TypeParam::kHosts);
    ASSERT_GE(t, 0);
    dut.Abandon(static_cast<unsigned>(t), ++until);
    fifo.push_back(static_cast<unsigned>(t));
    if (round % 4 != 0) {  // quarantine grows by one every fourth round
      dut.Qrel();
      ASSERT_EQ(dut.AllocTag(), fifo.front()) << "round " << round;
      fifo.pop_front();
    }
    ASSERT_EQ(dut.QNonEmpty(), !fifo.empty());
  }
  while (!fifo.empty()) {
    dut.Qrel();
    ASSERT_EQ(dut.AllocTag(), fifo.front());
    fifo.pop_front();
  }
  EXPECT_FALSE(dut.QNonEmpty());
  EXPECT_EQ(dut.TagsFree() + dut.PendingCount(), TypeParam::kTags);
}

TYPED_TEST(TagRemapTest, EarliestDeadlineOverPendingAndQuarantine) {
  TypeParam dut;
  dut.Init(TypeParam::kTags);
  EXPECT_EQ(dut.NextDeadline(), kNever);
  EXPECT_EQ(dut.Alloc(0, 500), 0);
  EXPECT_EQ(dut.Alloc(1, 300), 1);
  EXPECT_EQ(dut.Alloc(2, 700), 2);
  EXPECT_EQ(dut.NextDeadline(), 300u);
  dut.Free(1);
  EXPECT_EQ(dut.NextDeadline(), 500u);
  dut.Abandon(0, 900);  // quarantined until 900; 700 is still pending
  EXPECT_EQ(dut.NextDeadline(), 700u);
  dut.Abandon(2, 1000);
  EXPECT_EQ(dut.NextDeadline(), 900u);  // the quarantine's front
  dut.Qrel();
  EXPECT_EQ(dut.NextDeadline(), 1000u);
  dut.Qrel();
  EXPECT_EQ(dut.NextDeadline(), kNever);
  // The quarantine's end before every pending deadline, and the reverse.
  EXPECT_EQ(dut.Alloc(0, 5000), 2);
  EXPECT_EQ(dut.Alloc(0, 6000), 0);
  dut.Abandon(0, 4000);
  EXPECT_EQ(dut.NextDeadline(), 4000u);
  EXPECT_EQ(dut.Alloc(3 % TypeParam::kHosts, 3999), 1);
  EXPECT_EQ(dut.NextDeadline(), 3999u);
  // The highest tag, a deadline of 0, and a deadline of all ones (never).
  dut.Init(TypeParam::kTags);
  for (unsigned t = 0; t + 1 < TypeParam::kTags; ++t) dut.Alloc(t % TypeParam::kHosts, kNever);
  EXPECT_EQ(dut.NextDeadline(), kNever);
  EXPECT_EQ(dut.Alloc(0, 0), int(TypeParam::kTags - 1));
  EXPECT_EQ(dut.NextDeadline(), 0u);
  dut.Free(TypeParam::kTags - 1);
  EXPECT_EQ(dut.NextDeadline(), kNever);
}

// One operation per cycle, measured: an allocation on one cycle, a free on the next, never a
// stall; every one takes effect on its own edge.
TYPED_TEST(TagRemapTest, OneOperationPerCycle) {
  TypeParam dut;
  TagsRef ref(TypeParam::kTags, TypeParam::kHosts);
  dut.Init(TypeParam::kTags);
  ref.Init(TypeParam::kTags);
  dut.m().max_per_host = TypeParam::kTags;
  constexpr unsigned kCycles = 20000;
  const unsigned outstanding = TypeParam::kTags / 2;  // tags in flight: they rotate
  std::deque<uint16_t> inflight;
  unsigned done = 0, allocs = 0, frees = 0;
  const auto start = std::chrono::steady_clock::now();
  for (unsigned c = 0; c < kCycles; ++c) {
    const unsigned free_before = dut.TagsFree();
    // Fill to `outstanding`, then alternate: allocate, free the oldest.
    const bool alloc = inflight.size() < outstanding && (c < outstanding || c % 2 == 0);
    if (alloc) {
      Pending p;
      p.host = static_cast<uint16_t>(c % TypeParam::kHosts);
      p.host_tag = static_cast<uint16_t>(c & 0x3ff);
      p.remaining = 4;
      p.deadline = c;
      ASSERT_TRUE(dut.AllocOk(p.host)) << "cycle " << c;
      ASSERT_EQ(dut.AllocTag(), ref.Top());
      dut.DriveAlloc(p);
      inflight.push_back(ref.Alloc(p));
    } else {
      dut.DriveFree(inflight.front());
      ref.Free(inflight.front());
      inflight.pop_front();
    }
    dut.Tick();
    const unsigned free_after = dut.TagsFree();
    if (free_after + (alloc ? 1 : 0) == free_before + (alloc ? 0 : 1) &&
        free_after == ref.TagsFree() && dut.PendingCount() == ref.PendingCount())
      ++done;
    (alloc ? allocs : frees)++;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(done, kCycles);
  EXPECT_GE(frees, kCycles / 2 - outstanding);
  for (unsigned t = 0; t < TypeParam::kTags; ++t) ASSERT_EQ(dut.Lk(t), ref.at(t)) << t;
  std::printf(
      "dxpu_tag_remap TAGS=%u: %u operations (%u allocations, %u frees) in %u cycles; "
      "%.0f simulated cycles/s\n",
      TypeParam::kTags, done, allocs, frees, kCycles, kCycles / secs);
  ::testing::Test::RecordProperty("operations_per_cycle", "1");
}

// ---- random operations against the reference ----

struct Stats {
  uint64_t ops = 0, idle = 0, allocs = 0, refused_allocs = 0, partials = 0, frees = 0, abandons = 0,
           qrels = 0, empty_qrels = 0, inits = 0, at_quota = 0, exhausted = 0;
};

template <typename D>
class RandomRun {
 public:
  RandomRun(D& dut, std::mt19937_64& rng) : dut_(dut), rng_(rng), ref_(D::kTags, D::kHosts) {
    quarantine_ns_ = Below(3000);
    Init();
  }

  void Run(unsigned cycles, unsigned idle_pct) {
    for (unsigned c = 0; c < cycles && !::testing::Test::HasFailure(); ++c) {
      apply_ = [] {};
      if (Pct() < idle_pct || !DriveOp())
        ++stats_.idle;
      else
        ++stats_.ops;
      CheckAll();  // every output before the edge, the operation's inputs driven
      dut_.Tick();
      apply_();
      now_ += Pct() < 2 ? Below(100000) : Below(50);
      if (Pct() < 2) SetQuota();
    }
    if (!::testing::Test::HasFailure()) CheckAll();  // the last operation's effect
  }
  const Stats& stats() const { return stats_; }

 private:
  unsigned Pct() { return static_cast<unsigned>(rng_() % 100); }
  uint64_t Below(uint64_t n) { return rng_() % n; }

  void Init() {
    box_tags_ = BoxTags();
    dut_.Init(box_tags_);
    ref_.Init(box_tags_);
    splits_.clear();
    SetQuota();
  }
  // All of them, or few (so that the pool runs dry).
  unsigned BoxTags() {
    return Pct() < 30 ? D::kTags : 1 + static_cast<unsigned>(Below(D::kTags / 2));
  }
  // Zero (nobody may), a few, or more than there are tags.
  void SetQuota() {
    const unsigned p = Pct();
    max_per_host_ = static_cast<uint16_t>(p < 5 ? 0 : p < 50 ? 1 + Below(4) : Below(0x10000));
    dut_.m().max_per_host = max_per_host_;
  }

  // A host's non-posted request: a configuration request, or a valid memory read (byte
  // enables, no 4 KiB crossing) as lib/core's completer splits it at the RCB.
  dxpu_tlp Request() {
    dxpu_tlp t{};
    t.requester_id = static_cast<uint16_t>(rng_());
    t.tag = static_cast<uint16_t>(Below(1024));
    if (Pct() < 30) {
      t.kind = DXPU_TLP_CFGRD0;
      return t;
    }
    t.kind = DXPU_TLP_MRD;
    t.addr = (Pct() < 50 ? rng_() : Below(uint64_t{1} << 32)) & ~uint64_t{3};
    const auto room = static_cast<unsigned>((4096 - (t.addr & 0xfff)) / 4);
    t.length_dw = static_cast<uint16_t>(1 + Below(Pct() < 50 ? std::min(room, 16u) : room));
    static constexpr uint8_t kFirst[] = {0xf, 0xe, 0xc, 0x8};
    static constexpr uint8_t kLast[] = {0xf, 0x7, 0x3, 0x1};
    if (t.length_dw == 1) {
      t.first_be = static_cast<uint8_t>(Below(16));  // any, 0: a zero-length read
      t.last_be = 0;
    } else {
      t.first_be = kFirst[Below(4)];
      t.last_be = kLast[Below(4)];
    }
    return t;
  }

  struct Split {
    dxpu_tlp_cpl_split s;
    dxpu_tlp_cpl_piece next;  // the completion still to come
  };

  // Picks an operation (false: none this cycle).
  bool DriveOp() {
    if (Below(1000) < 2) {  // INIT: start over, with a random number of tags
      const unsigned box_tags = BoxTags();
      dut_.DriveInit(box_tags);
      apply_ = [this, box_tags] {
        box_tags_ = box_tags;
        ref_.Init(box_tags);
        splits_.clear();
      };
      ++stats_.inits;
      return true;
    }
    const unsigned p = Pct();
    if (p < 35) return DriveAlloc();
    if (p >= 80) {  // qrel, whether or not a tag is quarantined
      dut_.m().qrel_en = 1;
      if (!ref_.QNonEmpty()) ++stats_.empty_qrels;
      apply_ = [this] { ref_.Qrel(); };
      ++stats_.qrels;
      return true;
    }
    const std::vector<uint16_t> in_use = ref_.InUse();
    if (in_use.empty()) return false;
    const uint16_t tag = in_use[Below(in_use.size())];
    if (p < 65) return DriveCompletion(tag);
    if (p < 70) {  // the last completion early (UR, CA)
      dut_.DriveFree(tag);
      apply_ = [this, tag] {
        ref_.Free(tag);
        splits_.erase(tag);
      };
      ++stats_.frees;
      return true;
    }
    // Timeout or release: quarantined until the latest time seen plus the quarantine.
    q_now_ = std::max(q_now_, now_);
    const uint64_t until = q_now_ + quarantine_ns_;
    dut_.DriveAbandon(tag, until);
    apply_ = [this, tag, until] {
      ref_.Abandon(tag, until);
      splits_.erase(tag);
    };
    ++stats_.abandons;
    return true;
  }

  bool DriveAlloc() {
    const dxpu_tlp req = Request();
    Pending e;
    e.host = static_cast<uint16_t>(Below(D::kHosts));
    e.dev = static_cast<uint16_t>(Below(D::kDevices));
    e.requester = req.requester_id;
    e.host_tag = req.tag;
    Owed(req, &e);
    const unsigned dp = Pct();
    e.deadline = dp < 3 ? kNever : dp < 6 ? kNever - Below(1000) : now_ + 1 + Below(20000);
    dut_.DriveAlloc(e);
    if (!ref_.AllocOk(e.host, max_per_host_)) {  // the module must ignore it
      ++stats_.refused_allocs;
      stats_.exhausted += ref_.TagsFree() == 0;
      stats_.at_quota += ref_.TagsFree() != 0;
      return true;
    }
    Split split{};
    if (req.kind == DXPU_TLP_MRD) {
      static constexpr uint32_t kMaxPayload[] = {128, 256, 512};
      EXPECT_EQ(dxpu_tlp_cpl_split_init(&split.s, req.addr, req.length_dw, req.first_be,
                                        req.last_be, 64, kMaxPayload[Below(3)]),
                DXPU_TLP_OK);
      EXPECT_TRUE(dxpu_tlp_cpl_split_next(&split.s, &split.next));
      // The first completion lib/core's completer sends owes what AllocTag recorded.
      EXPECT_EQ(split.next.byte_count, e.remaining);
      EXPECT_EQ(split.next.lower_addr, e.lower_addr);
    } else {
      split.next = {0, 1, 4, 0};
    }
    apply_ = [this, e, split] {
      const uint16_t tag = ref_.Alloc(e);
      splits_[tag] = split;
    };
    ++stats_.allocs;
    return true;
  }

  // The device's next completion of `tag`'s request: the last frees it, one before advances it.
  bool DriveCompletion(uint16_t tag) {
    Split& split = splits_.at(tag);
    dxpu_tlp cpl{};
    cpl.kind = DXPU_TLP_CPLD;
    cpl.cpl_status = DXPU_TLP_CPL_SC;
    cpl.length_dw = split.next.length_dw;
    cpl.byte_count = split.next.byte_count;
    cpl.lower_addr = split.next.lower_addr;
    EXPECT_EQ(cpl.byte_count, ref_.at(tag).remaining) << "tag " << tag;
    EXPECT_EQ(cpl.lower_addr, ref_.at(tag).lower_addr) << "tag " << tag;
    if (dxpu_tlp_cpl_is_final(&cpl)) {
      dut_.DriveFree(tag);
      apply_ = [this, tag] {
        ref_.Free(tag);
        splits_.erase(tag);
      };
      ++stats_.frees;
      return true;
    }
    uint16_t remaining = 0;
    uint8_t lower = 0;
    Advance(cpl, &remaining, &lower);
    Split next = split;
    EXPECT_TRUE(dxpu_tlp_cpl_split_next(&next.s, &next.next));
    dut_.DrivePartial(tag, remaining, lower);
    apply_ = [this, tag, remaining, lower, next] {
      ref_.Partial(tag, remaining, lower);
      splits_[tag] = next;
    };
    ++stats_.partials;
    return true;
  }

  void CheckAll() {
    auto& m = dut_.m();
    ASSERT_EQ(dut_.TagsFree(), ref_.TagsFree());
    ASSERT_EQ(dut_.PendingCount(), ref_.PendingCount());
    ASSERT_EQ(dut_.QNonEmpty(), ref_.QNonEmpty());
    if (ref_.QNonEmpty()) {
      ASSERT_EQ(dut_.QFrontUntil(), ref_.QFrontUntil());
    }
    ASSERT_EQ(dut_.NextDeadline(), ref_.NextDeadline());
    ASSERT_EQ(dut_.AllocTag(), ref_.Top());
    const auto host = m.alloc_host;  // the operation's
    for (unsigned h = 0; h < D::kHosts; ++h)
      ASSERT_EQ(dut_.AllocOk(h), ref_.AllocOk(h, max_per_host_)) << "host " << h;
    m.alloc_host = host;
    for (unsigned t = 0; t < D::kTags; ++t) ASSERT_EQ(dut_.Lk(t), ref_.at(t)) << "tag " << t;
  }

  D& dut_;
  std::mt19937_64& rng_;
  TagsRef ref_;
  std::map<uint16_t, Split> splits_;
  unsigned box_tags_ = D::kTags;
  uint16_t max_per_host_ = 64;
  uint64_t now_ = 0, q_now_ = 0, quarantine_ns_ = 0;
  std::function<void()> apply_ = [] {};
  Stats stats_;
};

TYPED_TEST(TagRemapTest, RandomOperationsAgreeWithTheGoldenRules) {
  const dxpu::rtl::TestSeed seed_trace;
  const uint64_t seed = seed_trace.value();
  std::mt19937_64 rng(seed);
  Stats t;
  for (const unsigned idle : {0u, 30u, 70u}) {
    TypeParam dut;
    RandomRun<TypeParam> run(dut, rng);
    run.Run(20000, idle);
    if (::testing::Test::HasFailure()) return;
    const Stats& s = run.stats();
    t.ops += s.ops;
    t.idle += s.idle;
    t.allocs += s.allocs;
    t.refused_allocs += s.refused_allocs;
    t.at_quota += s.at_quota;
    t.exhausted += s.exhausted;
    t.partials += s.partials;
    t.frees += s.frees;
    t.abandons += s.abandons;
    t.qrels += s.qrels;
    t.empty_qrels += s.empty_qrels;
    t.inits += s.inits;
  }
  std::printf("dxpu_tag_remap TAGS=%u HOSTS=%u: %" PRIu64 " operations, %" PRIu64
              " idle cycles: %" PRIu64 " allocations (%" PRIu64 " refused: %" PRIu64
              " at the quota, %" PRIu64 " with no tag free), %" PRIu64
              " partial completions, %" PRIu64 " frees, %" PRIu64 " abandons, %" PRIu64
              " qrels (%" PRIu64 " with nothing quarantined), %" PRIu64 " inits\n",
              TypeParam::kTags, TypeParam::kHosts, t.ops, t.idle, t.allocs + t.refused_allocs,
              t.refused_allocs, t.at_quota, t.exhausted, t.partials, t.frees, t.abandons, t.qrels,
              t.empty_qrels, t.inits);
  EXPECT_GT(t.allocs, 1000u);
  EXPECT_GT(t.at_quota, 20u);
  EXPECT_GT(t.exhausted, 20u);
  EXPECT_GT(t.partials, 500u);
  EXPECT_GT(t.abandons, 500u);
  EXPECT_GT(t.qrels - t.empty_qrels, 500u);
  EXPECT_GT(t.empty_qrels, 10u);
}

}  // namespace
