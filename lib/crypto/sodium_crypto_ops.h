// sodium_crypto_ops.h - the primitives lib/core's handshake and sealed frames take
// (struct dxfp_crypto_ops), in userspace: libsodium's X25519 and SHA-256, and OpenSSL's
// ChaCha20-Poly1305 (IETF; openssl_aead.h: the same function, faster). dxpu.ko passes the
// kernel's lib/crypto ones instead (driver/dxpu_crypto.c).
#ifndef DXPU_LIB_CRYPTO_SODIUM_CRYPTO_OPS_H_
#define DXPU_LIB_CRYPTO_SODIUM_CRYPTO_OPS_H_

#include <array>
#include <cstdint>

#include "core/dxfp_noise.h"

namespace dxpu::crypto {

// The operations; sodium_init() has run once they are returned (throws std::runtime_error
// if libsodium cannot start, which only a broken system does).
const dxfp_crypto_ops& SodiumCryptoOps();

using Key = std::array<uint8_t, DXFP_KEY_SIZE>;

struct KeyPair {
  Key secret{};
  Key pub{};
};

// A new X25519 key pair from the system's random source.
KeyPair NewKeyPair();
// The public key of a secret one.
Key PublicKeyOf(const Key& secret);

}  // namespace dxpu::crypto

#endif  // DXPU_LIB_CRYPTO_SODIUM_CRYPTO_OPS_H_
