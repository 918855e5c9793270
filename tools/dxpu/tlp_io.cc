// tlp_io.cc - the lib/core TLP codec behind C++ types.
#include "tlp_io.h"

#include <array>

namespace dxpu::cli {

Error TlpError(dxpu_tlp_err err) { return Error{dxpu_tlp_err_name(err), dxpu_tlp_err_text(err)}; }

Result<Bytes> EncodeTlp(const dxpu_tlp& tlp) {
  dxpu_tlp_err err = dxpu_tlp_validate(&tlp);
  if (err != DXPU_TLP_OK) return TlpError(err);
  Bytes out(dxpu_tlp_wire_len(&tlp));
  size_t len = 0;
  err = dxpu_tlp_encode(&tlp, out.data(), out.size(), &len);
  if (err != DXPU_TLP_OK) return TlpError(err);
  out.resize(len);
  return out;
}

Result<dxpu_tlp> DecodeTlp(std::span<const uint8_t> bytes) {
  dxpu_tlp tlp{};
  dxpu_tlp_err err = dxpu_tlp_decode(bytes.data(), bytes.size(), &tlp);
  if (err != DXPU_TLP_OK) return TlpError(err);
  return tlp;
}

std::string FormatTlpLine(const dxpu_tlp& tlp) {
  std::array<char, 256> buf{};
  int n = dxpu_tlp_format(&tlp, buf.data(), buf.size());
  if (n < 0) return "?";
  return {buf.data()};
}

}  // namespace dxpu::cli
