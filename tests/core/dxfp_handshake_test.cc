// dxfp_handshake_test.cc - the handshake in HELLO and WELCOME frames (lib/core/dxfp_handshake.c)
// with libsodium's primitives: a host and a bridge that know each other's keys end with the same
// transport keys and a sealed frame one seals the other opens; every clear field of both frames
// is bound (changed, even with a good CRC, the handshake fails); a HELLO from someone who does not
// know the bridge's key costs one HMAC; a forged or foreign HELLO or WELCOME gets nothing.
#include "core/dxfp_handshake.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/crc32c.h"
#include "core/dxfp_seal.h"
#include "crypto/sodium_crypto_ops.h"

namespace dxpu::test {
namespace {

using Bytes = std::vector<uint8_t>;
using crypto::KeyPair;
using crypto::NewKeyPair;

const dxfp_crypto_ops& Ops() { return crypto::SodiumCryptoOps(); }

constexpr uint64_t kTimestamp = 0x0123456789abcdefull;

// A handshake frame's clear part: header, HELLO and CREDIT records, as the session writes them.
dxfp_writer ClearPart(Bytes* buf, uint8_t type, uint64_t node_id) {
  buf->assign(512, 0);
  dxfp_header h{};
  h.type = type;
  h.src_session = 0x1111;
  h.src_epoch = 0x2222;
  h.dst_session = type == DXFP_WELCOME ? 0x3333 : 0;
  h.dst_epoch = type == DXFP_WELCOME ? 0x4444 : 0;
  h.seq = 1000;
  dxfp_writer w{};
  EXPECT_EQ(dxfp_writer_init(&w, buf->data(), buf->size(), &h), DXFP_OK);
  dxfp_hello hello{};
  hello.version_min = hello.version_max = DXFP_VERSION;
  hello.max_frame = 1500;
  hello.node_id = node_id;
  hello.replay_window = 64;
  dxfp_credits c{{10, 20, 30}, {40, 50, 60}};
  EXPECT_EQ(dxfp_writer_add_hello(&w, &hello), DXFP_OK);
  EXPECT_EQ(dxfp_writer_add_credits(&w, &c), DXFP_OK);
  return w;
}

// Recomputes a frame's CRC32C after a test changed it, so only the handshake can notice.
void FixCrc(Bytes* frame) {
  const size_t len = (size_t{(*frame)[DXFP_OFF_LENGTH]} << 8) | (*frame)[DXFP_OFF_LENGTH + 1];
  const uint32_t crc = dxpu_crc32c(0, frame->data(), len - DXFP_CRC_SIZE);
  for (int i = 0; i < 4; ++i) (*frame)[len - 4 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
}

struct Peers {
  KeyPair host = NewKeyPair();
  KeyPair bridge = NewKeyPair();
  std::array<uint8_t, DXFP_HASH_SIZE> mac1_key{};
  dxfp_noise host_hs{}, bridge_hs{};
  Bytes hello, welcome;

  Peers() { dxfp_mac1_key(&Ops(), bridge.pub.data(), mac1_key.data()); }

  Bytes WriteHello(const crypto::Key& bridge_pub_known) {
    dxfp_writer w = ClearPart(&hello, DXFP_HELLO, 0xa1);
    size_t len = 0;
    EXPECT_EQ(dxfp_hello_finish(&host_hs, &Ops(), host.secret.data(), bridge_pub_known.data(),
                                kTimestamp, &w, &len),
              DXFP_OK);
    hello.resize(len);
    return hello;
  }

  dxfp_err OpenHello(const Bytes& frame, uint64_t* ts) {
    dxfp_frame f{};
    return dxfp_hello_open(&bridge_hs, &Ops(), bridge.secret.data(), mac1_key.data(), frame.data(),
                           frame.size(), DXFP_MAX_FRAME, &f, ts);
  }

  Bytes WriteWelcome(dxfp_noise_keys* keys) {
    dxfp_writer w = ClearPart(&welcome, DXFP_WELCOME, 0xb0);
    size_t len = 0;
    EXPECT_EQ(dxfp_welcome_finish(&bridge_hs, &w, &len, keys), DXFP_OK);
    welcome.resize(len);
    return welcome;
  }

  dxfp_err OpenWelcome(dxfp_noise* hs, const Bytes& frame, dxfp_noise_keys* keys) {
    dxfp_frame f{};
    const dxfp_err e = dxfp_frame_parse(frame.data(), frame.size(), DXFP_MAX_FRAME, &f);
    if (e != DXFP_OK) return e;
    return dxfp_welcome_open(hs, frame.data(), &f, keys);
  }
};

TEST(DxfpHandshake, HostAndBridgeEndWithTheSameKeysAndSealedFramesFlowBothWays) {
  Peers p;
  const Bytes hello = p.WriteHello(p.bridge.pub);
  uint64_t ts = 0;
  ASSERT_EQ(p.OpenHello(hello, &ts), DXFP_OK);
  EXPECT_EQ(ts, kTimestamp);
  EXPECT_EQ(0, std::memcmp(p.bridge_hs.rs, p.host.pub.data(), DXFP_KEY_SIZE));
  dxfp_noise_keys bridge_keys{}, host_keys{};
  const Bytes welcome = p.WriteWelcome(&bridge_keys);
  ASSERT_EQ(p.OpenWelcome(&p.host_hs, welcome, &host_keys), DXFP_OK);
  EXPECT_EQ(0, std::memcmp(host_keys.hash, bridge_keys.hash, DXFP_HASH_SIZE));

  // A DATA frame each way: sealed by one, opened by the other.
  for (int dir = 0; dir < 2; ++dir) {
    Bytes frame(DXFP_MIN_FRAME + DXFP_SEAL_GROWTH);
    dxfp_header h{};
    h.type = DXFP_DATA;
    dxfp_writer w{};
    ASSERT_EQ(dxfp_writer_init(&w, frame.data(), DXFP_MIN_FRAME, &h), DXFP_OK);
    size_t len = 0;
    dxfp_writer_finish(&w, &len);
    const dxfp_cipher& send = dir == 0 ? host_keys.send : bridge_keys.send;
    const dxfp_cipher& recv = dir == 0 ? bridge_keys.recv : host_keys.recv;
    const size_t sealed = dxfp_frame_seal(&Ops(), &send, 0, frame.data(), len, frame.size());
    ASSERT_NE(sealed, 0u);
    dxfp_replay replay{};
    dxfp_frame f{};
    uint64_t counter = 1;
    EXPECT_EQ(
        dxfp_frame_open(&Ops(), &recv, &replay, frame.data(), sealed, DXFP_MAX_FRAME, &f, &counter),
        DXFP_OK)
        << "direction " << dir;
  }
}

TEST(DxfpHandshake, EveryByteOfTheHelloIsBoundEvenWithItsCrcRecomputed) {
  Peers p;
  const Bytes hello = p.WriteHello(p.bridge.pub);
  // Every byte up to MAC2's body: MAC2 is the cookie's, checked only under load (below).
  const size_t clear_end = hello.size() - DXFP_CRC_SIZE - DXFP_MAC2_BODY_SIZE;
  for (size_t i = 0; i < clear_end; ++i) {
    if (i == DXFP_OFF_LENGTH || i == DXFP_OFF_LENGTH + 1 || i == DXFP_OFF_NREC ||
        i == DXFP_OFF_NREC + 1)
      continue;  // the parser's own checks; covered below
    Bytes bad = hello;
    bad[i] ^= 0x01;
    FixCrc(&bad);
    uint64_t ts = 0;
    EXPECT_NE(p.OpenHello(bad, &ts), DXFP_OK) << "byte " << i;
  }
}

TEST(DxfpHandshake, AChangedRecordFailsTheMac1OrTheHandshakeByWhereItIs) {
  Peers p;
  const Bytes hello = p.WriteHello(p.bridge.pub);
  uint64_t ts = 0;
  Bytes node = hello;  // the HELLO record's node ID: MAC1 sees it first
  node[DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE + 15] ^= 0xff;
  FixCrc(&node);
  EXPECT_EQ(p.OpenHello(node, &ts), DXFP_ERR_BAD_MAC1);
  // A forger who knows the bridge's public key makes MAC1 right: the handshake still fails.
  const size_t mac_at =
      hello.size() - DXFP_CRC_SIZE - DXFP_MAC2_BODY_SIZE - DXFP_REC_HDR_SIZE - DXFP_MAC1_BODY_SIZE;
  dxfp_mac1(&Ops(), p.mac1_key.data(), node.data(), mac_at - DXFP_REC_HDR_SIZE,
            node.data() + mac_at);
  FixCrc(&node);
  EXPECT_EQ(p.OpenHello(node, &ts), DXFP_ERR_BAD_TAG);
}

TEST(DxfpHandshake, AHelloForAnotherBridgeCostsOneHmac) {
  Peers p;
  const KeyPair other = NewKeyPair();
  const Bytes hello = p.WriteHello(other.pub);  // made for another bridge
  uint64_t ts = 0;
  EXPECT_EQ(p.OpenHello(hello, &ts), DXFP_ERR_BAD_MAC1);
  EXPECT_EQ(p.bridge_hs.ops, nullptr);  // no handshake was started for it: no X25519 spent
}

TEST(DxfpHandshake, AHelloWithoutTheHandshakeIsNoAuth) {
  Peers p;
  Bytes plain;
  dxfp_writer w = ClearPart(&plain, DXFP_HELLO, 0xa1);
  size_t len = 0;
  dxfp_writer_finish(&w, &len);
  plain.resize(len);
  uint64_t ts = 0;
  EXPECT_EQ(p.OpenHello(plain, &ts), DXFP_ERR_NO_AUTH);
  // Its CRC still protects it as before: a flipped bit is a bad CRC.
  plain[40] ^= 1;
  EXPECT_EQ(p.OpenHello(plain, &ts), DXFP_ERR_BAD_CRC);
}

TEST(DxfpHandshake, EveryByteOfTheWelcomeIsBound) {
  Peers p;
  p.WriteHello(p.bridge.pub);
  uint64_t ts = 0;
  ASSERT_EQ(p.OpenHello(p.hello, &ts), DXFP_OK);
  dxfp_noise_keys bridge_keys{};
  const Bytes welcome = p.WriteWelcome(&bridge_keys);
  for (size_t i = 0; i < welcome.size() - DXFP_CRC_SIZE; ++i) {
    if (i == DXFP_OFF_LENGTH || i == DXFP_OFF_LENGTH + 1 || i == DXFP_OFF_NREC ||
        i == DXFP_OFF_NREC + 1)
      continue;
    Bytes bad = welcome;
    bad[i] ^= 0x80;
    FixCrc(&bad);
    dxfp_noise hs = p.host_hs;
    dxfp_noise_keys keys{};
    EXPECT_NE(p.OpenWelcome(&hs, bad, &keys), DXFP_OK) << "byte " << i;
  }
  dxfp_noise_keys keys{};
  EXPECT_EQ(p.OpenWelcome(&p.host_hs, welcome, &keys), DXFP_OK);
}

TEST(DxfpHandshake, AWelcomeFromAnImpostorGetsNothing) {
  // A bridge with another key answers the host's HELLO: it cannot even read it. Given the
  // host's HELLO made for it, its WELCOME still does not fit the host's handshake with the real
  // bridge.
  Peers real, fake;
  fake.host = real.host;
  real.WriteHello(real.bridge.pub);
  fake.WriteHello(fake.bridge.pub);
  uint64_t ts = 0;
  EXPECT_NE(real.OpenHello(fake.hello, &ts), DXFP_OK);
  ASSERT_EQ(fake.OpenHello(fake.hello, &ts), DXFP_OK);
  dxfp_noise_keys k{};
  const Bytes forged = fake.WriteWelcome(&k);
  EXPECT_EQ(real.OpenWelcome(&real.host_hs, forged, &k), DXFP_ERR_BAD_TAG);
}

TEST(DxfpHandshake, AFrameWithoutRoomIsRefusedBeforeAnyWork) {
  Peers p;
  Bytes small(DXFP_MIN_FRAME + 60);
  dxfp_header h{};
  h.type = DXFP_HELLO;
  dxfp_writer w{};
  ASSERT_EQ(dxfp_writer_init(&w, small.data(), small.size(), &h), DXFP_OK);
  size_t len = 0;
  EXPECT_EQ(
      dxfp_hello_finish(&p.host_hs, &Ops(), p.host.secret.data(), p.bridge.pub.data(), 1, &w, &len),
      DXFP_ERR_NO_SPACE);
  h.type = DXFP_DATA;
  ASSERT_EQ(dxfp_writer_init(&w, small.data(), small.size(), &h), DXFP_OK);
  EXPECT_EQ(
      dxfp_hello_finish(&p.host_hs, &Ops(), p.host.secret.data(), p.bridge.pub.data(), 1, &w, &len),
      DXFP_ERR_BAD_TYPE);
}

// Cookies (docs/protocol.md 4.12, "Under load"): the bridge's cookie for a source travels sealed
// to the HELLO's sender, who alone can put it in MAC2; MAC2 names the source and the HELLO.
struct CookieWorld : Peers {
  std::array<uint8_t, DXFP_KEY_SIZE> secret{};
  const std::string source = "0/127.0.0.1:40000";
  Bytes sent = WriteHello(bridge.pub);  // the HELLO as first sent
  dxfp_frame hello_f{};

  CookieWorld() {
    randombytes_buf(secret.data(), secret.size());
    EXPECT_EQ(dxfp_hello_check_mac1(&Ops(), mac1_key.data(), sent.data(), sent.size(),
                                    DXFP_MAX_FRAME, &hello_f),
              DXFP_OK);
  }
  std::array<uint8_t, DXFP_COOKIE_SIZE> CookieOf(const std::string& src) const {
    std::array<uint8_t, DXFP_COOKIE_SIZE> c{};
    dxfp_cookie_make(&Ops(), secret.data(), reinterpret_cast<const uint8_t*>(src.data()),
                     src.size(), c.data());
    return c;
  }
  Bytes Reply() const {
    Bytes out(DXFP_COOKIE_FRAME_SIZE);
    std::array<uint8_t, DXFP_COOKIE_NONCE_SIZE> nonce{};
    randombytes_buf(nonce.data(), nonce.size());
    size_t len = 0;
    EXPECT_EQ(dxfp_cookie_reply_write(&Ops(), bridge.pub.data(), nonce.data(),
                                      CookieOf(source).data(), &hello_f, out.data(), &len),
              DXFP_OK);
    EXPECT_EQ(len, out.size());
    return out;
  }
  dxfp_err OpenReply(const Bytes& reply, const crypto::Key& pub, const Bytes& my_hello,
                     std::array<uint8_t, DXFP_COOKIE_SIZE>* cookie) const {
    dxfp_frame f{};
    const dxfp_err e = dxfp_frame_parse(reply.data(), reply.size(), DXFP_MAX_FRAME, &f);
    if (e != DXFP_OK) return e;
    return dxfp_cookie_reply_open(&Ops(), pub.data(), my_hello.data(), my_hello.size(), &f,
                                  cookie->data());
  }
  bool Mac2Ok(const Bytes& h, const std::array<uint8_t, DXFP_COOKIE_SIZE>& cookie) const {
    dxfp_frame f{};
    if (dxfp_frame_parse(h.data(), h.size(), DXFP_MAX_FRAME, &f) != DXFP_OK) return false;
    return dxfp_hello_mac2_ok(&Ops(), cookie.data(), h.data(), &f);
  }
};

TEST(DxfpCookie, TheHostOpensTheCookieAndItsHelloThenCarriesTheSourcesMac2) {
  CookieWorld w;
  EXPECT_FALSE(w.Mac2Ok(w.sent, w.CookieOf(w.source)));  // no cookie yet: MAC2 zero
  const Bytes reply = w.Reply();
  dxfp_frame rf{};
  ASSERT_EQ(dxfp_frame_parse(reply.data(), reply.size(), DXFP_MAX_FRAME, &rf), DXFP_OK);
  EXPECT_EQ(rf.hdr.type, DXFP_COOKIE);
  EXPECT_EQ(rf.hdr.dst_session, w.hello_f.hdr.src_session);
  EXPECT_EQ(rf.hdr.dst_epoch, w.hello_f.hdr.src_epoch);
  EXPECT_LT(reply.size(), w.sent.size());  // no amplification: the answer is the smaller
  std::array<uint8_t, DXFP_COOKIE_SIZE> cookie{};
  ASSERT_EQ(w.OpenReply(reply, w.bridge.pub, w.sent, &cookie), DXFP_OK);
  EXPECT_EQ(cookie, w.CookieOf(w.source));
  Bytes again = w.sent;
  ASSERT_TRUE(dxfp_hello_set_mac2(&Ops(), cookie.data(), again.data(), again.size()));
  EXPECT_TRUE(w.Mac2Ok(again, w.CookieOf(w.source)));
  EXPECT_FALSE(w.Mac2Ok(again, w.CookieOf("0/127.0.0.1:40001")));  // another source's
  // Only MAC2 and the CRC changed: the handshake is the same and still opens.
  EXPECT_TRUE(std::equal(again.begin(), again.end() - 20, w.sent.begin()));
  uint64_t ts = 0;
  EXPECT_EQ(w.OpenHello(again, &ts), DXFP_OK);
  EXPECT_EQ(ts, kTimestamp);
}

TEST(DxfpCookie, AReplyOpensOnlyForItsHelloAndItsBridgesKey) {
  CookieWorld w;
  const Bytes reply = w.Reply();
  std::array<uint8_t, DXFP_COOKIE_SIZE> cookie{};
  const KeyPair other = NewKeyPair();
  EXPECT_EQ(w.OpenReply(reply, other.pub, w.sent, &cookie), DXFP_ERR_BAD_TAG);
  Peers second;  // another HELLO (another MAC1): the reply was not for it
  second.bridge = w.bridge;
  const Bytes other_hello = second.WriteHello(w.bridge.pub);
  EXPECT_EQ(w.OpenReply(reply, w.bridge.pub, other_hello, &cookie), DXFP_ERR_BAD_TAG);
  for (size_t i = DXFP_HDR_SIZE + DXFP_REC_HDR_SIZE; i < reply.size() - DXFP_CRC_SIZE; ++i) {
    Bytes bad = reply;
    bad[i] ^= 0x01;
    FixCrc(&bad);
    EXPECT_EQ(w.OpenReply(bad, w.bridge.pub, w.sent, &cookie), DXFP_ERR_BAD_TAG) << "byte " << i;
  }
}

TEST(DxfpCookie, Mac2BindsEveryByteOfTheHello) {
  CookieWorld w;
  Bytes with = w.sent;
  const auto cookie = w.CookieOf(w.source);
  ASSERT_TRUE(dxfp_hello_set_mac2(&Ops(), cookie.data(), with.data(), with.size()));
  for (size_t i = 0; i < with.size() - DXFP_CRC_SIZE; ++i) {
    if (i == DXFP_OFF_LENGTH || i == DXFP_OFF_LENGTH + 1 || i == DXFP_OFF_NREC ||
        i == DXFP_OFF_NREC + 1)
      continue;  // the parser refuses those
    Bytes bad = with;
    bad[i] ^= 0x01;
    FixCrc(&bad);
    EXPECT_FALSE(w.Mac2Ok(bad, cookie)) << "byte " << i;
  }
}

// The userspace AEAD (OpenSSL's, openssl_aead.h) is libsodium's ChaCha20-Poly1305 IETF with
// Noise's nonce, byte for byte: random keys, counters, lengths (0 included) and additional data.
TEST(UserspaceAead, IsLibsodiumsChaCha20Poly1305ByteForByte) {
  std::array<uint8_t, DXFP_KEY_SIZE> key{};
  for (size_t len : {0u, 1u, 15u, 16u, 17u, 63u, 64u, 65u, 1000u, 4096u, 9000u}) {
    for (size_t ad_len : {0u, 8u, 40u}) {
      randombytes_buf(key.data(), key.size());
      const uint64_t n = randombytes_random() | (uint64_t{randombytes_random()} << 32);
      // One byte more than used: no buffer is empty, so no pointer passed is null.
      Bytes msg(len + 1), ad(ad_len + 1), ours(len + DXFP_TAG_SIZE), theirs(len + DXFP_TAG_SIZE);
      randombytes_buf(msg.data(), msg.size());
      randombytes_buf(ad.data(), ad.size());
      Ops().aead_seal(ours.data(), msg.data(), len, ad.data(), ad_len, n, key.data());
      std::array<uint8_t, 12> nonce{};
      for (size_t i = 0; i < 8; ++i) nonce[4 + i] = static_cast<uint8_t>(n >> (8 * i));
      crypto_aead_chacha20poly1305_ietf_encrypt_detached(theirs.data(), theirs.data() + len,
                                                         nullptr, msg.data(), len, ad.data(),
                                                         ad_len, nullptr, nonce.data(), key.data());
      EXPECT_EQ(ours, theirs) << len << " bytes, " << ad_len << " of additional data";
      Bytes back(len + 1);
      EXPECT_TRUE(
          Ops().aead_open(back.data(), ours.data(), ours.size(), ad.data(), ad_len, n, key.data()));
      EXPECT_TRUE(
          std::equal(back.begin(), back.begin() + static_cast<std::ptrdiff_t>(len), msg.begin()));
      ours[ours.size() - 1 - (len % DXFP_TAG_SIZE)] ^= 0x80;  // a bit of the tag or the text
      EXPECT_FALSE(
          Ops().aead_open(back.data(), ours.data(), ours.size(), ad.data(), ad_len, n, key.data()));
      ours[ours.size() - 1 - (len % DXFP_TAG_SIZE)] ^= 0x80;
      EXPECT_FALSE(Ops().aead_open(back.data(), ours.data(), ours.size(), ad.data(), ad_len, n + 1,
                                   key.data()));  // another counter
    }
  }
  Bytes tiny(DXFP_TAG_SIZE - 1);
  EXPECT_FALSE(Ops().aead_open(tiny.data(), tiny.data(), tiny.size(), nullptr, 0, 0, key.data()));
}

}  // namespace
}  // namespace dxpu::test
