// downgrade.cc - signed downgrade authorisations (downgrade.h).
#include "bridge-fw/firmware/downgrade.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "dxpu/compat.h"

namespace dxpu::firmware {
namespace {

constexpr uint16_t kAuthFormat = 1;
constexpr size_t kAuthOffBridge = 8;
constexpr size_t kAuthOffDigest = 24;
constexpr size_t kAuthOffVersion = 56;
constexpr size_t kAuthOffKeyId = 64;
constexpr size_t kAuthOffReserved = 72;

FirmwareError BadAuth(std::string message) { return {"bad-authorisation", std::move(message)}; }

}  // namespace

FirmwareResult<std::vector<uint8_t>> SignDowngrade(const BridgeId& bridge,
                                                   std::span<const uint8_t> header,
                                                   const SecretKey& key) {
  FirmwareResult<ImageHeader> h = DecodeHeader(header);
  if (!h.ok())
    return BadAuth(fmt::format("not an image: {}: {}", h.error().name, h.error().message));
  std::vector<uint8_t> b(kDowngradeBytes, 0);
  dxpu_put_be32(b.data(), kDowngradeMagic);
  dxpu_put_be16(&b[4], kAuthFormat);
  std::ranges::copy(bridge, b.begin() + kAuthOffBridge);
  std::ranges::copy(ImageDigest(header), b.begin() + kAuthOffDigest);
  dxpu_put_be32(&b[kAuthOffVersion], h.value().version.packed);
  std::ranges::copy(KeyIdOf(PublicKeyOf(key)), b.begin() + kAuthOffKeyId);
  const Signature sig = Sign(std::span(b).first(kDowngradeSignedBytes), key);
  std::ranges::copy(sig, b.begin() + kDowngradeSignedBytes);
  return b;
}

FirmwareResult<DowngradeAuth> DecodeDowngrade(std::span<const uint8_t> b) {
  if (b.size() != kDowngradeBytes)
    return BadAuth(fmt::format("{} bytes; an authorisation has {}", b.size(), kDowngradeBytes));
  if (dxpu_get_be32(b.data()) != kDowngradeMagic || dxpu_get_be16(&b[4]) != kAuthFormat ||
      !dxpu_all_zero(&b[6], 2) || !dxpu_all_zero(&b[60], 4) ||
      !dxpu_all_zero(&b[kAuthOffReserved], kDowngradeSignedBytes - kAuthOffReserved))
    return BadAuth("not a downgrade authorisation (magic, format or a reserved byte)");
  DowngradeAuth a;
  std::copy_n(b.begin() + kAuthOffBridge, a.bridge.size(), a.bridge.begin());
  std::copy_n(b.begin() + kAuthOffDigest, a.image_digest.size(), a.image_digest.begin());
  a.version.packed = dxpu_get_be32(&b[kAuthOffVersion]);
  std::copy_n(b.begin() + kAuthOffKeyId, a.key_id.size(), a.key_id.begin());
  return a;
}

FirmwareResult<DowngradeAuth> VerifyDowngrade(std::span<const uint8_t> b,
                                              const std::vector<PublicKey>& keys,
                                              const BridgeId& bridge,
                                              std::span<const uint8_t> header) {
  FirmwareResult<DowngradeAuth> a = DecodeDowngrade(b);
  if (!a.ok()) return a;
  const DowngradeAuth& auth = a.value();
  const auto key =
      std::ranges::find_if(keys, [&](const PublicKey& k) { return KeyIdOf(k) == auth.key_id; });
  if (key == keys.end())
    return BadAuth(
        fmt::format("signed with key {}, which this bridge does not trust", ToHex(auth.key_id)));
  Signature sig{};
  std::copy_n(b.begin() + kDowngradeSignedBytes, sig.size(), sig.begin());
  if (!VerifySignature(b.first(kDowngradeSignedBytes), sig, *key))
    return BadAuth(fmt::format("its signature does not verify with key {}", ToHex(auth.key_id)));
  if (auth.bridge != bridge)
    return BadAuth(
        fmt::format("it names bridge {}, not this one ({})", ToHex(auth.bridge), ToHex(bridge)));
  if (auth.image_digest != ImageDigest(header))
    return BadAuth(fmt::format("it allows the image with digest {}, not this one ({})",
                               ToHex(auth.image_digest), ToHex(ImageDigest(header))));
  return a;
}

}  // namespace dxpu::firmware
