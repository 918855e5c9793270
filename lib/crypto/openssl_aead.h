// openssl_aead.h - ChaCha20-Poly1305 (RFC 8439, Noise's ChaChaPoly nonce) on OpenSSL's EVP, for
// the sealed frames of lib/core's sessions (struct dxfp_crypto_ops: aead_seal, aead_open). The
// same function as libsodium's crypto_aead_chacha20poly1305_ietf_*, which the handshake's tests
// check it against; OpenSSL's is the faster on this project's machines (2.3 times at 4 KiB: its
// assembly for AVX2), and the sealed data path spends most of its time here
// (docs/performance.md, "Sealed frames").
#ifndef DXPU_LIB_CRYPTO_OPENSSL_AEAD_H_
#define DXPU_LIB_CRYPTO_OPENSSL_AEAD_H_

#include <cstddef>
#include <cstdint>

#include "core/dxfp_noise.h"

namespace dxpu::crypto {

// dst[0..len) the ciphertext of src, dst[len..len+16) the tag; nonce: Noise's counter n.
void OpensslAeadSeal(uint8_t* dst, const uint8_t* src, size_t len, const uint8_t* ad, size_t ad_len,
                     uint64_t n, const uint8_t key[DXFP_KEY_SIZE]);
// src[0..len) is ciphertext and tag; false when the tag fails (dst then unspecified).
bool OpensslAeadOpen(uint8_t* dst, const uint8_t* src, size_t len, const uint8_t* ad, size_t ad_len,
                     uint64_t n, const uint8_t key[DXFP_KEY_SIZE]);

}  // namespace dxpu::crypto

#endif  // DXPU_LIB_CRYPTO_OPENSSL_AEAD_H_
