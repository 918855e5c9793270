// DxFP session goodput against the raw link, in the same process: a stream of memory
// writes of 64 B, 256 B or 4 KiB payload through one session (sender and receiver in this
// thread) over the in-memory link and UDP on 127.0.0.1, each next to the raw link moving the
// same frames with no protocol; and the session at 1% frame loss. A summary prints the
// ratios. Results: docs/performance.md, "DxFP session goodput".
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench_summary.h"
#include "fabric/raw_link_load.h"
#include "fabric/raw_link_pair.h"
#include "fabric/session_load.h"

namespace {

using dxpu::fabric::RawLinkKind;
constexpr auto kSlice = std::chrono::milliseconds(100);

// (link, payload, loss in 0.1%) -> payload bytes/s, for the summary.
std::map<std::tuple<int64_t, int64_t, int64_t>, double>& Rates() {
  static std::map<std::tuple<int64_t, int64_t, int64_t>, double> rates;
  return rates;
}
std::map<std::tuple<int64_t, int64_t>, double>& RawRates() {
  static std::map<std::tuple<int64_t, int64_t>, double> rates;
  return rates;
}

void BM_RawLinkLoad(benchmark::State& state) {
  const auto kind = static_cast<RawLinkKind>(state.range(0));
  const auto payload = static_cast<size_t>(state.range(1));
  dxpu::fabric::RawLinkPair pair = dxpu::fabric::OpenRawLinkPair(kind, 1024);
  if (!pair.ok()) {
    state.SkipWithError(("cannot open links: " + pair.error.message()).c_str());
    return;
  }
  uint64_t bytes = 0;
  double seconds = 0;
  for (auto _ : state) {
    dxpu::fabric::RawLinkLoadOptions o;
    o.tlp_payload_bytes = payload;
    o.duration = kSlice;
    const auto r = dxpu::fabric::RunRawLinkLoad(*pair.tx, pair.to, *pair.rx, o);
    state.SetIterationTime(r.seconds);
    bytes += r.payload_bytes;
    seconds += r.seconds;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  RawRates()[{state.range(0), state.range(1)}] =
      seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
  state.SetLabel(std::string(dxpu::fabric::RawLinkKindName(kind)) + " raw " +
                 std::to_string(payload) + "B");
}

void BM_SessionLoad(benchmark::State& state) {
  const auto kind = static_cast<RawLinkKind>(state.range(0));
  const auto payload = static_cast<size_t>(state.range(1));
  const double loss = static_cast<double>(state.range(2)) / 1000.0;
  dxpu::fabric::RawLinkPair pair = dxpu::fabric::OpenRawLinkPair(kind, 1024);
  if (!pair.ok()) {
    state.SkipWithError(("cannot open links: " + pair.error.message()).c_str());
    return;
  }
  uint64_t bytes = 0;
  uint64_t tlps = 0;
  uint64_t retx = 0;
  double seconds = 0;
  for (auto _ : state) {
    dxpu::fabric::SessionLoadOptions o;
    o.tlp_payload_bytes = payload;
    o.duration = kSlice;
    o.loss = loss;
    const auto r = dxpu::fabric::RunSessionLoad(pair, o);
    if (!r.error.empty()) {
      state.SkipWithError(r.error.c_str());
      return;
    }
    state.SetIterationTime(r.seconds);
    bytes += r.payload_bytes;
    tlps += r.tlps;
    retx += r.retransmitted;
    seconds += r.seconds;
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(static_cast<int64_t>(tlps));
  state.counters["retx"] = static_cast<double>(retx);
  Rates()[{state.range(0), state.range(1), state.range(2)}] =
      seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
  state.SetLabel(std::string(dxpu::fabric::RawLinkKindName(kind)) + " session " +
                 std::to_string(payload) + "B loss " + std::to_string(loss * 100) + "%");
}

const std::vector<int64_t> kLinks = {static_cast<int64_t>(RawLinkKind::kMemory),
                                     static_cast<int64_t>(RawLinkKind::kUdpLoopback)};

BENCHMARK(BM_RawLinkLoad)
    ->ArgNames({"link", "payload"})
    ->ArgsProduct({kLinks, {64, 256, 4096}})
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SessionLoad)
    ->ArgNames({"link", "payload", "loss_permille"})
    ->ArgsProduct({kLinks, {64, 256, 4096}, {0, 10}})
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

void PrintSummary() {
  std::printf("\nDxFP session goodput (payload bytes/s, one core, sender and receiver):\n");
  std::printf("%-13s %8s %12s %12s %8s %14s %8s\n", "link", "payload", "raw MB/s", "session",
              "ratio", "at 1% loss", "ratio");
  for (int64_t link : kLinks) {
    for (int64_t payload : {64, 256, 4096}) {
      const double raw = RawRates()[{link, payload}];
      const double s0 = Rates()[{link, payload, 0}];
      const double s1 = Rates()[{link, payload, 10}];
      std::printf(
          "%-13s %7lldB %12.1f %12.1f %7.1f%% %14.1f %7.1f%%\n",
          std::string(dxpu::fabric::RawLinkKindName(static_cast<RawLinkKind>(link))).c_str(),
          static_cast<long long>(payload), raw / 1e6, s0 / 1e6, raw > 0 ? 100 * s0 / raw : 0,
          s1 / 1e6, s0 > 0 ? 100 * s1 / s0 : 0);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  return dxpu::bench::RunBenchmarks(argc, argv, nullptr, PrintSummary);
}
