// tlp_names.h - readable names for the TLP header fields the CLI prints.
#ifndef DXPU_TOOLS_DXPU_TLP_NAMES_H_
#define DXPU_TOOLS_DXPU_TLP_NAMES_H_

#include <core/tlp_codec.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dxpu::cli {

// "Memory Read Request", ... ("invalid" for anything else).
const char* KindLongName(uint8_t kind);
// "posted", "non-posted", "completion".
const char* ClassName(dxpu_tlp_class cls);
// "Successful Completion", ... (short names: dxpu_tlp_cpl_status_name)
const char* CplStatusLongName(uint8_t status);
// PCIe message names ("Assert_INTA", "ERR_COR", ...); "other" for codes not listed.
const char* MsgCodeName(uint8_t code);
// "untranslated", "translation-request", "translated", "reserved".
const char* AtName(uint8_t at);
// Attr bits as names: "RO", "NS", "IDO" (empty for none).
std::vector<std::string> AttrNames(uint8_t attr);
// DXPU_TLP_F_* bits as names: "TD", "EP", "TH", "LN", "BCM" (empty for none).
std::vector<std::string> FlagNames(uint8_t flags);
// Fmt as words: "3DW header, no data", ...
const char* FmtDescription(uint8_t fmt);

}  // namespace dxpu::cli

#endif  // DXPU_TOOLS_DXPU_TLP_NAMES_H_
