// Tests for PacketLink on the loopback interface (needs CAP_NET_RAW).
#include "link/packet_link.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <array>
#include <cstdint>
#include <vector>

namespace dxpu::link {
namespace {

TEST(PacketLink, RoundTripOnLoopback) {
  constexpr MacAddress kA = {0x02, 0, 0, 0, 0, 0xa1};
  constexpr MacAddress kB = {0x02, 0, 0, 0, 0, 0xb2};
  auto a = PacketLink::Open({.interface = "lo", .mac = kA});
  ASSERT_TRUE(a.ok()) << "AF_PACKET on lo needs CAP_NET_RAW: " << a.error.message();
  auto b = PacketLink::Open({.interface = "lo", .mac = kB});
  ASSERT_TRUE(b.ok()) << b.error.message();
  EXPECT_EQ(a.link->max_frame(), 9216u);  // lo's MTU (65536) capped at DXFP_MAX_FRAME

  std::vector<uint8_t> frame(100);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>(3 * i);
  ASSERT_FALSE(a.link->Send(LinkAddress::Mac(kB), frame));
  pollfd p{b.link->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  std::array<uint8_t, 1500> buf{};
  LinkAddress from;
  const LinkResult r = b.link->Receive(buf, &from);
  ASSERT_TRUE(r.ok()) << r.error.message();
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<long>(r.size)), frame);
  EXPECT_EQ(from, LinkAddress::Mac(kA));

  // A frame larger than the buffer is dropped and counted.
  ASSERT_FALSE(a.link->Send(LinkAddress::Mac(kB), std::vector<uint8_t>(2000, 1)));
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  std::array<uint8_t, 64> small{};
  EXPECT_FALSE(b.link->Receive(small, nullptr).ok());
  EXPECT_EQ(b.link->counters().dropped, 1u);
  EXPECT_EQ(PacketLink::Open({.interface = "no-such-if0"}).error, std::errc::no_such_device);
}

}  // namespace
}  // namespace dxpu::link
