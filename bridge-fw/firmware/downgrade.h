// downgrade.h - a downgrade authorisation (docs/firmware.md, "Anti-rollback"): the one way a
// bridge takes an image older than its push floor. Signed with Ed25519 by a key the bridge
// trusts, it names the bridge (its factory block's bridge ID) and the exact image (the SHA-256
// of its signed header), so it allows one image on one bridge and nothing else.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_DOWNGRADE_H_
#define DXPU_BRIDGE_FW_FIRMWARE_DOWNGRADE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "bridge-fw/firmware/firmware_error.h"
#include "bridge-fw/firmware/flash_device.h"
#include "bridge-fw/firmware/image.h"
#include "bridge-fw/firmware/signing.h"

namespace dxpu::firmware {

inline constexpr uint32_t kDowngradeMagic = 0x44584441;  // "DXDA"
inline constexpr size_t kDowngradeSignedBytes = 128;
inline constexpr size_t kDowngradeBytes = kDowngradeSignedBytes + 64;  // the signature last

struct DowngradeAuth {
  BridgeId bridge{};
  Sha256Digest image_digest{};  // ImageDigest of the allowed image's header
  FirmwareVersion version;      // the allowed image's (for people; the digest decides)
  KeyId key_id{};
};

// An authorisation for the image whose header is `header` on bridge `bridge`, signed with
// `key`; refused (bad-authorisation) when `header` is not an image header.
FirmwareResult<std::vector<uint8_t>> SignDowngrade(const BridgeId& bridge,
                                                   std::span<const uint8_t> header,
                                                   const SecretKey& key);
// Its fields, format checked, signature not: what `dxpu flash` shows and checks locally.
FirmwareResult<DowngradeAuth> DecodeDowngrade(std::span<const uint8_t> bytes);
// Every check: the format, a key of `keys` by its ID, the signature, the bridge, the image.
// Any failure is bad-authorisation with the reason.
FirmwareResult<DowngradeAuth> VerifyDowngrade(std::span<const uint8_t> bytes,
                                              const std::vector<PublicKey>& keys,
                                              const BridgeId& bridge,
                                              std::span<const uint8_t> header);

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_DOWNGRADE_H_
