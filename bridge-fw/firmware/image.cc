// image.cc - building, decoding and verifying firmware images (image.h, docs/firmware.md).
#include "bridge-fw/firmware/image.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>

#include "dxpu/compat.h"

namespace dxpu::firmware {
namespace {

// Header offsets (docs/firmware.md).
constexpr size_t kOffMagic = 0;
constexpr size_t kOffFormat = 4;
constexpr size_t kOffHeaderLength = 6;
constexpr size_t kOffVersion = 8;
constexpr size_t kOffHwRevision = 12;
constexpr size_t kOffPayloadLength = 16;
constexpr size_t kOffPayloadSha = 24;
constexpr size_t kOffKeyId = 56;
constexpr size_t kOffBuildTime = 64;
constexpr size_t kOffBuildId = 72;
constexpr size_t kOffSecurityVersion = 112;
constexpr size_t kOffReserved = 116;
constexpr size_t kReservedBytes = 76;
constexpr size_t kOffSignature = 192;
static_assert(kOffReserved + kReservedBytes == kSignedBytes);
static_assert(kOffSignature + sizeof(Signature) == kHeaderBytes);

uint64_t GetBe64(const uint8_t* p) {
  return uint64_t{dxpu_get_be32(p)} << 32 | dxpu_get_be32(p + 4);
}
void PutBe64(uint8_t* p, uint64_t v) {
  dxpu_put_be32(p, static_cast<uint32_t>(v >> 32));
  dxpu_put_be32(p + 4, static_cast<uint32_t>(v));
}

FirmwareError Err(std::string name, std::string message) {
  return {std::move(name), std::move(message)};
}

uint64_t Padded(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

bool Printable(char c) { return c >= 0x21 && c <= 0x7e; }

// A NUL-padded ASCII field: `allowed` characters, then NULs only; at most max_len of them.
std::optional<std::string> AsciiField(std::span<const uint8_t> field, size_t max_len,
                                      bool (*allowed)(char)) {
  std::string s;
  size_t i = 0;
  for (; i < field.size() && field[i] != 0; ++i) {
    const char c = static_cast<char>(field[i]);
    if (!allowed(c)) return std::nullopt;
    s += c;
  }
  if (s.size() > max_len) return std::nullopt;
  for (; i < field.size(); ++i)
    if (field[i] != 0) return std::nullopt;
  return s;
}

bool NameChar(char c) { return c >= 0x20 && c <= 0x7e; }

}  // namespace

FirmwareResult<FirmwareVersion> FirmwareVersion::Parse(std::string_view text) {
  const FirmwareError bad = Err(
      "bad-version", fmt::format("'{}' is not a version MAJOR.MINOR.PATCH (each 0..255, 0..255, "
                                 "0..65535), e.g. 1.4.0",
                                 text));
  uint32_t parts[3] = {};
  const uint32_t limits[3] = {255, 255, 65535};
  std::string_view rest = text;
  for (int i = 0; i < 3; ++i) {
    const size_t dot = rest.find('.');
    const std::string_view part = i < 2 ? rest.substr(0, dot) : rest;
    if ((i < 2 && dot == std::string_view::npos) || part.empty() || part.size() > 5) return bad;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), parts[i]);
    if (ec != std::errc() || end != part.data() + part.size() || parts[i] > limits[i]) return bad;
    if (i < 2) rest = rest.substr(dot + 1);
  }
  return Of(parts[0], parts[1], parts[2]);
}

FirmwareVersion FirmwareVersion::Of(uint32_t major, uint32_t minor, uint32_t patch) {
  return {(major & 0xff) << 24 | (minor & 0xff) << 16 | (patch & 0xffff)};
}

std::string FirmwareVersion::ToString() const {
  return fmt::format("{}.{}.{}", major(), minor(), patch());
}

std::string_view SectionTypeName(SectionType type) {
  switch (type) {
    case SectionType::kExecutable:
      return "executable";
    case SectionType::kConfig:
      return "config";
  }
  return "unknown";
}

FirmwareResult<std::vector<uint8_t>> BuildImage(const ImageSpec& spec, const SecretKey& key) {
  if (spec.build_id.size() > kBuildIdBytes ||
      !std::ranges::all_of(spec.build_id, [](char c) { return Printable(c); }))
    return Err("bad-build-id", fmt::format("build ID '{}': at most {} printable ASCII characters, "
                                           "no spaces",
                                           spec.build_id, kBuildIdBytes));
  if (spec.sections.size() != 2 || spec.sections[0].type != SectionType::kExecutable ||
      spec.sections[1].type != SectionType::kConfig)
    return Err("bad-payload", "an image holds the bridge executable, then its configuration");
  std::vector<uint8_t> payload;
  for (const Section& s : spec.sections) {
    if (s.name.empty() || s.name.size() >= kSectionNameBytes ||
        !std::ranges::all_of(s.name, NameChar))
      return Err("bad-payload", fmt::format("section name '{}': 1 to {} printable ASCII "
                                            "characters",
                                            s.name, kSectionNameBytes - 1));
    const size_t at = payload.size();
    payload.resize(at + kSectionHeaderBytes + Padded(s.data.size()), 0);
    uint8_t* h = payload.data() + at;
    dxpu_put_be32(h, static_cast<uint32_t>(s.type));
    PutBe64(h + 8, s.data.size());
    std::copy(s.name.begin(), s.name.end(), h + 16);
    std::ranges::copy(s.data, h + kSectionHeaderBytes);
  }
  std::vector<uint8_t> image(kHeaderBytes, 0);
  uint8_t* h = image.data();
  dxpu_put_be32(h + kOffMagic, kImageMagic);
  dxpu_put_be16(h + kOffFormat, kImageFormat);
  dxpu_put_be16(h + kOffHeaderLength, kHeaderBytes);
  dxpu_put_be32(h + kOffVersion, spec.version.packed);
  dxpu_put_be32(h + kOffHwRevision, spec.hw_revision);
  PutBe64(h + kOffPayloadLength, payload.size());
  std::ranges::copy(Sha256(payload), h + kOffPayloadSha);
  std::ranges::copy(KeyIdOf(PublicKeyOf(key)), h + kOffKeyId);
  PutBe64(h + kOffBuildTime, spec.build_time);
  std::ranges::copy(spec.build_id, h + kOffBuildId);
  dxpu_put_be32(h + kOffSecurityVersion, spec.security_version);
  const Signature sig = Sign(std::span(image).first(kSignedBytes), key);
  std::ranges::copy(sig, h + kOffSignature);
  image.insert(image.end(), payload.begin(), payload.end());
  return image;
}

FirmwareResult<ImageHeader> DecodeHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes)
    return Err("truncated", fmt::format("{} bytes: shorter than an image header ({} bytes)",
                                        bytes.size(), kHeaderBytes));
  const uint8_t* h = bytes.data();
  if (dxpu_get_be32(h + kOffMagic) != kImageMagic)
    return Err("bad-magic", fmt::format("not a DxPU firmware image (magic {:08x}, not DXFW)",
                                        dxpu_get_be32(h + kOffMagic)));
  const uint16_t format = dxpu_get_be16(h + kOffFormat);
  const uint16_t header_length = dxpu_get_be16(h + kOffHeaderLength);
  if (format != kImageFormat || header_length != kHeaderBytes)
    return Err("bad-format", fmt::format("image format {} with a {}-byte header; this "
                                         "firmware reads format {} ({} bytes)",
                                         format, header_length, kImageFormat, kHeaderBytes));
  ImageHeader out;
  const std::optional<std::string> build_id =
      AsciiField(bytes.subspan(kOffBuildId, kBuildIdBytes), kBuildIdBytes, Printable);
  if (!dxpu_all_zero(h + kOffReserved, kReservedBytes) || !build_id)
    return Err("reserved",
               "a reserved header byte is not zero, or the build ID is not "
               "printable ASCII followed by NULs");
  out.version.packed = dxpu_get_be32(h + kOffVersion);
  out.hw_revision = dxpu_get_be32(h + kOffHwRevision);
  out.payload_length = GetBe64(h + kOffPayloadLength);
  std::copy_n(h + kOffPayloadSha, out.payload_sha256.size(), out.payload_sha256.begin());
  std::copy_n(h + kOffKeyId, out.key_id.size(), out.key_id.begin());
  out.build_time = GetBe64(h + kOffBuildTime);
  out.build_id = *build_id;
  out.security_version = dxpu_get_be32(h + kOffSecurityVersion);
  std::copy_n(h + kOffSignature, out.signature.size(), out.signature.begin());
  return out;
}

FirmwareResult<ImageHeader> VerifyHeader(std::span<const uint8_t> header,
                                         const TrustPolicy& policy) {
  FirmwareResult<ImageHeader> decoded = DecodeHeader(header);
  if (!decoded.ok()) return decoded;
  const ImageHeader& h = decoded.value();
  const PublicKey* key = nullptr;
  for (const PublicKey& k : policy.keys)
    if (KeyIdOf(k) == h.key_id) key = &k;
  if (key == nullptr)
    return Err("unknown-key", fmt::format("signed with key {}, which this bridge does not trust",
                                          ToHex(h.key_id)));
  if (!VerifySignature(header.first(kSignedBytes), h.signature, *key))
    return Err("bad-signature", fmt::format("the signature does not verify with key {}: the "
                                            "header was changed after signing, or another key "
                                            "signed it",
                                            ToHex(h.key_id)));
  if (h.hw_revision != policy.hw_revision)
    return Err("wrong-hardware", fmt::format("built for hardware revision {}; this bridge is "
                                             "revision {}",
                                             h.hw_revision, policy.hw_revision));
  if (h.security_version < policy.min_security)
    return Err("rollback", fmt::format("security version {} is below this bridge's anti-rollback "
                                       "counter {}: no override allows it",
                                       h.security_version, policy.min_security));
  if (policy.min_version && h.version < *policy.min_version && !policy.allow_downgrade)
    return Err("downgrade", fmt::format("version {} is below this bridge's minimum {} "
                                        "(anti-rollback; an explicit override allows it)",
                                        h.version.ToString(), policy.min_version->ToString()));
  if (h.payload_length > policy.max_payload)
    return Err("too-large", fmt::format("a {}-byte payload; a slot holds at most {}",
                                        h.payload_length, policy.max_payload));
  return decoded;
}

Sha256Digest ImageDigest(std::span<const uint8_t> header) {
  return Sha256(header.first(std::min(header.size(), kHeaderBytes)));
}

FirmwareResult<VerifiedImage> VerifyImage(std::span<const uint8_t> image, const TrustPolicy& policy,
                                          bool trailing_ok) {
  FirmwareResult<ImageHeader> header =
      VerifyHeader(image.first(std::min(image.size(), kHeaderBytes)), policy);
  if (!header.ok()) return header.error();
  const ImageHeader& h = header.value();
  const size_t have = image.size() - kHeaderBytes;
  if (have < h.payload_length)
    return Err("truncated", fmt::format("the header says {} payload bytes; {} follow it",
                                        h.payload_length, have));
  if (have > h.payload_length && !trailing_ok)
    return Err("too-large", fmt::format("{} bytes after the {}-byte payload",
                                        have - h.payload_length, h.payload_length));
  const std::span<const uint8_t> payload = image.subspan(kHeaderBytes, h.payload_length);
  if (Sha256(payload) != h.payload_sha256)
    return Err("bad-hash",
               "the payload's SHA-256 is not the one the header was signed with: "
               "the payload was changed or corrupted");
  FirmwareResult<std::vector<Section>> sections = ParsePayload(payload);
  if (!sections.ok()) return sections.error();
  return VerifiedImage{h, std::move(sections).value()};
}

FirmwareResult<std::vector<Section>> ParsePayload(std::span<const uint8_t> payload) {
  std::vector<Section> out;
  size_t at = 0;
  while (at < payload.size()) {
    if (payload.size() - at < kSectionHeaderBytes)
      return Err("bad-payload", fmt::format("{} bytes at offset {}: too few for a section header",
                                            payload.size() - at, at));
    const uint8_t* h = payload.data() + at;
    const uint32_t type = dxpu_get_be32(h);
    const uint64_t length = GetBe64(h + 8);
    const std::optional<std::string> name =
        AsciiField(payload.subspan(at + 16, kSectionNameBytes), kSectionNameBytes - 1, NameChar);
    if (dxpu_get_be32(h + 4) != 0 || !name || name->empty())
      return Err("bad-payload", fmt::format("section {}: a reserved field is not zero, or its "
                                            "name is not 1 to {} printable ASCII characters",
                                            out.size(), kSectionNameBytes - 1));
    const uint64_t room = payload.size() - at - kSectionHeaderBytes;
    if (length > room || Padded(length) > room)
      return Err("bad-payload", fmt::format("section {} ('{}'): {} bytes, {} left in the payload",
                                            out.size(), *name, length, room));
    const std::span<const uint8_t> data = payload.subspan(at + kSectionHeaderBytes, length);
    const std::span<const uint8_t> pad =
        payload.subspan(at + kSectionHeaderBytes + length, Padded(length) - length);
    if (!dxpu_all_zero(pad.data(), pad.size()))
      return Err("bad-payload",
                 fmt::format("section {} ('{}'): its padding is not zero", out.size(), *name));
    const size_t index = out.size();
    const uint32_t want = index == 0 ? 1 : 2;
    if (index >= 2 || type != want)
      return Err("bad-payload", fmt::format("section {} has type {}; an image holds the "
                                            "executable (1), then the configuration (2)",
                                            index, type));
    out.push_back({static_cast<SectionType>(type), *name, {data.begin(), data.end()}});
    at += kSectionHeaderBytes + Padded(length);
  }
  if (out.size() != 2)
    return Err("bad-payload", fmt::format("{} sections; an image holds the executable and the "
                                          "configuration",
                                          out.size()));
  return out;
}

}  // namespace dxpu::firmware
