// demo_mmio.cc - one MMIO read of a remote GPU register, hop by hop, with the real codec.
#include "demo_mmio.h"

#include <core/crc32c.h>
#include <core/tlp_codec.h>
#include <spdlog/fmt/fmt.h>

#include <array>

#include "numbers.h"
#include "tlp_io.h"

namespace dxpu::cli {
namespace {

// Encodes t as hop name; a failure is a failed check and ends the walk.
std::optional<MmioHop> Emit(const dxpu_tlp& t, std::string name, std::string where,
                            std::vector<std::string> changes, bool crosses_fabric, Checks& checks) {
  Result<Bytes> wire = EncodeTlp(t);
  if (!checks.Expect(wire.ok(),
                     fmt::format("{}: encodes ({})", name, wire.ok() ? "ok" : wire.error().name))) {
    return std::nullopt;
  }
  MmioHop hop;
  hop.name = std::move(name);
  hop.where = std::move(where);
  hop.changes = std::move(changes);
  hop.wire = std::move(wire).value();
  hop.summary = FormatTlpLine(t);
  if (crosses_fabric) hop.fabric_crc = dxpu_crc32c(0, hop.wire.data(), hop.wire.size());
  return hop;
}

// Decodes the TLP the previous hop sent; a failure is a failed check.
std::optional<dxpu_tlp> Receive(const MmioHop& from, Checks& checks) {
  Result<dxpu_tlp> t = DecodeTlp(from.wire);
  if (!checks.Expect(t.ok(),
                     fmt::format("{}: decodes ({})", from.name, t.ok() ? "ok" : t.error().name))) {
    return std::nullopt;
  }
  return t.value();
}

}  // namespace

MmioScenario DefaultMmioScenario() {
  return MmioScenario{
      .host_id = DXPU_BDF(0x00, 0, 0),
      .virtual_gpu_id = DXPU_BDF(0x01, 0, 0),
      .bridge_id = DXPU_BDF(0x02, 0, 0),
      .gpu_id = DXPU_BDF(0x03, 0, 0),
      .host_bar0 = 0x4'0000'0000ull,
      .device_bar0 = 0xf000'0000ull,
      .offset = 0x10,
      .host_tag = 7,
      .bridge_tag = 33,
      .register_value = 0x12345678,
  };
}

MmioResult RunMmioRead(const MmioScenario& s, Checks& checks) {
  MmioResult r;
  r.hops.reserve(4);  // decoded TLPs point into earlier hops' bytes: keep them in place
  // 1. Host proxy: the read of BAR0+offset, as the host's root port issues it.
  dxpu_tlp mrd{};
  mrd.kind = DXPU_TLP_MRD;
  mrd.requester_id = s.host_id;
  mrd.tag = s.host_tag;
  mrd.addr = s.host_bar0 + s.offset;
  mrd.length_dw = 1;
  mrd.first_be = 0xf;
  std::optional<MmioHop> hop =
      Emit(mrd, "host-mrd", "host proxy -> DxFP -> bridge", {}, true, checks);
  if (!hop) return r;
  checks.Expect(hop->wire.size() == DXPU_TLP_HDR4_SIZE, "host MRd uses a 4DW header");
  r.hops.push_back(std::move(*hop));

  // 2. Bridge: decode, translate tag, requester ID and address, encode.
  std::optional<dxpu_tlp> req = Receive(r.hops.back(), checks);
  if (!req) return r;
  checks.Expect(req->addr >= s.host_bar0, "bridge: address inside the host's BAR0");
  dxpu_tlp fwd = *req;
  fwd.tag = s.bridge_tag;
  fwd.requester_id = s.bridge_id;
  fwd.addr = req->addr - s.host_bar0 + s.device_bar0;
  hop = Emit(
      fwd, "bridge-mrd", "bridge -> GPU (PCIe in the box)",
      {fmt::format("tag {} -> {}", req->tag, fwd.tag),
       fmt::format("requester {} -> {}", FormatBdf(req->requester_id), FormatBdf(fwd.requester_id)),
       fmt::format("address 0x{:x} -> 0x{:x} (header {} -> {} bytes)", req->addr, fwd.addr,
                   dxpu_tlp_header_len(&*req), dxpu_tlp_header_len(&fwd))},
      false, checks);
  if (!hop) return r;
  checks.Expect(hop->wire.size() == DXPU_TLP_HDR3_SIZE, "bridge MRd uses a 3DW header");
  r.hops.push_back(std::move(*hop));

  // 3. GPU: decode the read, complete it with the register's bytes (little-endian).
  std::optional<dxpu_tlp> gpu_req = Receive(r.hops.back(), checks);
  if (!gpu_req) return r;
  checks.Expect(gpu_req->addr == s.device_bar0 + s.offset, "GPU sees its own BAR0 address");
  const std::array<uint8_t, 4> value = {
      static_cast<uint8_t>(s.register_value), static_cast<uint8_t>(s.register_value >> 8),
      static_cast<uint8_t>(s.register_value >> 16), static_cast<uint8_t>(s.register_value >> 24)};
  dxpu_tlp cpld{};
  cpld.kind = DXPU_TLP_CPLD;
  cpld.completer_id = s.gpu_id;
  cpld.requester_id = gpu_req->requester_id;
  cpld.tag = gpu_req->tag;
  cpld.length_dw = 1;
  cpld.byte_count = static_cast<uint16_t>(
      dxpu_tlp_read_byte_count(gpu_req->length_dw, gpu_req->first_be, gpu_req->last_be));
  cpld.lower_addr = dxpu_tlp_read_lower_addr(gpu_req->addr, gpu_req->first_be);
  cpld.payload = value.data();
  hop = Emit(cpld, "gpu-cpld", "GPU -> bridge (PCIe in the box)", {}, false, checks);
  if (!hop) return r;
  hop->notes = {fmt::format("Byte Count {} (dxpu_tlp_read_byte_count)", cpld.byte_count),
                fmt::format("Lower Address 0x{:02x} (dxpu_tlp_read_lower_addr)", cpld.lower_addr)};
  r.hops.push_back(std::move(*hop));

  // 4. Bridge: match tag 33 to the host's read, translate back, send over the fabric.
  std::optional<dxpu_tlp> cpl = Receive(r.hops.back(), checks);
  if (!cpl) return r;
  checks.Expect(cpl->tag == fwd.tag && cpl->requester_id == s.bridge_id,
                "bridge: completion matches the forwarded read's tag");
  dxpu_tlp back = *cpl;
  back.tag = req->tag;
  back.requester_id = req->requester_id;
  back.completer_id = s.virtual_gpu_id;
  hop = Emit(back, "bridge-cpld", "bridge -> DxFP -> host proxy",
             {fmt::format("tag {} -> {}", cpl->tag, back.tag),
              fmt::format("requester {} -> {}", FormatBdf(cpl->requester_id),
                          FormatBdf(back.requester_id)),
              fmt::format("completer {} -> {}", FormatBdf(cpl->completer_id),
                          FormatBdf(back.completer_id))},
             true, checks);
  if (!hop) return r;
  r.hops.push_back(std::move(*hop));

  // 5. Host proxy: the completion finishes the outstanding read.
  std::optional<dxpu_tlp> done = Receive(r.hops.back(), checks);
  if (!done) return r;
  checks.Expect(done->tag == s.host_tag && done->requester_id == s.host_id,
                "host: completion carries the host's tag and requester ID");
  checks.Expect(done->completer_id == s.virtual_gpu_id, "host: completer is the virtual BDF");
  checks.Expect(done->byte_count == 4 && done->lower_addr == (mrd.addr & 0x7fu),
                "host: Byte Count and Lower Address match the read");
  uint32_t v =
      static_cast<uint32_t>(done->payload[0]) | static_cast<uint32_t>(done->payload[1]) << 8 |
      static_cast<uint32_t>(done->payload[2]) << 16 | static_cast<uint32_t>(done->payload[3]) << 24;
  checks.Expect(v == s.register_value, "host: read returns the register's value");
  r.value = v;
  return r;
}

}  // namespace dxpu::cli
