// demo_report.cc - the demo's results as text and JSON.
#include "demo_report.h"

#include <spdlog/fmt/fmt.h>

#include "hex.h"
#include "numbers.h"

namespace dxpu::cli {

const char* const kDemoBanner =
    "DxPU demo \u2014 foundation stage: the codec and helpers on the data path of one MMIO read "
    "and one DMA read; the GPU-pool demo lands with the runtime issue";

namespace {

constexpr const char* kScope =
    "Every TLP below is built, encoded and decoded by lib/core (dxpu_tlp_encode/decode, the\n"
    "split helpers, dxpu_crc32c); no fabric, bridge or GPU process runs yet. Efficiency counts\n"
    "TLP header and payload bytes only (no DLLP/link framing, no DxFP/Ethernet headers).\n";

std::string Size(uint64_t n) {
  if (n >= (1ull << 20) && n % (1ull << 20) == 0) return fmt::format("{} MiB", n >> 20);
  if (n >= (1ull << 10) && n % (1ull << 10) == 0) return fmt::format("{} KiB", n >> 10);
  return fmt::format("{} bytes", n);
}

// Lines under one label: "    label       first\n                second\n".
std::string Labelled(std::string_view label, const std::vector<std::string>& lines) {
  std::string t;
  for (size_t i = 0; i < lines.size(); ++i) {
    t += fmt::format("    {:<12}{}\n", i == 0 ? label : "", lines[i]);
  }
  return t;
}

std::string MmioText(const DemoResult& r) {
  const MmioScenario& s = r.mmio_scenario;
  std::string t = fmt::format(
      "(a) Host MMIO read of BAR0+0x{:x} of the remote GPU at virtual BDF {}\n"
      "    host {}, tag {}, host BAR0 at 0x{:x}\n"
      "    in the GPU box: bridge {}, GPU {}, device BAR0 at 0x{:x}\n\n",
      s.offset, FormatBdf(s.virtual_gpu_id), FormatBdf(s.host_id), s.host_tag, s.host_bar0,
      FormatBdf(s.bridge_id), FormatBdf(s.gpu_id), s.device_bar0);
  int i = 1;
  for (const MmioHop& h : r.mmio.hops) {
    t += fmt::format("  {} {:<12} {}\n", i++, h.name, h.where);
    t += Labelled("rewrite", h.changes);
    t += Labelled("computed", h.notes);
    t += fmt::format("    tlp         {}\n", h.summary);
    t += fmt::format("    bytes       {}  ({} bytes)\n", FormatHex(h.wire, 4), h.wire.size());
    if (h.fabric_crc) {
      t += fmt::format("    crc32c      0x{:08x}  (stand-in for the DxFP frame check)\n",
                       *h.fabric_crc);
    }
  }
  if (r.mmio.value) {
    t += fmt::format("  host proxy completes the read: 0x{:08x}\n", *r.mmio.value);
  } else {
    t += "  the read did not complete (see the failed checks)\n";
  }
  return t;
}

std::string Percent(double e) { return fmt::format("{:.2f} %", e * 100.0); }

std::string ReadRowText(const TransferRow& row, bool with_config) {
  const TransferStats& s = row.stats;
  std::string t = with_config ? fmt::format("  {:>5} {:>5} ", row.mrrs, row.mps) : "  ";
  return t + fmt::format("{:>6} {:>6} {:>11} {:>9} {:>11} {:>9}\n", s.requests, s.completions,
                         s.payload_bytes, s.header_bytes, Percent(s.Efficiency()),
                         s.tlp_failures + s.data_errors);
}

std::string TransfersText(const DemoResult& r) {
  const TransferRow& d = r.dma_read;
  std::string t = fmt::format(
      "(b) GPU DMA read of {} of host memory at 0x{:x} (MRRS {}, MPS {}, RCB {})\n"
      "    as the host proxy sees it: MRd from the GPU, CplD split by the host's completer\n\n",
      Size(d.nbytes), d.addr, d.mrrs, d.mps, d.rcb);
  t += fmt::format("  {:>6} {:>6} {:>11} {:>9} {:>11} {:>9}\n", "MRd", "CplD", "payload B",
                   "header B", "efficiency", "failures");
  t += ReadRowText(d, false);
  t += fmt::format("\n  sweep, same read, RCB {}:\n", d.rcb);
  t += fmt::format("  {:>5} {:>5} {:>6} {:>6} {:>11} {:>9} {:>11} {:>9}\n", "MRRS", "MPS", "MRd",
                   "CplD", "payload B", "header B", "efficiency", "failures");
  for (const TransferRow& row : r.dma_read_sweep) t += ReadRowText(row, true);

  const TransferRow& w = r.posted_write;
  const TransferStats& s = w.stats;
  t += fmt::format("\n(c) Host->GPU posted write stream of {} to BAR1 at 0x{:x} (MPS {})\n\n",
                   Size(w.nbytes), w.addr, w.mps);
  t += fmt::format("  {:>6} {:>11} {:>9} {:>11} {:>9}\n", "MWr", "payload B", "header B",
                   "efficiency", "failures");
  t += fmt::format("  {:>6} {:>11} {:>9} {:>11} {:>9}\n", s.requests, s.payload_bytes,
                   s.header_bytes, Percent(s.Efficiency()), s.tlp_failures + s.data_errors);
  return t;
}

nlohmann::ordered_json RowJson(const TransferRow& row) {
  const TransferStats& s = row.stats;
  nlohmann::ordered_json j = {
      {"addr", row.addr},
      {"addr_hex", fmt::format("0x{:x}", row.addr)},
      {"bytes", row.nbytes},
      {"mps", row.mps},
      {"requests", s.requests},
      {"completions", s.completions},
      {"payload_bytes", s.payload_bytes},
      {"header_bytes", s.header_bytes},
      {"efficiency", s.Efficiency()},
      {"tlp_failures", s.tlp_failures},
      {"data_errors", s.data_errors},
  };
  if (row.mrrs) {
    j["mrrs"] = row.mrrs;
    j["rcb"] = row.rcb;
  }
  return j;
}

nlohmann::ordered_json MmioJson(const DemoResult& r) {
  const MmioScenario& s = r.mmio_scenario;
  nlohmann::ordered_json hops = nlohmann::ordered_json::array();
  for (const MmioHop& h : r.mmio.hops) {
    nlohmann::ordered_json j = {{"name", h.name},         {"where", h.where},
                                {"changes", h.changes},   {"notes", h.notes},
                                {"summary", h.summary},   {"hex", FormatHex(h.wire)},
                                {"length", h.wire.size()}};
    if (h.fabric_crc) j["crc32c"] = fmt::format("0x{:08x}", *h.fabric_crc);
    hops.push_back(std::move(j));
  }
  nlohmann::ordered_json j = {
      {"host_id", FormatBdf(s.host_id)},
      {"virtual_gpu_id", FormatBdf(s.virtual_gpu_id)},
      {"bridge_id", FormatBdf(s.bridge_id)},
      {"gpu_id", FormatBdf(s.gpu_id)},
      {"host_bar0", fmt::format("0x{:x}", s.host_bar0)},
      {"device_bar0", fmt::format("0x{:x}", s.device_bar0)},
      {"offset", s.offset},
      {"host_tag", s.host_tag},
      {"bridge_tag", s.bridge_tag},
      {"hops", std::move(hops)},
  };
  j["value"] =
      r.mmio.value ? nlohmann::ordered_json(fmt::format("0x{:08x}", *r.mmio.value)) : nullptr;
  return j;
}

}  // namespace

std::string DemoText(const DemoResult& r) {
  std::string t = fmt::format("{}\n{}\n", kDemoBanner, kScope);
  t += MmioText(r);
  t += '\n';
  t += TransfersText(r);
  t += fmt::format("\nchecks: {} passed, {} failed\n", r.checks.passed(), r.checks.failed());
  for (const std::string& f : r.checks.failures()) t += fmt::format("  FAILED: {}\n", f);
  return t;
}

nlohmann::ordered_json DemoJson(const DemoResult& r) {
  nlohmann::ordered_json sweep = nlohmann::ordered_json::array();
  for (const TransferRow& row : r.dma_read_sweep) sweep.push_back(RowJson(row));
  return {
      {"stage", "foundation"},
      {"banner", kDemoBanner},
      {"mmio_read", MmioJson(r)},
      {"dma_read", RowJson(r.dma_read)},
      {"dma_read_sweep", std::move(sweep)},
      {"posted_write", RowJson(r.posted_write)},
      {"checks",
       {{"passed", r.checks.passed()},
        {"failed", r.checks.failed()},
        {"failures", r.checks.failures()}}},
      {"ok", r.ok()},
  };
}

}  // namespace dxpu::cli
