// sodium_crypto_ops.cc - lib/core's crypto primitives on libsodium.
#include "crypto/sodium_crypto_ops.h"

#include <sodium.h>

#include <array>
#include <stdexcept>

namespace dxpu::crypto {
namespace {

// The 96-bit IETF nonce of a Noise ChaChaPoly counter: 32 zero bits, then the counter
// little-endian (Noise, 12.3).
std::array<uint8_t, crypto_aead_chacha20poly1305_ietf_NPUBBYTES> NonceOf(uint64_t n) {
  std::array<uint8_t, crypto_aead_chacha20poly1305_ietf_NPUBBYTES> nonce{};
  for (size_t i = 0; i < 8; ++i) nonce[4 + i] = static_cast<uint8_t>(n >> (8 * i));
  return nonce;
}

bool X25519(uint8_t out[DXFP_KEY_SIZE], const uint8_t secret[DXFP_KEY_SIZE],
            const uint8_t point[DXFP_KEY_SIZE]) {
  // libsodium refuses (-1) an all-zero result, which is what lib/core asks to know.
  return crypto_scalarmult_curve25519(out, secret, point) == 0;
}

void X25519Keypair(uint8_t secret[DXFP_KEY_SIZE], uint8_t pub[DXFP_KEY_SIZE]) {
  crypto_box_keypair(pub, secret);
}

void AeadSeal(uint8_t* dst, const uint8_t* src, size_t len, const uint8_t* ad, size_t ad_len,
              uint64_t n, const uint8_t key[DXFP_KEY_SIZE]) {
  const auto nonce = NonceOf(n);
  crypto_aead_chacha20poly1305_ietf_encrypt_detached(dst, dst + len, nullptr, src, len, ad, ad_len,
                                                     nullptr, nonce.data(), key);
}

bool AeadOpen(uint8_t* dst, const uint8_t* src, size_t len, const uint8_t* ad, size_t ad_len,
              uint64_t n, const uint8_t key[DXFP_KEY_SIZE]) {
  if (len < DXFP_TAG_SIZE) return false;
  const auto nonce = NonceOf(n);
  const size_t body = len - DXFP_TAG_SIZE;
  return crypto_aead_chacha20poly1305_ietf_decrypt_detached(dst, nullptr, src, body, src + body, ad,
                                                            ad_len, nonce.data(), key) == 0;
}

void Sha256(uint8_t out[DXFP_HASH_SIZE], const dxfp_piece* parts, size_t n) {
  crypto_hash_sha256_state st;
  crypto_hash_sha256_init(&st);
  for (size_t i = 0; i < n; ++i) {
    if (parts[i].len != 0) crypto_hash_sha256_update(&st, parts[i].base, parts[i].len);
  }
  crypto_hash_sha256_final(&st, out);
}

const dxfp_crypto_ops kOps = {
    .x25519 = X25519,
    .x25519_keypair = X25519Keypair,
    .aead_seal = AeadSeal,
    .aead_open = AeadOpen,
    .sha256 = Sha256,
};

}  // namespace

const dxfp_crypto_ops& SodiumCryptoOps() {
  static const bool started = sodium_init() >= 0;
  if (!started) throw std::runtime_error("libsodium: sodium_init failed");
  return kOps;
}

KeyPair NewKeyPair() {
  SodiumCryptoOps();
  KeyPair kp;
  crypto_box_keypair(kp.pub.data(), kp.secret.data());
  return kp;
}

Key PublicKeyOf(const Key& secret) {
  SodiumCryptoOps();
  Key pub{};
  crypto_scalarmult_curve25519_base(pub.data(), secret.data());
  return pub;
}

}  // namespace dxpu::crypto
