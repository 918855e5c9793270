// addr_window_tb.cc - testbench of rtl/dxpu_addr_window.sv on its own, at DEVICES 8 with
// DMA_WINDOWS 16 (the data path's) and DEVICES 3 with DMA_WINDOWS 5 (neither a power of two:
// device index 3 and window indices 5..15 name nothing). Directed tests of the containment rule
// at its exact edges (addr == base, addr + len == base + size, one byte past, len > size, 64-bit
// overflow near 2^64, size 0 unmapped), of the lookups following the owners and the configured
// count, of write and read-back, and of every unmapping (owner change, CLEAR_DMA, a host's
// release, clear) taking effect in one cycle; and seeded random operations with random idle
// cycles (the tables have no ready/valid port, one operation per cycle: idle cycles are their
// back-pressure), every output compared after every cycle with a reference model written from
// the golden model's rules (bridge-fw/golden_datapath.cc). $DXPU_SEED replays a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <ostream>
#include <random>
#include <vector>

#include "Vrtl_addr_window_d3w5.h"
#include "Vrtl_addr_window_d8w16.h"
#include "core/tlp_testutil.h"
#include "rtl_tb.h"

namespace {

constexpr uint16_t kNoHost = 0xffff;  // bridge-fw's kNoHost, the RTL's NO_HOST
constexpr unsigned kBars = 6;         // bridge-fw's kMaxBars
constexpr uint64_t kTop = ~uint64_t{0};

// A window: BAR (base = host base, land = device base) or DMA (base = device base, land = host
// base), as the module's register fields 0, 1, 2.
struct Window {
  uint64_t base = 0, land = 0, size = 0;
};

struct Hit {
  bool hit = false;
  unsigned dev = 0;   // BAR lookups only; 0 without a hit (the RTL's default)
  uint64_t xlat = 0;  // 0 without a hit
  bool operator==(const Hit&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Hit& h) {
  if (!h.hit) return os << "miss";
  return os << "hit device " << h.dev << " at 0x" << std::hex << h.xlat << std::dec;
}

// The golden model's Contains(): [addr, addr + len) inside [base, base + size), no overflow.
bool Contains(uint64_t base, uint64_t size, uint64_t addr, uint64_t len) {
  return addr >= base && len <= size && addr - base <= size - len;
}

// x below the end of w (base + size, which may lie at or past 2^64); w.size != 0.
bool BelowEnd(uint64_t x, const Window& w) { return x < w.base || x - w.base < w.size; }
bool Overlap(const Window& a, const Window& b) {
  return BelowEnd(a.base, b) && BelowEnd(b.base, a);
}

// The windows as the golden model keeps them (GoldenDatapath::Device::bars and ::dma), in the
// module's slots, with the owners and the configured count it is given.
class WindowsRef {
 public:
  WindowsRef(unsigned devices, unsigned dma_windows)
      : bar_(devices), dma_(devices, std::vector<Window>(dma_windows)) {}

  unsigned devices() const { return static_cast<unsigned>(bar_.size()); }
  unsigned dma_windows() const { return static_cast<unsigned>(dma_[0].size()); }

  // SetBarWindow / AddDmaWindow, one field at a time as the register interface writes them;
  // an index naming no window (device, BAR 6..15, DMA window >= DMA_WINDOWS) changes nothing.
  Window* Slot(bool dma, unsigned d, unsigned idx) {
    if (d >= devices()) return nullptr;
    if (dma) return idx < dma_windows() ? &dma_[d][idx] : nullptr;
    return idx < kBars ? &bar_[d][idx] : nullptr;
  }
  const Window* Slot(bool dma, unsigned d, unsigned idx) const {
    if (d >= devices()) return nullptr;
    if (dma) return idx < dma_windows() ? &dma_[d][idx] : nullptr;
    return idx < kBars ? &bar_[d][idx] : nullptr;
  }
  void Write(bool dma, unsigned d, unsigned idx, unsigned field, uint64_t value) {
    if (Window* w = Slot(dma, d, idx)) Field(*w, field) = value;
  }
  uint64_t Read(bool dma, unsigned d, unsigned idx, unsigned field) const {
    const Window* w = Slot(dma, d, idx);
    if (w == nullptr) return 0;
    Window copy = *w;
    return Field(copy, field);
  }
  // SetDevice with a new owner (bars = {}, dma.clear()), or ClearDmaWindows.
  void ClearDevice(unsigned d, bool dma_only) {
    if (d >= devices()) return;
    if (!dma_only) bar_[d] = {};
    std::fill(dma_[d].begin(), dma_[d].end(), Window{});
  }
  // ReleaseHost: SetDevice(kNoHost) of each of the host's devices. kNoHost is no host
  // (ReleaseHost refuses host >= host_slots): nothing.
  void ClearHost(uint16_t host, const std::vector<uint16_t>& owner) {
    if (host == kNoHost) return;
    for (unsigned d = 0; d < devices(); ++d) {
      if (owner[d] == host) ClearDevice(d, false);
    }
  }
  void Clear() {
    for (unsigned d = 0; d < devices(); ++d) ClearDevice(d, false);
  }

  // GoldenDatapath::RebuildHostWindows (the mapped BARs of the host's existing devices, sorted
  // by host base) and FindBarWindow (the last window starting at or below addr, if it holds
  // the request). kNoHost holds nothing.
  Hit BarLookup(unsigned ndev, const std::vector<uint16_t>& owner, uint16_t host, uint64_t addr,
                uint64_t len) const {
    if (host == kNoHost) return {};
    struct HostWindow {
      Window w;
      unsigned dev;
    };
    std::vector<HostWindow> table;
    for (unsigned d = 0; d < std::min(ndev, devices()); ++d) {
      if (owner[d] != host) continue;
      for (const Window& b : bar_[d]) {
        if (b.size != 0) table.push_back({b, d});
      }
    }
    std::sort(table.begin(), table.end(),
              [](const HostWindow& a, const HostWindow& b) { return a.w.base < b.w.base; });
    auto it = std::upper_bound(table.begin(), table.end(), addr,
                               [](uint64_t a, const HostWindow& w) { return a < w.w.base; });
    if (it == table.begin()) return {};
    --it;
    if (!Contains(it->w.base, it->w.size, addr, len)) return {};
    return {true, it->dev, addr - it->w.base + it->w.land};
  }
  // GoldenDatapath::DeviceMemory's DMA lookup: the device's windows sorted by device base, the
  // last starting at or below addr, if it holds the request.
  Hit DmaLookup(unsigned d, uint64_t addr, uint64_t len) const {
    if (d >= devices()) return {};
    std::vector<Window> table;
    for (const Window& w : dma_[d]) {
      if (w.size != 0) table.push_back(w);
    }
    std::sort(table.begin(), table.end(),
              [](const Window& a, const Window& b) { return a.base < b.base; });
    auto it = std::upper_bound(table.begin(), table.end(), addr,
                               [](uint64_t a, const Window& w) { return a < w.base; });
    if (it == table.begin()) return {};
    --it;
    if (!Contains(it->base, it->size, addr, len)) return {};
    return {true, 0, addr - it->base + it->land};
  }

  // The mapped windows (size not 0) of one table, as (device, index).
  std::vector<std::pair<unsigned, unsigned>> Mapped(bool dma) const {
    std::vector<std::pair<unsigned, unsigned>> out;
    for (unsigned d = 0; d < devices(); ++d) {
      for (unsigned i = 0; i < (dma ? dma_windows() : kBars); ++i) {
        if (Slot(dma, d, i)->size != 0) out.emplace_back(d, i);
      }
    }
    return out;
  }

  // What the firmware guarantees (SetBarWindow's overlap check, AddDmaWindow's): a host's
  // mapped BAR windows are disjoint, and so are a device's DMA windows.
  bool Disjoint(const std::vector<uint16_t>& owner) const {
    for (unsigned d = 0; d < devices(); ++d) {
      for (unsigned e = d; e < devices(); ++e) {
        if (owner[d] != owner[e] || owner[d] == kNoHost) continue;
        for (unsigned i = 0; i < kBars; ++i) {
          for (unsigned j = d == e ? i + 1 : 0; j < kBars; ++j) {
            const Window &a = bar_[d][i], &b = bar_[e][j];
            if (a.size != 0 && b.size != 0 && Overlap(a, b)) return false;
          }
        }
      }
      for (unsigned i = 0; i < dma_windows(); ++i) {
        for (unsigned j = i + 1; j < dma_windows(); ++j) {
          const Window &a = dma_[d][i], &b = dma_[d][j];
          if (a.size != 0 && b.size != 0 && Overlap(a, b)) return false;
        }
      }
    }
    return true;
  }

 private:
  static uint64_t& Field(Window& w, unsigned field) {
    return field == 0 ? w.base : field == 1 ? w.land : w.size;
  }
  std::vector<std::array<Window, kBars>> bar_;
  std::vector<std::vector<Window>> dma_;
};

template <typename Model, unsigned Devices, unsigned DmaWindows>
class Dut : public dxpu::rtl::Dut<Model> {
  using Base = dxpu::rtl::Dut<Model>;

 public:
  using Base::m;
  static constexpr unsigned kDevices = Devices;
  static constexpr unsigned kDmaWindows = DmaWindows;
  static constexpr unsigned kDevW = std::bit_width(Devices - 1);  // $clog2(DEVICES)
  static constexpr unsigned kIndexes = 1u << kDevW;               // values of a device port

  Dut() : owner_(Devices, kNoHost) {
    IdleOps();
    m().ndev = Devices;
    SetOwners(owner_);
    m().rd_dma = 0;
    m().rd_dev = 0;
    m().rd_idx = 0;
    m().rd_field = 0;
    m().bar_host = 0;
    m().bar_addr = 0;
    m().bar_len = 4;
    m().dma_dev = 0;
    m().dma_addr = 0;
    m().dma_len = 4;
    Base::Reset();
  }
  void IdleOps() {
    m().clear = 0;
    m().wr_en = 0;
    m().wr_dma = 0;
    m().wr_dev = 0;
    m().wr_idx = 0;
    m().wr_field = 0;
    m().wr_data = 0;
    m().clr_dev_en = 0;
    m().clr_dev_dma_only = 0;
    m().clr_dev = 0;
    m().clr_host_en = 0;
    m().clr_host = 0;
  }
  void SetOwners(const std::vector<uint16_t>& owner) {
    owner_ = owner;
    for (unsigned d = 0; d < Devices; ++d) m().owner[d] = owner[d];
  }
  void SetOwner(unsigned d, uint16_t host) {
    owner_[d] = host;
    m().owner[d] = host;
  }
  const std::vector<uint16_t>& owners() const { return owner_; }

  // Operations, one clock edge each.
  void DriveWrite(bool dma, unsigned d, unsigned idx, unsigned field, uint64_t value) {
    m().wr_en = 1;
    m().wr_dma = dma;
    m().wr_dev = d;
    m().wr_idx = idx;
    m().wr_field = field;
    m().wr_data = value;
  }
  void Write(bool dma, unsigned d, unsigned idx, const Window& w) {
    for (unsigned f = 0; f < 3; ++f) {
      DriveWrite(dma, d, idx, f, f == 0 ? w.base : f == 1 ? w.land : w.size);
      Tick();
    }
  }
  void DriveClearDevice(unsigned d, bool dma_only) {
    m().clr_dev_en = 1;
    m().clr_dev = d;
    m().clr_dev_dma_only = dma_only;
  }
  void DriveClearHost(uint16_t host) {
    m().clr_host_en = 1;
    m().clr_host = host;
  }
  void Tick() {
    Base::Tick();
    IdleOps();
  }

  Hit Bar(uint16_t host, uint64_t addr, unsigned len) {
    m().bar_host = host;
    m().bar_addr = addr;
    m().bar_len = len;
    Base::Eval();
    return {m().bar_hit != 0, m().bar_dev, m().bar_xlat};
  }
  Hit Dma(unsigned d, uint64_t addr, unsigned len) {
    m().dma_dev = d;
    m().dma_addr = addr;
    m().dma_len = len;
    Base::Eval();
    return {m().dma_hit != 0, 0, m().dma_xlat};
  }
  uint64_t Read(bool dma, unsigned d, unsigned idx, unsigned field) {
    m().rd_dma = dma;
    m().rd_dev = d;
    m().rd_idx = idx;
    m().rd_field = field;
    Base::Eval();
    return m().rd_data;
  }

 private:
  std::vector<uint16_t> owner_;
};

template <typename T>
class AddrWindowTest : public ::testing::Test {};

using Configs =
    ::testing::Types<Dut<Vrtl_addr_window_d8w16, 8, 16>, Dut<Vrtl_addr_window_d3w5, 3, 5>>;
TYPED_TEST_SUITE(AddrWindowTest, Configs);

constexpr Hit kMiss{};
Hit BarHit(unsigned dev, uint64_t xlat) { return {true, dev, xlat}; }
Hit DmaHit(uint64_t xlat) { return {true, 0, xlat}; }

// Every readable word of the module (indices 0..15 of every device port value, fields 0..2).
template <typename D>
std::vector<uint64_t> DumpTables(D& dut) {
  std::vector<uint64_t> words;
  for (const bool dma : {false, true}) {
    for (unsigned d = 0; d < D::kIndexes; ++d) {
      for (unsigned idx = 0; idx < 16; ++idx) {
        for (unsigned f = 0; f < 3; ++f) words.push_back(dut.Read(dma, d, idx, f));
      }
    }
  }
  return words;
}

TYPED_TEST(AddrWindowTest, WriteReadBackAndIndexesThatNameNothing) {
  TypeParam dut;
  const std::vector<uint64_t> zero = DumpTables(dut);
  for (const uint64_t w : zero) ASSERT_EQ(w, 0u);  // reset: every window unmapped
  const unsigned last = TypeParam::kDevices - 1, lastw = TypeParam::kDmaWindows - 1;
  dut.Write(false, last, 5, {0x1111, 0x2222, 0x3333});
  dut.Write(true, last, lastw, {0x4444, 0x5555, 0x6666});
  dut.Write(false, 0, 0, {kTop, kTop - 1, kTop - 2});
  EXPECT_EQ(dut.Read(false, last, 5, 0), 0x1111u);
  EXPECT_EQ(dut.Read(false, last, 5, 1), 0x2222u);
  EXPECT_EQ(dut.Read(false, last, 5, 2), 0x3333u);
  EXPECT_EQ(dut.Read(true, last, lastw, 0), 0x4444u);
  EXPECT_EQ(dut.Read(true, last, lastw, 1), 0x5555u);
  EXPECT_EQ(dut.Read(true, last, lastw, 2), 0x6666u);
  EXPECT_EQ(dut.Read(false, 0, 0, 0), kTop);
  EXPECT_EQ(dut.Read(false, 0, 0, 2), kTop - 2);
  EXPECT_EQ(dut.Read(false, last, 4, 0), 0u);  // its neighbour untouched
  EXPECT_EQ(dut.Read(true, last, 5, 0), 0u);   // the DMA table is another table
  // Writes to indices naming nothing change nothing: BARs 6..15, DMA windows past the last,
  // devices past the last.
  const std::vector<uint64_t> before = DumpTables(dut);
  for (unsigned idx = kBars; idx < 16; ++idx) dut.Write(false, 0, idx, {1, 2, 3});
  for (unsigned idx = TypeParam::kDmaWindows; idx < 16; ++idx) dut.Write(true, 0, idx, {1, 2, 3});
  for (unsigned d = TypeParam::kDevices; d < TypeParam::kIndexes; ++d) {
    dut.Write(false, d, 0, {1, 2, 3});
    dut.Write(true, d, 0, {1, 2, 3});
  }
  EXPECT_EQ(DumpTables(dut), before);
}

// One window, BAR and DMA alike: the containment rule at every edge.
void CheckEdges(const std::function<Hit(uint64_t, unsigned)>& lookup, unsigned dev, bool bar) {
  const uint64_t base = 0x10000, land = 0xabc00000, size = 0x1000;
  auto hit = [&](uint64_t xlat) { return bar ? BarHit(dev, xlat) : DmaHit(xlat); };
  EXPECT_EQ(lookup(base, 4), hit(land));                     // addr == base
  EXPECT_EQ(lookup(base - 1, 4), kMiss);                     // one byte before
  EXPECT_EQ(lookup(base - 4, 4), kMiss);                     // the DW before
  EXPECT_EQ(lookup(base - 1, 2), kMiss);                     // starts before, ends inside
  EXPECT_EQ(lookup(base + size - 4, 4), hit(land + 0xffc));  // addr + len == base + size
  EXPECT_EQ(lookup(base + size - 3, 4), kMiss);              // one byte past the end
  EXPECT_EQ(lookup(base + size - 1, 1), hit(land + 0xfff));  // the last byte
  EXPECT_EQ(lookup(base + size, 1), kMiss);                  // the byte after
  EXPECT_EQ(lookup(base, 0x1000), hit(land));                // len == size
  EXPECT_EQ(lookup(base, 0x1001), kMiss);                    // len > size
  EXPECT_EQ(lookup(base + 1, 0x1000), kMiss);
  EXPECT_EQ(lookup(base + 0x800, 0x800), hit(land + 0x800));
  EXPECT_EQ(lookup(base + 0x800, 0x801), kMiss);
  EXPECT_EQ(lookup(base, 0x1fff), kMiss);  // the longest request (13 bits)
}

TYPED_TEST(AddrWindowTest, ContainmentAtTheExactEdges) {
  TypeParam dut;
  const unsigned d = 1;
  dut.SetOwner(d, 3);
  dut.Write(false, d, 2, {0x10000, 0xabc00000, 0x1000});
  dut.Write(true, d, 1, {0x10000, 0xabc00000, 0x1000});
  CheckEdges([&](uint64_t a, unsigned l) { return dut.Bar(3, a, l); }, d, true);
  CheckEdges([&](uint64_t a, unsigned l) { return dut.Dma(d, a, l); }, d, false);
  // A window of 8 bytes: a 12-byte request at its base is larger than it.
  dut.Write(false, d, 3, {0x40000, 0x9000, 8});
  EXPECT_EQ(dut.Bar(3, 0x40000, 8), BarHit(d, 0x9000));
  EXPECT_EQ(dut.Bar(3, 0x40000, 12), kMiss);
  EXPECT_EQ(dut.Bar(3, 0x40004, 4), BarHit(d, 0x9004));
  EXPECT_EQ(dut.Bar(3, 0x40004, 5), kMiss);
  // Adjacent windows: each holds its own bytes, a request across the seam neither.
  dut.Write(false, d, 4, {0x11000, 0x500000, 0x1000});
  EXPECT_EQ(dut.Bar(3, 0x10ffc, 4), BarHit(d, 0xabc00ffc));
  EXPECT_EQ(dut.Bar(3, 0x11000, 4), BarHit(d, 0x500000));
  EXPECT_EQ(dut.Bar(3, 0x10ffc, 8), kMiss);
}

TYPED_TEST(AddrWindowTest, NoOverflowNearTwoToThe64) {
  TypeParam dut;
  const unsigned d = 0;
  dut.SetOwner(d, 1);
  // Ends 4 KiB below 2^64: addr + len wrapping past 2^64 must not look small.
  dut.Write(false, d, 0, {kTop - 0x1fff, 0x100000, 0x1000});
  EXPECT_EQ(dut.Bar(1, kTop - 3, 8), kMiss);  // addr + len wraps to 4
  EXPECT_EQ(dut.Bar(1, kTop - 0x1003, 4), BarHit(d, 0x100ffc));
  EXPECT_EQ(dut.Bar(1, kTop - 0x1003, 5), kMiss);
  // Ends exactly at 2^64 (base + size wraps to 0; the firmware would refuse it, the rule holds).
  dut.Write(false, d, 1, {kTop - 0xfff, 0x200000, 0x1000});
  EXPECT_EQ(dut.Bar(1, kTop - 3, 4), BarHit(d, 0x200ffc));
  EXPECT_EQ(dut.Bar(1, kTop, 1), BarHit(d, 0x200fff));
  EXPECT_EQ(dut.Bar(1, kTop - 3, 5), kMiss);
  EXPECT_EQ(dut.Bar(1, kTop - 0xfff, 0x1000), BarHit(d, 0x200000));
  EXPECT_EQ(dut.Bar(1, kTop - 0xfff, 0x1001), kMiss);
  // The translation wraps modulo 2^64.
  dut.Write(true, d, 0, {0x1000, kTop - 0x7ff, 0x2000});
  EXPECT_EQ(dut.Dma(d, 0x1000, 4096), DmaHit(kTop - 0x7ff));
  EXPECT_EQ(dut.Dma(d, 0x2000, 4), DmaHit(0x800));
  EXPECT_EQ(dut.Dma(d, 0xffc, 4), kMiss);
  // The whole space from 0 but its last byte (size 2^64 - 1).
  dut.Write(true, d, 0, {0, 5, kTop});
  EXPECT_EQ(dut.Dma(d, 0, 4096), DmaHit(5));
  EXPECT_EQ(dut.Dma(d, kTop - 4, 4), DmaHit(kTop + 1));  // wraps to 0
  EXPECT_EQ(dut.Dma(d, kTop - 3, 4), kMiss);
}

TYPED_TEST(AddrWindowTest, SizeZeroIsUnmapped) {
  TypeParam dut;
  for (unsigned d = 0; d < TypeParam::kDevices; ++d) dut.SetOwner(d, 0);
  // Every window after reset: base 0, size 0.
  for (const unsigned len : {1u, 4u, 4096u}) {
    EXPECT_EQ(dut.Bar(0, 0, len), kMiss);
    EXPECT_EQ(dut.Dma(0, 0, len), kMiss);
  }
  dut.Write(false, 1, 0, {0x2000, 0x7000, 0});
  dut.Write(true, 1, 0, {0x2000, 0x7000, 0});
  EXPECT_EQ(dut.Bar(0, 0x2000, 1), kMiss);
  EXPECT_EQ(dut.Bar(0, 0x2000, 4), kMiss);
  EXPECT_EQ(dut.Dma(1, 0x2000, 1), kMiss);
  dut.DriveWrite(false, 1, 0, 2, 0x100);  // mapped by its size, on the edge
  EXPECT_EQ(dut.Bar(0, 0x2000, 4), kMiss);
  dut.Tick();
  EXPECT_EQ(dut.Bar(0, 0x2000, 4), BarHit(1, 0x7000));
  dut.DriveWrite(false, 1, 0, 2, 0);  // and unmapped
  dut.Tick();
  EXPECT_EQ(dut.Bar(0, 0x2000, 4), kMiss);
  EXPECT_EQ(dut.Read(false, 1, 0, 0), 0x2000u);  // the other fields stay
}

TYPED_TEST(AddrWindowTest, LookupsFollowTheOwnersAndTheCount) {
  TypeParam dut;
  const unsigned last = TypeParam::kDevices - 1;
  dut.SetOwner(0, 1);
  dut.SetOwner(last, 2);
  dut.Write(false, 0, 5, {0x100000, 0xa0000, 0x1000});
  dut.Write(false, last, 0, {0x200000, 0xb0000, 0x1000});
  dut.Write(true, 0, 0, {0x100000, 0xc0000, 0x1000});
  EXPECT_EQ(dut.Bar(1, 0x100000, 4), BarHit(0, 0xa0000));
  EXPECT_EQ(dut.Bar(1, 0x200000, 4), kMiss);  // host 2's
  EXPECT_EQ(dut.Bar(2, 0x200000, 4), BarHit(last, 0xb0000));
  EXPECT_EQ(dut.Bar(2, 0x100000, 4), kMiss);
  EXPECT_EQ(dut.Bar(3, 0x100000, 4), kMiss);
  // The owner input is followed combinationally.
  dut.SetOwner(0, 2);
  EXPECT_EQ(dut.Bar(2, 0x100000, 4), BarHit(0, 0xa0000));
  EXPECT_EQ(dut.Bar(1, 0x100000, 4), kMiss);
  // A device in the pool is nobody's: NO_HOST finds nothing.
  dut.SetOwner(0, kNoHost);
  EXPECT_EQ(dut.Bar(kNoHost, 0x100000, 4), kMiss);
  dut.SetOwner(0, 1);
  // Devices at or above the count do not exist for the BAR lookup.
  dut.m().ndev = last;
  EXPECT_EQ(dut.Bar(2, 0x200000, 4), kMiss);
  EXPECT_EQ(dut.Bar(1, 0x100000, 4), BarHit(0, 0xa0000));
  dut.m().ndev = 0;
  EXPECT_EQ(dut.Bar(1, 0x100000, 4), kMiss);
  dut.m().ndev = TypeParam::kDevices;
  // The DMA lookup reads the sender's own windows, whoever owns it.
  EXPECT_EQ(dut.Dma(0, 0x100000, 4), DmaHit(0xc0000));
  EXPECT_EQ(dut.Dma(last, 0x100000, 4), kMiss);
  for (unsigned d = TypeParam::kDevices; d < TypeParam::kIndexes; ++d)
    EXPECT_EQ(dut.Dma(d, 0x100000, 4), kMiss);
}

TYPED_TEST(AddrWindowTest, UnmappingTakesOneCycle) {
  TypeParam dut;
  dut.SetOwners(std::vector<uint16_t>(TypeParam::kDevices, kNoHost));
  dut.SetOwner(0, 1);
  dut.SetOwner(1, 1);
  dut.SetOwner(2, 2);
  for (unsigned d = 0; d < 3; ++d) {
    const uint64_t n = d + 1;
    dut.Write(false, d, 1, {0x100000 * n, 0xa000 * n, 0x1000});
    dut.Write(true, d, 2, {0x100000 * n, 0xd000 * n, 0x1000});
  }
  auto base = [](unsigned d) { return 0x100000 * (uint64_t{d} + 1); };
  auto bar = [&](unsigned d) { return dut.Bar(dut.owners()[d], base(d), 4).hit; };
  auto dma = [&](unsigned d) { return dut.Dma(d, base(d), 4).hit; };
  // Owner change of device 0 (the data path clears on the edge that writes the new owner).
  dut.DriveClearDevice(0, false);
  EXPECT_TRUE(bar(0));
  EXPECT_TRUE(dma(0));  // until the edge
  dut.Tick();
  EXPECT_FALSE(bar(0));
  EXPECT_FALSE(dma(0));
  EXPECT_EQ(dut.Read(false, 0, 1, 0), 0u);
  EXPECT_EQ(dut.Read(true, 0, 2, 2), 0u);
  EXPECT_TRUE(bar(1));
  EXPECT_TRUE(dma(1));
  // CLEAR_DMA of device 1: its DMA windows only.
  dut.DriveClearDevice(1, true);
  EXPECT_TRUE(dma(1));
  dut.Tick();
  EXPECT_FALSE(dma(1));
  EXPECT_TRUE(bar(1));
  // A clear of an index naming no device, and of a host that owns nothing: no change.
  for (unsigned d = TypeParam::kDevices; d < TypeParam::kIndexes; ++d) {
    dut.DriveClearDevice(d, false);
    dut.Tick();
  }
  dut.DriveClearHost(7);
  dut.Tick();
  EXPECT_TRUE(bar(1));
  EXPECT_TRUE(bar(2));
  EXPECT_TRUE(dma(2));
  // A device in the pool with windows: NO_HOST is no host, its release unmaps nothing.
  if (TypeParam::kDevices > 3) {
    dut.Write(true, 3, 0, {0x400000, 0x1000, 0x1000});
    dut.DriveClearHost(kNoHost);
    dut.Tick();
    EXPECT_TRUE(dut.Dma(3, 0x400000, 4).hit);
  }
  // Host 1's release: every window of its devices (1), not host 2's.
  dut.Write(true, 1, 0, {0x200000, 0x1000, 0x1000});
  dut.DriveClearHost(1);
  EXPECT_TRUE(bar(1));
  dut.Tick();
  EXPECT_FALSE(bar(1));
  EXPECT_FALSE(dma(1));
  EXPECT_TRUE(bar(2));
  EXPECT_TRUE(dma(2));
  // clear: everything.
  dut.m().clear = 1;
  EXPECT_TRUE(bar(2));
  dut.Tick();
  EXPECT_FALSE(bar(2));
  EXPECT_FALSE(dma(2));
  for (const uint64_t w : DumpTables(dut)) ASSERT_EQ(w, 0u);
}

// ---- random operations against the reference ----

struct Stats {
  uint64_t ops = 0, idle = 0, refused = 0, bar_hits = 0, bar_probes = 0, dma_hits = 0,
           dma_probes = 0, unmaps = 0;
};

template <typename D>
class RandomRun {
 public:
  RandomRun(D& dut, std::mt19937_64& rng)
      : dut_(dut), rng_(rng), ref_(D::kDevices, D::kDmaWindows), owner_(D::kDevices, kNoHost) {
    for (unsigned d = 0; d < D::kDevices; ++d) owner_[d] = Host();
    dut_.SetOwners(owner_);
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
      if (Pct() < 2) ChangeCount();
    }
    if (!::testing::Test::HasFailure()) CheckAll();  // the last operation's effect
  }
  const Stats& stats() const { return stats_; }

 private:
  unsigned Pct() { return static_cast<unsigned>(rng_() % 100); }
  uint64_t Below(uint64_t n) { return rng_() % n; }
  uint16_t Host() {
    const unsigned p = Pct();
    if (p < 85) return static_cast<uint16_t>(Below(3));
    if (p < 95) return kNoHost;
    return static_cast<uint16_t>(rng_());
  }
  unsigned Dev() {  // mostly a device, sometimes an index naming none
    return static_cast<unsigned>(Pct() < 95 ? Below(D::kDevices) : Below(D::kIndexes));
  }
  // Addresses in 32 slots of 64 KiB at the bottom and at the top of the space, so that windows
  // meet, touch and overlap (overlaps are refused as the firmware refuses them).
  uint64_t Base() {
    const uint64_t slot = Below(32) * 0x10000 + (Pct() < 50 ? 0 : Below(0x10000) & ~uint64_t{3});
    const unsigned p = Pct();
    if (p < 70) return slot;
    if (p < 95) return kTop - slot - (Pct() < 50 ? 0xffff : Below(0x10000));
    return rng_();
  }
  uint64_t Size(uint64_t base) {
    const unsigned p = Pct();
    if (p < 10) return 0;
    if (p < 50) return 1 + Below(0x10000);
    if (p < 75) return uint64_t{1} << Below(17);
    if (p < 85) return kTop - base + 1;  // to 2^64 exactly (0 when base is 0)
    if (p < 92) return 1 + Below(8);
    return rng_();  // usually past 2^64
  }
  uint64_t FieldValue(const Window& w, unsigned field) {
    if (field == 0) return Base();
    if (field == 1) return Pct() < 50 ? Base() : rng_();
    return Size(w.base);
  }

  // Picks an operation, refused (false) when it would break what the firmware guarantees.
  bool DriveOp() {
    const unsigned p = Pct();
    if (p < 80) {
      const bool dma = Pct() < 50;
      const unsigned d = Dev();
      const auto idx = static_cast<unsigned>(Pct() < 95 ? Below(dma ? D::kDmaWindows : kBars)
                                                        : Below(16));  // 6..15: nothing
      const auto field = static_cast<unsigned>(Below(3));
      const Window* slot = ref_.Slot(dma, d, idx);
      const uint64_t value = FieldValue(slot != nullptr ? *slot : Window{}, field);
      WindowsRef next = ref_;
      next.Write(dma, d, idx, field, value);
      if (!next.Disjoint(owner_)) return Refused();
      dut_.DriveWrite(dma, d, idx, field, value);
      apply_ = [this, next] { ref_ = next; };
    } else if (p < 85) {  // a new owner: windows cleared on the edge that sets it
      const unsigned d = Dev();
      const uint16_t h = Host();
      dut_.DriveClearDevice(d, false);
      apply_ = [this, d, h] {
        ref_.ClearDevice(d, false);
        if (d < D::kDevices) SetOwner(d, h);
      };
      ++stats_.unmaps;
    } else if (p < 89) {  // a new owner, windows kept (the lookup follows the owner input)
      const auto d = static_cast<unsigned>(Below(D::kDevices));
      std::vector<uint16_t> owners = owner_;
      owners[d] = Host();
      if (!ref_.Disjoint(owners)) return Refused();
      apply_ = [this, d, h = owners[d]] { SetOwner(d, h); };
      return false;       // no operation of the module's
    } else if (p < 93) {  // CLEAR_DMA
      const unsigned d = Dev();
      dut_.DriveClearDevice(d, true);
      apply_ = [this, d] { ref_.ClearDevice(d, true); };
      ++stats_.unmaps;
    } else if (p < 99) {  // a host released: its windows go, its devices to the pool
      const uint16_t h = Host();
      dut_.DriveClearHost(h);
      apply_ = [this, h] {
        ref_.ClearHost(h, owner_);
        for (unsigned d = 0; d < D::kDevices; ++d) {
          if (owner_[d] == h) SetOwner(d, kNoHost);
        }
      };
      ++stats_.unmaps;
    } else {
      dut_.m().clear = 1;
      apply_ = [this] { ref_.Clear(); };
      ++stats_.unmaps;
    }
    return true;
  }
  bool Refused() {
    ++stats_.refused;
    return false;
  }
  void SetOwner(unsigned d, uint16_t h) {
    owner_[d] = h;
    dut_.SetOwner(d, h);
  }
  void ChangeCount() {
    const unsigned p = Pct();
    ndev_ = p < 50   ? D::kDevices
            : p < 90 ? 1 + static_cast<unsigned>(Below(D::kDevices))
                     : static_cast<unsigned>(Below(2 * D::kIndexes));
    dut_.m().ndev = ndev_;
  }

  // A request near one of the device's windows' edges, or anywhere.
  std::pair<uint64_t, unsigned> Request(const Window& w) {
    const unsigned lp = Pct();
    const auto len = static_cast<unsigned>(lp < 60   ? 4 * (1 + Below(1024))
                                           : lp < 80 ? 1 + Below(8)
                                                     : 1 + Below(0x1fff));
    const uint64_t end = w.base + w.size;  // may wrap: the edges below wrap with it
    switch (Below(9)) {
      case 0:
        return {w.base, len};
      case 1:
        return {w.base - 1 - Below(4), len};
      case 2:
        return {end - len, len};
      case 3:
        return {end - len + 1 + Below(4), len};
      case 4:
        return {w.base + (w.size == 0 ? 0 : Below(w.size)), len};
      case 5:
        return {end - Below(4), len};
      case 6:
        return {kTop - Below(8192), len};
      case 7:
        return {w.base, static_cast<unsigned>(std::min<uint64_t>(w.size + Below(3), 0x1fff))};
      default:
        return {rng_(), len};
    }
  }

  // A window to aim a request at: most of the time a mapped one that a lookup can reach (a BAR
  // window's device exists and has an owner).
  std::pair<unsigned, unsigned> Target(bool dma) {
    auto mapped = ref_.Mapped(dma);
    if (!dma) {
      std::erase_if(mapped, [this](const std::pair<unsigned, unsigned>& w) {
        return w.first >= ndev_ || owner_[w.first] == kNoHost;
      });
    }
    if (!mapped.empty() && Pct() < 80) return mapped[Below(mapped.size())];
    return {static_cast<unsigned>(Below(D::kDevices)),
            static_cast<unsigned>(Below(dma ? D::kDmaWindows : kBars))};
  }

  void CheckAll() {
    for (int i = 0; i < 4; ++i) {
      const auto [d, b] = Target(false);
      const Window& bw = *ref_.Slot(false, d, b);
      const uint16_t host = Pct() < 90 ? owner_[d] : Host();
      auto [addr, len] = Request(bw);
      if (len == 0) len = 1;  // the requests the data path makes: 1..4096 bytes (4..4096)
      const Hit want = ref_.BarLookup(ndev_, owner_, host, addr, len);
      ASSERT_EQ(dut_.Bar(host, addr, len), want)
          << "BAR lookup: host " << host << " addr 0x" << std::hex << addr << std::dec << " len "
          << len << " ndev " << ndev_;
      stats_.bar_hits += want.hit;
      ++stats_.bar_probes;

      const auto [td, tw] = Target(true);
      const Window& dw = *ref_.Slot(true, td, tw);
      const unsigned dd = Pct() < 95 ? td : Dev();
      auto [daddr, dlen] = Request(dw);
      if (dlen == 0) dlen = 1;
      const Hit dwant = ref_.DmaLookup(dd, daddr, dlen);
      ASSERT_EQ(dut_.Dma(dd, daddr, dlen), dwant)
          << "DMA lookup: device " << dd << " addr 0x" << std::hex << daddr << std::dec << " len "
          << dlen;
      stats_.dma_hits += dwant.hit;
      ++stats_.dma_probes;

      const bool dma = Pct() < 50;
      const unsigned rd = Dev();
      const auto idx = static_cast<unsigned>(Below(16));
      const auto field = static_cast<unsigned>(Below(3));
      ASSERT_EQ(dut_.Read(dma, rd, idx, field), ref_.Read(dma, rd, idx, field))
          << (dma ? "DMA" : "BAR") << " read: device " << rd << " index " << idx << " field "
          << field;
    }
  }

  D& dut_;
  std::mt19937_64& rng_;
  WindowsRef ref_;
  std::vector<uint16_t> owner_;
  unsigned ndev_ = D::kDevices;
  std::function<void()> apply_ = [] {};
  Stats stats_;
};

TYPED_TEST(AddrWindowTest, RandomOperationsAgreeWithTheGoldenRules) {
  const dxpu::rtl::TestSeed seed_trace;
  const uint64_t seed = seed_trace.value();
  std::mt19937_64 rng(seed);
  Stats t;
  for (const unsigned idle : {0u, 30u, 70u}) {
    TypeParam dut;
    RandomRun<TypeParam> run(dut, rng);
    run.Run(10000, idle);
    if (::testing::Test::HasFailure()) return;
    const Stats& s = run.stats();
    t.ops += s.ops;
    t.idle += s.idle;
    t.refused += s.refused;
    t.bar_hits += s.bar_hits;
    t.bar_probes += s.bar_probes;
    t.dma_hits += s.dma_hits;
    t.dma_probes += s.dma_probes;
    t.unmaps += s.unmaps;
  }
  std::printf("dxpu_addr_window DEVICES=%u DMA_WINDOWS=%u: %" PRIu64 " operations (%" PRIu64
              " unmaps), %" PRIu64 " idle cycles (%" PRIu64
              " operations refused as overlapping); BAR %" PRIu64 "/%" PRIu64 " hits, DMA %" PRIu64
              "/%" PRIu64 " hits\n",
              TypeParam::kDevices, TypeParam::kDmaWindows, t.ops, t.unmaps, t.idle, t.refused,
              t.bar_hits, t.bar_probes, t.dma_hits, t.dma_probes);
  EXPECT_GT(t.bar_hits, t.bar_probes / 20);
  EXPECT_GT(t.dma_hits, t.dma_probes / 20);
  EXPECT_GT(t.bar_probes - t.bar_hits, t.bar_probes / 10);
  EXPECT_GT(t.dma_probes - t.dma_hits, t.dma_probes / 10);
}

}  // namespace
