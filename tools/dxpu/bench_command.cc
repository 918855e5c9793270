// bench_command.cc - see bench_command.h.
#include "bench_command.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fabric/raw_link_load.h"
#include "fabric/raw_link_pair.h"
#include "fabric/session_load.h"
#include "progress.h"

namespace dxpu::cli {
namespace {

struct BenchFabricArgs {
  std::vector<std::string> links = {"memory", "udp"};
  std::vector<size_t> sizes = {64, 256, 4096};
  double loss = 0.01;
  unsigned duration_ms = 500;
  unsigned replay_kib = 256;
  unsigned min_rto_us = 300;
  bool json = false;
};

struct Row {
  std::string link;
  size_t size = 0;
  double loss = 0;
  double raw_bps = 0;  // payload bytes/s the raw link moved (0 for loss rows)
  double session_bps = 0;
  double tlps_per_s = 0;
  uint64_t retransmitted = 0;
  uint64_t rto_expiries = 0;
  uint64_t naks = 0;
  double ratio = 0;  // session / raw, or session / loss-free session for loss rows
  std::string error;
};

fabric::RawLinkKind KindOf(const std::string& name) {
  return name == "udp" ? fabric::RawLinkKind::kUdpLoopback : fabric::RawLinkKind::kMemory;
}

Row Measure(const BenchFabricArgs& a, const std::string& link, size_t size, double loss,
            double loss_free_bps) {
  const auto d = std::chrono::milliseconds(a.duration_ms);
  Row row;
  row.link = link;
  row.size = size;
  row.loss = loss;
  if (loss == 0) {
    fabric::RawLinkPair raw = fabric::OpenRawLinkPair(KindOf(link), 1024);
    if (!raw.ok()) {
      row.error = "cannot open the " + link + " link: " + raw.error.message();
      return row;
    }
    fabric::RawLinkLoadOptions ro;
    ro.tlp_payload_bytes = size;
    ro.duration = d;
    const fabric::RawLinkLoadResult r = fabric::RunRawLinkLoad(*raw.tx, raw.to, *raw.rx, ro);
    row.raw_bps = r.payload_bytes_per_second();
  }
  fabric::RawLinkPair pair = fabric::OpenRawLinkPair(KindOf(link), 1024);
  if (!pair.ok()) {
    row.error = "cannot open the " + link + " link: " + pair.error.message();
    return row;
  }
  fabric::SessionLoadOptions so;
  so.tlp_payload_bytes = size;
  so.duration = d;
  so.loss = loss;
  so.replay_bytes = a.replay_kib * 1024;
  so.min_rto_ns = uint64_t{a.min_rto_us} * 1000;
  const fabric::SessionLoadResult s = fabric::RunSessionLoad(pair, so);
  row.error = s.error;
  row.session_bps = s.payload_bytes_per_second();
  row.tlps_per_s = s.tlps_per_second();
  row.retransmitted = s.retransmitted;
  row.rto_expiries = s.rto_expiries;
  row.naks = s.naks;
  const double base = loss == 0 ? row.raw_bps : loss_free_bps;
  row.ratio = base > 0 ? row.session_bps / base : 0;
  return row;
}

int RunBenchFabric(const BenchFabricArgs& a) {
  std::vector<Row> rows;
  const size_t cells = a.links.size() * a.sizes.size() * (a.loss > 0 ? 2 : 1);
  Progress progress("benchmarking");
  size_t done = 0;
  for (const std::string& link : a.links) {
    for (size_t size : a.sizes) {
      rows.push_back(Measure(a, link, size, 0, 0));
      progress.Update(++done, cells);
      if (a.loss > 0) {
        rows.push_back(Measure(a, link, size, a.loss, rows.back().session_bps));
        progress.Update(++done, cells);
      }
    }
  }
  bool failed = false;
  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Row& r : rows) {
      out.push_back({{"link", r.link},
                     {"tlp_payload_bytes", r.size},
                     {"loss", r.loss},
                     {"raw_payload_bytes_per_s", r.raw_bps},
                     {"session_payload_bytes_per_s", r.session_bps},
                     {"session_tlps_per_s", r.tlps_per_s},
                     {"retransmitted", r.retransmitted},
                     {"rto_expiries", r.rto_expiries},
                     {"naks", r.naks},
                     {"ratio", r.ratio},
                     {"error", r.error}});
      failed = failed || !r.error.empty();
    }
    std::cout << out.dump(2) << '\n';
    return failed ? kExitFailure : kExitOk;
  }
  std::printf("DxFP session goodput vs the raw link (same bytes, no protocol), %u ms per cell\n",
              a.duration_ms);
  std::printf("%-8s %7s %6s %10s %13s %9s %7s %9s %6s %6s\n", "link", "payload", "loss", "raw MB/s",
              "session MB/s", "M TLPs/s", "ratio", "retx", "RTOs", "NAKs");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-8s %6zuB %5.1f%%  error: %s\n", r.link.c_str(), r.size, r.loss * 100,
                  r.error.c_str());
      failed = true;
      continue;
    }
    const std::string raw =
        r.loss == 0 ? std::to_string(static_cast<int64_t>(r.raw_bps / 1e6)) : std::string("-");
    std::printf("%-8s %6zuB %5.1f%% %10s %13.1f %9.2f %6.1f%% %9llu %6llu %6llu\n", r.link.c_str(),
                r.size, r.loss * 100, raw.c_str(), r.session_bps / 1e6, r.tlps_per_s / 1e6,
                r.ratio * 100, static_cast<unsigned long long>(r.retransmitted),
                static_cast<unsigned long long>(r.rto_expiries),
                static_cast<unsigned long long>(r.naks));
  }
  std::printf(
      "ratio: session / raw link at 0%% loss; session / the same session without loss at "
      "%.1f%% loss\n",
      a.loss * 100);
  return failed ? kExitFailure : kExitOk;
}

}  // namespace

Command AddBenchCommand(CLI::App& parent) {
  CLI::App* bench = parent.add_subcommand("bench", "Measure DxPU components on this machine");
  bench->require_subcommand(1);
  auto args = std::make_shared<BenchFabricArgs>();
  CLI::App* fabric = bench->add_subcommand(
      "fabric",
      "Goodput of one DxFP session (a stream of memory writes, sender and receiver in this "
      "thread) over the in-memory link and UDP on 127.0.0.1, against the raw link moving the "
      "same frames with no protocol, measured in the same run; then the same session with "
      "frames lost at random, against its loss-free goodput. Each cell runs --duration-ms.");
  fabric->add_option("--link", args->links, "links to measure")
      ->check(CLI::IsMember({"memory", "udp"}))
      ->capture_default_str();
  fabric->add_option("--size", args->sizes, "TLP payload sizes in bytes (4..4096, DW multiples)")
      ->check(CLI::Range(size_t{4}, size_t{4096}))
      ->capture_default_str();
  fabric->add_option("--loss", args->loss, "loss probability for the lossy runs; 0: none")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  fabric->add_option("--duration-ms", args->duration_ms, "time per measurement")
      ->check(CLI::Range(10u, 60000u))
      ->capture_default_str();
  fabric
      ->add_option("--replay-kib", args->replay_kib,
                   "the sender's replay buffer in KiB (what may be in flight)")
      ->check(CLI::Range(16u, 1024u * 1024u))
      ->capture_default_str();
  fabric
      ->add_option("--min-rto-us", args->min_rto_us,
                   "the retransmission timer's floor in microseconds (both ends share this "
                   "thread, so a round trip includes the other end's whole batch)")
      ->check(CLI::Range(10u, 1'000'000u))
      ->capture_default_str();
  fabric->add_flag("--json", args->json, "print the results as JSON");
  fabric->footer(
      "Examples:\n"
      "  dxpu bench fabric\n"
      "  dxpu bench fabric --link memory --size 64 --duration-ms 2000 --json");
  return {bench, [args, fabric] {
            if (!fabric->parsed()) return kExitUsage;
            for (size_t s : args->sizes) {
              if (s % 4 != 0) {
                std::cerr << "dxpu bench fabric: --size must be a multiple of 4\n";
                return kExitUsage;
              }
            }
            return RunBenchFabric(*args);
          }};
}

}  // namespace dxpu::cli
