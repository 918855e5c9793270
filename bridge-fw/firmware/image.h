// image.h - the bridge's firmware image (docs/firmware.md, "The image"): a 256-byte header
// signed with Ed25519 and a payload of sections (the dxpu-bridge executable, its default
// configuration). Building, decoding and verifying; every check the table names, in its order.
#ifndef DXPU_BRIDGE_FW_FIRMWARE_IMAGE_H_
#define DXPU_BRIDGE_FW_FIRMWARE_IMAGE_H_

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bridge-fw/firmware/firmware_error.h"
#include "bridge-fw/firmware/signing.h"

namespace dxpu::firmware {

inline constexpr uint32_t kImageMagic = 0x44584657;  // "DXFW"
inline constexpr uint16_t kImageFormat = 1;
inline constexpr size_t kHeaderBytes = 256;
inline constexpr size_t kSignedBytes = 192;  // the signature covers bytes 0..191
inline constexpr size_t kBuildIdBytes = 40;
inline constexpr size_t kSectionHeaderBytes = 48;
inline constexpr size_t kSectionNameBytes = 32;

// MAJOR.MINOR.PATCH packed as major << 24 | minor << 16 | patch; compares as the number.
struct FirmwareVersion {
  uint32_t packed = 0;

  static FirmwareResult<FirmwareVersion> Parse(std::string_view text);  // "1.2.3"
  static FirmwareVersion Of(uint32_t major, uint32_t minor, uint32_t patch);
  uint32_t major() const { return packed >> 24; }
  uint32_t minor() const { return (packed >> 16) & 0xff; }
  uint32_t patch() const { return packed & 0xffff; }
  std::string ToString() const;
  bool operator==(const FirmwareVersion& o) const { return packed == o.packed; }
  std::strong_ordering operator<=>(const FirmwareVersion& o) const { return packed <=> o.packed; }
};

enum class SectionType : uint32_t { kExecutable = 1, kConfig = 2 };
std::string_view SectionTypeName(SectionType type);  // "executable", "config"

struct Section {
  SectionType type = SectionType::kExecutable;
  std::string name;  // 1..31 printable ASCII
  std::vector<uint8_t> data;
};

struct ImageHeader {
  FirmwareVersion version;
  uint32_t hw_revision = 0;
  uint64_t payload_length = 0;
  Sha256Digest payload_sha256{};
  KeyId key_id{};
  uint64_t build_time = 0;  // seconds since 1970, UTC
  std::string build_id;     // 0..40 printable ASCII
  // The anti-rollback level: raised when an image fixes a vulnerability; a bridge whose
  // anti-rollback counter is above it never runs or takes the image (docs/firmware.md).
  uint32_t security_version = 0;
  Signature signature{};
};

// What `dxpu flash sign` puts in an image.
struct ImageSpec {
  FirmwareVersion version;
  uint32_t hw_revision = 0;
  uint64_t build_time = 0;
  std::string build_id;
  uint32_t security_version = 0;
  std::vector<Section> sections;  // v1: the executable, then the configuration
};

// The signed image, or why the spec cannot be one (a bad name or build ID, the sections).
FirmwareResult<std::vector<uint8_t>> BuildImage(const ImageSpec& spec, const SecretKey& key);

// What a bridge accepts.
struct TrustPolicy {
  std::vector<PublicKey> keys;  // trusted signing keys
  uint32_t hw_revision = 0;     // this bridge's
  uint64_t max_payload = 0;     // a slot's size less the header
  // The boot state's minimum version; an image below it is `downgrade` unless allowed.
  std::optional<FirmwareVersion> min_version;
  bool allow_downgrade = false;
  // The boot state's anti-rollback counter: an image with a lower security version is
  // `rollback`, with or without any override.
  uint32_t min_security = 0;
};

// The SHA-256 of an image's 256-byte header: names exactly one image (the header holds the
// payload's SHA-256 and the signature), as a downgrade authorisation does.
Sha256Digest ImageDigest(std::span<const uint8_t> header);

// The header's own checks only (truncated, bad-magic, bad-format, reserved): what `dxpu flash
// inspect` shows of any image.
FirmwareResult<ImageHeader> DecodeHeader(std::span<const uint8_t> bytes);
// Every check that needs no payload, in the table's order: what a bridge applies before it
// takes any of an image's payload.
FirmwareResult<ImageHeader> VerifyHeader(std::span<const uint8_t> header,
                                         const TrustPolicy& policy);

struct VerifiedImage {
  ImageHeader header;
  std::vector<Section> sections;
};
// Every check. `image` is the header and the payload; bytes after the payload are refused
// (`too-large`) unless `trailing_ok` (a slot holds the image, then erased flash).
FirmwareResult<VerifiedImage> VerifyImage(std::span<const uint8_t> image, const TrustPolicy& policy,
                                          bool trailing_ok = false);
// The payload's sections (bad-payload), without signature or hash checks: for `inspect`.
FirmwareResult<std::vector<Section>> ParsePayload(std::span<const uint8_t> payload);

}  // namespace dxpu::firmware

#endif  // DXPU_BRIDGE_FW_FIRMWARE_IMAGE_H_
