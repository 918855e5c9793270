// tlp_io.h - the lib/core TLP codec behind C++ types: bytes in vectors, errors as values.
#ifndef DXPU_TOOLS_DXPU_TLP_IO_H_
#define DXPU_TOOLS_DXPU_TLP_IO_H_

#include <core/tlp_codec.h>

#include <cstdint>
#include <span>
#include <string>

#include "hex.h"
#include "result.h"

namespace dxpu::cli {

// The codec's stable name ("short-header") and sentence for err.
Error TlpError(dxpu_tlp_err err);

// dxpu_tlp_encode into a buffer of exactly the TLP's wire size.
Result<Bytes> EncodeTlp(const dxpu_tlp& tlp);

// dxpu_tlp_decode of exactly one TLP. The result's payload points into bytes, which must
// outlive it.
Result<dxpu_tlp> DecodeTlp(std::span<const uint8_t> bytes);

// dxpu_tlp_format: the one-line description the logs use.
std::string FormatTlpLine(const dxpu_tlp& tlp);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_TLP_IO_H_
