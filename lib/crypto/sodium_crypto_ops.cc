// sodium_crypto_ops.cc - lib/core's crypto primitives: X25519 and SHA-256 on libsodium, the
// AEAD of sealed frames on OpenSSL (openssl_aead.h says why).
#include "crypto/sodium_crypto_ops.h"

#include "crypto/openssl_aead.h"

#include <sodium.h>

#include <array>
#include <stdexcept>

namespace dxpu::crypto {
namespace {

bool X25519(uint8_t out[DXFP_KEY_SIZE], const uint8_t secret[DXFP_KEY_SIZE],
            const uint8_t point[DXFP_KEY_SIZE]) {
  // libsodium refuses (-1) an all-zero result, which is what lib/core asks to know.
  return crypto_scalarmult_curve25519(out, secret, point) == 0;
}

void X25519Keypair(uint8_t secret[DXFP_KEY_SIZE], uint8_t pub[DXFP_KEY_SIZE]) {
  crypto_box_keypair(pub, secret);
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
    .aead_seal = OpensslAeadSeal,  // the same AEAD as libsodium's, faster (openssl_aead.h)
    .aead_open = OpensslAeadOpen,
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
