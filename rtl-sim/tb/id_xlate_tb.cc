// id_xlate_tb.cc - testbench of rtl/dxpu_id_xlate.sv on its own, at DEVICES 8 and 6 (6 is not a
// power of two: device indices 6 and 7 of the 3-bit ports name no entry). Directed tests of
// every operation and edge (host and peer lookups lowest device first, devices at or above the
// configured count invisible, NO_HOST, releases of one device and of a host's devices, clear),
// and seeded random operations with random idle cycles (the table has no ready/valid port, one
// operation per cycle: idle cycles are its back-pressure), every output compared after every
// cycle with a reference model written from the golden model's rules
// (bridge-fw/golden_datapath.cc). $DXPU_SEED replays a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <ostream>
#include <random>
#include <vector>

#include "Vrtl_id_xlate_d6.h"
#include "Vrtl_id_xlate_d8.h"
#include "core/tlp_testutil.h"
#include "rtl_tb.h"

namespace {

constexpr uint16_t kNoHost = 0xffff;  // bridge-fw's kNoHost, the RTL's NO_HOST

struct Entry {
  uint16_t box_rid = 0;
  uint16_t host_rid = 0;
  uint16_t owner = kNoHost;
  bool operator==(const Entry&) const = default;
};

struct Hit {
  bool hit = false;
  unsigned dev = 0;  // 0 when there is no hit (the RTL's default)
  bool operator==(const Hit&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Hit& h) {
  return h.hit ? os << "hit device " << h.dev : os << "miss";
}
std::ostream& operator<<(std::ostream& os, const Entry& e) {
  return os << "box " << e.box_rid << " host " << e.host_rid << " owner " << e.owner;
}

// The device table as the golden model keeps it (GoldenDatapath::devices_[d].entry), with the
// module's configured count: devices at or above it do not exist for the lookups.
class IdTableRef {
 public:
  explicit IdTableRef(unsigned devices) : entries_(devices) {}

  // GoldenDatapath::SetDevice: the entry as written (windows and requests are other modules').
  // An index naming no entry changes nothing (SetDevice refuses d >= devices).
  void Write(unsigned d, const Entry& e) {
    if (d < entries_.size()) entries_[d] = e;
  }
  // GoldenDatapath::ReleaseDevice: the owner goes, the RIDs stay.
  void ReleaseDevice(unsigned d) {
    if (d < entries_.size()) entries_[d].owner = kNoHost;
  }
  // GoldenDatapath::ReleaseHost: every device of the host's back to the pool.
  void ReleaseHost(uint16_t host) {
    for (Entry& e : entries_) {
      if (e.owner == host) e.owner = kNoHost;
    }
  }
  // A new GoldenDatapath: every entry at its default.
  void Clear() { entries_.assign(entries_.size(), Entry{}); }

  // GoldenDatapath::HostDevice, the lowest-numbered device first, for a host FromHost admits
  // (host < host_slots, so never kNoHost: a device in the pool is nobody's).
  Hit HostLookup(unsigned ndev, uint16_t host, uint16_t rid) const {
    if (host == kNoHost) return {};
    for (unsigned d = 0; d < Count(ndev); ++d) {
      if (entries_[d].owner == host && entries_[d].host_rid == rid) return {true, d};
    }
    return {};
  }
  // GoldenDatapath::PeerCompletion's loop: the first device other than the sender whose box
  // RID is the completion's requester (the owner check after it is the data path's).
  Hit PeerLookup(unsigned ndev, unsigned self, uint16_t rid) const {
    for (unsigned to = 0; to < Count(ndev); ++to) {
      if (to != self && entries_[to].box_rid == rid) return {true, to};
    }
    return {};
  }
  // How many devices match, for the statistics (more than one: the order matters).
  unsigned HostMatches(unsigned ndev, uint16_t host, uint16_t rid) const {
    unsigned n = 0;
    for (unsigned d = 0; d < Count(ndev); ++d)
      n += entries_[d].owner == host && entries_[d].host_rid == rid;
    return n;
  }

  const Entry& at(unsigned d) const { return entries_[d]; }
  unsigned size() const { return static_cast<unsigned>(entries_.size()); }

 private:
  unsigned Count(unsigned ndev) const { return std::min<unsigned>(ndev, size()); }
  std::vector<Entry> entries_;
};

template <typename Model, unsigned Devices>
class Dut : public dxpu::rtl::Dut<Model> {
  using Base = dxpu::rtl::Dut<Model>;

 public:
  using Base::m;
  static constexpr unsigned kDevices = Devices;
  static constexpr unsigned kDevW = std::bit_width(Devices - 1);  // $clog2(DEVICES)
  static constexpr unsigned kIndexes = 1u << kDevW;               // values of a device port
  static constexpr unsigned kMaxNdev = (2u << kDevW) - 1;         // ndev is DEV_W + 1 bits

  Dut() {
    IdleOps();
    m().ndev = Devices;
    m().host_lookup_host = 0;
    m().host_lookup_rid = 0;
    m().peer_lookup_rid = 0;
    m().peer_lookup_self = 0;
    Base::Reset();
  }
  void IdleOps() {
    m().clear = 0;
    m().wr_en = 0;
    m().wr_dev = 0;
    m().wr_box_rid = 0;
    m().wr_host_rid = 0;
    m().wr_owner = 0;
    m().release_dev_en = 0;
    m().release_dev = 0;
    m().release_host_en = 0;
    m().release_host = 0;
  }
  // One operation over one clock edge.
  void Write(unsigned d, const Entry& e) {
    m().wr_en = 1;
    m().wr_dev = d;
    m().wr_box_rid = e.box_rid;
    m().wr_host_rid = e.host_rid;
    m().wr_owner = e.owner;
    Tick();
  }
  void ReleaseDevice(unsigned d) {
    m().release_dev_en = 1;
    m().release_dev = d;
    Tick();
  }
  void ReleaseHost(uint16_t host) {
    m().release_host_en = 1;
    m().release_host = host;
    Tick();
  }
  void Clear() {
    m().clear = 1;
    Tick();
  }
  void Tick() {
    Base::Tick();
    IdleOps();
  }

  Hit HostLookup(uint16_t host, uint16_t rid) {
    m().host_lookup_host = host;
    m().host_lookup_rid = rid;
    Base::Eval();
    return {m().host_lookup_hit != 0, m().host_lookup_dev};
  }
  Hit PeerLookup(uint16_t rid, unsigned self) {
    m().peer_lookup_rid = rid;
    m().peer_lookup_self = self;
    Base::Eval();
    return {m().peer_lookup_hit != 0, m().peer_lookup_dev};
  }
  Entry At(unsigned d) {
    Base::Eval();
    return {m().box_rid[d], m().host_rid[d], m().owner[d]};
  }
};

template <typename T>
class IdXlateTest : public ::testing::Test {};

using Configs = ::testing::Types<Dut<Vrtl_id_xlate_d8, 8>, Dut<Vrtl_id_xlate_d6, 6>>;
TYPED_TEST_SUITE(IdXlateTest, Configs);

constexpr Hit kMiss{};

TYPED_TEST(IdXlateTest, ResetAndClear) {
  TypeParam dut;
  for (unsigned d = 0; d < TypeParam::kDevices; ++d) EXPECT_EQ(dut.At(d), Entry{}) << d;
  // Every entry in the pool: no host holds one, not even at RID 0.
  EXPECT_EQ(dut.HostLookup(0, 0), kMiss);
  // Box RID 0 everywhere: the lowest device other than the sender.
  EXPECT_EQ(dut.PeerLookup(0, 0), (Hit{true, 1}));
  EXPECT_EQ(dut.PeerLookup(0, 1), (Hit{true, 0}));
  for (unsigned d = 0; d < TypeParam::kDevices; ++d)
    dut.Write(d, {static_cast<uint16_t>(0x100 + d), static_cast<uint16_t>(0x200 + d), 1});
  EXPECT_EQ(dut.HostLookup(1, 0x203), (Hit{true, 3}));
  dut.Clear();
  for (unsigned d = 0; d < TypeParam::kDevices; ++d) EXPECT_EQ(dut.At(d), Entry{}) << d;
  EXPECT_EQ(dut.HostLookup(1, 0x203), kMiss);
}

TYPED_TEST(IdXlateTest, HostLookupLowestDeviceFirst) {
  TypeParam dut;
  dut.Write(1, {0x100, 0x0a00, 2});
  dut.Write(3, {0x300, 0x0a00, 2});
  dut.Write(4, {0x400, 0x0a00, 1});
  EXPECT_EQ(dut.HostLookup(2, 0x0a00), (Hit{true, 1}));
  EXPECT_EQ(dut.HostLookup(1, 0x0a00), (Hit{true, 4}));
  EXPECT_EQ(dut.HostLookup(2, 0x0b00), kMiss);  // the RID must match
  EXPECT_EQ(dut.HostLookup(3, 0x0a00), kMiss);  // ...and the owner
  EXPECT_EQ(dut.HostLookup(2, 0x100), kMiss);   // a box RID is not a host RID
  dut.ReleaseDevice(1);
  EXPECT_EQ(dut.HostLookup(2, 0x0a00), (Hit{true, 3}));
  dut.Write(0, {0x000, 0x0a00, 2});
  EXPECT_EQ(dut.HostLookup(2, 0x0a00), (Hit{true, 0}));
  // The highest device, alone.
  const unsigned last = TypeParam::kDevices - 1;
  dut.Write(last, {0x700, 0x0c00, 7});
  EXPECT_EQ(dut.HostLookup(7, 0x0c00), (Hit{true, last}));
}

TYPED_TEST(IdXlateTest, PeerLookupLowestDeviceFirstNeverTheSender) {
  TypeParam dut;
  for (unsigned d = 0; d < TypeParam::kDevices; ++d)
    dut.Write(d, {static_cast<uint16_t>(0x100 + d), static_cast<uint16_t>(d), 1});
  dut.Write(2, {0x500, 2, 1});
  dut.Write(5, {0x500, 5, 3});  // another owner: the owner check is the data path's
  EXPECT_EQ(dut.PeerLookup(0x500, 0), (Hit{true, 2}));
  EXPECT_EQ(dut.PeerLookup(0x500, 2), (Hit{true, 5}));  // never the sender itself
  EXPECT_EQ(dut.PeerLookup(0x500, 5), (Hit{true, 2}));
  EXPECT_EQ(dut.PeerLookup(0x104, 4), kMiss);  // only the sender has it
  EXPECT_EQ(dut.PeerLookup(0x104, 3), (Hit{true, 4}));
  EXPECT_EQ(dut.PeerLookup(0x999, 0), kMiss);
  // A sender index that names no entry excludes nothing.
  for (unsigned self = TypeParam::kDevices; self < TypeParam::kIndexes; ++self)
    EXPECT_EQ(dut.PeerLookup(0x500, self), (Hit{true, 2}));
}

TYPED_TEST(IdXlateTest, DevicesAtOrAboveTheCountAreInvisible) {
  TypeParam dut;
  const unsigned last = TypeParam::kDevices - 1;
  dut.Write(last, {0x777, 0x0d00, 4});
  dut.Write(1, {0x111, 0x0e00, 4});
  dut.Write(last - 1, {0x111, 0x0e00, 4});
  EXPECT_EQ(dut.HostLookup(4, 0x0d00), (Hit{true, last}));
  EXPECT_EQ(dut.PeerLookup(0x777, 0), (Hit{true, last}));
  dut.m().ndev = last;  // the last device no longer exists
  EXPECT_EQ(dut.HostLookup(4, 0x0d00), kMiss);
  EXPECT_EQ(dut.PeerLookup(0x777, 0), kMiss);
  EXPECT_EQ(dut.At(last), (Entry{0x777, 0x0d00, 4}));  // still in the table
  EXPECT_EQ(dut.PeerLookup(0x111, 1), (Hit{true, last - 1}));
  dut.m().ndev = 2;  // devices 0 and 1
  EXPECT_EQ(dut.PeerLookup(0x111, 1), kMiss);
  EXPECT_EQ(dut.PeerLookup(0x111, 0), (Hit{true, 1}));
  EXPECT_EQ(dut.HostLookup(4, 0x0e00), (Hit{true, 1}));
  dut.m().ndev = 1;
  EXPECT_EQ(dut.HostLookup(4, 0x0e00), kMiss);
  dut.m().ndev = 0;  // out of range (1..DEVICES): nothing exists
  EXPECT_EQ(dut.PeerLookup(0, 1), kMiss);
  dut.m().ndev = TypeParam::kMaxNdev;  // out of range above: as DEVICES
  EXPECT_EQ(dut.HostLookup(4, 0x0d00), (Hit{true, last}));
}

TYPED_TEST(IdXlateTest, NoHost) {
  TypeParam dut;
  // A device written into the pool, and one released into it: nobody's.
  dut.Write(0, {0x010, 0x0f00, kNoHost});
  dut.Write(1, {0x020, 0x0f01, 3});
  EXPECT_EQ(dut.HostLookup(3, 0x0f01), (Hit{true, 1}));
  dut.ReleaseDevice(1);
  EXPECT_EQ(dut.At(1), (Entry{0x020, 0x0f01, kNoHost}));
  for (const uint16_t host : {uint16_t{0}, uint16_t{3}, uint16_t{0xfffe}, kNoHost}) {
    EXPECT_EQ(dut.HostLookup(host, 0x0f00), kMiss) << host;
    EXPECT_EQ(dut.HostLookup(host, 0x0f01), kMiss) << host;
  }
  // Every entry after reset is in the pool at host RID 0: NO_HOST finds none of them.
  EXPECT_EQ(dut.HostLookup(kNoHost, 0), kMiss);
  // The peer lookup finds pool devices by box RID (the data path refuses them by owner).
  EXPECT_EQ(dut.PeerLookup(0x020, 0), (Hit{true, 1}));
  // Releasing NO_HOST changes nothing.
  dut.ReleaseHost(kNoHost);
  EXPECT_EQ(dut.At(0), (Entry{0x010, 0x0f00, kNoHost}));
}

TYPED_TEST(IdXlateTest, ReleaseOneDeviceAndAllOfAHost) {
  TypeParam dut;
  dut.Write(0, {0x100, 0x0100, 1});
  dut.Write(1, {0x101, 0x0101, 2});
  dut.Write(2, {0x102, 0x0102, 1});
  dut.Write(3, {0x103, 0x0103, 1});
  // One device: its owner goes on the edge, its RIDs stay, nothing else changes.
  dut.m().release_dev_en = 1;
  dut.m().release_dev = 2;
  EXPECT_EQ(dut.HostLookup(1, 0x0102), (Hit{true, 2}));  // before the edge
  dut.Tick();
  EXPECT_EQ(dut.HostLookup(1, 0x0102), kMiss);  // right after it
  EXPECT_EQ(dut.At(2), (Entry{0x102, 0x0102, kNoHost}));
  EXPECT_EQ(dut.At(0), (Entry{0x100, 0x0100, 1}));
  // Indices that name no entry, and a host that owns nothing: no change.
  for (unsigned d = TypeParam::kDevices; d < TypeParam::kIndexes; ++d) dut.ReleaseDevice(d);
  dut.ReleaseHost(5);
  EXPECT_EQ(dut.At(0).owner, 1);
  EXPECT_EQ(dut.At(1).owner, 2);
  EXPECT_EQ(dut.At(2).owner, kNoHost);
  EXPECT_EQ(dut.At(3).owner, 1);
  // All of host 1's devices at once.
  dut.m().release_host_en = 1;
  dut.m().release_host = 1;
  EXPECT_EQ(dut.HostLookup(1, 0x0100), (Hit{true, 0}));
  dut.Tick();
  EXPECT_EQ(dut.At(0), (Entry{0x100, 0x0100, kNoHost}));
  EXPECT_EQ(dut.At(1), (Entry{0x101, 0x0101, 2}));
  EXPECT_EQ(dut.At(3), (Entry{0x103, 0x0103, kNoHost}));
  EXPECT_EQ(dut.HostLookup(1, 0x0100), kMiss);
  EXPECT_EQ(dut.HostLookup(1, 0x0103), kMiss);
  EXPECT_EQ(dut.HostLookup(2, 0x0101), (Hit{true, 1}));
}

// ---- random operations against the reference ----

struct Stats {
  uint64_t ops = 0, idle = 0, host_hits = 0, host_multi = 0, peer_hits = 0, nohost_probes = 0;
};

template <typename D>
class RandomRun {
 public:
  RandomRun(D& dut, std::mt19937_64& rng) : dut_(dut), rng_(rng), ref_(D::kDevices) {}

  // `cycles` cycles, an operation on each with probability 1 - idle_pct %.
  void Run(unsigned cycles, unsigned idle_pct) {
    for (unsigned c = 0; c < cycles && !::testing::Test::HasFailure(); ++c) {
      if (Pct() < idle_pct) {
        ++stats_.idle;
        apply_ = [] {};
      } else {
        DriveOp();
        ++stats_.ops;
      }
      // Every output before the edge (the operation's inputs driven: nothing passes through).
      CheckAll();
      dut_.Tick();
      apply_();
      if (Pct() < 3) ChangeCount();
    }
    if (!::testing::Test::HasFailure()) CheckAll();  // the last operation's effect
  }
  const Stats& stats() const { return stats_; }

 private:
  unsigned Pct() { return static_cast<unsigned>(rng_() % 100); }
  uint16_t Rid() { return static_cast<uint16_t>(Pct() < 70 ? rng_() % 4 : rng_()); }
  uint16_t Host() {
    const unsigned p = Pct();
    if (p < 70) return static_cast<uint16_t>(rng_() % 4);
    if (p < 85) return kNoHost;
    return static_cast<uint16_t>(rng_());
  }
  unsigned Index() {  // mostly an entry, sometimes an index naming none
    return static_cast<unsigned>(Pct() < 90 ? rng_() % D::kDevices : rng_() % D::kIndexes);
  }

  void DriveOp() {
    auto& m = dut_.m();
    const unsigned p = Pct();
    if (p < 60) {
      const unsigned d = Index();
      const Entry e{Rid(), Rid(), Host()};
      m.wr_en = 1;
      m.wr_dev = d;
      m.wr_box_rid = e.box_rid;
      m.wr_host_rid = e.host_rid;
      m.wr_owner = e.owner;
      apply_ = [this, d, e] { ref_.Write(d, e); };
    } else if (p < 78) {
      const unsigned d = Index();
      m.release_dev_en = 1;
      m.release_dev = d;
      apply_ = [this, d] { ref_.ReleaseDevice(d); };
    } else if (p < 98) {
      const uint16_t h = Host();
      m.release_host_en = 1;
      m.release_host = h;
      apply_ = [this, h] { ref_.ReleaseHost(h); };
    } else {
      m.clear = 1;
      apply_ = [this] { ref_.Clear(); };
    }
  }

  // ndev: mostly DEVICES, sometimes fewer, rarely out of range (0, above DEVICES).
  void ChangeCount() {
    const unsigned p = Pct();
    ndev_ = p < 40   ? D::kDevices
            : p < 90 ? 1 + static_cast<unsigned>(rng_() % D::kDevices)
                     : static_cast<unsigned>(rng_() % (D::kMaxNdev + 1));
    dut_.m().ndev = ndev_;
  }

  void CheckAll() {
    for (unsigned d = 0; d < D::kDevices; ++d) ASSERT_EQ(dut_.At(d), ref_.at(d)) << "entry " << d;
    for (int i = 0; i < 4; ++i) {
      // Probes aimed at an entry most of the time, so that lookups hit.
      const Entry& e = ref_.at(static_cast<unsigned>(rng_() % D::kDevices));
      const uint16_t host = Pct() < 60 ? e.owner : Host();
      const uint16_t rid = Pct() < 60 ? e.host_rid : Rid();
      const Hit want = ref_.HostLookup(ndev_, host, rid);
      ASSERT_EQ(dut_.HostLookup(host, rid), want)
          << "host lookup: host " << host << " rid " << rid << " ndev " << ndev_;
      stats_.host_hits += want.hit;
      stats_.host_multi += want.hit && ref_.HostMatches(ndev_, host, rid) > 1;
      stats_.nohost_probes += host == kNoHost;
      const uint16_t box = Pct() < 60 ? e.box_rid : Rid();
      const auto self = static_cast<unsigned>(rng_() % D::kIndexes);
      const Hit peer = ref_.PeerLookup(ndev_, self, box);
      ASSERT_EQ(dut_.PeerLookup(box, self), peer)
          << "peer lookup: rid " << box << " self " << self << " ndev " << ndev_;
      stats_.peer_hits += peer.hit;
    }
  }

  D& dut_;
  std::mt19937_64& rng_;
  IdTableRef ref_;
  unsigned ndev_ = D::kDevices;
  std::function<void()> apply_ = [] {};
  Stats stats_;
};

TYPED_TEST(IdXlateTest, RandomOperationsAgreeWithTheGoldenRules) {
  const dxpu::rtl::TestSeed seed_trace;
  const uint64_t seed = seed_trace.value();
  std::mt19937_64 rng(seed);
  Stats total;
  for (const unsigned idle : {0u, 30u, 70u}) {
    TypeParam dut;
    RandomRun<TypeParam> run(dut, rng);
    run.Run(30000, idle);
    if (::testing::Test::HasFailure()) return;
    const Stats& s = run.stats();
    total.ops += s.ops;
    total.idle += s.idle;
    total.host_hits += s.host_hits;
    total.host_multi += s.host_multi;
    total.peer_hits += s.peer_hits;
    total.nohost_probes += s.nohost_probes;
  }
  std::printf("dxpu_id_xlate DEVICES=%u: %" PRIu64 " operations, %" PRIu64 " idle cycles; %" PRIu64
              " host hits (%" PRIu64 " with several matches), %" PRIu64 " peer hits, %" PRIu64
              " NO_HOST probes\n",
              TypeParam::kDevices, total.ops, total.idle, total.host_hits, total.host_multi,
              total.peer_hits, total.nohost_probes);
  EXPECT_GT(total.host_hits, 1000u);
  EXPECT_GT(total.host_multi, 100u);  // the lowest-first order decided
  EXPECT_GT(total.peer_hits, 1000u);
  EXPECT_GT(total.nohost_probes, 100u);
}

}  // namespace
