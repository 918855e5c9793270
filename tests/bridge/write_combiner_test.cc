// The bridge's write combiner: which writes join, the joined TLP's fields and bytes, and every
// reason a write does not join (a gap, another host or requester, other attributes, partial
// DWs, flags, the cap, a 4 KiB page boundary).
#include "bridge-fw/write_combiner.h"

#include <gtest/gtest.h>

#include <vector>

namespace dxpu::bridge {
namespace {

struct Write {
  dxpu_tlp tlp{};
  std::vector<uint8_t> data;
};

Write MakeWrite(uint64_t addr, uint16_t dws, uint8_t fill) {
  Write w;
  w.data.assign(size_t{dws} * 4, fill);
  w.tlp.kind = DXPU_TLP_MWR;
  w.tlp.addr = addr;
  w.tlp.length_dw = dws;
  w.tlp.first_be = 0xf;
  w.tlp.last_be = dws == 1 ? 0 : 0xf;
  w.tlp.requester_id = 0x0100;
  w.tlp.payload = w.data.data();
  return w;
}

TEST(WriteCombiner, JoinsConsecutiveWholeDwWritesIntoOne) {
  WriteCombiner c;
  EXPECT_FALSE(c.pending());
  const Write a = MakeWrite(0x1'0000'1000, 64, 1);
  const Write b = MakeWrite(0x1'0000'1100, 64, 2);
  const Write one = MakeWrite(0x1'0000'1200, 1, 3);
  c.Start(2, a.tlp);
  EXPECT_TRUE(c.Append(2, b.tlp, 4096));
  EXPECT_TRUE(c.Append(2, one.tlp, 4096));
  EXPECT_EQ(c.pending_bytes(), 516U);
  EXPECT_EQ(c.slot(), 2);
  const dxpu_tlp t = c.Take();
  EXPECT_FALSE(c.pending());
  EXPECT_EQ(c.pending_bytes(), 0U);
  EXPECT_EQ(t.kind, DXPU_TLP_MWR);
  EXPECT_EQ(t.addr, 0x1'0000'1000U);
  EXPECT_EQ(t.length_dw, 129);
  EXPECT_EQ(t.first_be, 0xf);
  EXPECT_EQ(t.last_be, 0xf);
  EXPECT_EQ(t.requester_id, 0x0100);
  std::vector<uint8_t> want(a.data);
  want.insert(want.end(), b.data.begin(), b.data.end());
  want.insert(want.end(), one.data.begin(), one.data.end());
  EXPECT_EQ(std::vector<uint8_t>(t.payload, t.payload + 516), want);
  EXPECT_EQ(dxpu_tlp_validate(&t), DXPU_TLP_OK);
}

TEST(WriteCombiner, RefusesWhatWouldChangeMeaning) {
  const Write a = MakeWrite(0x2000, 64, 1);
  const auto refused = [&](const dxpu_tlp& next, HostSlot slot, uint32_t cap) {
    WriteCombiner c;
    c.Start(0, a.tlp);
    const bool joined = c.Append(slot, next, cap);
    EXPECT_EQ(c.pending_bytes(), joined ? 256U + (next.length_dw * 4U) : 256U);
    return !joined;
  };
  Write next = MakeWrite(0x2100, 64, 2);
  EXPECT_FALSE(refused(next.tlp, 0, 4096));
  EXPECT_TRUE(refused(next.tlp, 1, 4096)) << "another host";
  EXPECT_TRUE(refused(next.tlp, 0, 256)) << "over the cap";
  dxpu_tlp t = next.tlp;
  t.addr = 0x2104;
  EXPECT_TRUE(refused(t, 0, 4096)) << "a gap";
  t = next.tlp;
  t.requester_id = 0x0200;
  EXPECT_TRUE(refused(t, 0, 4096)) << "another requester";
  t = next.tlp;
  t.attr = DXPU_TLP_ATTR_RO;
  EXPECT_TRUE(refused(t, 0, 4096)) << "other attributes";
  t = next.tlp;
  t.tc = 3;
  EXPECT_TRUE(refused(t, 0, 4096)) << "another traffic class";
  t = next.tlp;
  t.last_be = 0x3;
  EXPECT_TRUE(refused(t, 0, 4096)) << "a partial last DW";
  t = next.tlp;
  t.flags = DXPU_TLP_F_EP;
  EXPECT_TRUE(refused(t, 0, 4096)) << "poisoned";
  t = next.tlp;
  t.kind = DXPU_TLP_MRD;
  EXPECT_TRUE(refused(t, 0, 4096)) << "a read";
  // Crossing a 4 KiB page: 0x2f00 + 256 ends at 0x3000, fine; the next does not fit.
  WriteCombiner c;
  const Write start = MakeWrite(0x2e00, 64, 1);
  const Write in_page = MakeWrite(0x2f00, 64, 2);
  const Write next_page = MakeWrite(0x3000, 64, 3);
  c.Start(0, start.tlp);
  EXPECT_TRUE(c.Append(0, in_page.tlp, 4096));
  EXPECT_FALSE(c.Append(0, next_page.tlp, 4096));
  EXPECT_TRUE(WriteCombiner::Joinable(MakeWrite(0x4000, 1, 0).tlp));
  Write partial = MakeWrite(0x4000, 2, 0);
  partial.tlp.first_be = 0x8;
  EXPECT_FALSE(WriteCombiner::Joinable(partial.tlp));
}

}  // namespace
}  // namespace dxpu::bridge
