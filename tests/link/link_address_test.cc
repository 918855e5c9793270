// Tests for LinkAddress: parsing, socket address round trips, strings, order and hashing.
#include "link/link_address.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <unordered_set>

namespace dxpu::link {
namespace {

TEST(LinkAddress, Ipv4RoundTripsThroughSockaddr) {
  const auto a = LinkAddress::FromIp("192.0.2.7", 17480);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->ToString(), "192.0.2.7:17480");
  sockaddr_storage ss{};
  const socklen_t len = a->ToSockaddr(&ss);
  ASSERT_EQ(len, sizeof(sockaddr_in));
  const auto b = LinkAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&ss), len);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*a, *b);
}

TEST(LinkAddress, Ipv6WithScopeRoundTripsThroughSockaddr) {
  const auto a = LinkAddress::FromIp("fe80::1%7", 9);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->ToString(), "[fe80::1%7]:9");
  sockaddr_storage ss{};
  const socklen_t len = a->ToSockaddr(&ss);
  ASSERT_EQ(len, sizeof(sockaddr_in6));
  const auto b = LinkAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&ss), len);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*a, *b);
}

TEST(LinkAddress, RejectsNonNumericAndShortSockaddr) {
  EXPECT_FALSE(LinkAddress::FromIp("localhost", 1).has_value());
  EXPECT_FALSE(LinkAddress::FromIp("::1%", 1).has_value());
  sockaddr_storage ss{};
  ss.ss_family = AF_INET6;
  EXPECT_FALSE(
      LinkAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&ss), sizeof(sockaddr_in))
          .has_value());
}

TEST(LinkAddress, UnixPathAndMacStrings) {
  EXPECT_EQ(LinkAddress::Unix("/run/a.sock").ToString(), "unix:/run/a.sock");
  EXPECT_EQ(LinkAddress::Mac({0x02, 0xab, 0, 0, 0x10, 0xff}).ToString(), "02:ab:00:00:10:ff");
  EXPECT_EQ(LinkAddress().ToString(), "none");
  sockaddr_storage ss{};
  EXPECT_EQ(LinkAddress::Unix(std::string(sizeof(sockaddr_un::sun_path), 'x')).ToSockaddr(&ss), 0u);
  EXPECT_EQ(LinkAddress::Mac({}).ToSockaddr(&ss), 0u);
}

TEST(LinkAddress, ComparesAndHashesByValue) {
  std::unordered_set<LinkAddress> set;
  set.insert(*LinkAddress::FromIp("127.0.0.1", 1));
  set.insert(*LinkAddress::FromIp("127.0.0.1", 1));
  set.insert(*LinkAddress::FromIp("127.0.0.1", 2));
  set.insert(LinkAddress::Unix("/a"));
  set.insert(LinkAddress::Mac({1, 2, 3, 4, 5, 6}));
  set.insert(LinkAddress());
  EXPECT_EQ(set.size(), 5u);
  EXPECT_LT(*LinkAddress::FromIp("127.0.0.1", 1), *LinkAddress::FromIp("127.0.0.1", 2));
  EXPECT_NE(LinkAddress::Unix("/a"), LinkAddress::Unix("/b"));
}

}  // namespace
}  // namespace dxpu::link
