// fuzz_key.cc - see fuzz_key.h.
#include "fuzz_key.h"

#include <sodium.h>

#include <array>
#include <stdexcept>

namespace dxpu::fuzz {

const firmware::KeyPair& FuzzKey() {
  static const firmware::KeyPair key = [] {
    if (sodium_init() < 0) throw std::runtime_error("sodium_init failed");
    std::array<uint8_t, crypto_sign_SEEDBYTES> seed{};
    seed.fill(0x5a);  // a test key: not secret
    firmware::KeyPair k;
    crypto_sign_seed_keypair(k.public_key.data(), k.secret_key.data(), seed.data());
    return k;
  }();
  return key;
}

}  // namespace dxpu::fuzz
