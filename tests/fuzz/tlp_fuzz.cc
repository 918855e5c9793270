// tlp_fuzz.cc - libFuzzer target: the strict TLP decoder (lib/core/tlp_codec.c) on any bytes.
// A TLP it accepts must also pass the validator, size the same through the peek functions,
// encode, and decode from its encoding to the same TLP (docs/fuzzing.md).
#include <cstdint>
#include <span>
#include <vector>

#include "core/tlp_codec.h"
#include "fuzz_util.h"

namespace {

void Check(bool ok, const char* what) { dxpu::fuzz::Require(ok, "tlp_fuzz", what); }

using dxpu::fuzz::SameTlp;

void CheckAccepted(const uint8_t* data, size_t size, const dxpu_tlp& t) {
  Check(dxpu_tlp_validate(&t) == DXPU_TLP_OK, "decoded TLP does not validate");
  uint32_t peeked = 0;
  Check(dxpu_tlp_peek_size(data, size, &peeked) == DXPU_TLP_OK && peeked == size,
        "peek_size disagrees with decode");
  uint8_t kind = 0;
  uint32_t payload = 0;
  Check(dxpu_tlp_peek_kind(data, size, &kind, &payload) == DXPU_TLP_OK && kind == t.kind &&
            payload == dxpu_tlp_payload_len(&t),
        "peek_kind disagrees with decode");
  Check(dxpu_tlp_wire_len(&t) == size, "wire_len disagrees with the decoded size");
  dxpu_tlp again{};
  dxpu_tlp_decode_valid(data, size, &again);
  Check(SameTlp(t, again), "decode_valid disagrees with decode");

  std::vector<uint8_t> out(DXPU_TLP_MAX_SIZE);
  size_t len = 0;
  Check(dxpu_tlp_encode(&t, out.data(), out.size(), &len) == DXPU_TLP_OK && len == size,
        "a decoded TLP does not encode to its size");
  dxpu_tlp round{};
  Check(dxpu_tlp_decode(out.data(), len, &round) == DXPU_TLP_OK && SameTlp(t, round),
        "encode then decode is not the same TLP");
  char text[256];
  Check(dxpu_tlp_format(&t, text, sizeof(text)) > 0, "format wrote nothing");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dxpu::fuzz::QuietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // libFuzzer hands over an exact-size heap copy: ASan sees any read past the input.
  const std::span<const uint8_t> bytes(data, size);
  dxpu_tlp t{};
  const dxpu_tlp_err err = dxpu_tlp_decode(bytes.data(), bytes.size(), &t);
  Check(err >= DXPU_TLP_OK && err < DXPU_TLP_ERR_COUNT, "decode error out of range");
  Check(dxpu_tlp_err_name(err) != nullptr && dxpu_tlp_err_text(err) != nullptr, "unnamed error");
  uint32_t peeked = 0;
  (void)dxpu_tlp_peek_size(bytes.data(), bytes.size(), &peeked);
  if (err == DXPU_TLP_OK) CheckAccepted(bytes.data(), bytes.size(), t);
  return 0;
}
