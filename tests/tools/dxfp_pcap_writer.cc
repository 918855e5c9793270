// Writes a pcap of DxFP frames built with lib/core's writer, for the Wireshark
// dissector test (tests/tools/wireshark_test.sh). Usage: dxfp_pcap_writer OUT.pcap [UDP_PORT]
//   1  Ethernet, DATA seq 100 ack 7: MRd 4DW (0x400000010, tag 7), CplD 4 B, MWr 3DW 8 B
//   2  UDP/IPv4 to UDP_PORT (default 17480, DXFP_UDP_PORT), HELLO: HELLO record
//      (node 0x1122334455667788) + CREDIT
//   3  Ethernet, DATA seq 5 with its CRC32C corrupted
//   4  UDP/IPv4 to UDP_PORT, frame 2's HELLO with its CRC32C corrupted (no DxFP for the heuristic)
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/dxfp_frame.h"

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
  dxpu_tlp mwr{};
  mwr.kind = DXPU_TLP_MWR;
  mwr.addr = 0xf0000040;
  mwr.length_dw = 2;
  mwr.first_be = 0xf;
  mwr.last_be = 0xf;
  mwr.payload = kData;
  for (const dxpu_tlp* t : {&mrd, &cpld, &mwr}) {
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
  const uint16_t port = argc == 3 ? parse_port(argv[2]) : DXFP_UDP_PORT;
  if ((argc != 2 && argc != 3) || port == 0) {
    std::fprintf(stderr, "usage: %s OUT.pcap [UDP_PORT]\n", argv[0]);
    return 2;
  }
  std::vector<Bytes> packets;
  Bytes eth = ethernet(DXFP_ETHERTYPE);
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
