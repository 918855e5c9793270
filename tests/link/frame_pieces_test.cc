// A frame handed to a link in pieces (scatter-gather, link::FramePieces) arrives as one
// datagram with the pieces' bytes in order; too many pieces or too many bytes are refused
// and counted, on every link. (AF_PACKET sends through the same SendEthernet as AF_UNIX; its
// round trip is not repeated here because every packet socket on lo sees every DxFP frame,
// so it would race packet_link_test's round trip when ctest runs them in parallel.)
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "link/link.h"
#include "link/memory_link.h"
#include "link/packet_link.h"
#include "link/udp_link.h"
#include "link/unix_dgram_link.h"

namespace dxpu::link {
namespace {

constexpr MacAddress kPieceMacA = {0x02, 0, 0, 0, 0, 0x1a};
constexpr MacAddress kPieceMacB = {0x02, 0, 0, 0, 0, 0x1b};

// Two connected links and the address that reaches b from a.
struct LinkPair {
  std::unique_ptr<Link> a;
  std::unique_ptr<Link> b;
  LinkAddress to_b;
  std::filesystem::path dir;  // AF_UNIX sockets live here

  LinkPair() = default;
  LinkPair(const LinkPair&) = delete;
  LinkPair& operator=(const LinkPair&) = delete;
  LinkPair(LinkPair&&) = default;
  LinkPair& operator=(LinkPair&&) = default;
  ~LinkPair() {
    a.reset();
    b.reset();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

LinkPair Open(const std::string& kind) {
  LinkPair p;
  if (kind == "memory") {
    auto pair = MemoryLink::Pair(8);
    p.a = std::move(pair.a);
    p.b = std::move(pair.b);
  } else if (kind == "udp") {
    auto a = UdpLink::Open("127.0.0.1", 0, {.mtu = 9000});
    auto b = UdpLink::Open("127.0.0.1", 0, {.mtu = 9000});
    if (b.ok()) p.to_b = b.link->local_address();
    p.a = std::move(a.link);
    p.b = std::move(b.link);
  } else if (kind == "unix") {
    std::string tmpl = (std::filesystem::temp_directory_path() / "dxpu-pieces-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return p;
    p.dir = tmpl;
    const std::string a_path = (p.dir / "a.sock").string();
    const std::string b_path = (p.dir / "b.sock").string();
    auto a = UnixDgramLink::Open(
        {.local_path = a_path, .remote_path = b_path, .mac = kPieceMacA, .mtu = 9216});
    auto b = UnixDgramLink::Open(
        {.local_path = b_path, .remote_path = a_path, .mac = kPieceMacB, .mtu = 9216});
    p.a = std::move(a.link);
    p.b = std::move(b.link);
    p.to_b = LinkAddress::Mac(kPieceMacB);
  } else if (kind == "packet") {
    auto a = PacketLink::Open({.interface = "lo", .mac = kPieceMacA});
    auto b = PacketLink::Open({.interface = "lo", .mac = kPieceMacB});
    p.a = std::move(a.link);
    p.b = std::move(b.link);
    p.to_b = LinkAddress::Mac(kPieceMacB);
  }
  return p;
}

// The next datagram b receives.
std::vector<uint8_t> ReceiveOne(Link& b) {
  std::vector<uint8_t> buf(DXFP_MAX_FRAME);
  for (int i = 0; i < 100; ++i) {
    pollfd p{b.fd(), POLLIN, 0};
    if (::poll(&p, 1, 2000) != 1) return {};
    const LinkResult r = b.Receive(buf, nullptr);
    if (r.ok()) {
      buf.resize(r.size);
      return buf;
    }
  }
  return {};
}

class FramePiecesTest : public ::testing::TestWithParam<std::string> {};
using FramePiecesRoundTrip = FramePiecesTest;

TEST_P(FramePiecesRoundTrip, PiecesArriveAsOneDatagramInOrder) {
  LinkPair p = Open(GetParam());
  ASSERT_TRUE(p.a && p.b) << "cannot open the " << GetParam() << " links";
  ASSERT_GE(p.a->max_frame(), 8000u);
  // Five pieces, one empty, of sizes a frame really has: head, two runs of records, CRC.
  std::vector<uint8_t> bytes(60 + 4112 + 0 + 3000 + 4);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 13 + 5);
  const std::span<const uint8_t> all(bytes);
  const std::array<std::span<const uint8_t>, 5> pieces = {
      all.subspan(0, 60), all.subspan(60, 4112), all.subspan(4172, 0), all.subspan(4172, 3000),
      all.subspan(7172, 4)};
  ASSERT_FALSE(p.a->SendPieces(p.to_b, pieces));
  EXPECT_EQ(ReceiveOne(*p.b), bytes);
  EXPECT_EQ(p.a->counters().frames_sent, 1u);
  EXPECT_EQ(p.a->counters().bytes_sent, bytes.size());

  // Gathered, the same pieces are the same frame.
  std::vector<uint8_t> gathered(bytes.size());
  EXPECT_EQ(GatherFrame(pieces, gathered), bytes.size());
  EXPECT_EQ(gathered, bytes);
}

TEST_P(FramePiecesTest, TooManyPiecesOrBytesAreRefusedAndCounted) {
  LinkPair p = Open(GetParam());
  ASSERT_TRUE(p.a && p.b) << "cannot open the " << GetParam() << " links";
  const std::vector<uint8_t> byte = {0x5a};
  const std::vector<std::span<const uint8_t>> many(kMaxFramePieces + 1,
                                                   std::span<const uint8_t>(byte));
  EXPECT_EQ(p.a->SendPieces(p.to_b, many), std::errc::invalid_argument);
  const std::vector<uint8_t> half(p.a->max_frame() / 2 + 1, 1);
  const std::array<std::span<const uint8_t>, 2> over = {std::span(half), std::span(half)};
  EXPECT_EQ(p.a->SendPieces(p.to_b, over), std::errc::message_size);
  EXPECT_EQ(p.a->counters().send_errors, 2u);
  EXPECT_EQ(p.a->counters().frames_sent, 0u);
}

TEST_P(FramePiecesRoundTrip, TheMostPiecesAreSent) {
  LinkPair p = Open(GetParam());
  ASSERT_TRUE(p.a && p.b) << "cannot open the " << GetParam() << " links";
  std::vector<uint8_t> bytes(kMaxFramePieces);
  std::vector<std::span<const uint8_t>> pieces;
  for (size_t i = 0; i < kMaxFramePieces; ++i) {
    bytes[i] = static_cast<uint8_t>(0xa0 + i);
    pieces.emplace_back(&bytes[i], 1);
  }
  ASSERT_FALSE(p.a->SendPieces(p.to_b, pieces));
  EXPECT_EQ(ReceiveOne(*p.b), bytes);
}

INSTANTIATE_TEST_SUITE_P(Links, FramePiecesTest,
                         ::testing::Values("memory", "udp", "unix", "packet"),
                         [](const auto& param_info) { return param_info.param; });
INSTANTIATE_TEST_SUITE_P(Links, FramePiecesRoundTrip, ::testing::Values("memory", "udp", "unix"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace dxpu::link
