// Writes a pcap of DxFP frames built with lib/core's writer, for the Wireshark
// dissector test (tests/tools/wireshark_test.sh). Usage: dxfp_pcap_writer OUT.pcap [UDP_PORT]
//   1  Ethernet, DATA seq 100 ack 7: MRd 4DW (0x400000010, tag 7), CplD 4 B, MWr 3DW 8 B
//   2  UDP/IPv4 to UDP_PORT (default 17480, DXFP_UDP_PORT), HELLO: HELLO record
//      (node 0x1122334455667788) + CREDIT
//   3  Ethernet, DATA seq 5 with its CRC32C corrupted
//   4  UDP/IPv4 to UDP_PORT, frame 2's HELLO with its CRC32C corrupted (no DxFP for the heuristic)
// With --auth (dxfp_pcap_writer --auth OUT.pcap), an authenticated session's first frames
// instead (docs/protocol.md 4.12), each over Ethernet:
//   1  HELLO: HELLO, CREDIT, NOISE (104 B), MAC1, MAC2
//   2  WELCOME: HELLO, CREDIT, NOISE (48 B)
//   3  DATA, sealed, counter 0 (the host's first frame: an MWr of 8 bytes)
//   4  COOKIE: COOKIE (a bridge under load answering frame 1)
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/dxfp_handshake.h"
#include "core/dxfp_session.h"
#include "crypto/fabric_keys.h"

namespace {

using Bytes = std::vector<uint8_t>;

void put16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}

void put32le(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

Bytes ethernet(uint16_t ethertype) {
  Bytes b = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01};
  put16(b, ethertype);
  return b;
}

// An 8-byte memory write to 0xf0000040.
dxpu_tlp mwr_8_bytes(const uint8_t* data) {
  dxpu_tlp mwr{};
  mwr.kind = DXPU_TLP_MWR;
  mwr.addr = 0xf0000040;
  mwr.length_dw = 2;
  mwr.first_be = 0xf;
  mwr.last_be = 0xf;
  mwr.payload = data;
  return mwr;
}

Bytes finish(dxfp_writer& w, Bytes& buf) {
  size_t len = 0;
  dxfp_writer_finish(&w, &len);
  return {buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(len)};
}

Bytes data_frame() {
  Bytes buf(1500);
  dxfp_header h{};
  h.type = DXFP_DATA;
  h.dst_session = 1;
  h.src_session = 2;
  h.dst_epoch = 3;
  h.src_epoch = 4;
  h.seq = 100;
  h.ack = 7;
  dxfp_writer w{};
  dxfp_writer_init(&w, buf.data(), buf.size(), &h);
  static const uint8_t kData[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  dxpu_tlp mrd{};
  mrd.kind = DXPU_TLP_MRD;
  mrd.tag = 7;
  mrd.addr = 0x400000010ULL;
  mrd.length_dw = 1;
  mrd.first_be = 0xf;
  dxpu_tlp cpld{};
  cpld.kind = DXPU_TLP_CPLD;
  cpld.completer_id = 0x0100;
  cpld.tag = 7;
  cpld.length_dw = 1;
  cpld.byte_count = 4;
  cpld.lower_addr = 0x10;
  cpld.payload = kData;
  const dxpu_tlp mwr = mwr_8_bytes(kData);
  for (const dxpu_tlp* t : std::initializer_list<const dxpu_tlp*>{&mrd, &cpld, &mwr}) {
    if (dxfp_writer_add_tlp(&w, t) != DXFP_OK) std::abort();
  }
  return finish(w, buf);
}

Bytes hello_frame() {
  Bytes buf(1500);
  dxfp_header h{};
  h.type = DXFP_HELLO;
  h.src_session = 9;
  h.src_epoch = 0xabcdef01;
  dxfp_writer w{};
  dxfp_writer_init(&w, buf.data(), buf.size(), &h);
  dxfp_hello hello{1, 1, 0, 1472, 0x1122334455667788ULL, 1024};
  dxfp_credits cr{{64, 32, 64}, {1024, 0, 1024}};
  if (dxfp_writer_add_hello(&w, &hello) != DXFP_OK) std::abort();
  if (dxfp_writer_add_credits(&w, &cr) != DXFP_OK) std::abort();
  return finish(w, buf);
}

Bytes udp_ipv4(const Bytes& payload, uint16_t port) {
  Bytes b = ethernet(0x0800);
  uint16_t total = static_cast<uint16_t>(20 + 8 + payload.size());
  Bytes ip = {0x45, 0};
  put16(ip, total);
  ip.insert(ip.end(), {0, 0, 0x40, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1});
  uint32_t sum = 0;
  for (size_t i = 0; i < ip.size(); i += 2) sum += static_cast<uint32_t>(ip[i] << 8 | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = static_cast<uint8_t>(~sum >> 8);
  ip[11] = static_cast<uint8_t>(~sum);
  b.insert(b.end(), ip.begin(), ip.end());
  put16(b, 40000);
  put16(b, port);
  put16(b, static_cast<uint16_t>(8 + payload.size()));
  put16(b, 0);  // no UDP checksum (IPv4)
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// Frames of one authenticated session: a host and a bridge with libsodium's primitives.
struct AuthEnd {
  std::vector<uint64_t> mem;
  dxfp_session s{};
  explicit AuthEnd(const dxfp_session_config& c) {
    static constexpr dxfp_session_ops kOps = {
        [](void*, const dxpu_tlp*) {}, [](void*, dxfp_down_reason, const dxpu_tlp*, size_t) {},
        nullptr};
    mem.resize(dxfp_session_mem_size(&c) / 8 + 1);
    if (!dxfp_session_init(&s, &c, mem.data(), mem.size() * 8, &kOps, nullptr)) std::abort();
  }
  Bytes Poll(uint64_t now) {
    Bytes buf(DXFP_MAX_FRAME);
    size_t len = 0;
    if (!dxfp_session_poll(&s, now, buf.data(), buf.size(), &len)) std::abort();
    buf.resize(len);
    return buf;
  }
};

std::vector<Bytes> auth_frames() {
  const dxfp_crypto_ops& ops = dxpu::crypto::SodiumCryptoOps();
  const dxpu::crypto::KeyPair host = dxpu::crypto::NewKeyPair(),
                              bridge = dxpu::crypto::NewKeyPair();
  dxfp_session_config hc, bc;
  dxfp_session_config_defaults(&hc);
  hc.role = DXFP_ROLE_INITIATOR;
  hc.node_id = 0x1122334455667788ULL;
  hc.session_id = 9;
  hc.epoch = 0xabcdef01;
  hc.initial_seq = 100;
  hc.max_frame = 1472;
  hc.auth.ops = &ops;
  std::copy(host.secret.begin(), host.secret.end(), hc.auth.static_secret);
  std::copy(bridge.pub.begin(), bridge.pub.end(), hc.auth.peer_public);
  bc = hc;
  bc.role = DXFP_ROLE_RESPONDER;
  bc.node_id = 0xb0c5;
  bc.session_id = 0x77;
  bc.epoch = 0x12345678;
  bc.initial_seq = 500;
  AuthEnd h(hc), b(bc);
  dxfp_session_connect(&h.s, 1000);
  Bytes hello = h.Poll(1000);
  if (dxpu::crypto::AcceptAuthenticatedHello(&b.s, 1000, bridge, hello) != DXFP_RX_OK) std::abort();
  Bytes welcome = b.Poll(1000);
  if (dxfp_session_receive(&h.s, 1000, welcome.data(), welcome.size()) != DXFP_RX_OK) std::abort();
  static const uint8_t kData[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const dxpu_tlp mwr = mwr_8_bytes(kData);
  if (dxfp_session_send(&h.s, 1000, &mwr) != DXFP_SEND_OK) std::abort();
  Bytes data = h.Poll(1000);
  dxfp_frame hf{};
  if (dxfp_frame_parse(hello.data(), hello.size(), DXFP_MAX_FRAME, &hf) != DXFP_OK) std::abort();
  Bytes cookie(DXFP_COOKIE_FRAME_SIZE);
  const std::array<uint8_t, DXFP_COOKIE_NONCE_SIZE> nonce{};
  const std::array<uint8_t, DXFP_COOKIE_SIZE> value{};
  size_t len = 0;
  if (dxfp_cookie_reply_write(&ops, bridge.pub.data(), nonce.data(), value.data(), &hf,
                              cookie.data(), &len) != DXFP_OK)
    std::abort();
  return {hello, welcome, data, cookie};
}

// A UDP port, 1..65535; 0 when s is not one.
uint16_t parse_port(const char* s) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || v == 0 || v > 65535) return 0;
  return static_cast<uint16_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  const bool auth = argc == 3 && std::string(argv[1]) == "--auth";
  const uint16_t port = argc == 3 && !auth ? parse_port(argv[2]) : DXFP_UDP_PORT;
  if ((argc != 2 && argc != 3) || port == 0) {
    std::fprintf(stderr, "usage: %s OUT.pcap [UDP_PORT] | --auth OUT.pcap\n", argv[0]);
    return 2;
  }
  if (auth) ++argv;  // argv[1] is the output from here on
  std::vector<Bytes> packets;
  Bytes eth = ethernet(DXFP_ETHERTYPE);
  if (auth) {
    for (const Bytes& frame : auth_frames()) {
      Bytes p = eth;
      p.insert(p.end(), frame.begin(), frame.end());
      packets.push_back(p);
    }
  }
  if (!auth) {
    Bytes d = data_frame();
    Bytes p1 = eth;
    p1.insert(p1.end(), d.begin(), d.end());
    packets.push_back(p1);
    packets.push_back(udp_ipv4(hello_frame(), port));
    Bytes bad = data_frame();
    bad[27] = 5;  // seq 5; the CRC no longer matches
    Bytes p3 = eth;
    p3.insert(p3.end(), bad.begin(), bad.end());
    packets.push_back(p3);
    Bytes bad_hello = hello_frame();
    bad_hello.back() ^= 0x01;
    packets.push_back(udp_ipv4(bad_hello, port));
  }

  Bytes out;
  put32le(out, 0xa1b2c3d4);  // pcap, microseconds
  out.insert(out.end(), {2, 0, 4, 0});
  put32le(out, 0);
  put32le(out, 0);
  put32le(out, 65535);
  put32le(out, 1);  // LINKTYPE_ETHERNET
  uint32_t ts = 1;
  for (const Bytes& p : packets) {
    put32le(out, ts++);
    put32le(out, 0);
    put32le(out, static_cast<uint32_t>(p.size()));
    put32le(out, static_cast<uint32_t>(p.size()));
    out.insert(out.end(), p.begin(), p.end());
  }
  std::FILE* fp = std::fopen(argv[1], "wb");
  if (fp == nullptr || std::fwrite(out.data(), 1, out.size(), fp) != out.size()) {
    std::perror(argv[1]);
    return 1;
  }
  return std::fclose(fp) == 0 ? 0 : 1;
}
