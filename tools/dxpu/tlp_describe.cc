// tlp_describe.cc - a decoded TLP as readable text or JSON.
#include "tlp_describe.h"

#include <spdlog/fmt/fmt.h>

#include <string_view>
#include <vector>

#include "hex.h"
#include "numbers.h"
#include "tlp_io.h"
#include "tlp_names.h"

namespace dxpu::cli {
namespace {

constexpr size_t kPayloadPreviewBytes = 16;

std::string JoinOr(const std::vector<std::string>& names, std::string_view none) {
  if (names.empty()) return std::string(none);
  std::string s;
  for (const std::string& n : names) {
    if (!s.empty()) s += ' ';
    s += n;
  }
  return s;
}

std::span<const uint8_t> Payload(const dxpu_tlp& t) {
  if (t.payload == nullptr) return {};
  return {t.payload, dxpu_tlp_payload_len(&t)};
}

bool IsRequest(uint8_t kind) {
  return dxpu_tlp_kind_is_mem(kind) || dxpu_tlp_kind_is_cfg(kind) || dxpu_tlp_kind_is_msg(kind);
}

bool IsVendorMsg(uint8_t code) {
  return code == DXPU_TLP_MSG_VENDOR_TYPE0 || code == DXPU_TLP_MSG_VENDOR_TYPE1;
}

class Lines {
 public:
  void Add(std::string_view name, const std::string& value) {
    text_ += fmt::format("  {:<14}{}\n", name, value);
  }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
};

}  // namespace

std::string DescribeTlp(const dxpu_tlp& t, std::span<const uint8_t> wire) {
  Lines l;
  std::string head = fmt::format("{}  {} ({})\n", dxpu_tlp_kind_name(t.kind), KindLongName(t.kind),
                                 ClassName(dxpu_tlp_kind_class(t.kind)));
  if (wire.size() >= 4) {
    uint8_t fmt_bits = dxpu_tlp_hdr_fmt(wire.data());
    l.Add("fmt/type", fmt::format("{:03b}b/{:05b}b  {}", fmt_bits, dxpu_tlp_hdr_type(wire.data()),
                                  FmtDescription(fmt_bits)));
  }
  uint32_t hdr = dxpu_tlp_header_len(&t);
  l.Add("header",
        fmt::format("{} bytes ({} DW), {} bytes on the wire", hdr, hdr / 4, dxpu_tlp_wire_len(&t)));
  if (t.length_dw) l.Add("length", fmt::format("{} DW", t.length_dw));
  l.Add("tc", fmt::format("{}", t.tc));
  l.Add("attr", fmt::format("0x{:x} ({})", t.attr, JoinOr(AttrNames(t.attr), "none")));
  l.Add("flags", JoinOr(FlagNames(t.flags), "none"));
  if (IsRequest(t.kind)) {
    l.Add("requester", FormatBdf(t.requester_id));
    l.Add("tag", fmt::format("0x{:03x} ({})", t.tag, t.tag));
  }
  if (dxpu_tlp_kind_is_mem(t.kind) || dxpu_tlp_kind_is_cfg(t.kind)) {
    // A memory read with TH carries the Steering Tag in the byte-enable byte.
    const char* implied =
        t.kind == DXPU_TLP_MRD && (t.flags & DXPU_TLP_F_TH) ? ", implied by TH" : "";
    l.Add("first be", fmt::format("0x{:x} ({:04b}b{})", t.first_be, t.first_be, implied));
    l.Add("last be", fmt::format("0x{:x} ({:04b}b{})", t.last_be, t.last_be, implied));
  }
  if (dxpu_tlp_kind_is_mem(t.kind)) {
    l.Add("address", fmt::format("0x{:x} ({}-bit)", t.addr, (t.addr >> 32) ? 64 : 32));
    l.Add("at", fmt::format("{} ({})", t.at, AtName(t.at)));
    if (t.flags & DXPU_TLP_F_TH) {
      l.Add("ph", fmt::format("{}", t.ph));
      l.Add("steering tag", fmt::format("0x{:02x}", t.st));
    }
  }
  if (dxpu_tlp_kind_is_cfg(t.kind)) {
    l.Add("target", FormatBdf(t.cfg_target));
    l.Add("register", fmt::format("0x{:03x} (ext 0x{:x}, reg 0x{:02x})", t.cfg_reg, t.cfg_reg >> 8,
                                  (t.cfg_reg & 0xffu) >> 2));
  }
  if (dxpu_tlp_kind_is_cpl(t.kind)) {
    l.Add("completer", FormatBdf(t.completer_id));
    l.Add("requester", FormatBdf(t.requester_id));
    l.Add("tag", fmt::format("0x{:03x} ({})", t.tag, t.tag));
    l.Add("status", fmt::format("{} ({})", dxpu_tlp_cpl_status_name(t.cpl_status),
                                CplStatusLongName(t.cpl_status)));
    l.Add("byte count", fmt::format("{}", t.byte_count));
    l.Add("lower addr", fmt::format("0x{:02x}", t.lower_addr));
  }
  if (dxpu_tlp_kind_is_msg(t.kind)) {
    l.Add("code", fmt::format("0x{:02x} ({})", t.msg_code, MsgCodeName(t.msg_code)));
    l.Add("routing", fmt::format("{} ({})", t.msg_routing, dxpu_tlp_routing_name(t.msg_routing)));
    l.Add("bytes 8..15", FormatHex(t.msg_hdr, 4));
    if (t.msg_routing == DXPU_TLP_ROUTE_BY_ID) {
      l.Add("target", FormatBdf(dxpu_tlp_msg_target_id(&t)));
    }
    if (IsVendorMsg(t.msg_code)) {
      l.Add("vendor id", fmt::format("0x{:04x}", dxpu_tlp_msg_vendor_id(&t)));
    }
  }
  std::span<const uint8_t> payload = Payload(t);
  if (payload.empty()) {
    l.Add("payload", "none");
  } else {
    l.Add("payload", fmt::format("{} bytes: {}", payload.size(),
                                 FormatHexPrefix(payload, kPayloadPreviewBytes)));
  }
  if (t.flags & DXPU_TLP_F_TD) l.Add("digest", fmt::format("0x{:08x}", t.digest));
  l.Add("summary", FormatTlpLine(t));
  return head + l.Take();
}

nlohmann::ordered_json TlpToJson(const dxpu_tlp& t, std::span<const uint8_t> wire) {
  nlohmann::ordered_json j;
  j["kind"] = dxpu_tlp_kind_name(t.kind);
  j["kind_name"] = KindLongName(t.kind);
  j["class"] = ClassName(dxpu_tlp_kind_class(t.kind));
  if (wire.size() >= 4) {
    j["fmt"] = dxpu_tlp_hdr_fmt(wire.data());
    j["type"] = dxpu_tlp_hdr_type(wire.data());
  }
  j["header_len"] = dxpu_tlp_header_len(&t);
  j["wire_len"] = dxpu_tlp_wire_len(&t);
  j["length_dw"] = t.length_dw;
  j["tc"] = t.tc;
  j["attr"] = t.attr;
  j["attr_names"] = AttrNames(t.attr);
  j["flags"] = FlagNames(t.flags);
  if (IsRequest(t.kind) || dxpu_tlp_kind_is_cpl(t.kind)) {
    j["requester_id"] = FormatBdf(t.requester_id);
    j["tag"] = t.tag;
  }
  if (dxpu_tlp_kind_is_mem(t.kind) || dxpu_tlp_kind_is_cfg(t.kind)) {
    j["first_be"] = t.first_be;
    j["last_be"] = t.last_be;
  }
  if (dxpu_tlp_kind_is_mem(t.kind)) {
    j["addr"] = t.addr;
    j["addr_hex"] = fmt::format("0x{:x}", t.addr);
    j["at"] = t.at;
    j["at_name"] = AtName(t.at);
    j["ph"] = t.ph;
    j["st"] = t.st;
  }
  if (dxpu_tlp_kind_is_cfg(t.kind)) {
    j["cfg_target"] = FormatBdf(t.cfg_target);
    j["cfg_reg"] = t.cfg_reg;
  }
  if (dxpu_tlp_kind_is_cpl(t.kind)) {
    j["completer_id"] = FormatBdf(t.completer_id);
    j["cpl_status"] = t.cpl_status;
    j["cpl_status_name"] = dxpu_tlp_cpl_status_name(t.cpl_status);
    j["byte_count"] = t.byte_count;
    j["lower_addr"] = t.lower_addr;
  }
  if (dxpu_tlp_kind_is_msg(t.kind)) {
    j["msg_code"] = t.msg_code;
    j["msg_code_name"] = MsgCodeName(t.msg_code);
    j["msg_routing"] = t.msg_routing;
    j["msg_routing_name"] = dxpu_tlp_routing_name(t.msg_routing);
    j["msg_hdr_hex"] = FormatHex(t.msg_hdr, 0);
  }
  std::span<const uint8_t> payload = Payload(t);
  j["payload_len"] = payload.size();
  j["payload_hex"] = FormatHex(payload, 0);
  if (t.flags & DXPU_TLP_F_TD) j["digest"] = t.digest;
  j["summary"] = FormatTlpLine(t);
  return j;
}

}  // namespace dxpu::cli
