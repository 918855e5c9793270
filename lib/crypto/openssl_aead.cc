// openssl_aead.cc - see openssl_aead.h.
#include "crypto/openssl_aead.h"

#include <openssl/evp.h>

#include <array>
#include <climits>
#include <memory>
#include <stdexcept>

namespace dxpu::crypto {
namespace {

constexpr size_t kNonceBytes = 12;

// The 96-bit IETF nonce of a Noise ChaChaPoly counter: 32 zero bits, then n little-endian.
std::array<uint8_t, kNonceBytes> NonceOf(uint64_t n) {
  std::array<uint8_t, kNonceBytes> nonce{};
  for (size_t i = 0; i < 8; ++i) nonce[4 + i] = static_cast<uint8_t>(n >> (8 * i));
  return nonce;
}

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using Ctx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

// One context per thread and direction, set up once: a call only sets the key and the nonce.
EVP_CIPHER_CTX* ContextFor(int encrypt) {
  thread_local std::array<Ctx, 2> ctx;
  Ctx& c = ctx[encrypt != 0 ? 1 : 0];
  if (!c) {
    c.reset(EVP_CIPHER_CTX_new());
    if (!c || EVP_CipherInit_ex(c.get(), EVP_chacha20_poly1305(), nullptr, nullptr, nullptr,
                                encrypt) != 1)
      throw std::runtime_error("OpenSSL: no ChaCha20-Poly1305 context");
  }
  return c.get();
}

// Key, nonce and additional data into ctx; false on any OpenSSL error or an oversized input.
bool Start(EVP_CIPHER_CTX* ctx, int encrypt, const uint8_t* key, uint64_t n, const uint8_t* ad,
           size_t ad_len, size_t len) {
  const auto nonce = NonceOf(n);
  int out = 0;
  return len <= INT_MAX && ad_len <= INT_MAX &&
         EVP_CipherInit_ex(ctx, nullptr, nullptr, key, nonce.data(), encrypt) == 1 &&
         (ad_len == 0 || EVP_CipherUpdate(ctx, nullptr, &out, ad, static_cast<int>(ad_len)) == 1);
}

}  // namespace

void OpensslAeadSeal(uint8_t* dst, const uint8_t* src, size_t len, const uint8_t* ad, size_t ad_len,
                     uint64_t n, const uint8_t key[DXFP_KEY_SIZE]) {
  EVP_CIPHER_CTX* ctx = ContextFor(1);
  int out = 0, last = 0;
  if (!Start(ctx, 1, key, n, ad, ad_len, len) ||
      (len != 0 && EVP_CipherUpdate(ctx, dst, &out, src, static_cast<int>(len)) != 1) ||
      EVP_CipherFinal_ex(ctx, dst + out, &last) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, DXFP_TAG_SIZE, dst + len) != 1)
    throw std::runtime_error("OpenSSL: ChaCha20-Poly1305 seal failed");
}

bool OpensslAeadOpen(uint8_t* dst, const uint8_t* src, size_t len, const uint8_t* ad, size_t ad_len,
                     uint64_t n, const uint8_t key[DXFP_KEY_SIZE]) {
  if (len < DXFP_TAG_SIZE) return false;
  const size_t body = len - DXFP_TAG_SIZE;
  EVP_CIPHER_CTX* ctx = ContextFor(0);
  // OpenSSL takes the expected tag through a non-const pointer; it only reads it.
  std::array<uint8_t, DXFP_TAG_SIZE> tag{};
  for (size_t i = 0; i < tag.size(); ++i) tag[i] = src[body + i];
  int out = 0, last = 0;
  return Start(ctx, 0, key, n, ad, ad_len, body) &&
         (body == 0 || EVP_CipherUpdate(ctx, dst, &out, src, static_cast<int>(body)) == 1) &&
         EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, DXFP_TAG_SIZE, tag.data()) == 1 &&
         EVP_CipherFinal_ex(ctx, dst + out, &last) == 1;
}

}  // namespace dxpu::crypto
