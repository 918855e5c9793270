// tlp_describe.h - a decoded TLP, every field, as readable text or as JSON.
#ifndef DXPU_TOOLS_DXPU_TLP_DESCRIBE_H_
#define DXPU_TOOLS_DXPU_TLP_DESCRIBE_H_

#include <core/tlp_codec.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

namespace dxpu::cli {

// Multi-line description, one "name  value" line per field that applies to the kind.
// wire is the TLP's bytes (the decoder's input): Fmt and Type are read from it.
std::string DescribeTlp(const dxpu_tlp& tlp, std::span<const uint8_t> wire);

// One JSON object. Names are stable snake_case: the struct dxpu_tlp field names where one
// exists ("requester_id", "first_be", "cpl_status", ...), with "_name" companions for
// enumerations. Routing IDs are "bb:dd.f" strings; the payload is "payload_hex".
nlohmann::ordered_json TlpToJson(const dxpu_tlp& tlp, std::span<const uint8_t> wire);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_TLP_DESCRIBE_H_
