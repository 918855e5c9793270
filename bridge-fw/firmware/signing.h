// signing.h - what firmware images are signed with (docs/firmware.md): Ed25519 key pairs,
// their key IDs, SHA-256, and the key files `dxpu flash keygen` writes. libsodium underneath.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_SIGNING_H_
#define DXPU_BRIDGE_FW_FIRMWARE_SIGNING_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "bridge-fw/firmware/firmware_error.h"

namespace dxpu::firmware {

using PublicKey = std::array<uint8_t, 32>;
using SecretKey = std::array<uint8_t, 64>;  // libsodium's: the seed, then the public key
using Signature = std::array<uint8_t, 64>;
using KeyId = std::array<uint8_t, 8>;  // the first 8 bytes of SHA-256(public key)
using Sha256Digest = std::array<uint8_t, 32>;

struct KeyPair {
  PublicKey public_key{};
  SecretKey secret_key{};
};

KeyPair GenerateKeyPair();
KeyId KeyIdOf(const PublicKey& key);
Sha256Digest Sha256(std::span<const uint8_t> data);
Signature Sign(std::span<const uint8_t> message, const SecretKey& key);
bool VerifySignature(std::span<const uint8_t> message, const Signature& signature,
                     const PublicKey& key);

// Lower-case hex, two digits a byte; and back: exactly out.size() bytes of hex (either case).
std::string ToHex(std::span<const uint8_t> bytes);
bool ParseHex(std::string_view hex, std::span<uint8_t> out);
// Random bytes from libsodium (a new bridge's identity).
void RandomBytes(std::span<uint8_t> out);

// Key files: one line, "DXPU-FW-PUBLIC-KEY-V1 <64 hex digits>" or "DXPU-FW-SECRET-KEY-V1
// <128 hex digits>". A secret key file must not be readable by group or others.
FirmwareResult<PublicKey> ReadPublicKeyFile(const std::string& path);
FirmwareResult<SecretKey> ReadSecretKeyFile(const std::string& path);
// Writes BASE.key (mode 0600) and BASE.pub; refuses to replace either.
FirmwareResult<Ok> WriteKeyFiles(const std::string& base, const KeyPair& keys);
// The public half of a secret key.
PublicKey PublicKeyOf(const SecretKey& key);

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_SIGNING_H_
