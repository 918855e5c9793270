// record_codec.cc - the pool's records as JSON text (record_codec.h).
#include "manager/record_codec.h"

#include <cstdint>
#include <initializer_list>
#include <limits>

#include <nlohmann/json.hpp>

namespace dxpu::manager {

namespace {

using nlohmann::json;

// Reads one object's fields, each exactly once and of its type; Done() says whether every field
// was there, of its type, and nothing else was.
class FieldReader {
 public:
  explicit FieldReader(std::string_view text)
      : j_(json::parse(text, nullptr, /*allow_exceptions=*/false)), ok_(j_.is_object()) {}

  FieldReader& Str(const char* name, std::string* out) {
    const json* v = Field(name);
    if (v && v->is_string())
      *out = v->get<std::string>();
    else
      ok_ = false;
    return *this;
  }
  FieldReader& U64(const char* name, uint64_t* out) {
    const json* v = Field(name);
    if (v && v->is_number_unsigned())
      *out = v->get<uint64_t>();
    else
      ok_ = false;
    return *this;
  }
  FieldReader& Bool(const char* name, bool* out) {
    const json* v = Field(name);
    if (v && v->is_boolean())
      *out = v->get<bool>();
    else
      ok_ = false;
    return *this;
  }
  template <typename T>
  FieldReader& Small(const char* name, T* out) {
    uint64_t wide = 0;
    U64(name, &wide);
    if (wide > std::numeric_limits<T>::max()) ok_ = false;
    *out = static_cast<T>(wide);
    return *this;
  }
  template <typename E, typename Named>
  FieldReader& Enum(const char* name, E* out, Named named) {
    std::string text;
    Str(name, &text);
    if (const std::optional<E> e = named(text))
      *out = *e;
    else
      ok_ = false;
    return *this;
  }
  bool Done() const { return ok_ && read_ == j_.size(); }

 private:
  const json* Field(const char* name) {
    if (!ok_) return nullptr;
    const auto it = j_.find(name);
    if (it == j_.end()) return nullptr;
    ++read_;
    return &*it;
  }
  json j_;
  bool ok_;
  size_t read_ = 0;
};

template <typename T>
std::optional<T> Checked(const FieldReader& r, T record) {
  if (!r.Done()) return std::nullopt;
  return record;
}

}  // namespace

std::string EncodeRecord(const BoxRecord& b) {
  return json{
      {"id", b.id},           {"management", b.management},     {"fabric", b.fabric},
      {"healthy", b.healthy}, {"last_seen_ns", b.last_seen_ns}, {"fabric_key", b.fabric_key}}
      .dump();
}

std::string EncodeRecord(const GpuRecord& g) {
  return json{{"box", g.box},
              {"device", g.device},
              {"box_bdf", g.box_bdf},
              {"profile", g.profile},
              {"present", g.present}}
      .dump();
}

std::string EncodeRecord(const HostRecord& h) {
  return json{{"id", h.id},
              {"node_id", h.node_id},
              {"agent", h.agent},
              {"mode", h.mode},
              {"boot_id", h.boot_id},
              {"registered_ns", h.registered_ns},
              {"fabric_key", h.fabric_key}}
      .dump();
}

std::string EncodeRecord(const AllocationRecord& a) {
  return json{{"id", a.id},
              {"host", a.host},
              {"count", a.count},
              {"policy", PolicyName(a.policy)},
              {"profile", a.profile},
              {"prefer_box", a.prefer_box},
              {"request_key", a.request_key},
              {"state", AllocationStateName(a.state)},
              {"error", a.error},
              {"created_ns", a.created_ns},
              {"updated_ns", a.updated_ns}}
      .dump();
}

std::string EncodeRecord(const LeaseRecord& l) {
  return json{{"allocation", l.allocation}, {"box", l.box},
              {"device", l.device},         {"host", l.host},
              {"host_bdf", l.host_bdf},     {"step", LeaseStepName(l.step)},
              {"updated_ns", l.updated_ns}}
      .dump();
}

std::optional<BoxRecord> DecodeBox(std::string_view text) {
  BoxRecord b;
  FieldReader r(text);
  r.Str("id", &b.id).Str("management", &b.management).Str("fabric", &b.fabric);
  r.Bool("healthy", &b.healthy)
      .U64("last_seen_ns", &b.last_seen_ns)
      .Str("fabric_key", &b.fabric_key);
  return Checked(r, std::move(b));
}

std::optional<GpuRecord> DecodeGpu(std::string_view text) {
  GpuRecord g;
  FieldReader r(text);
  r.Str("box", &g.box).Small("device", &g.device).Small("box_bdf", &g.box_bdf);
  r.Str("profile", &g.profile).Bool("present", &g.present);
  return Checked(r, std::move(g));
}

std::optional<HostRecord> DecodeHost(std::string_view text) {
  HostRecord h;
  FieldReader r(text);
  r.Str("id", &h.id).U64("node_id", &h.node_id).Str("agent", &h.agent).Str("mode", &h.mode);
  r.Str("boot_id", &h.boot_id).U64("registered_ns", &h.registered_ns);
  r.Str("fabric_key", &h.fabric_key);
  return Checked(r, std::move(h));
}

std::optional<AllocationRecord> DecodeAllocation(std::string_view text) {
  AllocationRecord a;
  FieldReader r(text);
  r.U64("id", &a.id).Str("host", &a.host).Small("count", &a.count);
  r.Enum("policy", &a.policy, PolicyNamed).Str("profile", &a.profile);
  r.Str("prefer_box", &a.prefer_box).Str("request_key", &a.request_key);
  r.Enum("state", &a.state, AllocationStateNamed).Str("error", &a.error);
  r.U64("created_ns", &a.created_ns).U64("updated_ns", &a.updated_ns);
  return Checked(r, std::move(a));
}

std::optional<LeaseRecord> DecodeLease(std::string_view text) {
  LeaseRecord l;
  FieldReader r(text);
  r.U64("allocation", &l.allocation).Str("box", &l.box).Small("device", &l.device);
  r.Str("host", &l.host).Small("host_bdf", &l.host_bdf);
  r.Enum("step", &l.step, LeaseStepNamed).U64("updated_ns", &l.updated_ns);
  return Checked(r, std::move(l));
}

}  // namespace dxpu::manager
