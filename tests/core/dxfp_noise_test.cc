// dxfp_noise_test.cc - lib/core's Noise IK handshake (dxfp_noise.c) with libsodium's
// primitives: the two ends agree and nobody else can, every byte of every message is checked,
// and an implementation written by others (dissononce, tests/core/noise_interop.py) interoperates
// with it in both roles.
#include "core/dxfp_noise.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "crypto/sodium_crypto_ops.h"

namespace {

using dxpu::crypto::Key;
using dxpu::crypto::KeyPair;
using dxpu::crypto::NewKeyPair;
using dxpu::crypto::SodiumCryptoOps;
using Bytes = std::vector<uint8_t>;

const dxfp_crypto_ops& Ops() { return SodiumCryptoOps(); }

Bytes RandomBytes(size_t n) {
  Bytes b(n);
  if (!b.empty()) randombytes_buf(b.data(), b.size());  // (an empty vector's data() is null)
  return b;
}

// One handshake's two ends and what went over the wire.
struct Handshake {
  KeyPair host = NewKeyPair();
  KeyPair bridge = NewKeyPair();
  Bytes prologue = {'D', 'x', 'F', 'P'};
  dxfp_noise initiator{};
  dxfp_noise responder{};
  Bytes msg1, msg2;

  void Start(const Key& bridge_pub_known_to_host) {
    dxfp_noise_initiator_init(&initiator, &Ops(), host.secret.data(),
                              bridge_pub_known_to_host.data(), prologue.data(), prologue.size());
    dxfp_noise_responder_init(&responder, &Ops(), bridge.secret.data(), prologue.data(),
                              prologue.size());
  }

  Bytes WriteMsg1(const Bytes& payload) {
    msg1.assign(payload.size() + DXFP_NOISE_MSG1_OVERHEAD, 0);
    msg1.resize(dxfp_noise_write_msg1(&initiator, payload.data(), payload.size(), msg1.data()));
    return msg1;
  }

  Bytes WriteMsg2(const Bytes& payload) {
    msg2.assign(payload.size() + DXFP_NOISE_MSG2_OVERHEAD, 0);
    msg2.resize(dxfp_noise_write_msg2(&responder, payload.data(), payload.size(), msg2.data()));
    return msg2;
  }
};

bool ReadMsg1(dxfp_noise* hs, const Bytes& msg, Bytes* payload) {
  payload->assign(
      msg.size() >= DXFP_NOISE_MSG1_OVERHEAD ? msg.size() - DXFP_NOISE_MSG1_OVERHEAD : 0, 0);
  return dxfp_noise_read_msg1(hs, msg.data(), msg.size(), payload->data());
}

bool ReadMsg2(dxfp_noise* hs, const Bytes& msg, Bytes* payload) {
  payload->assign(
      msg.size() >= DXFP_NOISE_MSG2_OVERHEAD ? msg.size() - DXFP_NOISE_MSG2_OVERHEAD : 0, 0);
  return dxfp_noise_read_msg2(hs, msg.data(), msg.size(), payload->data());
}

TEST(Hmac, MatchesLibsodiumsHmacSha256ForEveryLengthAndSplit) {
  for (size_t len : {0, 1, 31, 32, 33, 63, 64, 65, 200, 1000}) {
    const Bytes key = RandomBytes(DXFP_HASH_SIZE);
    const Bytes msg = RandomBytes(len);
    std::array<uint8_t, crypto_auth_hmacsha256_BYTES> want{};
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key.data(), key.size());
    crypto_auth_hmacsha256_update(&st, msg.data(), msg.size());
    crypto_auth_hmacsha256_final(&st, want.data());
    const size_t cut = len / 3;
    const dxfp_piece parts[2] = {{msg.data(), cut}, {msg.data() + cut, len - cut}};
    std::array<uint8_t, DXFP_HASH_SIZE> got{};
    dxfp_hmac_sha256(&Ops(), key.data(), parts, 2, got.data());
    EXPECT_EQ(got, want) << "length " << len;
  }
}

TEST(Hkdf, IsHmacChainOfNoiseSection4_3) {
  const Bytes ck = RandomBytes(DXFP_HASH_SIZE);
  const Bytes ikm = RandomBytes(DXFP_KEY_SIZE);
  std::array<uint8_t, 32> o1{}, o2{}, o3{};
  dxfp_hkdf(&Ops(), ck.data(), ikm.data(), ikm.size(), o1.data(), o2.data(), o3.data());
  // The same chain through libsodium's HMAC directly.
  auto hmac = [](const uint8_t* key, const Bytes& data) {
    std::array<uint8_t, 32> out{};
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key, 32);
    crypto_auth_hmacsha256_update(&st, data.data(), data.size());
    crypto_auth_hmacsha256_final(&st, out.data());
    return out;
  };
  const auto temp = hmac(ck.data(), ikm);
  const auto w1 = hmac(temp.data(), Bytes{1});
  Bytes in2(w1.begin(), w1.end());
  in2.push_back(2);
  const auto w2 = hmac(temp.data(), in2);
  Bytes in3(w2.begin(), w2.end());
  in3.push_back(3);
  const auto w3 = hmac(temp.data(), in3);
  EXPECT_EQ(o1, w1);
  EXPECT_EQ(o2, w2);
  EXPECT_EQ(o3, w3);
}

TEST(Noise, BothEndsAgreeOnKeysHashAndPayloadsAndTheBridgeLearnsTheHostsKey) {
  Handshake h;
  h.Start(h.bridge.pub);
  const Bytes hello = RandomBytes(40), welcome = RandomBytes(24);
  ASSERT_EQ(h.WriteMsg1(hello).size(), hello.size() + DXFP_NOISE_MSG1_OVERHEAD);
  Bytes got;
  ASSERT_TRUE(ReadMsg1(&h.responder, h.msg1, &got));
  EXPECT_EQ(got, hello);
  EXPECT_EQ(0, std::memcmp(h.responder.rs, h.host.pub.data(), DXFP_KEY_SIZE));
  ASSERT_EQ(h.WriteMsg2(welcome).size(), welcome.size() + DXFP_NOISE_MSG2_OVERHEAD);
  ASSERT_TRUE(ReadMsg2(&h.initiator, h.msg2, &got));
  EXPECT_EQ(got, welcome);

  dxfp_noise_keys ik{}, rk{};
  ASSERT_TRUE(dxfp_noise_split(&h.initiator, &ik));
  ASSERT_TRUE(dxfp_noise_split(&h.responder, &rk));
  EXPECT_EQ(0, std::memcmp(ik.send.key, rk.recv.key, DXFP_KEY_SIZE));
  EXPECT_EQ(0, std::memcmp(ik.recv.key, rk.send.key, DXFP_KEY_SIZE));
  EXPECT_NE(0, std::memcmp(ik.send.key, ik.recv.key, DXFP_KEY_SIZE));
  EXPECT_EQ(0, std::memcmp(ik.hash, rk.hash, DXFP_HASH_SIZE));
  // The split wiped the handshake's secrets.
  const std::array<uint8_t, DXFP_KEY_SIZE> zero{};
  EXPECT_EQ(0, std::memcmp(h.initiator.s_secret, zero.data(), zero.size()));
  EXPECT_EQ(0, std::memcmp(h.responder.e_secret, zero.data(), zero.size()));
  EXPECT_FALSE(dxfp_noise_split(&h.initiator, &ik));
}

TEST(Noise, TwoHandshakesOfTheSamePairGiveDifferentKeys) {
  Handshake a, b;
  b.host = a.host;
  b.bridge = a.bridge;
  dxfp_noise_keys ka{}, kb{};
  for (auto [h, k] : {std::pair{&a, &ka}, std::pair{&b, &kb}}) {
    h->Start(h->bridge.pub);
    h->WriteMsg1({});
    Bytes p;
    ASSERT_TRUE(ReadMsg1(&h->responder, h->msg1, &p));
    h->WriteMsg2({});
    ASSERT_TRUE(ReadMsg2(&h->initiator, h->msg2, &p));
    ASSERT_TRUE(dxfp_noise_split(&h->initiator, k));
  }
  EXPECT_NE(0, std::memcmp(ka.send.key, kb.send.key, DXFP_KEY_SIZE));
}

TEST(Noise, EveryFlippedBitOfTheFirstMessageIsRefused) {
  Handshake h;
  h.Start(h.bridge.pub);
  const Bytes msg1 = h.WriteMsg1(RandomBytes(24));
  for (size_t i = 0; i < msg1.size(); ++i) {
    Bytes bad = msg1;
    bad[i] ^= static_cast<uint8_t>(1u << (i % 8));
    dxfp_noise r{};
    dxfp_noise_responder_init(&r, &Ops(), h.bridge.secret.data(), h.prologue.data(),
                              h.prologue.size());
    Bytes p;
    EXPECT_FALSE(ReadMsg1(&r, bad, &p)) << "byte " << i;
    EXPECT_EQ(r.step, DXFP_NOISE_FAILED);
  }
  // Cut short, or with a byte more.
  const size_t short_by_one = DXFP_NOISE_MSG1_OVERHEAD - 1;
  for (size_t len : {size_t{0}, size_t{31}, short_by_one, msg1.size() - 1, msg1.size() + 1}) {
    Bytes bad = msg1;
    bad.resize(len, 0);
    dxfp_noise r{};
    dxfp_noise_responder_init(&r, &Ops(), h.bridge.secret.data(), h.prologue.data(),
                              h.prologue.size());
    Bytes p;
    EXPECT_FALSE(ReadMsg1(&r, bad, &p)) << "length " << len;
  }
}

TEST(Noise, EveryFlippedBitOfTheSecondMessageIsRefused) {
  Handshake h;
  h.Start(h.bridge.pub);
  h.WriteMsg1({});
  Bytes p;
  ASSERT_TRUE(ReadMsg1(&h.responder, h.msg1, &p));
  const Bytes msg2 = h.WriteMsg2(RandomBytes(8));
  for (size_t i = 0; i < msg2.size(); ++i) {
    dxfp_noise copy = h.initiator;  // the state before the message, for each try
    Bytes bad = msg2;
    bad[i] ^= 0x80;
    EXPECT_FALSE(ReadMsg2(&copy, bad, &p)) << "byte " << i;
  }
  EXPECT_TRUE(ReadMsg2(&h.initiator, msg2, &p));
}

TEST(Noise, AHostThatDoesNotKnowTheBridgesKeyGetsNothing) {
  Handshake h;
  const KeyPair impostor = NewKeyPair();
  h.Start(impostor.pub);  // the host was given another key than the bridge's
  h.WriteMsg1({});
  Bytes p;
  EXPECT_FALSE(ReadMsg1(&h.responder, h.msg1, &p));
}

TEST(Noise, AnImpostorBridgeCannotAnswer) {
  // A man in the middle with its own key gets msg1 but cannot read it, so it cannot write msg2:
  // it answers with a message made for a handshake it started itself.
  Handshake real, fake;
  real.Start(real.bridge.pub);
  real.WriteMsg1({});
  fake.host = real.host;
  fake.Start(fake.bridge.pub);
  fake.WriteMsg1({});
  Bytes p;
  ASSERT_TRUE(ReadMsg1(&fake.responder, fake.msg1, &p));
  const Bytes forged = fake.WriteMsg2({});
  EXPECT_FALSE(ReadMsg2(&real.initiator, forged, &p));
}

TEST(Noise, ADifferentPrologueOrBoundDataFailsTheHandshake) {
  Handshake h;
  h.Start(h.bridge.pub);
  h.WriteMsg1({});
  dxfp_noise r{};
  const Bytes other = {'D', 'x', 'F', 'Q'};
  dxfp_noise_responder_init(&r, &Ops(), h.bridge.secret.data(), other.data(), other.size());
  Bytes p;
  EXPECT_FALSE(ReadMsg1(&r, h.msg1, &p));

  // The same with data bound between the messages (the WELCOME's clear records).
  ASSERT_TRUE(ReadMsg1(&h.responder, h.msg1, &p));
  const Bytes clear = {1, 2, 3, 4};
  dxfp_noise_mix_hash(&h.responder, clear.data(), clear.size());
  h.WriteMsg2({});
  dxfp_noise copy = h.initiator;
  const Bytes changed = {1, 2, 3, 5};
  dxfp_noise_mix_hash(&copy, changed.data(), changed.size());
  EXPECT_FALSE(ReadMsg2(&copy, h.msg2, &p));
  dxfp_noise_mix_hash(&h.initiator, clear.data(), clear.size());
  EXPECT_TRUE(ReadMsg2(&h.initiator, h.msg2, &p));
}

TEST(Noise, ALowOrderEphemeralKeyIsRefused) {
  Handshake h;
  h.Start(h.bridge.pub);
  Bytes msg1 = h.WriteMsg1({});
  std::fill(msg1.begin(), msg1.begin() + DXFP_KEY_SIZE, 0);  // e = 0: X25519 gives all zeros
  Bytes p;
  EXPECT_FALSE(ReadMsg1(&h.responder, msg1, &p));
}

TEST(Noise, MessagesOutOfTurnAreRefused) {
  Handshake h;
  h.Start(h.bridge.pub);
  uint8_t out[256];
  EXPECT_EQ(0u, dxfp_noise_write_msg2(&h.initiator, nullptr, 0, out));
  EXPECT_EQ(0u, dxfp_noise_write_msg1(&h.responder, nullptr, 0, out));
  EXPECT_EQ(0u, dxfp_noise_write_msg2(&h.responder, nullptr, 0, out));  // msg1 not read yet
  dxfp_noise_keys k{};
  EXPECT_FALSE(dxfp_noise_split(&h.initiator, &k));
  h.WriteMsg1({});
  EXPECT_EQ(0u, dxfp_noise_write_msg1(&h.initiator, nullptr, 0, out));  // only once
  Bytes p;
  EXPECT_FALSE(ReadMsg1(&h.initiator, h.msg1, &p));  // an initiator reads no msg1
}

TEST(Mac1, ChecksEveryByteAndDependsOnTheResponderKey) {
  const KeyPair bridge = NewKeyPair(), other = NewKeyPair();
  std::array<uint8_t, DXFP_HASH_SIZE> key{}, other_key{};
  dxfp_mac1_key(&Ops(), bridge.pub.data(), key.data());
  dxfp_mac1_key(&Ops(), other.pub.data(), other_key.data());
  const Bytes msg = RandomBytes(120);
  std::array<uint8_t, DXFP_MAC1_SIZE> mac{}, again{};
  dxfp_mac1(&Ops(), key.data(), msg.data(), msg.size(), mac.data());
  dxfp_mac1(&Ops(), key.data(), msg.data(), msg.size(), again.data());
  EXPECT_TRUE(dxfp_equal_ct(mac.data(), again.data(), mac.size()));
  dxfp_mac1(&Ops(), other_key.data(), msg.data(), msg.size(), again.data());
  EXPECT_FALSE(dxfp_equal_ct(mac.data(), again.data(), mac.size()));
  for (size_t i = 0; i < msg.size(); ++i) {
    Bytes bad = msg;
    bad[i] ^= 1;
    dxfp_mac1(&Ops(), key.data(), bad.data(), bad.size(), again.data());
    EXPECT_FALSE(dxfp_equal_ct(mac.data(), again.data(), mac.size())) << "byte " << i;
  }
}

// ---- Interoperation with dissononce ----

std::string Hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof(b), "%02x", p[i]);
    s += b;
  }
  return s.empty() ? "-" : s;
}
std::string Hex(const Bytes& b) { return Hex(b.data(), b.size()); }
std::string Hex(const Key& k) { return Hex(k.data(), k.size()); }

Bytes Unhex(const std::string& s) {
  Bytes b;
  for (size_t i = 0; i + 1 < s.size(); i += 2) b.push_back(std::stoi(s.substr(i, 2), nullptr, 16));
  return b;
}

// Runs noise_interop.py; its key=value lines.
std::map<std::string, std::string> RunPython(const std::string& args) {
  const std::string cmd =
      "/usr/bin/python3 " DXPU_SOURCE_DIR "/tests/core/noise_interop.py " + args;
  std::map<std::string, std::string> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char line[4096];
  while (std::fgets(line, sizeof(line), p) != nullptr) {
    std::string l(line);
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    const auto eq = l.find('=');
    if (eq != std::string::npos) out[l.substr(0, eq)] = l.substr(eq + 1);
  }
  out["status"] = std::to_string(pclose(p));
  return out;
}

// Decrypts what the Python end sent with its first transport message.
std::string OpenFromPython(const dxfp_cipher& recv, const std::string& ct_hex) {
  Bytes ct = Unhex(ct_hex);
  if (ct.size() < DXFP_TAG_SIZE) return "(short)";
  Bytes plain(ct.size());
  if (!Ops().aead_open(plain.data(), ct.data(), ct.size(), nullptr, 0, 0, recv.key))
    return "(tag failed)";
  return std::string(plain.begin(), plain.begin() + static_cast<long>(ct.size() - DXFP_TAG_SIZE));
}

TEST(NoiseInterop, LibCoreResponderAndDissononceInitiator) {
  const KeyPair host = NewKeyPair(), bridge = NewKeyPair(), host_e = NewKeyPair();
  const Bytes prologue = RandomBytes(36), hello = RandomBytes(24), welcome = RandomBytes(30);
  auto first = RunPython("initiator " + Hex(host.secret) + " " + Hex(bridge.pub) + " " +
                         Hex(host_e.secret) + " " + Hex(prologue) + " " + Hex(hello));
  ASSERT_EQ(first["status"], "0") << first["error"];
  dxfp_noise r{};
  dxfp_noise_responder_init(&r, &Ops(), bridge.secret.data(), prologue.data(), prologue.size());
  Bytes got;
  ASSERT_TRUE(ReadMsg1(&r, Unhex(first["msg1"]), &got));
  EXPECT_EQ(got, hello);
  EXPECT_EQ(Hex(r.rs, DXFP_KEY_SIZE), Hex(host.pub));
  Bytes msg2(welcome.size() + DXFP_NOISE_MSG2_OVERHEAD);
  msg2.resize(dxfp_noise_write_msg2(&r, welcome.data(), welcome.size(), msg2.data()));
  dxfp_noise_keys keys{};
  ASSERT_TRUE(dxfp_noise_split(&r, &keys));

  // The initiator again, with the same ephemeral key, now reading the answer.
  auto second =
      RunPython("initiator " + Hex(host.secret) + " " + Hex(bridge.pub) + " " + Hex(host_e.secret) +
                " " + Hex(prologue) + " " + Hex(hello) + " " + Hex(msg2));
  ASSERT_EQ(second["status"], "0") << second["error"];
  EXPECT_EQ(second["msg1"], first["msg1"]);
  EXPECT_EQ(second["payload2"], Hex(welcome));
  EXPECT_EQ(second["hash"], Hex(keys.hash, DXFP_HASH_SIZE));
  EXPECT_EQ(OpenFromPython(keys.recv, second["ct"]), "from-python");
}

TEST(NoiseInterop, LibCoreInitiatorAndDissononceResponder) {
  const KeyPair host = NewKeyPair(), bridge = NewKeyPair(), bridge_e = NewKeyPair();
  const Bytes prologue = RandomBytes(20), hello = RandomBytes(24), welcome = RandomBytes(30);
  dxfp_noise i{};
  dxfp_noise_initiator_init(&i, &Ops(), host.secret.data(), bridge.pub.data(), prologue.data(),
                            prologue.size());
  Bytes msg1(hello.size() + DXFP_NOISE_MSG1_OVERHEAD);
  msg1.resize(dxfp_noise_write_msg1(&i, hello.data(), hello.size(), msg1.data()));
  auto py = RunPython("responder " + Hex(bridge.secret) + " " + Hex(bridge_e.secret) + " " +
                      Hex(prologue) + " " + Hex(msg1) + " " + Hex(welcome));
  ASSERT_EQ(py["status"], "0") << py["error"];
  EXPECT_EQ(py["payload1"], Hex(hello));
  EXPECT_EQ(py["rs"], Hex(host.pub));
  Bytes got;
  ASSERT_TRUE(ReadMsg2(&i, Unhex(py["msg2"]), &got));
  EXPECT_EQ(got, welcome);
  dxfp_noise_keys keys{};
  ASSERT_TRUE(dxfp_noise_split(&i, &keys));
  EXPECT_EQ(py["hash"], Hex(keys.hash, DXFP_HASH_SIZE));
  EXPECT_EQ(OpenFromPython(keys.recv, py["ct"]), "from-python");

  // And a message of ours that the Python end refuses when changed: the responder reads a
  // msg1 with one flipped bit as an error.
  msg1[40] ^= 1;
  auto bad = RunPython("responder " + Hex(bridge.secret) + " " + Hex(bridge_e.secret) + " " +
                       Hex(prologue) + " " + Hex(msg1) + " " + Hex(welcome));
  EXPECT_NE(bad["status"], "0");
}

}  // namespace
