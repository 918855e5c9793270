// bench_command.cc - see bench_command.h.
#include "bench_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_gpu.h"
#include "bench_pool.h"
#include "bench_virtio.h"
#include "fabric/raw_link_load.h"
#include "fabric/raw_link_pair.h"
#include "fabric/session_load.h"
#include "numbers.h"
#include "stats.h"

namespace dxpu::cli {
namespace {

struct BenchFabricArgs {
  std::vector<std::string> links = {"memory", "udp"};
  std::vector<size_t> sizes = {64, 256, 4096};
  double loss = 0.01;
  std::chrono::nanoseconds duration = std::chrono::milliseconds(500);  // per run
  unsigned rounds = 3;
  unsigned replay_kib = 256;
  std::chrono::nanoseconds min_rto = std::chrono::microseconds(300);
  bool sealed = true;  // also the authenticated, sealed session (docs/protocol.md 4.12)
  bool json = false;
};

// Per-round ratios of one measurement to its baseline: their median and range.
struct Ratio {
  bool present = false;
  double median = 0;
  double min = 0;
  double max = 0;
};

// One cell's figures: medians over the rounds, and the per-round ratios to each baseline.
struct Row {
  std::string link;
  size_t size = 0;
  double loss = 0;
  bool sealed = false;  // the authenticated session, every frame sealed
  double raw_bps = 0;   // payload bytes/s the raw link moved, in the same rounds
  double session_bps = 0;
  double tlps_per_s = 0;
  uint64_t retransmitted = 0;  // summed over the rounds, as are RTOs and NAKs
  uint64_t rto_expiries = 0;
  uint64_t naks = 0;
  Ratio vs_raw;        // this session / the raw link (every row)
  Ratio vs_lossless;   // this session / the same session without loss (lossy rows only)
  Ratio vs_plaintext;  // this sealed session / the plaintext one (sealed rows only)
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
  ro.duration = a.duration;
  const fabric::RawLinkLoadResult r = fabric::RunRawLinkLoad(*raw.tx, raw.to, *raw.rx, ro);
  if (r.error) *error = "raw " + link + " link: " + r.error.message();
  return r.payload_bytes_per_second();
}

fabric::SessionLoadResult MeasureSession(const BenchFabricArgs& a, const std::string& link,
                                         size_t size, double loss, uint64_t seed,
                                         bool sealed = false) {
  fabric::RawLinkPair pair = fabric::OpenRawLinkPair(KindOf(link), 1024);
  if (!pair.ok()) {
    fabric::SessionLoadResult r;
    r.error = "cannot open the " + link + " link: " + pair.error.message();
    return r;
  }
  fabric::SessionLoadOptions so;
  so.tlp_payload_bytes = size;
  so.duration = a.duration;
  so.loss = loss;
  so.seed = seed;
  so.replay_bytes = a.replay_kib * 1024;
  so.min_rto_ns = static_cast<uint64_t>(a.min_rto.count());
  so.authenticated = sealed;
  return fabric::RunSessionLoad(pair, so);
}

// The median and range of measured[i] / baseline[i] over the rounds.
Ratio RatioOf(const std::vector<double>& baseline, const std::vector<double>& measured) {
  std::vector<double> ratios;
  for (size_t i = 0; i < measured.size() && i < baseline.size(); ++i)
    ratios.push_back(baseline[i] > 0 ? measured[i] / baseline[i] : 0);
  Ratio r;
  if (ratios.empty()) return r;
  r.present = true;
  r.median = Median(ratios);
  r.min = *std::min_element(ratios.begin(), ratios.end());
  r.max = *std::max_element(ratios.begin(), ratios.end());
  return r;
}

// How a run is named in the progress lines.
std::string LinkName(const std::string& link) {
  return link == "udp" ? "UDP loopback" : "in-memory link";
}

// One line on stderr as each run starts: `bench fabric` takes tens of seconds and prints its
// table only at the end. A plain line a run, terminal or not.
class RunCounter {
 public:
  explicit RunCounter(size_t total) : total_(total) {}
  void Start(const std::string& link, size_t size, unsigned round, unsigned rounds,
             const std::string& what, std::chrono::nanoseconds duration) {
    std::fprintf(stderr, "[%zu/%zu] %s, %zu-byte TLPs, round %u/%u: %s (%s) ...\n", ++started_,
                 total_, LinkName(link).c_str(), size, round, rounds, what.c_str(),
                 FormatDuration(duration).c_str());
    std::fflush(stderr);
  }

 private:
  size_t total_;
  size_t started_ = 0;
};

// One round's run of a row: its goodput and TLP rate, its recovery counted (summed over rounds),
// its first error kept.
void TakeRun(const fabric::SessionLoadResult& r, Row* row, std::vector<double>* bps,
             std::vector<double>* tlps) {
  if (row->error.empty()) row->error = r.error;
  bps->push_back(r.payload_bytes_per_second());
  tlps->push_back(r.tlps_per_second());
  row->retransmitted += r.retransmitted;
  row->rto_expiries += r.rto_expiries;
  row->naks += r.naks;
}

// The loss-free row of a (link, size) cell, with a.loss > 0 its lossy row, with a.sealed its
// sealed row. Each round runs the raw link, the session, the lossy and the sealed session back
// to back, so each ratio compares runs a moment apart: the machine's speed drifts between
// rounds, not within one.
std::vector<Row> MeasureCell(const BenchFabricArgs& a, const std::string& link, size_t size,
                             RunCounter& runs) {
  Row clean;
  clean.link = link;
  clean.size = size;
  Row lossy = clean;
  lossy.loss = a.loss;
  Row sealed = clean;
  sealed.sealed = true;
  const std::string lossy_name = fmt::format("session, {:g}% loss", a.loss * 100);
  std::vector<double> raw, session, session_tlps, lost, lost_tlps, sealed_bps, sealed_tlps;
  for (unsigned round = 0; round < a.rounds && clean.error.empty(); ++round) {
    runs.Start(link, size, round + 1, a.rounds, "raw link", a.duration);
    raw.push_back(MeasureRaw(a, link, size, &clean.error));
    runs.Start(link, size, round + 1, a.rounds, "session, no loss", a.duration);
    const fabric::SessionLoadResult s = MeasureSession(a, link, size, 0, round + 1);
    if (clean.error.empty()) clean.error = s.error;
    session.push_back(s.payload_bytes_per_second());
    session_tlps.push_back(s.tlps_per_second());
    if (a.loss > 0) {
      runs.Start(link, size, round + 1, a.rounds, lossy_name, a.duration);
      TakeRun(MeasureSession(a, link, size, a.loss, round + 1), &lossy, &lost, &lost_tlps);
    }
    if (a.sealed) {
      runs.Start(link, size, round + 1, a.rounds, "sealed session, no loss", a.duration);
      TakeRun(MeasureSession(a, link, size, 0, round + 1, true), &sealed, &sealed_bps,
              &sealed_tlps);
    }
  }
  clean.raw_bps = Median(raw);
  clean.session_bps = Median(session);
  clean.tlps_per_s = Median(session_tlps);
  clean.vs_raw = RatioOf(raw, session);
  std::vector<Row> rows = {clean};
  if (a.loss > 0) {
    lossy.raw_bps = clean.raw_bps;
    lossy.session_bps = Median(lost);
    lossy.tlps_per_s = Median(lost_tlps);
    lossy.vs_raw = RatioOf(raw, lost);
    lossy.vs_lossless = RatioOf(session, lost);
    rows.push_back(lossy);
  }
  if (a.sealed) {
    sealed.raw_bps = clean.raw_bps;
    sealed.session_bps = Median(sealed_bps);
    sealed.tlps_per_s = Median(sealed_tlps);
    sealed.vs_raw = RatioOf(raw, sealed_bps);
    sealed.vs_plaintext = RatioOf(session, sealed_bps);
    rows.push_back(sealed);
  }
  return rows;
}

nlohmann::json RatioJson(const Ratio& r) {
  if (!r.present) return nullptr;
  return {{"median", r.median}, {"min", r.min}, {"max", r.max}};
}

// "93.1% (90.2-95.0)", or "-" where the row has no such baseline.
std::string RatioText(const Ratio& r) {
  if (!r.present) return "-";
  return fmt::format("{:.1f}% ({:.1f}-{:.1f})", r.median * 100, r.min * 100, r.max * 100);
}

int RunBenchFabric(const BenchFabricArgs& a) {
  std::vector<Row> rows;
  RunCounter runs(a.links.size() * a.sizes.size() * a.rounds *
                  (2 + (a.loss > 0 ? 1 : 0) + (a.sealed ? 1 : 0)));
  for (const std::string& link : a.links) {
    for (size_t size : a.sizes) {
      for (Row& r : MeasureCell(a, link, size, runs)) rows.push_back(std::move(r));
    }
  }
  bool failed = false;
  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const Row& r : rows) {
      out.push_back({{"link", r.link},
                     {"tlp_payload_bytes", r.size},
                     {"loss", r.loss},
                     {"sealed", r.sealed},
                     {"rounds", a.rounds},
                     {"raw_payload_bytes_per_s", r.raw_bps},
                     {"session_payload_bytes_per_s", r.session_bps},
                     {"session_tlps_per_s", r.tlps_per_s},
                     {"retransmitted", r.retransmitted},
                     {"rto_expiries", r.rto_expiries},
                     {"naks", r.naks},
                     {"vs_raw_link", RatioJson(r.vs_raw)},
                     {"vs_lossless", RatioJson(r.vs_lossless)},
                     {"vs_plaintext", RatioJson(r.vs_plaintext)},
                     {"error", r.error}});
      failed = failed || !r.error.empty();
    }
    std::cout << out.dump(2) << '\n';
    return failed ? kExitFailure : kExitOk;
  }
  std::printf(
      "DxFP session goodput vs the raw link (same bytes, no protocol): medians of %u rounds of "
      "%s per run\n",
      a.rounds, FormatDuration(a.duration).c_str());
  std::printf("%-8s %7s %6s %6s %10s %13s %9s %20s %20s %20s %8s %6s %6s\n", "link", "payload",
              "loss", "sealed", "raw MB/s", "session MB/s", "M TLPs/s", "vs raw link",
              "vs lossless", "vs plaintext", "retx", "RTOs", "NAKs");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-8s %6zuB %5.1f%%  error: %s\n", r.link.c_str(), r.size, r.loss * 100,
                  r.error.c_str());
      failed = true;
      continue;
    }
    std::printf("%-8s %6zuB %5.1f%% %6s %10.0f %13.1f %9.2f %20s %20s %20s %8llu %6llu %6llu\n",
                r.link.c_str(), r.size, r.loss * 100, r.sealed ? "yes" : "no", r.raw_bps / 1e6,
                r.session_bps / 1e6, r.tlps_per_s / 1e6, RatioText(r.vs_raw).c_str(),
                RatioText(r.vs_lossless).c_str(), RatioText(r.vs_plaintext).c_str(),
                static_cast<unsigned long long>(r.retransmitted),
                static_cast<unsigned long long>(r.rto_expiries),
                static_cast<unsigned long long>(r.naks));
  }
  std::printf(
      "vs raw link: this row's session goodput / the raw link's, per round; vs lossless: this "
      "row's goodput / the same session's at 0%% loss, per round (lossy rows only); vs "
      "plaintext: the sealed session's goodput / the plaintext one's, per round (sealed rows "
      "only); median (min-max) over the rounds\n");
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
      "back for --duration each; the table shows medians over --rounds rounds and the range "
      "of the per-round ratios, because the machine's speed drifts between runs: 'vs raw link' "
      "is a row's goodput over the raw link's, 'vs lossless' a lossy row's over the same "
      "session's without loss; then (--sealed, the default) the authenticated session with every "
      "frame sealed, 'vs plaintext' its goodput over the plaintext session's. A line on "
      "stderr as each run starts says which of how many.");
  // "mem" as dxpu demo and bench gpu spell the in-memory link; "memory" is its old spelling
  // here and still the row's name in the table and the JSON.
  fabric->add_option("--link", args->links, "links to measure: mem (in-memory), udp (loopback)")
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"mem", "memory"}}))
      ->check(CLI::IsMember({"memory", "udp"}))
      ->capture_default_str();
  fabric->add_option("--size", args->sizes, "TLP payload sizes in bytes (4..4096, DW multiples)")
      ->check(CLI::Range(size_t{4}, size_t{4096}))
      ->capture_default_str();
  fabric->add_option("--loss", args->loss, "loss probability for the lossy runs; 0: none")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  AddBoundedDuration(*fabric, "--duration", &args->duration, "time per run",
                     {std::chrono::milliseconds(10), std::chrono::seconds(60)},
                     {{"--duration-ms", DurationUnit::kMilliseconds}});
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
  AddBoundedDuration(*fabric, "--min-rto", &args->min_rto,
                     "the retransmission timer's floor (both ends share this thread, so a round "
                     "trip includes the other end's whole batch)",
                     {std::chrono::microseconds(10), std::chrono::seconds(1)},
                     {{"--min-rto-us", DurationUnit::kMicroseconds}});
  fabric
      ->add_flag("--sealed,!--no-sealed", args->sealed,
                 "also run the authenticated session, every frame sealed with "
                 "ChaCha20-Poly1305, against the plaintext one (its row's 'vs plaintext')")
      ->capture_default_str();
  fabric->add_flag("--json", args->json, "print the results as JSON");
  fabric->footer(
      "Examples:\n"
      "  dxpu bench fabric\n"
      "  dxpu bench fabric --link mem --size 64 --duration 2s --json\n"
      "  dxpu bench fabric --link udp --size 4096 --loss 0 --rounds 9 --duration 300ms");
  CLI::App* gpu = nullptr;
  std::function<int()> run_gpu = AddBenchGpuCommand(*bench, &gpu);
  CLI::App* virtio = nullptr;
  std::function<int()> run_virtio = AddBenchVirtioCommand(*bench, &virtio);
  CLI::App* pool = nullptr;
  std::function<int()> run_pool = AddBenchPoolCommand(*bench, &pool);
  return {bench, [args, fabric, gpu, run_gpu, virtio, run_virtio, pool, run_pool] {
            if (gpu->parsed()) return run_gpu();
            if (virtio->parsed()) return run_virtio();
            if (pool->parsed()) return run_pool();
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
