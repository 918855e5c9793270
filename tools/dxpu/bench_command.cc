// bench_command.cc - see bench_command.h.
#include "bench_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_gpu.h"
#include "fabric/raw_link_load.h"
#include "fabric/raw_link_pair.h"
#include "fabric/session_load.h"
#include "progress.h"
#include "stats.h"

namespace dxpu::cli {
namespace {

struct BenchFabricArgs {
  std::vector<std::string> links = {"memory", "udp"};
  std::vector<size_t> sizes = {64, 256, 4096};
  double loss = 0.01;
  unsigned duration_ms = 500;
  unsigned rounds = 3;
  unsigned replay_kib = 256;
  unsigned min_rto_us = 300;
  bool json = false;
};

// One cell's figures: medians over the rounds, and the range of the per-round ratios.
struct Row {
  std::string link;
  size_t size = 0;
  double loss = 0;
  double raw_bps = 0;  // payload bytes/s the raw link moved (0 for loss rows)
  double session_bps = 0;
  double tlps_per_s = 0;
  uint64_t retransmitted = 0;  // summed over the rounds, as are RTOs and NAKs
  uint64_t rto_expiries = 0;
  uint64_t naks = 0;
  double ratio = 0;  // session / raw, or session / loss-free session for loss rows
  double ratio_min = 0;
  double ratio_max = 0;
  std::string error;
};

fabric::RawLinkKind KindOf(const std::string& name) {
  return name == "udp" ? fabric::RawLinkKind::kUdpLoopback : fabric::RawLinkKind::kMemory;
}

// Payload bytes/s of the raw link; 0 with *error set when it cannot run.
double MeasureRaw(const BenchFabricArgs& a, const std::string& link, size_t size,
                  std::string* error) {
  fabric::RawLinkPair raw = fabric::OpenRawLinkPair(KindOf(link), 1024);
  if (!raw.ok()) {
    *error = "cannot open the " + link + " link: " + raw.error.message();
    return 0;
  }
  fabric::RawLinkLoadOptions ro;
  ro.tlp_payload_bytes = size;
  ro.duration = std::chrono::milliseconds(a.duration_ms);
  const fabric::RawLinkLoadResult r = fabric::RunRawLinkLoad(*raw.tx, raw.to, *raw.rx, ro);
  if (r.error) *error = "raw " + link + " link: " + r.error.message();
  return r.payload_bytes_per_second();
}

fabric::SessionLoadResult MeasureSession(const BenchFabricArgs& a, const std::string& link,
                                         size_t size, double loss, uint64_t seed) {
  fabric::RawLinkPair pair = fabric::OpenRawLinkPair(KindOf(link), 1024);
  if (!pair.ok()) {
    fabric::SessionLoadResult r;
    r.error = "cannot open the " + link + " link: " + pair.error.message();
    return r;
  }
  fabric::SessionLoadOptions so;
  so.tlp_payload_bytes = size;
  so.duration = std::chrono::milliseconds(a.duration_ms);
  so.loss = loss;
  so.seed = seed;
  so.replay_bytes = a.replay_kib * 1024;
  so.min_rto_ns = uint64_t{a.min_rto_us} * 1000;
  return fabric::RunSessionLoad(pair, so);
}

// Fills a row's medians and ratio range from per-round figures: what was measured (payload
// bytes/s and TLPs/s) and what it is compared with in the same round.
void Summarize(Row* row, const std::vector<double>& baseline, const std::vector<double>& measured,
               const std::vector<double>& measured_tlps) {
  std::vector<double> ratios;
  for (size_t i = 0; i < measured.size(); ++i)
    ratios.push_back(baseline[i] > 0 ? measured[i] / baseline[i] : 0);
  row->session_bps = Median(measured);
  row->tlps_per_s = Median(measured_tlps);
  row->ratio = Median(ratios);
  row->ratio_min = ratios.empty() ? 0 : *std::min_element(ratios.begin(), ratios.end());
  row->ratio_max = ratios.empty() ? 0 : *std::max_element(ratios.begin(), ratios.end());
}

// The loss-free row of a (link, size) cell and, with a.loss > 0, its lossy row. Each round
// runs the raw link, the session and the lossy session back to back, so each ratio compares
// runs a moment apart: the machine's speed drifts between rounds, not within one.
std::vector<Row> MeasureCell(const BenchFabricArgs& a, const std::string& link, size_t size,
                             const std::function<void()>& step) {
  Row clean;
  clean.link = link;
  clean.size = size;
  Row lossy = clean;
  lossy.loss = a.loss;
  std::vector<double> raw, session, session_tlps, lost, lost_tlps;
  for (unsigned round = 0; round < a.rounds && clean.error.empty(); ++round) {
    raw.push_back(MeasureRaw(a, link, size, &clean.error));
    const fabric::SessionLoadResult s = MeasureSession(a, link, size, 0, round + 1);
    if (clean.error.empty()) clean.error = s.error;
    session.push_back(s.payload_bytes_per_second());
    session_tlps.push_back(s.tlps_per_second());
    if (a.loss > 0) {
      const fabric::SessionLoadResult l = MeasureSession(a, link, size, a.loss, round + 1);
      if (lossy.error.empty()) lossy.error = l.error;
      lost.push_back(l.payload_bytes_per_second());
      lost_tlps.push_back(l.tlps_per_second());
      lossy.retransmitted += l.retransmitted;
      lossy.rto_expiries += l.rto_expiries;
      lossy.naks += l.naks;
    }
    step();
  }
  clean.raw_bps = Median(raw);
  Summarize(&clean, raw, session, session_tlps);
  std::vector<Row> rows = {clean};
  if (a.loss > 0) {
    Summarize(&lossy, session, lost, lost_tlps);
    rows.push_back(lossy);
  }
  return rows;
}

int RunBenchFabric(const BenchFabricArgs& a) {
  std::vector<Row> rows;
  const size_t steps = a.links.size() * a.sizes.size() * a.rounds;
  Progress progress("benchmarking");
  size_t done = 0;
  for (const std::string& link : a.links) {
    for (size_t size : a.sizes) {
      for (Row& r : MeasureCell(a, link, size, [&] { progress.Update(++done, steps); }))
        rows.push_back(std::move(r));
    }
  }
  bool failed = false;
  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Row& r : rows) {
      out.push_back({{"link", r.link},
                     {"tlp_payload_bytes", r.size},
                     {"loss", r.loss},
                     {"rounds", a.rounds},
                     {"raw_payload_bytes_per_s", r.raw_bps},
                     {"session_payload_bytes_per_s", r.session_bps},
                     {"session_tlps_per_s", r.tlps_per_s},
                     {"retransmitted", r.retransmitted},
                     {"rto_expiries", r.rto_expiries},
                     {"naks", r.naks},
                     {"ratio", r.ratio},
                     {"ratio_min", r.ratio_min},
                     {"ratio_max", r.ratio_max},
                     {"error", r.error}});
      failed = failed || !r.error.empty();
    }
    std::cout << out.dump(2) << '\n';
    return failed ? kExitFailure : kExitOk;
  }
  std::printf(
      "DxFP session goodput vs the raw link (same bytes, no protocol): medians of %u rounds of "
      "%u ms per run\n",
      a.rounds, a.duration_ms);
  std::printf("%-8s %7s %6s %10s %13s %9s %7s %13s %8s %6s %6s\n", "link", "payload", "loss",
              "raw MB/s", "session MB/s", "M TLPs/s", "ratio", "ratio range", "retx", "RTOs",
              "NAKs");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-8s %6zuB %5.1f%%  error: %s\n", r.link.c_str(), r.size, r.loss * 100,
                  r.error.c_str());
      failed = true;
      continue;
    }
    const std::string raw =
        r.loss == 0 ? std::to_string(static_cast<int64_t>(r.raw_bps / 1e6)) : std::string("-");
    const std::string range = fmt::format("{:.1f}-{:.1f}%", r.ratio_min * 100, r.ratio_max * 100);
    std::printf(
        "%-8s %6zuB %5.1f%% %10s %13.1f %9.2f %6.1f%% %13s %8llu %6llu %6llu\n", r.link.c_str(),
        r.size, r.loss * 100, raw.c_str(), r.session_bps / 1e6, r.tlps_per_s / 1e6, r.ratio * 100,
        range.c_str(), static_cast<unsigned long long>(r.retransmitted),
        static_cast<unsigned long long>(r.rto_expiries), static_cast<unsigned long long>(r.naks));
  }
  std::printf(
      "ratio: per round, session / raw link at 0%% loss and session / the same session without "
      "loss at %.1f%% loss; median and range over the rounds\n",
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
      "frames lost at random, against its loss-free goodput. Each round runs the three back to "
      "back for --duration-ms each; the table shows medians over --rounds rounds and the range "
      "of the per-round ratios, because the machine's speed drifts between runs.");
  fabric->add_option("--link", args->links, "links to measure")
      ->check(CLI::IsMember({"memory", "udp"}))
      ->capture_default_str();
  fabric->add_option("--size", args->sizes, "TLP payload sizes in bytes (4..4096, DW multiples)")
      ->check(CLI::Range(size_t{4}, size_t{4096}))
      ->capture_default_str();
  fabric->add_option("--loss", args->loss, "loss probability for the lossy runs; 0: none")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  fabric->add_option("--duration-ms", args->duration_ms, "time per run")
      ->check(CLI::Range(10u, 60000u))
      ->capture_default_str();
  fabric
      ->add_option("--rounds", args->rounds,
                   "rounds per cell (raw link, session, lossy session back to back)")
      ->check(CLI::Range(1u, 100u))
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
      "  dxpu bench fabric --link memory --size 64 --duration-ms 2000 --json\n"
      "  dxpu bench fabric --link udp --size 4096 --loss 0 --rounds 9 --duration-ms 300");
  CLI::App* gpu = nullptr;
  std::function<int()> run_gpu = AddBenchGpuCommand(*bench, &gpu);
  return {bench, [args, fabric, gpu, run_gpu] {
            if (gpu->parsed()) return run_gpu();
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
