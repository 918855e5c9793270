// key_list.h - the bridge's trusted image-signing keys (docs/firmware.md, "The trusted keys"):
// a list of 1 to 4 Ed25519 public keys with a sequence number, signed by the root key whose
// public half is in the factory block (the boot ROM model, written once). A list that does not
// verify with the root key is never used; a rotation writes a newer list, signed by the root
// key, into the key-list block not holding the current one.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_KEY_LIST_H_
#define DXPU_BRIDGE_FW_FIRMWARE_KEY_LIST_H_

#include <cstdint>
#include <span>
#include <vector>

#include "bridge-fw/firmware/firmware_error.h"
#include "bridge-fw/firmware/signing.h"

namespace dxpu::firmware {

inline constexpr uint32_t kKeyListMagic = 0x44584b4c;  // "DXKL"
inline constexpr uint16_t kKeyListFormat = 1;
inline constexpr size_t kMaxTrustedKeys = 4;
inline constexpr size_t kKeyListSignedBytes = 144;
inline constexpr size_t kKeyListBytes = kKeyListSignedBytes + 64;  // the signature last

struct KeyList {
  uint32_t sequence = 0;  // rises with each rotation
  std::vector<PublicKey> keys;
};

// The signed list (what `dxpu flash sign-keys` writes), or why not (1 to 4 keys, no repeats).
FirmwareResult<std::vector<uint8_t>> SignKeyList(const KeyList& list, const SecretKey& root);
// The list in `bytes` (kKeyListBytes, then anything: a flash block's erased rest), verified
// with `root`: bad-key-list with the reason when it is not one, is not signed by the root key,
// or breaks a rule.
FirmwareResult<KeyList> VerifyKeyList(std::span<const uint8_t> bytes, const PublicKey& root);

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_KEY_LIST_H_
