// attacker.cc - see attacker.h.
#include "attacker.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <thread>

#include "core/dxfp_seal.h"
#include "core/dxfp_session.h"
#include "core/tlp_build.h"
#include "crypto/fabric_keys.h"
#include "fabric/link_driver.h"
#include "link/link.h"
#include "test_host.h"

namespace dxpu::test::attack {

RawUdp::RawUdp(const std::string& ip) : fd_(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (!fd_.valid() || inet_pton(AF_INET, ip.c_str(), &sa.sin_addr) != 1 ||
      bind(fd_.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0)
    fd_ = {};
}

bool RawUdp::SendTo(uint16_t port, std::span<const uint8_t> frame) const {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(port);
  return sendto(fd_.get(), frame.data(), frame.size(), 0, reinterpret_cast<const sockaddr*>(&to),
                sizeof(to)) == static_cast<ssize_t>(frame.size());
}

bool RawUdp::SendPaced(uint16_t port, std::span<const uint8_t> frame) {
  if (++sent_ % 16 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return SendTo(port, frame);
}

size_t RawUdp::CountReceived(int timeout_ms) const {
  size_t n = 0;
  std::array<uint8_t, 65536> buf{};
  pollfd p{fd_.get(), POLLIN, 0};
  while (poll(&p, 1, timeout_ms) == 1) {
    if (recv(fd_.get(), buf.data(), buf.size(), MSG_DONTWAIT) < 0) break;
    ++n;
  }
  return n;
}

Frame HelloOf(uint64_t node, const crypto::KeyPair* key, const crypto::Key* bridge_key) {
  dxfp_session_config c;
  dxfp_session_config_defaults(&c);
  if (key != nullptr) crypto::SetHostAuth(&c, *key, *bridge_key);
  TestHost h(node, 0x5150, &c);
  const uint64_t now = fabric::MonotonicNanos();
  h.Connect(now);
  Frame out;
  h.endpoint().Flush(now, [&](link::FramePieces p) {
    if (out.empty()) out = link::GatherFrame(p);
  });
  return out;
}

dxfp_header HeaderOf(const Frame& frame) {
  dxfp_header h{};
  dxfp_header_peek(frame.data(), frame.size(), &h);
  return h;
}

namespace {

Frame Plain(const dxfp_header& seen, uint8_t type, const dxpu_tlp* tlp) {
  dxfp_header h = seen;
  h.version = DXFP_VERSION;
  h.type = type;
  h.flags = 0;
  h.seq = seen.seq + 1;
  Frame out(DXFP_MAX_FRAME);
  dxfp_writer w{};
  if (dxfp_writer_init(&w, out.data(), 1500, &h) != DXFP_OK) return {};
  if (tlp != nullptr && dxfp_writer_add_tlp(&w, tlp) != DXFP_OK) return {};
  if (type == DXFP_CLOSE) {
    const dxfp_close c{DXFP_CLOSE_SHUTDOWN, DXFP_VERSION, DXFP_VERSION};
    if (dxfp_writer_add_close(&w, &c) != DXFP_OK) return {};
  }
  size_t len = 0;
  dxfp_writer_finish(&w, &len);
  out.resize(len);
  return out;
}

}  // namespace

Frame PlainData(const dxfp_header& seen, const dxpu_tlp& tlp) {
  return Plain(seen, DXFP_DATA, &tlp);
}

Frame PlainClose(const dxfp_header& seen) { return Plain(seen, DXFP_CLOSE, nullptr); }

Frame GarbageSealed(const Frame& sealed, uint8_t type) {
  Frame f = sealed;
  if (f.size() < DXFP_MIN_SEALED_FRAME) return f;
  if (type != 0) f[DXFP_OFF_TYPE] = type;
  for (size_t i = DXFP_HDR_SIZE + DXFP_SEAL_COUNTER_SIZE; i < f.size(); ++i) f[i] ^= 0x5a;
  f[DXFP_HDR_SIZE + 5] ^= 0x01;  // the counter 2^40 away: fresh, so only the tag refuses it
  return f;
}

dxpu_tlp ConfigWrite(uint16_t bdf, uint16_t reg, const uint32_t* value) {
  dxpu_tlp t{};
  dxpu_tlp_config_request(DXPU_TLP_CFGWR0, bdf, reg, 0xf, &t);
  t.payload = reinterpret_cast<const uint8_t*>(value);
  return t;
}

dxpu_tlp Completion(uint16_t requester, uint8_t tag, const uint32_t* data) {
  dxpu_tlp req{};
  req.kind = DXPU_TLP_MRD;
  req.length_dw = 1;
  req.first_be = 0xf;
  req.requester_id = requester;
  req.tag = tag;
  req.addr = 0xe000'0000;
  dxpu_tlp cpl{};
  dxpu_tlp_completion_for(&req, 0x0100, DXPU_TLP_CPL_SC, &cpl);
  cpl.payload = reinterpret_cast<const uint8_t*>(data);
  return cpl;
}

}  // namespace dxpu::test::attack
