// tlp_names.cc - readable names for TLP header fields.
#include "tlp_names.h"

namespace dxpu::cli {

const char* KindLongName(uint8_t kind) {
  switch (kind) {
    case DXPU_TLP_MRD:
      return "Memory Read Request";
    case DXPU_TLP_MWR:
      return "Memory Write Request";
    case DXPU_TLP_CFGRD0:
      return "Configuration Read Type 0";
    case DXPU_TLP_CFGWR0:
      return "Configuration Write Type 0";
    case DXPU_TLP_CFGRD1:
      return "Configuration Read Type 1";
    case DXPU_TLP_CFGWR1:
      return "Configuration Write Type 1";
    case DXPU_TLP_CPL:
      return "Completion without Data";
    case DXPU_TLP_CPLD:
      return "Completion with Data";
    case DXPU_TLP_MSG:
      return "Message";
    case DXPU_TLP_MSGD:
      return "Message with Data";
    default:
      return "invalid";
  }
}

const char* ClassName(dxpu_tlp_class cls) {
  switch (cls) {
    case DXPU_TLP_CLASS_POSTED:
      return "posted";
    case DXPU_TLP_CLASS_NON_POSTED:
      return "non-posted";
    case DXPU_TLP_CLASS_COMPLETION:
      return "completion";
  }
  return "?";
}

const char* CplStatusLongName(uint8_t status) {
  switch (status) {
    case DXPU_TLP_CPL_SC:
      return "Successful Completion";
    case DXPU_TLP_CPL_UR:
      return "Unsupported Request";
    case DXPU_TLP_CPL_CRS:
      return "Configuration Request Retry Status";
    case DXPU_TLP_CPL_CA:
      return "Completer Abort";
    default:
      return "reserved";
  }
}

const char* MsgCodeName(uint8_t code) {
  switch (code) {
    case 0x00:
      return "Unlock";
    case 0x10:
      return "LTR";
    case 0x12:
      return "OBFF";
    case 0x14:
      return "PM_Active_State_Nak";
    case 0x18:
      return "PM_PME";
    case 0x19:
      return "PME_Turn_Off";
    case 0x1b:
      return "PME_TO_Ack";
    case DXPU_TLP_MSG_ASSERT_INTA:
      return "Assert_INTA";
    case DXPU_TLP_MSG_ASSERT_INTB:
      return "Assert_INTB";
    case DXPU_TLP_MSG_ASSERT_INTC:
      return "Assert_INTC";
    case DXPU_TLP_MSG_ASSERT_INTD:
      return "Assert_INTD";
    case DXPU_TLP_MSG_DEASSERT_INTA:
      return "Deassert_INTA";
    case DXPU_TLP_MSG_DEASSERT_INTB:
      return "Deassert_INTB";
    case DXPU_TLP_MSG_DEASSERT_INTC:
      return "Deassert_INTC";
    case DXPU_TLP_MSG_DEASSERT_INTD:
      return "Deassert_INTD";
    case 0x30:
      return "ERR_COR";
    case 0x31:
      return "ERR_NONFATAL";
    case 0x33:
      return "ERR_FATAL";
    case 0x50:
      return "Set_Slot_Power_Limit";
    case DXPU_TLP_MSG_VENDOR_TYPE0:
      return "Vendor_Defined_Type_0";
    case DXPU_TLP_MSG_VENDOR_TYPE1:
      return "Vendor_Defined_Type_1";
    default:
      return "other";
  }
}

const char* AtName(uint8_t at) {
  switch (at) {
    case DXPU_TLP_AT_UNTRANSLATED:
      return "untranslated";
    case DXPU_TLP_AT_TRANSLATION_REQ:
      return "translation-request";
    case DXPU_TLP_AT_TRANSLATED:
      return "translated";
    default:
      return "reserved";
  }
}

std::vector<std::string> AttrNames(uint8_t attr) {
  std::vector<std::string> names;
  if (attr & DXPU_TLP_ATTR_RO) names.emplace_back("RO");
  if (attr & DXPU_TLP_ATTR_NS) names.emplace_back("NS");
  if (attr & DXPU_TLP_ATTR_IDO) names.emplace_back("IDO");
  return names;
}

std::vector<std::string> FlagNames(uint8_t flags) {
  std::vector<std::string> names;
  if (flags & DXPU_TLP_F_TD) names.emplace_back("TD");
  if (flags & DXPU_TLP_F_EP) names.emplace_back("EP");
  if (flags & DXPU_TLP_F_TH) names.emplace_back("TH");
  if (flags & DXPU_TLP_F_LN) names.emplace_back("LN");
  if (flags & DXPU_TLP_F_BCM) names.emplace_back("BCM");
  return names;
}

const char* FmtDescription(uint8_t fmt) {
  switch (fmt) {
    case DXPU_TLP_FMT_3DW:
      return "3DW header, no data";
    case DXPU_TLP_FMT_4DW:
      return "4DW header, no data";
    case DXPU_TLP_FMT_3DW_DATA:
      return "3DW header, with data";
    case DXPU_TLP_FMT_4DW_DATA:
      return "4DW header, with data";
    default:
      return "prefix or reserved";
  }
}

}  // namespace dxpu::cli
