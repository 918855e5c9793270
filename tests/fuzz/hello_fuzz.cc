// hello_fuzz.cc - libFuzzer target: a bridge's HELLO authentication (bridge-fw/host_auth.cc,
// HostAuthenticator: per-source limit, MAC1, the cookie under load, the Noise IK handshake, the
// host's key and node, the timestamp; lib/core/dxfp_handshake.c), and the host's side of a
// COOKIE frame (dxfp_cookie_reply_open, dxfp_hello_set_mac2), on datagrams an attacker makes.
// The input is pieces (docs/fuzzing.md): byte 0 of a piece picks the source (bits 0-1), puts
// MAC1 right for this bridge's key (bit 2, so changes reach the handshake behind it), and puts
// the CRC32C right (bit 3); the rest is the datagram. The bridge's handshake budget is small
// (8 a second), so inputs reach the cookie path. What must hold besides "no crash": a HELLO that
// opens names the listed host's key and node; a cookie answer is a COOKIE frame that parses,
// addressed to the HELLO's session and epoch, and opens at the HELLO's sender with the bridge's
// public key; every datagram is counted once.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bridge-fw/host_auth.h"
#include "core/dxfp_handshake.h"
#include "crypto/fabric_keys.h"
#include "crypto/sodium_crypto_ops.h"
#include "fuzz_util.h"
#include "session_world.h"

namespace {

void Check(bool ok, const char* what) { dxpu::fuzz::Require(ok, "hello_fuzz", what); }

constexpr uint64_t kHostNode = 0x1111;

// The listed host's key: the session world's host key (fixed), so the seeds' HELLOs open.
dxpu::bridge::BoxIdentity Identity() {
  dxpu::bridge::BoxIdentity id;
  id.keys = dxpu::fuzz::BridgeKey();
  id.hosts = {{dxpu::fuzz::HostKey().pub, kHostNode}};
  id.hellos_per_second = 4;
  id.hello_burst = 4;
  id.handshakes_per_second = 8;
  id.max_sources = 3;  // four sources: the limit forgets one
  return id;
}

uint64_t Refused(const dxpu::bridge::HostAuthenticator& a) {
  uint64_t n = 0;
  for (uint64_t r : a.refusals()) n += r;
  return n;
}

void FixMac1(std::vector<uint8_t>* frame, const std::array<uint8_t, DXFP_HASH_SIZE>& key) {
  // Where MAC1's body is in a HELLO the session writes: 16 + 20 (MAC2) + 4 (CRC) from the end.
  constexpr size_t kTail =
      DXFP_CRC_SIZE + DXFP_REC_HDR_SIZE + DXFP_MAC2_BODY_SIZE + DXFP_MAC1_BODY_SIZE;
  if (frame->size() < DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + kTail) return;
  const size_t at = frame->size() - kTail;
  dxfp_mac1(&dxpu::crypto::SodiumCryptoOps(), key.data(), frame->data(), at - DXFP_REC_HDR_SIZE,
            frame->data() + at);
}

void CheckCookie(const dxpu::bridge::CookieReply& reply, const std::vector<uint8_t>& hello) {
  dxfp_frame cf{}, hf{};
  Check(dxfp_frame_parse(reply.frame.data(), reply.frame.size(), DXFP_MAX_FRAME, &cf) == DXFP_OK,
        "a cookie answer that does not parse");
  Check(cf.hdr.type == DXFP_COOKIE, "a cookie answer that is no COOKIE frame");
  Check(dxfp_frame_parse(hello.data(), hello.size(), DXFP_MAX_FRAME, &hf) == DXFP_OK,
        "a cookie for a HELLO that does not parse");
  Check(cf.hdr.dst_session == hf.hdr.src_session && cf.hdr.dst_epoch == hf.hdr.src_epoch,
        "a cookie addressed to another session");
  std::array<uint8_t, DXFP_COOKIE_SIZE> cookie{};
  Check(dxfp_cookie_reply_open(&dxpu::crypto::SodiumCryptoOps(), dxpu::fuzz::BridgeKey().pub.data(),
                               hello.data(), hello.size(), &cf, cookie.data()) == DXFP_OK,
        "a cookie the HELLO's sender cannot open");
  std::vector<uint8_t> again = hello;
  Check(dxfp_hello_set_mac2(&dxpu::crypto::SodiumCryptoOps(), cookie.data(), again.data(),
                            again.size()),
        "a HELLO that got a cookie takes no MAC2");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dxpu::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::array<uint8_t, DXFP_HASH_SIZE> mac1_key = [] {
    std::array<uint8_t, DXFP_HASH_SIZE> k{};
    dxfp_mac1_key(&dxpu::crypto::SodiumCryptoOps(), dxpu::fuzz::BridgeKey().pub.data(), k.data());
    return k;
  }();
  dxpu::bridge::HostAuthenticator auth(Identity());
  uint64_t now = 1'000'000, last_taken = 0, seen = 0;
  dxpu::fuzz::PieceReader reader({data, size});
  dxpu::fuzz::PieceReader::Piece p;
  while (reader.Next(&p)) {
    std::vector<uint8_t> frame(p.bytes.begin(), p.bytes.end());
    if (p.op & 4) FixMac1(&frame, mac1_key);
    if (p.op & 8) (void)dxpu::fuzz::FixDxfpCrc(frame);
    const std::string source = "0/10.0.0." + std::to_string(p.op & 3) + ":17480";
    now += 10'000'000;  // 10 ms between datagrams
    const uint64_t refused_before = Refused(auth);
    auto answer = auth.Open(now, source, frame);
    ++seen;
    if (auto* opened = std::get_if<dxpu::bridge::OpenedHello>(&answer)) {
      Check(opened->node == kHostNode, "a HELLO opened for another node");
      const auto& host = dxpu::fuzz::HostKey().pub;
      Check(std::equal(host.begin(), host.end(), opened->hs.rs), "a HELLO opened for another key");
      dxfp_hello hello{};
      Check(dxfp_hello_identity(&opened->frame, &hello) && hello.node_id == kHostNode,
            "a HELLO opened that names another node");
      dxfp_noise_wipe(&opened->hs);
      Check(Refused(auth) == refused_before, "an opened HELLO counted as refused");
      ++last_taken;
    } else {
      Check(Refused(auth) == refused_before + 1, "a refusal not counted once");
      if (auto* cookie = std::get_if<dxpu::bridge::CookieReply>(&answer))
        CheckCookie(*cookie, frame);
    }
  }
  Check(Refused(auth) + last_taken == seen, "datagrams not all accounted for");
  return 0;
}
