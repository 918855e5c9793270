// Raw link baselines: the links moving the bytes a DxFP session would, with no protocol.
// One thread sends a burst of 1, 8 or 64 datagrams the size of a full DATA frame (TLP
// records of 64 B, 256 B or 4 KiB payload packed into DXFP_MAX_FRAME, see
// fabric::PlanRawFrames) and then receives them at the other end. Session goodput is read
// against these figures: bytes/s is what the link moved, payload_Bps the TLP payload those
// frames stand for (the ceiling for goodput once DxFP's record and TLP headers are paid).
// Results and how to read them: docs/performance.md, "Raw link baselines".
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_summary.h"
#include "fabric/raw_link_load.h"
#include "fabric/raw_link_pair.h"

namespace {

using dxpu::fabric::RawLinkKind;

void BM_RawLink(benchmark::State& state) {
  const auto kind = static_cast<RawLinkKind>(state.range(0));
  const auto payload = static_cast<size_t>(state.range(1));
  // Frames per burst; the receiving end is sized to hold a burst (the UDP socket buffer
  // only up to net.core.rmem_max: beyond it frames are lost, and counted).
  const auto burst = static_cast<size_t>(state.range(2));
  dxpu::fabric::RawLinkPair pair = dxpu::fabric::OpenRawLinkPair(kind, burst);
  if (!pair.ok()) {
    state.SkipWithError(("cannot open links: " + pair.error.message()).c_str());
    return;
  }
  const dxpu::fabric::RawFramePlan plan =
      dxpu::fabric::PlanRawFrames(std::min(pair.tx->max_frame(), pair.rx->max_frame()), payload);
  dxpu::fabric::RawLinkLoad load(*pair.tx, pair.to, *pair.rx, plan);
  dxpu::fabric::RawLinkLoadResult total;
  for (auto _ : state) load.Burst(burst, &total);
  load.Finish(std::chrono::milliseconds(20), &total);
  if (total.error) {
    state.SkipWithError(("link error: " + total.error.message()).c_str());
    return;
  }
  state.SetBytesProcessed(static_cast<int64_t>(total.bytes));
  state.SetItemsProcessed(static_cast<int64_t>(total.frames));  // frames/s
  state.counters["payload_Bps"] =
      benchmark::Counter(static_cast<double>(total.payload_bytes), benchmark::Counter::kIsRate);
  state.counters["lost"] = static_cast<double>(total.lost);
  state.counters["frame_B"] = static_cast<double>(plan.frame_bytes);
  state.counters["tlps/frame"] = static_cast<double>(plan.tlps_per_frame);
  state.SetLabel(std::string(dxpu::fabric::RawLinkKindName(kind)) + " " + std::to_string(payload) +
                 "B x" + std::to_string(burst));
}

BENCHMARK(BM_RawLink)
    ->ArgNames({"link", "payload", "burst"})
    ->ArgsProduct({{static_cast<int64_t>(RawLinkKind::kMemory),
                    static_cast<int64_t>(RawLinkKind::kUdpLoopback)},
                   {64, 256, 4096},
                   {1, 8, 64}});

// Console output as usual, then a table in the units the session figures will use.
class LinkSummary : public dxpu::bench::SummaryReporter {
 protected:
  void Record(const Run& r) override {
    rows_.push_back({r.report_label, Counter(r, "items_per_second"), Counter(r, "bytes_per_second"),
                     Counter(r, "payload_Bps"), Counter(r, "frame_B"), Counter(r, "lost")});
  }

  void Summarize() override {
    std::printf("\nRaw link baselines (one thread, send a burst then receive it):\n");
    std::printf("  %-24s %8s %12s %12s %14s %8s\n", "link, payload x burst", "frame B",
                "k frames/s", "Gbit/s link", "Gbit/s payload", "lost");
    for (const Row& row : rows_) {
      std::printf("  %-24s %8.0f %12.1f %12.2f %14.2f %8.0f\n", row.label.c_str(), row.frame_bytes,
                  row.frames_per_s / 1e3, row.bytes_per_s * 8 / 1e9, row.payload_per_s * 8 / 1e9,
                  row.lost);
    }
  }

 private:
  struct Row {
    std::string label;
    double frames_per_s;
    double bytes_per_s;
    double payload_per_s;
    double frame_bytes;
    double lost;
  };

  std::vector<Row> rows_;
};

}  // namespace

int main(int argc, char** argv) {
  LinkSummary reporter;
  return dxpu::bench::RunBenchmarks(argc, argv, &reporter);
}
