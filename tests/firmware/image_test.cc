// image_test.cc - firmware images (bridge-fw/firmware/image.h): round trip, every check of
// docs/firmware.md's table with its error, random edits never accepted.
#include "bridge-fw/firmware/image.h"

#include <gtest/gtest.h>

#include <random>

#include "firmware_testutil.h"

namespace dxpu::firmware {
namespace {

using testing::OtherKey;
using testing::SignedImage;
using testing::SpecOf;
using testing::TestKey;

TrustPolicy Policy() {
  TrustPolicy p;
  p.keys = {TestKey().public_key};
  p.hw_revision = 7;
  p.max_payload = 1 << 20;
  return p;
}

std::string ErrorOf(const std::vector<uint8_t>& image, const TrustPolicy& policy = Policy()) {
  FirmwareResult<VerifiedImage> v = VerifyImage(image, policy);
  return v.ok() ? "ok" : v.error().name;
}

// Re-signs an edited header with `key`, so that a check after the signature's is what fails.
void Resign(std::vector<uint8_t>& image, const KeyPair& key = TestKey()) {
  const Signature s = Sign(std::span(image).first(kSignedBytes), key.secret_key);
  std::ranges::copy(s, image.begin() + kSignedBytes);
}

TEST(FirmwareVersion, ParsesAndComparesAsNumbers) {
  const FirmwareVersion v = FirmwareVersion::Parse("1.10.0").value();
  EXPECT_EQ(v.major(), 1u);
  EXPECT_EQ(v.minor(), 10u);
  EXPECT_EQ(v.patch(), 0u);
  EXPECT_EQ(v.ToString(), "1.10.0");
  EXPECT_GT(v, FirmwareVersion::Parse("1.9.65535").value());
  EXPECT_LT(v, FirmwareVersion::Parse("2.0.0").value());
  for (const char* bad : {"", "1", "1.2", "1.2.3.4", "256.0.0", "1.256.0", "1.0.65536", "a.b.c",
                          "1..2", "-1.0.0", "1.0.0 ", "01234567.0.0"})
    EXPECT_FALSE(FirmwareVersion::Parse(bad).ok()) << bad;
  EXPECT_EQ(FirmwareVersion::Parse("x").error().name, "bad-version");
}

TEST(Image, RoundTripsEveryField) {
  const ImageSpec spec = SpecOf(FirmwareVersion::Of(1, 4, 2), 5000, 9);
  const std::vector<uint8_t> image = BuildImage(spec, TestKey().secret_key).value();
  FirmwareResult<VerifiedImage> v = VerifyImage(image, Policy());
  ASSERT_TRUE(v.ok()) << v.error().message;
  const ImageHeader& h = v.value().header;
  EXPECT_EQ(h.version, spec.version);
  EXPECT_EQ(h.hw_revision, 7u);
  EXPECT_EQ(h.build_time, spec.build_time);
  EXPECT_EQ(h.build_id, "test-9");
  EXPECT_EQ(h.key_id, KeyIdOf(TestKey().public_key));
  EXPECT_EQ(h.payload_length, image.size() - kHeaderBytes);
  ASSERT_EQ(v.value().sections.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(v.value().sections[i].type, spec.sections[i].type);
    EXPECT_EQ(v.value().sections[i].name, spec.sections[i].name);
    EXPECT_EQ(v.value().sections[i].data, spec.sections[i].data);
  }
  // Sections are padded to 8 bytes: 5000 is, the configuration's length is not.
  EXPECT_EQ(image.size() % 8, 0u);
}

TEST(Image, BuildRefusesWhatCannotBeAnImage) {
  ImageSpec spec = SpecOf(FirmwareVersion::Of(1, 0, 0));
  spec.build_id = "has space";
  EXPECT_EQ(BuildImage(spec, TestKey().secret_key).error().name, "bad-build-id");
  spec = SpecOf(FirmwareVersion::Of(1, 0, 0));
  spec.build_id = std::string(41, 'x');
  EXPECT_EQ(BuildImage(spec, TestKey().secret_key).error().name, "bad-build-id");
  spec = SpecOf(FirmwareVersion::Of(1, 0, 0));
  std::swap(spec.sections[0], spec.sections[1]);
  EXPECT_EQ(BuildImage(spec, TestKey().secret_key).error().name, "bad-payload");
  spec = SpecOf(FirmwareVersion::Of(1, 0, 0));
  spec.sections[0].name = std::string(32, 'n');
  EXPECT_EQ(BuildImage(spec, TestKey().secret_key).error().name, "bad-payload");
  spec.sections[0].name = "";
  EXPECT_EQ(BuildImage(spec, TestKey().secret_key).error().name, "bad-payload");
}

TEST(Image, EachCheckRefusesWithItsError) {
  const std::vector<uint8_t> good = SignedImage(FirmwareVersion::Of(2, 0, 0));
  ASSERT_EQ(ErrorOf(good), "ok");

  EXPECT_EQ(ErrorOf({good.begin(), good.begin() + 255}), "truncated");
  EXPECT_EQ(ErrorOf({}), "truncated");
  EXPECT_EQ(ErrorOf({good.begin(), good.end() - 1}), "truncated");

  std::vector<uint8_t> x = good;
  x[0] = 'X';
  EXPECT_EQ(ErrorOf(x), "bad-magic");
  x = good;
  x[5] = 2;  // format 2
  EXPECT_EQ(ErrorOf(x), "bad-format");
  x = good;
  x[6] = 0;  // header length 0
  EXPECT_EQ(ErrorOf(x), "bad-format");
  x = good;
  x[150] = 1;  // reserved
  EXPECT_EQ(ErrorOf(x), "reserved");
  x = good;
  x[72 + 30] = 'z';  // a character after the build ID's NUL
  EXPECT_EQ(ErrorOf(x), "reserved");

  // Signed by a key the bridge does not trust; by a trusted key's ID with another key.
  EXPECT_EQ(ErrorOf(SignedImage(FirmwareVersion::Of(2, 0, 0), 3000, 1, OtherKey())), "unknown-key");
  x = good;
  Resign(x, OtherKey());
  EXPECT_EQ(ErrorOf(x), "bad-signature");
  // Any signed byte edited: the version, the hash, the build time.
  for (const size_t at : {size_t{8}, size_t{11}, size_t{30}, size_t{64}, size_t{191}}) {
    x = good;
    x[at] ^= 0x01;
    const std::string e = ErrorOf(x);
    EXPECT_TRUE(e == "bad-signature" || e == "reserved") << at << ": " << e;
  }
  x = good;
  x[200] ^= 0x80;  // the signature itself
  EXPECT_EQ(ErrorOf(x), "bad-signature");

  TrustPolicy p = Policy();
  p.hw_revision = 8;
  EXPECT_EQ(ErrorOf(good, p), "wrong-hardware");
  p = Policy();
  p.min_version = FirmwareVersion::Of(2, 0, 1);
  EXPECT_EQ(ErrorOf(good, p), "downgrade");
  EXPECT_NE(VerifyImage(good, p).error().message.find("2.0.0 is below this bridge's minimum "
                                                      "2.0.1"),
            std::string::npos);
  p.allow_downgrade = true;
  EXPECT_EQ(ErrorOf(good, p), "ok");
  p = Policy();
  p.min_version = FirmwareVersion::Of(2, 0, 0);
  EXPECT_EQ(ErrorOf(good, p), "ok");  // the minimum itself is not a downgrade
  p = Policy();
  p.max_payload = good.size() - kHeaderBytes - 1;
  EXPECT_EQ(ErrorOf(good, p), "too-large");
  x = good;
  x.push_back(0);
  EXPECT_EQ(ErrorOf(x), "too-large");
  EXPECT_TRUE(VerifyImage(x, Policy(), /*trailing_ok=*/true).ok());

  // A payload byte flipped: the hash. The same with a header re-signed to match the new
  // length: still the hash.
  x = good;
  x[kHeaderBytes + 100] ^= 0x40;
  EXPECT_EQ(ErrorOf(x), "bad-hash");
}

TEST(Image, BrokenSectionTablesAreBadPayload) {
  auto with_payload = [](std::vector<uint8_t> payload) {
    std::vector<uint8_t> image = SignedImage(FirmwareVersion::Of(1, 0, 0));
    image.resize(kHeaderBytes);
    const Sha256Digest d = Sha256(payload);
    std::ranges::copy(d, image.begin() + 24);
    const uint64_t n = payload.size();
    for (int i = 0; i < 8; ++i) image[16 + i] = static_cast<uint8_t>(n >> (56 - 8 * i));
    Resign(image);
    image.insert(image.end(), payload.begin(), payload.end());
    return image;
  };
  const std::vector<uint8_t> good = SignedImage(FirmwareVersion::Of(1, 0, 0));
  const std::vector<uint8_t> payload(good.begin() + kHeaderBytes, good.end());
  ASSERT_EQ(ErrorOf(with_payload(payload)), "ok");

  std::vector<uint8_t> p = payload;
  p[4] = 1;  // reserved
  EXPECT_EQ(ErrorOf(with_payload(p)), "bad-payload");
  p = payload;
  p[3] = 2;  // the configuration first
  EXPECT_EQ(ErrorOf(with_payload(p)), "bad-payload");
  p = payload;
  p[8] = 0x7f;  // a length past the end
  EXPECT_EQ(ErrorOf(with_payload(p)), "bad-payload");
  p = payload;
  p[16] = 0;  // an empty name
  EXPECT_EQ(ErrorOf(with_payload(p)), "bad-payload");
  p = payload;
  p.resize(payload.size() + 8, 0);  // bytes after the last section
  EXPECT_EQ(ErrorOf(with_payload(p)), "bad-payload");
  p = payload;
  p.back() = 1;  // the configuration's padding
  EXPECT_EQ(ErrorOf(with_payload(p)), "bad-payload");
  p.assign(payload.begin(), payload.begin() + 48 + 3000);  // the executable only
  EXPECT_EQ(ErrorOf(with_payload(p)), "bad-payload");
  EXPECT_EQ(ErrorOf(with_payload({})), "bad-payload");
}

// Random edits of a signed image: never accepted unless they changed nothing, never a crash.
TEST(Image, RandomEditsAreNeverAccepted) {
  const std::vector<uint8_t> good = SignedImage(FirmwareVersion::Of(3, 1, 4), 2000);
  std::mt19937 rng(20261204);  // NOLINT(cert-msc51-cpp): the same edits every run
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> x = good;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 3) {
        case 0:
          x[rng() % x.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
          break;
        case 1:
          x.resize(rng() % x.size());
          break;
        default:
          x.insert(x.begin() + static_cast<ptrdiff_t>(rng() % (x.size() + 1)),
                   static_cast<uint8_t>(rng()));
          break;
      }
      if (x.empty()) break;
    }
    FirmwareResult<VerifiedImage> v = VerifyImage(x, Policy());
    if (x == good) continue;
    EXPECT_FALSE(v.ok()) << "round " << round << " accepted an edited image";
    if (!v.ok()) {
      EXPECT_FALSE(v.error().name.empty());
      EXPECT_FALSE(v.error().message.empty());
    }
  }
}

TEST(Image, DecodeHeaderShowsAnUnsignedImagesHeader) {
  const std::vector<uint8_t> other = SignedImage(FirmwareVersion::Of(1, 2, 3), 3000, 1, OtherKey());
  FirmwareResult<ImageHeader> h = DecodeHeader(other);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h.value().version.ToString(), "1.2.3");
  EXPECT_EQ(h.value().key_id, KeyIdOf(OtherKey().public_key));
}

}  // namespace
}  // namespace dxpu::firmware
