// tlp_build.cc - struct dxpu_tlp from `dxpu tlp encode` options.
#include "tlp_build.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "numbers.h"

namespace dxpu::cli {
namespace {

constexpr std::array<std::string_view, 10> kKindNames = {
    "mrd", "mwr", "cfgrd0", "cfgwr0", "cfgrd1", "cfgwr1", "cpl", "cpld", "msg", "msgd"};
constexpr std::array<uint8_t, 10> kKinds = {
    DXPU_TLP_MRD,    DXPU_TLP_MWR, DXPU_TLP_CFGRD0, DXPU_TLP_CFGWR0, DXPU_TLP_CFGRD1,
    DXPU_TLP_CFGWR1, DXPU_TLP_CPL, DXPU_TLP_CPLD,   DXPU_TLP_MSG,    DXPU_TLP_MSGD};

Error BadOption(std::string message) { return Error{"bad-option", std::move(message)}; }

// Builds the struct field by field; the first bad option wins.
class Builder {
 public:
  explicit Builder(const TlpSpec& spec) : spec_(spec) {}

  Result<BuiltTlp> Build() {
    const auto* it = std::find(kKindNames.begin(), kKindNames.end(), spec_.kind);
    if (it == kKindNames.end()) return BadOption(fmt::format("unknown kind \"{}\"", spec_.kind));
    dxpu_tlp& t = out_.header;
    t.kind = kKinds[static_cast<size_t>(it - kKindNames.begin())];
    Payload();
    Common();
    if (dxpu_tlp_kind_is_mem(t.kind) || dxpu_tlp_kind_is_cfg(t.kind)) ByteEnables();
    Config();
    Completion();
    Message();
    if (!error_.name.empty()) return error_;
    return std::move(out_);
  }

 private:
  // Parses text into *field if given (else leaves the default), up to the field's range.
  template <typename T>
  void Uint(const std::string& text, std::string_view option, uint64_t max, T* field) {
    if (text.empty() || !error_.name.empty()) return;
    Result<uint64_t> r = ParseUint(text, max);
    if (!r.ok()) {
      Fail(fmt::format("{}: {}", option, r.error().message));
      return;
    }
    *field = static_cast<T>(r.value());
  }

  void Bdf(const std::string& text, std::string_view option, uint16_t* field) {
    if (text.empty() || !error_.name.empty()) return;
    Result<uint16_t> r = ParseBdf(text);
    if (!r.ok()) {
      Fail(fmt::format("{}: {}", option, r.error().message));
      return;
    }
    *field = r.value();
  }

  void Fail(std::string message) {
    if (error_.name.empty()) error_ = BadOption(std::move(message));
  }

  bool HasLength() const {
    return out_.header.kind != DXPU_TLP_CPL && out_.header.kind != DXPU_TLP_MSG;
  }

  // --data and --len: payload and Length.
  void Payload() {
    dxpu_tlp& t = out_.header;
    uint16_t len = HasLength() ? 1 : 0;
    bool len_given = !spec_.len.empty();
    Uint(spec_.len, "--len", 0xffff, &len);
    if (!spec_.data.empty()) {
      Result<Bytes> data = ParseHex(spec_.data);
      if (!data.ok()) return Fail(fmt::format("--data: {}", data.error().message));
      size_t n = data.value().size();
      if (n == 0 || n % 4 != 0) {
        return Fail(
            fmt::format("--data has {} bytes; a payload is whole DWs (4, 8, ... bytes)", n));
      }
      if (len_given && len != n / 4) {
        return Fail(fmt::format("--len {} disagrees with --data ({} DW)", len, n / 4));
      }
      len = static_cast<uint16_t>(std::min<size_t>(n / 4, 0xffff));
      out_.payload = std::move(data).value();
      out_.with_payload = true;
    } else if (dxpu_tlp_kind_has_data(t.kind)) {
      // A zero payload of the given Length; Lengths past the maximum are the codec's to reject.
      out_.payload.assign(std::min<size_t>(len, DXPU_TLP_MAX_LENGTH_DW) * 4u, 0);
      out_.with_payload = true;
    }
    t.length_dw = len;
  }

  void Common() {
    dxpu_tlp& t = out_.header;
    Uint(spec_.tc, "--tc", 0xff, &t.tc);
    Uint(spec_.attr, "--attr", 0xff, &t.attr);
    Uint(spec_.tag, "--tag", 0xffff, &t.tag);
    Bdf(spec_.req, "--req", &t.requester_id);
    if (spec_.ep) t.flags |= DXPU_TLP_F_EP;
    if (spec_.td) t.flags |= DXPU_TLP_F_TD;
    if (spec_.th) t.flags |= DXPU_TLP_F_TH;
    if (spec_.ln) t.flags |= DXPU_TLP_F_LN;
    if (spec_.bcm) t.flags |= DXPU_TLP_F_BCM;
    Uint(spec_.digest, "--digest", 0xffffffff, &t.digest);
    // Options of other kinds are passed on as given, for the codec to reject by name.
    Uint(spec_.first_be, "--first-be", 0xff, &t.first_be);
    Uint(spec_.last_be, "--last-be", 0xff, &t.last_be);
    Uint(spec_.addr, "--addr", UINT64_MAX, &t.addr);
    Uint(spec_.at, "--at", 0xff, &t.at);
    Uint(spec_.ph, "--ph", 0xff, &t.ph);
    Uint(spec_.st, "--st", 0xff, &t.st);
    Uint(spec_.reg, "--reg", 0xffff, &t.cfg_reg);
    Bdf(spec_.completer, "--completer", &t.completer_id);
    Uint(spec_.lower_addr, "--lower-addr", 0xff, &t.lower_addr);
    Uint(spec_.byte_count, "--byte-count", 0xffff, &t.byte_count);
    Uint(spec_.code, "--code", 0xff, &t.msg_code);
  }

  // Defaults: every byte of the first and last DW enabled; Last BE 0 for a 1-DW request.
  void ByteEnables() {
    dxpu_tlp& t = out_.header;
    if (spec_.first_be.empty()) t.first_be = 0xf;
    if (spec_.last_be.empty()) t.last_be = t.length_dw > 1 ? 0xf : 0x0;
  }

  void Config() {
    dxpu_tlp& t = out_.header;
    if (dxpu_tlp_kind_is_msg(t.kind)) return;  // --target is a message's target ID there
    Bdf(spec_.target, "--target", &t.cfg_target);
  }

  void Completion() {
    dxpu_tlp& t = out_.header;
    if (!spec_.status.empty()) Status();
    if (!dxpu_tlp_kind_is_cpl(t.kind) || !spec_.byte_count.empty()) return;
    // Default Byte Count: this completion carries all that is left of the read.
    uint32_t lead = t.lower_addr & 0x3u;
    uint32_t bytes = t.kind == DXPU_TLP_CPLD ? t.length_dw * 4u : 4u;
    t.byte_count = static_cast<uint16_t>(bytes > lead ? bytes - lead : bytes);
  }

  void Status() {
    static constexpr std::array<std::pair<std::string_view, uint8_t>, 4> kStatus = {{
        {"sc", DXPU_TLP_CPL_SC},
        {"ur", DXPU_TLP_CPL_UR},
        {"crs", DXPU_TLP_CPL_CRS},
        {"ca", DXPU_TLP_CPL_CA},
    }};
    std::string s = spec_.status;
    std::transform(s.begin(), s.end(), s.begin(), [](char c) {
      return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    });
    for (const auto& [name, value] : kStatus) {
      if (s == name) {
        out_.header.cpl_status = value;
        return;
      }
    }
    Uint(spec_.status, "--status (sc, ur, crs, ca or a number)", 0xff, &out_.header.cpl_status);
  }

  void Message() {
    dxpu_tlp& t = out_.header;
    if (!spec_.msg_hdr.empty()) {
      Result<Bytes> hdr = ParseHex(spec_.msg_hdr);
      if (!hdr.ok()) return Fail(fmt::format("--msg-hdr: {}", hdr.error().message));
      if (hdr.value().size() != sizeof(t.msg_hdr)) {
        return Fail(
            fmt::format("--msg-hdr has {} bytes; header bytes 8..15 are 8", hdr.value().size()));
      }
      std::copy(hdr.value().begin(), hdr.value().end(), std::begin(t.msg_hdr));
    }
    if (!dxpu_tlp_kind_is_msg(t.kind)) {
      Routing(&t.msg_routing);
      return;
    }
    t.msg_routing = DefaultRouting(t.msg_code);
    Routing(&t.msg_routing);
    if (!spec_.target.empty()) {
      uint16_t id = 0;
      Bdf(spec_.target, "--target", &id);
      dxpu_put_be16(&t.msg_hdr[0], id);
    }
  }

  void Routing(uint8_t* routing) {
    static constexpr std::array<std::string_view, 6> kRouting = {
        "to-rc", "by-address", "by-id", "broadcast", "local", "gather"};
    if (spec_.routing.empty()) return;
    const auto* it = std::find(kRouting.begin(), kRouting.end(), spec_.routing);
    if (it != kRouting.end()) {
      *routing = static_cast<uint8_t>(it - kRouting.begin());
      return;
    }
    Uint(spec_.routing, "--routing", 0xff, routing);
  }

  // The routing each message code is defined with, for the codes that fix one.
  static uint8_t DefaultRouting(uint8_t code) {
    if (dxpu_tlp_msg_is_intx(code) || code == 0x50) return DXPU_TLP_ROUTE_LOCAL;
    if (code == 0x00 || code == 0x19) return DXPU_TLP_ROUTE_BROADCAST;
    return DXPU_TLP_ROUTE_TO_RC;
  }

  const TlpSpec& spec_;
  BuiltTlp out_;
  Error error_;
};

}  // namespace

dxpu_tlp BuiltTlp::Tlp() const {
  dxpu_tlp t = header;
  t.payload = with_payload ? payload.data() : nullptr;
  return t;
}

const std::array<std::string_view, 10>& EncodeKindNames() { return kKindNames; }

Result<BuiltTlp> BuildTlp(const TlpSpec& spec) { return Builder(spec).Build(); }

namespace {

// "--opt VALUE" as typed, or "--opt" for a flag or an option not given.
std::string Given(std::string_view option, const std::string& typed) {
  return typed.empty() ? std::string(option) : fmt::format("{} {}", option, typed);
}

constexpr const char* kMemKinds = "memory requests (mrd, mwr)";
constexpr const char* kCfgKinds = "configuration requests (cfgrd0, cfgwr0, cfgrd1, cfgwr1)";
constexpr const char* kCplKinds = "completions (cpl, cpld)";
constexpr const char* kMsgKinds = "messages (msg, msgd)";

// Fields outside their range, and Length, payload and digest against the kind.
std::string ExplainRangesAndLength(const TlpSpec& spec, const dxpu_tlp& t) {
  const uint8_t k = t.kind;
  const std::string& kind = spec.kind;
  if (t.tc > 7) return Given("--tc", spec.tc) + ": Traffic Class is 3 bits, 0..7";
  if (t.attr > 7)
    return Given("--attr", spec.attr) +
           ": Attr is 3 bits, 0..7 (1 No Snoop, 2 Relaxed Ordering, 4 ID-based Ordering)";
  if (t.at > 3) return Given("--at", spec.at) + ": Address Type is 2 bits, 0..3";
  if (t.ph > 3) return Given("--ph", spec.ph) + ": Processing Hint is 2 bits, 0..3";
  if (t.tag > 0x3ff) return Given("--tag", spec.tag) + ": a tag is 10 bits, 0..1023";
  if (t.first_be > 0xf)
    return Given("--first-be", spec.first_be) + ": byte enables are 4 bits, 0..0xf";
  if (t.last_be > 0xf)
    return Given("--last-be", spec.last_be) + ": byte enables are 4 bits, 0..0xf";
  // Length and payload.
  const bool has_len = k != DXPU_TLP_CPL && k != DXPU_TLP_MSG;
  if (!has_len && t.length_dw != 0) {
    const std::string with = kind == "cpl" ? "cpld" : "msgd";
    return fmt::format("{}: {} carries no data and has no Length; {} is the kind with data",
                       spec.data.empty() ? Given("--len", spec.len) : std::string("--data"), kind,
                       with);
  }
  if (has_len && (t.length_dw < 1 || t.length_dw > DXPU_TLP_MAX_LENGTH_DW)) {
    if (!spec.data.empty() && spec.len.empty())
      return fmt::format("--data: {} DW; a payload is at most {} DW ({} bytes)", t.length_dw,
                         DXPU_TLP_MAX_LENGTH_DW, DXPU_TLP_MAX_LENGTH_DW * 4);
    return fmt::format("{}: Length is 1..{} DW", Given("--len", spec.len), DXPU_TLP_MAX_LENGTH_DW);
  }
  if (dxpu_tlp_kind_has_data(k) != (t.payload != nullptr)) {
    return fmt::format(
        "--data: {} carries no payload (the kinds with data: mwr, cfgwr0, cfgwr1, "
        "cpld, msgd)",
        kind);
  }
  if (!(t.flags & DXPU_TLP_F_TD) && t.digest)
    return Given("--digest", spec.digest) + ": a digest is carried only with --td";
  return {};
}

// Memory requests' fields (address, AT, TLP Processing Hints), LN, and byte enables where a
// kind has none.
std::string ExplainMemoryFields(const TlpSpec& spec, const dxpu_tlp& t) {
  const uint8_t k = t.kind;
  const bool mem = dxpu_tlp_kind_is_mem(k);
  const bool cpl = dxpu_tlp_kind_is_cpl(k), msg = dxpu_tlp_kind_is_msg(k);
  const bool th = (t.flags & DXPU_TLP_F_TH) != 0;
  if (!mem) {
    if (t.addr)
      return fmt::format("{}: only {} have an address", Given("--addr", spec.addr), kMemKinds);
    if (t.at)
      return fmt::format("{}: only {} have an Address Type", Given("--at", spec.at), kMemKinds);
    if (th) return fmt::format("--th: only {} carry TLP Processing Hints", kMemKinds);
  }
  if (!th && t.ph) return Given("--ph", spec.ph) + ": a Processing Hint needs --th";
  if (!th && t.st) return Given("--st", spec.st) + ": a Steering Tag needs --th";
  if (!mem && (t.ph || t.st))
    return fmt::format("{}: only {} carry TLP Processing Hints",
                       t.ph ? Given("--ph", spec.ph) : Given("--st", spec.st), kMemKinds);
  if (th && k == DXPU_TLP_MWR && (t.tag & 0xffu)) {
    return Given("--tag", spec.tag) +
           ": with --th an MWr's Tag[7:0] carries the Steering Tag (--st), so only Tag[9:8] may "
           "be set: 0, 0x100, 0x200 or 0x300";
  }
  if (th && k == DXPU_TLP_MRD &&
      (t.first_be != 0xfu || t.last_be != (t.length_dw > 1 ? 0xfu : 0u))) {
    return fmt::format(
        "{}: with --th an MRd's byte enables carry the Steering Tag (--st), so they must be the "
        "defaults: --first-be 0xf, --last-be {}",
        t.first_be != 0xfu ? Given("--first-be", spec.first_be) : Given("--last-be", spec.last_be),
        t.length_dw > 1 ? "0xf" : "0 (1 DW)");
  }
  if (!mem && !cpl && (t.flags & DXPU_TLP_F_LN))
    return fmt::format("--ln: Lightweight Notification is for {} and {}", kMemKinds, kCplKinds);
  if (mem && (t.addr & 0x3u)) {
    const uint64_t below = t.addr & ~uint64_t{3};
    return fmt::format(
        "{}: a memory request's address is DW-aligned, a multiple of 4 (0x{:x} or 0x{:x}); "
        "--first-be and --last-be select the bytes within the first and last DW",
        Given("--addr", spec.addr), below, below + 4);
  }
  if ((cpl || msg) && (t.first_be || t.last_be)) {
    return fmt::format(
        "{}: {} and {} have no byte enables",
        t.first_be ? Given("--first-be", spec.first_be) : Given("--last-be", spec.last_be),
        kCplKinds, kMsgKinds);
  }
  return {};
}

// Configuration, completion and message fields.
std::string ExplainOtherFields(const TlpSpec& spec, const dxpu_tlp& t) {
  const uint8_t k = t.kind;
  const bool cfg = dxpu_tlp_kind_is_cfg(k);
  const bool cpl = dxpu_tlp_kind_is_cpl(k), msg = dxpu_tlp_kind_is_msg(k);
  // Configuration.
  if (!cfg && t.cfg_target)
    return fmt::format("{}: only {} have a target", Given("--target", spec.target), kCfgKinds);
  if (!cfg && t.cfg_reg)
    return fmt::format("{}: only {} have a register", Given("--reg", spec.reg), kCfgKinds);
  if (cfg && (t.cfg_reg & ~0xffcu)) {
    return Given("--reg", spec.reg) +
           ": a register offset is DW-aligned and inside the 4 KiB configuration space: a "
           "multiple of 4, 0..0xffc";
  }
  // Completions.
  if (!cpl) {
    const char* what = "";
    std::string option;
    if (t.completer_id) {
      option = Given("--completer", spec.completer);
      what = "a Completer ID";
    } else if (t.byte_count) {
      option = Given("--byte-count", spec.byte_count);
      what = "a Byte Count";
    } else if (t.cpl_status) {
      option = Given("--status", spec.status);
      what = "a Completion Status";
    } else if (t.lower_addr) {
      option = Given("--lower-addr", spec.lower_addr);
      what = "a Lower Address";
    } else if (t.flags & DXPU_TLP_F_BCM) {
      option = "--bcm";
      what = "Byte Count Modified";
    }
    if (!option.empty()) return fmt::format("{}: only {} have {}", option, kCplKinds, what);
  } else {
    if (t.byte_count < 1 || t.byte_count > 4096)
      return Given("--byte-count", spec.byte_count) + ": Byte Count is 1..4096";
    if (t.lower_addr > 0x7f)
      return Given("--lower-addr", spec.lower_addr) + ": Lower Address is 7 bits, 0..0x7f";
    if (t.cpl_status > 7) {
      return Given("--status", spec.status) +
             ": Completion Status is 3 bits, 0..7 (sc 0, ur 1, crs 2, ca 4)";
    }
  }
  // Messages.
  if (!msg) {
    if (t.msg_code)
      return fmt::format("{}: only {} have a Message Code", Given("--code", spec.code), kMsgKinds);
    if (t.msg_routing)
      return fmt::format("{}: only {} have a routing", Given("--routing", spec.routing), kMsgKinds);
    if (std::any_of(std::begin(t.msg_hdr), std::end(t.msg_hdr), [](uint8_t b) { return b != 0; }))
      return fmt::format("{}: only {} have header bytes 8..15", Given("--msg-hdr", spec.msg_hdr),
                         kMsgKinds);
  }
  return {};
}

}  // namespace

std::string ExplainFieldRange(const TlpSpec& spec, const dxpu_tlp& tlp) {
  std::string why = ExplainRangesAndLength(spec, tlp);
  if (why.empty()) why = ExplainMemoryFields(spec, tlp);
  if (why.empty()) why = ExplainOtherFields(spec, tlp);
  return why;
}

}  // namespace dxpu::cli
