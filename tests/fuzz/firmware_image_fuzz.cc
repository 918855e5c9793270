// firmware_image_fuzz.cc - libFuzzer target: bridge firmware images
// (bridge-fw/firmware/image.cc) on any bytes: the header decoder and the payload's sections as
// `dxpu flash inspect` reads any file, and the whole verification a bridge applies. An image
// whose header and payload parse is signed again with a key the policy trusts (BuildImage), so
// the checks behind the signature run too: it must then verify, to the same sections, exactly
// when its hardware revision, version and size are the policy's (docs/fuzzing.md).
#include <cstdint>
#include <span>
#include <string>

#include "bridge-fw/firmware/image.h"
#include "bridge-fw/firmware/signing.h"
#include "fuzz_key.h"
#include "fuzz_util.h"

namespace {

namespace fw = dxpu::firmware;

void Check(bool ok, const char* what) { dxpu::fuzz::Require(ok, "firmware_image_fuzz", what); }

fw::TrustPolicy Policy() {
  fw::TrustPolicy p;
  p.keys = {dxpu::fuzz::FuzzKey().public_key};
  p.hw_revision = 7;
  p.max_payload = 1 << 20;
  p.min_version = fw::FirmwareVersion::Of(1, 0, 0);
  return p;
}

bool SameSections(const std::vector<fw::Section>& a, const std::vector<fw::Section>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].type != b[i].type || a[i].name != b[i].name || a[i].data != b[i].data) return false;
  return true;
}

// Signs the decoded image again and checks what the bridge makes of it.
void Resign(const fw::ImageHeader& h, const std::vector<fw::Section>& sections) {
  fw::ImageSpec spec;
  spec.version = h.version;
  spec.hw_revision = h.hw_revision;
  spec.build_time = h.build_time;
  spec.build_id = h.build_id;
  spec.sections = sections;
  fw::FirmwareResult<std::vector<uint8_t>> image =
      fw::BuildImage(spec, dxpu::fuzz::FuzzKey().secret_key);
  Check(image.ok(), "a decoded image does not build again");
  const fw::TrustPolicy policy = Policy();
  const fw::FirmwareResult<fw::VerifiedImage> v = fw::VerifyImage(image.value(), policy);
  const bool acceptable = h.hw_revision == policy.hw_revision && h.version >= *policy.min_version &&
                          image.value().size() - fw::kHeaderBytes <= policy.max_payload;
  Check(v.ok() == acceptable, "a signed image's verdict is not the policy's");
  if (v.ok()) Check(SameSections(v.value().sections, sections), "verified sections differ");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dxpu::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  const fw::TrustPolicy policy = Policy();
  const fw::FirmwareResult<fw::VerifiedImage> as_is = fw::VerifyImage(bytes, policy);
  Check(as_is.ok() || !as_is.error().name.empty(), "a refusal without a name");
  (void)fw::VerifyImage(bytes, policy, /*trailing_ok=*/true);

  const fw::FirmwareResult<fw::ImageHeader> header = fw::DecodeHeader(bytes);
  if (!header.ok()) return 0;
  (void)header.value().version.ToString();
  const fw::FirmwareResult<std::vector<fw::Section>> sections =
      fw::ParsePayload(bytes.subspan(fw::kHeaderBytes));
  if (sections.ok()) Resign(header.value(), sections.value());
  return 0;
}
