// Tests for UnixDgramLink: QEMU -netdev dgram framing over AF_UNIX datagrams.
#include "link/unix_dgram_link.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "dxpu/dxfp.h"
#include "link/unique_fd.h"

namespace dxpu::link {
namespace {

constexpr MacAddress kMacA = {0x02, 0, 0, 0, 0, 0x0a};
constexpr MacAddress kMacB = {0x02, 0, 0, 0, 0, 0x0b};

class UnixDgramLinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dxpu-link-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto a = UnixDgramLink::Open(
        {.local_path = Path("a.sock"), .remote_path = Path("b.sock"), .mac = kMacA});
    ASSERT_TRUE(a.ok()) << a.error.message();
    auto b = UnixDgramLink::Open(
        {.local_path = Path("b.sock"), .remote_path = Path("a.sock"), .mac = kMacB});
    ASSERT_TRUE(b.ok()) << b.error.message();
    a_ = std::move(a.link);
    b_ = std::move(b.link);
  }

  void TearDown() override {
    a_.reset();
    b_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string Path(const char* name) const { return (dir_ / name).string(); }

  // Sends raw bytes to b's socket from an unbound plain AF_UNIX datagram socket.
  void Inject(const std::vector<uint8_t>& datagram) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(fd.valid());
    sockaddr_un sun{};
    sun.sun_family = AF_UNIX;
    const std::string path = Path("b.sock");
    std::memcpy(sun.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(::sendto(fd.get(), datagram.data(), datagram.size(), 0,
                       reinterpret_cast<const sockaddr*>(&sun), sizeof(sun)),
              static_cast<ssize_t>(datagram.size()));
  }

  std::filesystem::path dir_;
  std::unique_ptr<UnixDgramLink> a_;
  std::unique_ptr<UnixDgramLink> b_;
};

std::vector<uint8_t> TestFrame(size_t n) {
  std::vector<uint8_t> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = static_cast<uint8_t>(i + 1);
  return f;
}

TEST_F(UnixDgramLinkTest, RoundTripWithEthernetHeader) {
  const auto frame = TestFrame(64);
  ASSERT_FALSE(a_->Send(LinkAddress::Mac(kMacB), frame));
  std::array<uint8_t, 1500> buf{};
  LinkAddress from;
  const LinkResult r = b_->Receive(buf, &from);
  ASSERT_TRUE(r.ok()) << r.error.message();
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<long>(r.size)), frame);
  EXPECT_EQ(from, LinkAddress::Mac(kMacA));
  EXPECT_TRUE(b_->Receive(buf, &from).would_block);
  EXPECT_EQ(a_->counters().bytes_sent, 64u);
  EXPECT_EQ(b_->counters().bytes_received, 64u);
  EXPECT_EQ(a_->max_frame(), 1500u);
}

TEST_F(UnixDgramLinkTest, WireFormatIsPlainEthernet) {
  // Receive a's datagram on a plain socket bound at b's path to see the exact bytes.
  b_.reset();
  UniqueFd raw(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(raw.valid());
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  const std::string path = Path("b.sock");
  std::memcpy(sun.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(raw.get(), reinterpret_cast<const sockaddr*>(&sun), sizeof(sun)), 0);
  const auto frame = TestFrame(36);
  ASSERT_FALSE(a_->Send(LinkAddress::Mac(kMacB), frame));
  std::array<uint8_t, 256> buf{};
  const ssize_t n = ::recv(raw.get(), buf.data(), buf.size(), MSG_DONTWAIT);
  ASSERT_EQ(n, 14 + 36);
  const std::vector<uint8_t> header(buf.begin(), buf.begin() + 14);
  const std::vector<uint8_t> expected = {0x02, 0, 0, 0, 0,    0x0b, 0x02,
                                         0,    0, 0, 0, 0x0a, 0x88, 0xb5};
  EXPECT_EQ(header, expected);
  EXPECT_EQ(std::vector<uint8_t>(buf.begin() + 14, buf.begin() + n), frame);
}

TEST_F(UnixDgramLinkTest, OtherEtherTypeAndRuntsAreDroppedAndCounted) {
  std::vector<uint8_t> ipv4 = {0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0c, 0x08, 0x00};
  ipv4.resize(60, 0x45);
  Inject(ipv4);
  Inject({0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0c, 0x88});  // 13 bytes
  std::vector<uint8_t> good = {0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0c, 0x88, 0xb5};
  const auto frame = TestFrame(36);
  good.insert(good.end(), frame.begin(), frame.end());
  good.resize(60, 0);  // Ethernet minimum-size padding stays with the payload
  Inject(good);

  std::array<uint8_t, 1500> buf{};
  LinkAddress from;
  const LinkResult r = b_->Receive(buf, &from);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.size, 46u);
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + 36), frame);
  EXPECT_EQ(from, LinkAddress::Mac({0x02, 0, 0, 0, 0, 0x0c}));
  EXPECT_EQ(b_->counters().dropped, 2u);
  EXPECT_EQ(b_->counters().frames_received, 1u);
  EXPECT_TRUE(b_->Receive(buf, &from).would_block);
}

// A frame for another MAC (what a QEMU socket network or a veth hands every end) is dropped and
// counted, as a NIC out of promiscuous mode drops it: a HELLO meant for another bridge never
// reaches this one's sessions. Broadcast is no exception: DxFP never broadcasts.
TEST_F(UnixDgramLinkTest, FramesForAnotherMacAreDroppedAndCounted) {
  const auto frame = TestFrame(36);
  const auto datagram = [&](const MacAddress& dst) {
    std::vector<uint8_t> d(dst.begin(), dst.end());
    d.insert(d.end(), {0x02, 0, 0, 0, 0, 0x0c, 0x88, 0xb5});
    d.insert(d.end(), frame.begin(), frame.end());
    return d;
  };
  Inject(datagram(kMacA));  // a's MAC, arriving at b
  Inject(datagram({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  Inject(datagram({0x02, 0, 0, 0, 0, 0x0c}));
  Inject(datagram(kMacB));

  std::array<uint8_t, 1500> buf{};
  LinkAddress from;
  const LinkResult r = b_->Receive(buf, &from);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + 36), frame);
  EXPECT_EQ(b_->counters().dropped, 3u);
  EXPECT_EQ(b_->counters().frames_received, 1u);
  EXPECT_TRUE(b_->Receive(buf, &from).would_block);
}

TEST_F(UnixDgramLinkTest, VlanTaggedFrameIsUnwrapped) {
  std::vector<uint8_t> tagged = {0x02, 0, 0,    0,    0,    0x0b, 0x02, 0,    0,
                                 0,    0, 0x0c, 0x81, 0x00, 0x00, 0x05, 0x88, 0xb5};
  const auto frame = TestFrame(40);
  tagged.insert(tagged.end(), frame.begin(), frame.end());
  Inject(tagged);
  std::array<uint8_t, 1500> buf{};
  const LinkResult r = b_->Receive(buf, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<long>(r.size)), frame);
}

TEST_F(UnixDgramLinkTest, DatagramLargerThanBufferIsDroppedAndCounted) {
  ASSERT_FALSE(a_->Send(LinkAddress::Mac(kMacB), TestFrame(500)));
  ASSERT_FALSE(a_->Send(LinkAddress::Mac(kMacB), TestFrame(50)));
  std::array<uint8_t, 100> buf{};
  const LinkResult r = b_->Receive(buf, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.size, 50u);
  EXPECT_EQ(b_->counters().dropped, 1u);
}

TEST_F(UnixDgramLinkTest, RefusesBadSendsAndReportsReadiness) {
  EXPECT_EQ(a_->Send(LinkAddress::Mac(kMacB), TestFrame(1501)), std::errc::message_size);
  EXPECT_EQ(a_->Send(LinkAddress::Unix("/x"), TestFrame(40)),
            std::errc::address_family_not_supported);
  EXPECT_EQ(a_->counters().send_errors, 2u);
  pollfd p{b_->fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  ASSERT_FALSE(a_->Send(LinkAddress::Mac(kMacB), TestFrame(40)));
  EXPECT_EQ(::poll(&p, 1, 1000), 1);
}

TEST_F(UnixDgramLinkTest, RemovesItsSocketFileAndRefusesATakenPath) {
  auto again = UnixDgramLink::Open({.local_path = Path("a.sock"), .remote_path = Path("b.sock")});
  EXPECT_EQ(again.error, std::errc::address_in_use);
  a_.reset();
  EXPECT_FALSE(std::filesystem::exists(Path("a.sock")));
  auto too_long = UnixDgramLink::Open({.local_path = std::string(200, 'x'), .remote_path = "y"});
  EXPECT_EQ(too_long.error, std::errc::filename_too_long);
}

}  // namespace
}  // namespace dxpu::link
