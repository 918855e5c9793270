// Tests for UdpLink on the loopback addresses 127.0.0.1 and ::1, with ephemeral ports.
#include "link/udp_link.h"

#include <gtest/gtest.h>
#include <poll.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dxpu::link {
namespace {

// Waits (briefly) for fd to become readable: loopback delivery is immediate, but not
// necessarily before sendto returns to the caller.
bool WaitReadable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 2000) == 1;
}

void RoundTrip(const std::string& ip) {
  auto a = UdpLink::Open(ip, 0);
  ASSERT_TRUE(a.ok()) << "cannot bind UDP on " << ip << ": " << a.error.message()
                      << " (this host must have " << ip << " configured)";
  auto b = UdpLink::Open(ip, 0);
  ASSERT_TRUE(b.ok()) << b.error.message();
  ASSERT_TRUE(a.link->local_address().is_ip());
  EXPECT_NE(a.link->local_address().ip().port, 0);
  EXPECT_NE(a.link->local_address(), b.link->local_address());

  std::vector<uint8_t> frame(200);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>(i * 7);
  ASSERT_FALSE(a.link->Send(b.link->local_address(), frame));
  ASSERT_TRUE(WaitReadable(b.link->fd()));
  std::array<uint8_t, 2048> buf{};
  LinkAddress from;
  const LinkResult r = b.link->Receive(buf, &from);
  ASSERT_TRUE(r.ok()) << r.error.message();
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<long>(r.size)), frame);
  EXPECT_EQ(from, a.link->local_address());
  EXPECT_TRUE(b.link->Receive(buf, &from).would_block);

  // Reply to the address we heard from.
  ASSERT_FALSE(b.link->Send(from, std::span(frame).first(36)));
  ASSERT_TRUE(WaitReadable(a.link->fd()));
  EXPECT_EQ(a.link->Receive(buf, nullptr).size, 36u);

  EXPECT_EQ(a.link->counters().frames_sent, 1u);
  EXPECT_EQ(a.link->counters().bytes_sent, 200u);
  EXPECT_EQ(b.link->counters().frames_received, 1u);
  EXPECT_EQ(b.link->counters().bytes_received, 200u);
}

TEST(UdpLink, RoundTripIpv4Loopback) { RoundTrip("127.0.0.1"); }

TEST(UdpLink, RoundTripIpv6Loopback) { RoundTrip("::1"); }

TEST(UdpLink, MaxFrameFollowsMtuAndFamily) {
  auto v4 = UdpLink::Open("127.0.0.1", 0);
  auto v6 = UdpLink::Open("::1", 0);
  ASSERT_TRUE(v4.ok() && v6.ok()) << "IPv4 and IPv6 loopback are both required";
  EXPECT_EQ(v4.link->max_frame(), 1472u);
  EXPECT_EQ(v6.link->max_frame(), 1452u);
  auto j4 = UdpLink::Open("127.0.0.1", 0, {.mtu = 9000});
  auto j6 = UdpLink::Open("::1", 0, {.mtu = 9000});
  ASSERT_TRUE(j4.ok() && j6.ok());
  EXPECT_EQ(j4.link->max_frame(), 8972u);
  EXPECT_EQ(j6.link->max_frame(), 8952u);
  auto tiny = UdpLink::Open("127.0.0.1", 0, {.mtu = 40});
  EXPECT_FALSE(tiny.ok());
  EXPECT_EQ(tiny.error, std::errc::invalid_argument);
  EXPECT_EQ(UdpLink::Open("not-an-ip", 0).error, std::errc::invalid_argument);
}

TEST(UdpLink, DatagramLargerThanBufferIsDroppedAndCounted) {
  auto a = UdpLink::Open("127.0.0.1", 0);
  auto b = UdpLink::Open("127.0.0.1", 0);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<uint8_t> big(1000, 0xaa);
  const std::vector<uint8_t> small(40, 0x55);
  ASSERT_FALSE(a.link->Send(b.link->local_address(), big));
  ASSERT_FALSE(a.link->Send(b.link->local_address(), small));
  ASSERT_TRUE(WaitReadable(b.link->fd()));
  std::array<uint8_t, 100> buf{};
  LinkResult r = b.link->Receive(buf, nullptr);
  for (int i = 0; i < 100 && r.would_block; ++i) {  // the second datagram may lag
    WaitReadable(b.link->fd());
    r = b.link->Receive(buf, nullptr);
  }
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.size, 40u);
  EXPECT_EQ(buf[0], 0x55);
  EXPECT_EQ(b.link->counters().dropped, 1u);
  EXPECT_EQ(b.link->counters().frames_received, 1u);
}

TEST(UdpLink, RefusesOversizedFramesAndWrongFamily) {
  auto a = UdpLink::Open("127.0.0.1", 0);
  ASSERT_TRUE(a.ok());
  const std::vector<uint8_t> too_big(1473);
  EXPECT_EQ(a.link->Send(a.link->local_address(), too_big), std::errc::message_size);
  const std::vector<uint8_t> ok(36);
  EXPECT_EQ(a.link->Send(*LinkAddress::FromIp("::1", 1), ok),
            std::errc::address_family_not_supported);
  EXPECT_EQ(a.link->Send(LinkAddress::Unix("/x"), ok), std::errc::address_family_not_supported);
  EXPECT_EQ(a.link->counters().send_errors, 3u);
  EXPECT_EQ(a.link->counters().frames_sent, 0u);
}

}  // namespace
}  // namespace dxpu::link
