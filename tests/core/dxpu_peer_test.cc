// Peer-to-peer routing between attached devices (lib/core/dxpu_peer.h): which device a TLP
// goes to, or none.
#include "core/dxpu_peer.h"

#include <gtest/gtest.h>

#include <array>

namespace dxpu {
namespace {

constexpr uint16_t kHost = 0x0000;

struct Table {
  std::array<dxpu_peer, 3> p{{
      {.window = 0x40'0000'0000, .window_size = 0x1000'0000, .bdf = 0x0100, .in_use = 1},
      {.window = 0x40'1000'0000, .window_size = 0x1000'0000, .bdf = 0x0200, .in_use = 1},
      {.window = 0, .window_size = 0, .bdf = 0x0300, .in_use = 1},  // no window set
  }};
  int Route(const dxpu_tlp& t, int from = DXPU_PEER_NONE) const {
    return dxpu_peer_route(p.data(), p.size(), &t, kHost, from);
  }
};

dxpu_tlp Mem(uint8_t kind, uint64_t addr, uint16_t dws, uint16_t requester) {
  dxpu_tlp t{};
  t.kind = kind;
  t.addr = addr;
  t.length_dw = dws;
  t.requester_id = requester;
  return t;
}

dxpu_tlp Cpl(uint8_t kind, uint16_t requester) {
  dxpu_tlp t{};
  t.kind = kind;
  t.requester_id = requester;
  return t;
}

TEST(PeerRoute, RequestsInsideAWindowGoToItsDevice) {
  const Table t;
  EXPECT_EQ(t.Route(Mem(DXPU_TLP_MWR, 0x40'1000'0000, 1, 0x0100)), 1);
  EXPECT_EQ(t.Route(Mem(DXPU_TLP_MRD, 0x40'0fff'fff0, 4, 0x0200)), 0);  // the last 16 bytes
  // Straddling two windows: neither device's whole.
  EXPECT_EQ(t.Route(Mem(DXPU_TLP_MRD, 0x40'0fff'fff4, 4, 0x0200)), DXPU_PEER_NONE);
  EXPECT_EQ(t.Route(Mem(DXPU_TLP_MWR, 0x3f'ffff'fffc, 2, 0x0100)), DXPU_PEER_NONE);
  EXPECT_EQ(t.Route(Mem(DXPU_TLP_MWR, 0x1'0000'0000, 1, 0x0100)), DXPU_PEER_NONE);  // host memory
  EXPECT_EQ(t.Route(Mem(DXPU_TLP_MWR, 0, 1, 0x0100)), DXPU_PEER_NONE);  // a zero-size window
}

TEST(PeerRoute, NeverBackToTheSenderNorToAFreeSlot) {
  Table t;
  EXPECT_EQ(t.Route(Mem(DXPU_TLP_MWR, 0x40'0000'1000, 1, 0x0100), 0), DXPU_PEER_NONE);
  t.p[1].in_use = 0;
  EXPECT_EQ(t.Route(Mem(DXPU_TLP_MWR, 0x40'1000'0000, 1, 0x0100)), DXPU_PEER_NONE);
  EXPECT_EQ(t.Route(Cpl(DXPU_TLP_CPLD, 0x0200)), DXPU_PEER_NONE);
}

TEST(PeerRoute, CompletionsGoToTheDeviceThatAsked) {
  const Table t;
  EXPECT_EQ(t.Route(Cpl(DXPU_TLP_CPLD, 0x0100)), 0);
  EXPECT_EQ(t.Route(Cpl(DXPU_TLP_CPL, 0x0300)), 2);
  EXPECT_EQ(t.Route(Cpl(DXPU_TLP_CPLD, kHost)), DXPU_PEER_NONE);   // the host's own request
  EXPECT_EQ(t.Route(Cpl(DXPU_TLP_CPLD, 0x0900)), DXPU_PEER_NONE);  // nobody's
  EXPECT_EQ(t.Route(Cpl(DXPU_TLP_CPLD, 0x0100), 0), DXPU_PEER_NONE);
}

TEST(PeerRoute, AnAmbiguousRequesterIsNobodys) {
  Table t;
  t.p[1].bdf = 0x0100;  // the same BDF behind two bridges
  EXPECT_EQ(t.Route(Cpl(DXPU_TLP_CPLD, 0x0100)), DXPU_PEER_NONE);
}

TEST(PeerRoute, OtherKindsAreNeverRouted) {
  const Table t;
  dxpu_tlp m = Mem(DXPU_TLP_MWR, 0x40'1000'0000, 1, 0x0100);
  for (uint8_t kind : {DXPU_TLP_CFGRD0, DXPU_TLP_CFGWR0, DXPU_TLP_MSG, DXPU_TLP_MSGD}) {
    m.kind = kind;
    EXPECT_EQ(t.Route(m), DXPU_PEER_NONE) << int{kind};
  }
}

}  // namespace
}  // namespace dxpu
