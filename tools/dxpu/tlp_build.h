// tlp_build.h - a struct dxpu_tlp from `dxpu tlp encode` options, with the defaults a
// person expects (byte enables from the length, a zero payload of the right size, ...).
// Only command-line mistakes are reported here; the codec judges the TLP itself.
#ifndef DXPU_TOOLS_DXPU_TLP_BUILD_H_
#define DXPU_TOOLS_DXPU_TLP_BUILD_H_

#include <core/tlp_codec.h>

#include <array>
#include <string>
#include <string_view>

#include "hex.h"
#include "result.h"

namespace dxpu::cli {

// The option values as typed; an empty string means "not given".
struct TlpSpec {
  std::string kind;
  std::string addr, len, req, tag, first_be, last_be, tc, attr, at, ph, st;
  std::string target, reg;
  std::string completer, status, byte_count, lower_addr;
  std::string code, routing, msg_hdr;
  std::string data, digest;
  bool ep = false, td = false, th = false, ln = false, bcm = false;
};

// A TLP and the payload bytes it carries. The struct's payload pointer is only set by Tlp(),
// so a BuiltTlp can be moved freely.
struct BuiltTlp {
  dxpu_tlp header{};
  Bytes payload;
  bool with_payload = false;

  dxpu_tlp Tlp() const;
};

// The kind names `encode` accepts, lower case: "mrd", "mwr", "cfgrd0", ... "msgd".
const std::array<std::string_view, 10>& EncodeKindNames();

// Errors: "bad-option" for option values that cannot be turned into fields.
Result<BuiltTlp> BuildTlp(const TlpSpec& spec);

// Why the codec refused `tlp`, built from `spec`, as DXPU_TLP_ERR_FIELD_RANGE (a field out of
// its range, or set on a kind it does not apply to): the option, its value as typed and the
// rule, e.g. "--addr 0xffe: a memory request's address is DW-aligned, a multiple of 4 (0xffc or
// 0x1000); --first-be and --last-be select the bytes". The same checks in the same order as
// lib/core's validation; empty if none of them fails.
std::string ExplainFieldRange(const TlpSpec& spec, const dxpu_tlp& tlp);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_TLP_BUILD_H_
